"""The sandbox every submitted notebook runs in: bubblewrap, limits, and a kernel that lives inside.

This module runs a command in the sandbox (:func:`run`), says what this machine allows
(:func:`status`, :func:`warn_if_unsandboxed`) and measures it (:func:`report`;
``python -m instructor.sandbox`` prints it). The parts, one job each, imports one way:

* :mod:`.limits` — :class:`Limits` (``c.Sandbox.*`` in ``nbgrader_config.py``), the per-process
  resource limits, and how a run ended (:class:`RunResult`, :func:`describe_exit`);
* :mod:`.cgroups` — the memory + pids cgroup of one run, when the grader runs as root;
* :mod:`.isolation` — the bubblewrap command line (files, namespaces, environment) and the drop to an
  unprivileged host uid;
* :mod:`.workspace` — a submission's bounded folder on the host, handing it to the sandbox's uid,
  the keyrings that uid leaves, and what killed graders leave;
* :mod:`.kernel` — a Jupyter kernel inside the sandbox (its kernelspec and process, the kernel manager);
* :mod:`.zygote` — one pre-started sandbox per worker, a fork of it per run;
* :mod:`.box` — :class:`~.box.Sandbox`, one submission's sandbox as one object (``run``, ``launch``,
  ``kernel_env``, ``kernel_running``, ``status``): the pre-started one and a fresh one behind one face.
  The engine grades through it (:func:`instructor.engine.pipeline.grade_one`).

It knows nothing of nbgrader, torch or the checks (``tests/test_architecture.py``): what runs in it and
what its results mean is the engine's (:mod:`instructor.engine`).

This module is the sandbox's face (``__all__``: ``sandbox.Sandbox``, ``sandbox.run``, ``sandbox.Limits``,
...); everything else is named in the module that owns it (``isolation.sandbox_uid``,
``workspace.give_to``). A test that replaces one replaces it there: its callers look it up there.

What a submission's process tree sees and may do is listed in :mod:`.isolation`; its limits —
memory and number of processes (a cgroup when the grader may make one, else
``RLIMIT_AS``/``RLIMIT_NPROC``), CPU time (``RLIMIT_CPU``), file size (``RLIMIT_FSIZE``), open files,
no core dumps, disk per submission, and a wall-clock limit per submission enforced by the grader —
in :mod:`.limits`. Where bubblewrap cannot run, grading says so once, loudly, and falls back to the
limits alone.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import cgroups, isolation, workspace
from .cgroups import Cgroup
from .isolation import drops_privileges
from .kernel import GRADING_ENV, KERNEL_NAME, kernel_manager_class, write_kernelspec
from .limits import Limits, RunResult, apply_rlimits, describe_exit
from .workspace import Workspace, can_bound_disk, sweep_leftovers

__all__ = [  # the face: what a caller of the sandbox needs; the rest is named in the module that owns it
    "Sandbox",                                            # one submission's sandbox (.box; imported when first named)
    "Limits", "RunResult",                                # what a box is given, what comes back
    "run", "status", "python", "report", "warn_if_unsandboxed",  # run a command in a box; what this machine allows
    "GRADING_ENV", "KERNEL_NAME", "kernel_manager_class", # a kernel in a box (nbgrader's half: instructor.engine.execute)
    "sweep_leftovers", "can_bound_disk", "drops_privileges",  # what killed graders left; what grading as root adds
]

# --------------------------------------------------------------------------- what is available

_STATUS: dict | None = None


def python() -> str:
    """The interpreter of the course environment (the grader's own)."""
    return sys.executable


def status() -> dict:
    """{'bwrap': bool, 'cgroup': 'v1'|'v2'|None, 'why': str}; probed once per process."""
    global _STATUS
    if _STATUS is not None:
        return _STATUS
    st = {"bwrap": False, "cgroup": None, "why": ""}
    if os.environ.get("COURSE_SANDBOX") == "off":
        st["why"] = "COURSE_SANDBOX=off"
    elif not shutil.which("bwrap"):
        st["why"] = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    else:
        with tempfile.TemporaryDirectory() as d:
            try:
                r = subprocess.run(isolation.bwrap_argv(Path(d), ["/bin/true"]), capture_output=True, timeout=30)
                st["bwrap"] = r.returncode == 0
                st["why"] = "" if st["bwrap"] else r.stderr.decode(errors="replace").strip()[:300]
            except (OSError, subprocess.TimeoutExpired) as err:
                st["why"] = str(err)
    st["cgroup"] = cgroups.cgroup_kind()
    _STATUS = st
    return st


def warn_if_unsandboxed(stream=sys.stderr) -> bool:
    """Say once, loudly, when submissions will run without bubblewrap. True when sandboxed."""
    st = status()
    if not st["bwrap"] and not os.environ.get("_COURSE_SANDBOX_WARNED"):
        os.environ["_COURSE_SANDBOX_WARNED"] = "1"
        print("\n" + "!" * 78 + "\nWARNING: submissions run WITHOUT the bubblewrap sandbox: "
              f"{st['why']}.\nOnly resource limits apply; a hostile notebook can read and write what "
              "the grader can.\n" + "!" * 78 + "\n", file=stream, flush=True)
    return st["bwrap"]


def run(command: list[str], scratch: Path, *, limits: Limits | None = None, wall_seconds: float | None = None,
        use_sandbox: bool = True, env: dict | None = None, extra_ro: list[Path] = ()) -> RunResult:
    """Run ``command`` in ``scratch`` under the sandbox and limits; never raises for its failures."""
    limits = limits or Limits()
    wall = float(wall_seconds or limits.wall_seconds)
    scratch = Path(scratch)
    os.chmod(scratch, 0o777)
    sandboxed = use_sandbox and status()["bwrap"]
    if use_sandbox and not sandboxed:
        warn_if_unsandboxed()
    cgroup = Cgroup(limits, status()["cgroup"]) if use_sandbox else None
    uid = isolation.sandbox_uid(limits) if sandboxed and isolation.drops_privileges() else None
    if uid is not None:
        workspace.give_to(scratch, uid)
    argv = isolation.bwrap_argv(scratch, command, env=env, extra_ro=extra_ro, uid=uid,
                      tmp_bytes=limits.disk_bytes) if sandboxed else command

    def pre():
        os.setsid()
        workspace.new_session_keyring()
        if cgroup is not None and cgroup.active:
            cgroup.enter()
        apply_rlimits(limits, cgroup is not None and cgroup.active)

    t0 = time.monotonic()
    timed_out = False
    waking = cgroup.start_waking() if cgroup is not None and cgroup.active else None
    err_path = scratch / ".sandbox-stderr"
    with os.fdopen(workspace.open_log(err_path), "wb") as err:
        proc = subprocess.Popen(argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, preexec_fn=pre, close_fds=True,
                                env=None if sandboxed else isolation.unsandboxed_env(scratch, env))
        try:
            code = proc.wait(timeout=wall)
        except subprocess.TimeoutExpired:
            timed_out = True
            code = None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            if code is None:
                try:
                    code = proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    code = None
    if waking is not None:
        waking.set()
    reason = "" if code == 0 and not timed_out else describe_exit(code, cgroup, timed_out, wall)
    if cgroup is not None:
        cgroup.cleanup()
    return RunResult(code, timed_out, sandboxed, time.monotonic() - t0, reason)


_PROBE = r"""
import json, os
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
inside, outside, _ = open("/proc/self/uid_map").read().split()[:3]
closed = {}
for p in ("/etc/shadow", "/root/.bashrc", "/root/.profile", "/proc/1/environ", "/etc/ssh/ssh_host_ed25519_key"):
    try:
        seen = open(p, "rb").read()
        closed[p] = "READABLE"
        names = {v.split(b"=", 1)[0] for v in seen.split(b"\0") if v}
        if p == "/proc/1/environ" and names <= {b"PATH"}:   # bubblewrap's own, started with nothing else
            closed[p] = "readable, holds only PATH"
    except OSError as err:
        closed[p] = type(err).__name__
vfs = os.statvfs("/tmp")
open("owner-check", "w").close()   # its owner on the host is read from outside (the report's "host uid")
print(json.dumps({"uid inside": os.getuid(), "uid_map's view": int(outside) + os.getuid() - int(inside),
                  "capabilities": st["CapEff"].strip(), "no_new_privs": st["NoNewPrivs"].strip() == "1",
                  "root's files": closed, "/tmp MiB": vfs.f_blocks * vfs.f_frsize >> 20}))
"""


def report(limits: "Limits | None" = None) -> dict:
    """What protects the grading host here, measured: the identity a sandboxed process has (inside and
    on the host), what it can read of root's, and each limit and whether it is enforced."""
    limits = limits or Limits.from_config()
    st = status()
    out = {"bubblewrap": st["bwrap"], "why not": st["why"] or None, "grader is root": os.geteuid() == 0,
           "memory and processes": f"cgroup {st['cgroup']}" if st["cgroup"] else "rlimits (per process)",
           "limits": {"memory MiB": limits.memory_bytes >> 20, "processes": limits.processes,
                      "disk MiB per submission": limits.disk_bytes >> 20, "file MiB": limits.file_bytes >> 20,
                      "outputs KiB per cell / per notebook": [limits.output_bytes >> 10,
                                                              limits.notebook_output_bytes >> 10],
                      "result MiB": limits.result_bytes >> 20, "wall s": limits.wall_seconds}}
    with Workspace(limits, prefix="sandbox-report-") as space:
        out["disk bound"] = ("a tmpfs per submission" if os.path.ismount(space) else
                             "none on the host (not root): per-file limit only; /tmp inside is a sized tmpfs")
        if st["bwrap"]:
            (space / "run").mkdir()
            (space / "run" / "probe.py").write_text(_PROBE)
            uid = isolation.sandbox_uid(limits) if isolation.drops_privileges() else None
            if uid is not None:
                workspace.give_to(space / "run", uid)
            argv = isolation.bwrap_argv(space / "run", [python(), "probe.py"], uid=uid, tmp_bytes=limits.disk_bytes)
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            try:
                out["sandboxed process"] = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                out["sandboxed process"] = {"error": (r.stderr or r.stdout)[-300:]}
            # the host uid, measured outside: the owner of a file the sandboxed process made. (Read from
            # inside, /proc/self/uid_map names the uid of the intermediate namespace that unprivileged
            # bubblewrap nests, 0 there, not the host's.)
            made = space / "run" / "owner-check"
            if "error" not in out["sandboxed process"] and made.is_file() and not made.is_symlink():
                out["sandboxed process"]["host uid"] = os.lstat(made).st_uid
    sp = out.get("sandboxed process", {})
    out["never root outside"] = bool(sp) and sp.get("host uid", 0) != 0 and \
        all(v != "READABLE" for v in sp.get("root's files", {"?": "READABLE"}).values())
    return out


def __getattr__(name: str):
    """``sandbox.Sandbox`` (:mod:`.box`), imported when first named: it reaches the pre-started sandbox
    (:mod:`.zygote`), which itself imports this face."""
    if name == "Sandbox":
        from .box import Sandbox

        return Sandbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
