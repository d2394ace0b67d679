"""A Jupyter kernel inside the sandbox: its process half (what nbgrader drives it with is
:mod:`instructor.engine.execute`).

* :func:`write_kernelspec` — a kernelspec whose command is :func:`kernel_main`, which sets the limits
  and the cgroup and execs ``bwrap ... python -m ipykernel_launcher``; kernel and grader talk over
  Unix sockets in a folder shared with the sandbox (``transport=ipc``), since the sandbox has no
  network.
* :class:`KernelBox` — one submission's kernel box as plain data (its folders, limits, cgroup, verdicts file,
  the pre-started sandbox's launcher if any); :meth:`KernelBox.env` is what the kernel's process is started
  with (``start_kernel(env=...)``): nothing of it passes through the grader's own environment.
* :func:`kernel_manager_class` — jupyter_client's kernel manager for such a kernel: connection file
  and sockets in the run folder of the box it is given (:meth:`use_box`), ready as soon as the kernel answers.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import isolation
from .limits import REPO, Limits, apply_rlimits
from .workspace import give_to, new_session_keyring, open_log

KERNEL_NAME = "course-sandbox"


def write_kernelspec(dest: Path) -> Path:
    """A kernelspec named :data:`KERNEL_NAME` under ``dest/kernels/``; put ``dest`` on JUPYTER_PATH.

    Its command runs :func:`kernel_main` with the grader's rights, in the notebook's folder: ``-I`` (isolated mode)
    keeps the working directory (and ``PYTHON*`` variables) off ``sys.path``, so that a file the
    submission brings cannot stand in for a module the grader imports; the course comes from
    :data:`~.limits.REPO`, named explicitly."""
    spec = Path(dest) / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    launch = (f"import sys; sys.path.insert(0, {str(REPO)!r}); "
              "from instructor.sandbox.kernel import kernel_main; kernel_main(sys.argv[1])")
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-I", "-c", launch, "{connection_file}"],
        "display_name": "Python 3 (course sandbox)", "language": "python", "interrupt_mode": "message",
    }, indent=1))
    return spec


def kernel_argv(connection_file: str) -> list[str]:
    """The sandboxed kernel's module and arguments (``python -m`` these)."""
    return ["ipykernel_launcher", "-f", connection_file, "--IPKernelApp.log_level=ERROR",
            "--HistoryManager.hist_file=:memory:"]


def kernel_main(connection_file: str) -> None:
    """The kernelspec's command: set limits and cgroup, then exec the kernel inside bubblewrap.

    Settings come from the grader through this process's environment (:meth:`KernelBox.env`, given to
    ``start_kernel(env=...)``): ``COURSE_SANDBOX_SCRATCH`` (the
    submission's scratch folder), ``COURSE_SANDBOX_RUN`` (the folder of the connection file and
    sockets), ``COURSE_SANDBOX_LIMITS``, ``COURSE_SANDBOX_CGROUP`` (a folder list, made by the grader)
    and ``COURSE_VERDICTS`` (the judge's verdicts, bound read-only).
    """
    scratch = Path(os.environ["COURSE_SANDBOX_SCRATCH"])
    rundir = Path(os.environ["COURSE_SANDBOX_RUN"])
    limits = Limits.from_env(os.environ.get("COURSE_SANDBOX_LIMITS"))
    sandboxed = os.environ.get("COURSE_SANDBOX_BWRAP") == "1"
    uid = isolation.sandbox_uid(limits) if sandboxed and isolation.drops_privileges() else None
    if uid is not None:  # the kernel reads its connection file and writes its sockets as the sandbox's uid
        for path in (scratch, rundir):
            give_to(path, uid)
    cg = [Path(p) for p in os.environ.get("COURSE_SANDBOX_CGROUP", "").split(os.pathsep) if p]
    for d in cg:
        try:
            (d / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            pass
    apply_rlimits(limits, bool(cg))
    new_session_keyring()
    kernel = [sys.executable, "-m", *kernel_argv(connection_file)]
    env = {}
    verdicts = os.environ.get("COURSE_VERDICTS")
    extra_ro = []
    if verdicts:
        env["COURSE_VERDICTS"] = verdicts
        extra_ro.append(Path(verdicts))
    env.update(notebook_settings(os.environ))
    # The kernel's own banner and logs are not the grader's output: keep them in the run folder.
    log = open_log(rundir / "kernel.log")  # as root, in a folder an earlier kernel could write: no link followed
    os.dup2(log, 1)
    os.dup2(log, 2)
    if sandboxed:
        argv = isolation.bwrap_argv(scratch, kernel, extra_ro=extra_ro, extra_rw=[rundir], env=env, uid=uid,
                          tmp_bytes=limits.disk_bytes)
        os.execvp(argv[0], argv)
    os.chdir(scratch)
    os.execve(sys.executable, kernel, isolation.unsandboxed_env(scratch, env))


#: The two settings of the notebook, not of the box, that the kernel is given, passed as data by whoever
#: starts it (``start_kernel(env=...)``): the language it speaks (``COURSE_LANG``, the Chinese edition's),
#: and that a grader runs it (``COURSE_GRADING=1``: the course's slow demonstrations do less).
LANGUAGE_ENV = "COURSE_LANG"
GRADING_ENV = "COURSE_GRADING"


def kernel_language(environ) -> dict[str, str]:
    """``{"COURSE_LANG": code}`` from an environment that names a plain language code (``zh_CN``); else ``{}``."""
    lang = (environ or {}).get(LANGUAGE_ENV) or ""
    return {LANGUAGE_ENV: lang} if re.fullmatch(r"[A-Za-z]{2,3}(?:_[A-Za-z]{2,4})?", lang) else {}


def notebook_settings(environ) -> dict[str, str]:
    """What of ``environ`` the kernel is told about its notebook: :func:`kernel_language`, and
    ``COURSE_GRADING=1`` when ``environ`` has exactly that; nothing else passes."""
    given = kernel_language(environ)
    if (environ or {}).get(GRADING_ENV) == "1":
        given[GRADING_ENV] = "1"
    return given


@dataclass
class KernelBox:
    """One submission's kernel box, as data: where it works (``scratch``), where its connection file and
    sockets are (``rundir``), its limits, its cgroup's folders, whether bubblewrap runs it, the judge's
    verdicts file it may read, the kernelspec folder (:func:`write_kernelspec`) and, in the pre-started
    sandbox, ``launch(connection_file, env) -> Popen-like`` (:meth:`.zygote.Zygote.kernel`)."""
    scratch: Path
    rundir: Path
    limits: Limits
    specs: Path
    cgroup_dirs: list = field(default_factory=list)
    bwrap: bool = False
    verdicts: "Path | None" = None
    launch: object = None

    def env(self, language: str = "") -> dict[str, str]:
        """What the kernel's process is told (the settings :func:`kernel_main` and the pre-started
        sandbox read), with the notebook's ``language`` (:func:`kernel_language`)."""
        env = {"COURSE_SANDBOX_SCRATCH": str(self.scratch), "COURSE_SANDBOX_RUN": str(self.rundir),
               "COURSE_SANDBOX_LIMITS": self.limits.to_env(),
               "COURSE_SANDBOX_CGROUP": os.pathsep.join(str(d) for d in self.cgroup_dirs),
               "COURSE_SANDBOX_BWRAP": "1" if self.bwrap else "0"}
        if self.verdicts is not None:
            env["COURSE_VERDICTS"] = str(self.verdicts)
        env.update(kernel_language({LANGUAGE_ENV: language}))
        return env


#: how often the grader's sockets to a kernel retry their connection (milliseconds; :func:`_ready_client_class`)
RECONNECT_MS = 5


@functools.lru_cache(maxsize=None)
def _ready_client_class():
    from queue import Empty

    from jupyter_client.asynchronous import AsyncKernelClient

    class ReadyClient(AsyncKernelClient):
        """jupyter_client's kernel client, ready as soon as the kernel answers.

        Its own ``wait_for_ready`` ends by waiting until IOPub has been quiet for 0.2 s — 0.2 s of every
        notebook, idle. nbclient reads only the IOPub messages whose parent is the cell it runs, so the
        status messages of the handshake may stay queued.

        To a manager's first kernel its sockets retry a connection every :data:`RECONNECT_MS` (ZeroMQ's
        default: 100 ms). The client connects as soon as the kernel is launched, before the kernel has bound
        its sockets, so the first try fails and the handshake waited for the second: 0.11-0.19 s of every
        notebook against 0.05-0.06 s (eight notebooks of assignment 0, measured with a traced
        ``wait_for_ready``). Not to a restarted kernel: it binds the same socket paths its dead predecessor
        left, and with retries every 5 ms a restart lost what was replayed into it about once in ten
        (``tests/test_cli.py``'s student whose cell ends the kernel lost a second question, 4 of 8 points
        instead of 6, in 2 of 16 runs; 0 of 10 with ZeroMQ's default, 0 of 16 with this rule)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            import zmq

            if getattr(self.parent, "course_launches", 0) <= 1:
                self.context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)

        async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
            deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
            while True:
                self.kernel_info()
                try:
                    reply = await self.shell_channel.get_msg(timeout=1)
                except Empty:
                    reply = None
                if reply is not None and reply["msg_type"] == "kernel_info_reply":
                    try:   # IOPub is connected once the handshake's own status message arrives on it
                        await self.iopub_channel.get_msg(timeout=0.2)
                    except Empty:
                        pass
                    else:
                        self._handle_kernel_info_reply(reply)
                        return
                if not await self._async_is_alive():
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

        wait_for_ready = _async_wait_for_ready

    return ReadyClient


def kernel_manager_class():
    from jupyter_client.manager import AsyncKernelManager

    class SandboxKernelManager(AsyncKernelManager):
        """Connection file and IPC sockets in the folder shared with the sandbox; the kernel is ready
        when it answers, and found ended within milliseconds (jupyter_client polls every 0.1 s)."""

        course_box: "KernelBox | None" = None
        course_launches = 0   # kernels this manager launched (a restart launches another)

        def use_box(self, box: KernelBox) -> None:
            """This manager's kernel runs in ``box``: its kernelspec, connection file and sockets there."""
            from jupyter_client.kernelspec import KernelSpecManager

            self.course_box = box
            self.kernel_spec_manager = KernelSpecManager(kernel_dirs=[str(Path(box.specs) / "kernels")])
            self.transport = "ipc"
            self.connection_file = str(Path(box.rundir) / f"kernel-{uuid.uuid4().hex[:8]}.json")
            self.ip = str(Path(box.rundir) / "k")
            self.client_factory = _ready_client_class()

        async def _async_finish_shutdown(self, waittime=None, pollinterval: float = 0.1, restart: bool = False):
            return await super()._async_finish_shutdown(waittime, min(pollinterval, 0.005), restart)

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            self.course_launches += 1
            box = self.course_box
            if box is None or box.launch is None:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            prov = self.provisioner
            proc = box.launch(self.connection_file, dict(kw.get("env") or {}))
            prov.process, prov.pid, prov.pgid = proc, proc.pid, None
            prov.cwd = str(box.scratch)
            self._reconcile_connection_info(prov.connection_info)

    return SandboxKernelManager
