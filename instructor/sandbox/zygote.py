"""One pre-started sandbox per grading worker, a fresh fork of it per run (the host side).

Without it every submission starts two sandboxed interpreters — the confirmation's probe driver and
the notebook's kernel — and each pays a Python start, ``import torch`` and ``import IPython`` (about
2 s each here). With it, a worker starts one sandbox (:mod:`.zygote_server`, inside bubblewrap, as
the sandbox's unprivileged uid, in its own cgroup) that imports them once; each run is a ``fork()``.

What keeps submissions apart when they share one sandbox, one after the other:

* **one submission at a time** per sandbox: :meth:`Zygote.submission` gives it a folder of its own
  (root-owned; its scratch folders handed to the sandbox uid) and, when it ends, everything goes —
  every process the runs started (``kill(-1)`` inside the sandbox's PID namespace), POSIX and System V
  shared memory, POSIX message queues, the runs' uid's kernel keyrings, the runs' files in the sandbox's
  ``/tmp`` (a tmpfs of the sandbox: emptied from inside, as the runs' uid, never by root on the host), then
  its folder; whatever is still there after that (:meth:`Zygote.reset`) costs a new sandbox;
* **after every run** the same kill: a daemon from the confirmation run does not live on into the
  kernel's run;
* the server is not dumpable (no ptrace, no ``/proc/PID/mem`` from a run as the same uid), talks to
  the grader over an inherited socket pair (nothing a run could replace), and a run that kills it
  only costs a restart (the next run starts a new one);
* root never walks a folder a run could write while a process of it lives: each run's folder is handed
  over after the clean-up (by file descriptor, :func:`.workspace.give_to`), the submission's folder removed
  after the reset;
* the disk bound covers the whole area (one submission at a time: the same bound as before) and the
  sandbox's ``/tmp`` has a bound of its own, the cgroup's memory bound covers the server and its run, a run's CPU time is its own (``RLIMIT_CPU``).

Used when grading as root with privileged bubblewrap and a bounded disk (what ``make test`` and CI
have); elsewhere, and with ``COURSE_ZYGOTE=off`` or ``c.Sandbox.zygote = False``, each run starts its
own sandbox as before (:func:`.sandbox.run`, :func:`.kernel.kernel_main`).
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import multiprocessing.util
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from . import cgroups, isolation, kernel, workspace
from .limits import Limits, RunResult, apply_rlimits, describe_exit
from .. import sandbox  # the face: status(), python(), run()

SERVER = Path(__file__).resolve().with_name("zygote_server.py")
START_SECONDS = 120.0
#: Everything the server can do before its first run (its ``WARMERS``): what a sandbox warms unless its
#: batch said what its runs need (:meth:`Prestarting.join`).
WARM_ALL = ("meta",)
#: added to the memory bound of the cgroup: the server itself (torch, IPython imported), shared with its run
SERVER_MEMORY = 768 << 20
#: what the server keeps: make each run with the runs' uid, end them; a run keeps nothing
KEEP_CAPS = ("setuid", "setgid", "setpcap", "kill")

__all__ = ["Zygote", "enabled", "acquire", "prestart_in_background", "start_times", "stop_all"]

_ALL: list["Zygote"] = []
_IDLE: list["Zygote"] = []     # started sandboxes no submission holds now (this process's pool)
_POOL_LOCK = threading.Lock()


def enabled(limits: "Limits | None" = None) -> bool:
    """Is the pre-started sandbox used here? (root, privileged bubblewrap, a bounded disk, not switched off)"""
    if os.environ.get("COURSE_ZYGOTE", "").lower() in ("off", "0", "no") or not (limits or Limits()).zygote:
        return False
    st = sandbox.status()
    return (bool(st["bwrap"]) and isolation.drops_privileges() and workspace.can_bound_disk()
            and shutil.which("setpriv") is not None)


def _take(limits: "Limits") -> "Zygote":
    """An idle sandbox of ``limits``, or a new one; idle ones of other limits are stopped (as one grader
    asking with new limits always did: at most the sandboxes in use, and one idle per limits asked last)."""
    with _POOL_LOCK:
        for i, z in enumerate(_IDLE):
            if z.limits == limits:
                return _IDLE.pop(i)
        others = list(_IDLE)
        _IDLE.clear()
    for z in others:
        z.stop()
    return Zygote(limits)


def _give_back(z: "Zygote") -> None:
    with _POOL_LOCK:
        if z not in _IDLE:
            _IDLE.append(z)


@contextlib.contextmanager
def acquire(limits: "Limits"):
    """A pre-started sandbox with ``limits`` held by the caller alone until the block ends (then kept for the
    next submission of this process), or None where it is not used. Two submissions graded at once in one
    process hold two sandboxes: whoever grades is handed its sandbox, it never looks it up."""
    if not enabled(limits):
        yield None
        return
    z = _take(limits)
    try:
        yield z
    finally:
        _give_back(z)


def prestart_in_background(limits: "Limits") -> "Prestarting | None":
    """Start one pre-started sandbox of this process before the first submission comes, without waiting:
    it imports torch and IPython while this process prepares the course folder or imports the grading
    code (``grade --jobs 1``: 2-3 s of every grading, before; a ``--jobs`` worker). Call the result's
    :meth:`~Prestarting.join` before the first submission: until then the sandbox is held, and a
    submission that asked for one would start a second. None where no pre-started sandbox is used."""
    if not enabled(limits):
        return None
    z = _take(limits)
    try:
        if not z.alive:
            z.begin_start()
    except Exception:  # noqa: BLE001 - left to the first submission, which starts it and reports it as ever
        _give_back(z)
        return None
    return Prestarting(z)


class Prestarting:
    """A pre-started sandbox on its way up (:func:`prestart_in_background`)."""

    def __init__(self, z: "Zygote"):
        self.zygote = z

    def join(self, warm: "tuple[str, ...] | None" = None) -> None:
        """Wait until it has imported what every run needs, and give it to the pool. ``warm``: what this
        batch's runs need warmed first (:meth:`Zygote.warm`), by this sandbox and again after each of its
        restarts; None: everything it can. A start that failed is left to the first submission, which
        starts it again and reports it as it always did."""
        z, self.zygote = self.zygote, None
        if z is None:
            return
        if warm is not None:
            z.wanted_warm = tuple(warm)
        try:
            if z.proc is not None and len(z.start_seconds) < z.starts:  # begun, not finished: its checks too
                z.finish_start()
            elif z.alive:   # an earlier batch's, kept by this process: what this batch needs, if it still can
                z.warm(z.wanted_warm)
        except ZygoteError:
            pass
        finally:
            _give_back(z)


def start_times() -> list[float]:
    """Seconds each pre-started sandbox of this process took to start (until torch was imported)."""
    return [t for z in _ALL for t in z.start_seconds]


@atexit.register
def stop_all() -> None:
    for z in list(_ALL):
        z.stop()
    _ALL.clear()


_FINALIZER_PID: int | None = None


def _stop_all_at_process_end() -> None:
    """A --jobs worker ends through multiprocessing, which skips atexit but runs its finalizers; a worker
    forked from the fork server starts with none (multiprocessing clears the ones a fork inherits), so
    each process registers its own when it starts a sandbox."""
    global _FINALIZER_PID
    if _FINALIZER_PID != os.getpid():
        _FINALIZER_PID = os.getpid()
        multiprocessing.util.Finalize(None, stop_all, exitpriority=100)


class ZygoteError(RuntimeError):
    pass


class Child:
    """A run forked by the server; enough of ``subprocess.Popen`` for jupyter_client and the grader."""

    def __init__(self, zygote: "Zygote", rid: int):
        self.zygote, self.id = zygote, rid
        self.pid = None           # in the sandbox's PID namespace: signals go through the server
        self.returncode = None
        self.started = threading.Event()
        self.exited = threading.Event()
        self.error = ""
        self.stdout = self.stderr = self.stdin = None

    def poll(self):
        return self.returncode if self.exited.is_set() else None

    def wait(self, timeout: float | None = None):
        if not self.exited.wait(timeout):
            raise subprocess.TimeoutExpired("sandboxed run", timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if not self.exited.is_set():
            try:
                self.zygote._request({"op": "signal", "id": self.id, "sig": int(sig)})
            except (OSError, ZygoteError):  # the server is gone, and every run of it with it
                self._ended(-signal.SIGKILL)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def _ended(self, code: int) -> None:
        if not self.exited.is_set():
            self.returncode = code
            self.exited.set()
        self.started.set()


class Zygote:
    """A sandboxed, pre-started interpreter of this worker (see the module's text)."""

    def __init__(self, limits: "Limits"):
        self.limits = limits
        self.uid = isolation.sandbox_uid(limits)
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.area: Path | None = None
        self._space: workspace.Workspace | None = None
        self._children: dict[int, Child] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._cleaned = threading.Event()
        self._ready = threading.Event()
        self.cgroup: cgroups.Cgroup | None = None
        self._waking = None
        self._t0 = 0.0
        self.starts = 0
        self.start_seconds: list[float] = []  # how long each start took (until the server had imported torch)
        self.in_submission = False
        self.info: dict = {}
        self.warmed: list[str] = []   # what the server did before its first run (:meth:`warm`)
        self.wanted_warm: tuple[str, ...] = WARM_ALL   # what each start warms (the batch's choice)
        self._warm_reply = threading.Event()
        self.left: list[str] = []       # what the last reset found still there (then: a new sandbox)
        self.restarts_for_leftovers = 0

    # ------------------------------------------------------------------ life
    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and self.sock is not None

    def _make_area(self) -> None:
        if self.area is not None:
            return
        # not under /tmp: the sandbox's /tmp is a folder of this area. A TMPDIR elsewhere (a folder only
        # the grader may enter: the hub's grading service) is used as it is.
        import tempfile

        chosen = Path(tempfile.gettempdir())
        if chosen == Path("/tmp") or Path("/tmp") in chosen.parents:
            chosen = Path("/var/tmp")
        parent = None
        if chosen.is_dir() and os.access(chosen, os.W_OK):
            # the area holds folders of mode 0777 (the runs' uid writes there): in a folder of this
            # account's alone, out of other accounts' reach (workspace.private_parent)
            parent = str(workspace.private_parent(chosen)) if chosen == Path("/var/tmp") else str(chosen)
        self._space = workspace.Workspace(self.limits, prefix="course-zygote-", parent=parent)
        self.area = self._space.__enter__()
        for name in ("bin", "home"):
            (self.area / name).mkdir(mode=0o755, exist_ok=True)

    def start(self) -> None:
        """Start the server (and wait until it has imported what every run needs)."""
        self.begin_start()
        self.finish_start()

    def begin_start(self) -> None:
        """Start the server's process and return (:meth:`finish_start` waits for its imports). Called in the
        thread that lives as long as the sandbox should: bubblewrap's ``--die-with-parent`` ends the server
        when the thread that started it ends, not only the process."""
        self._t0 = time.monotonic()
        if self not in _ALL:  # stopped at exit (again, after a stop_all)
            _ALL.append(self)
        _stop_all_at_process_end()
        self._make_area()
        shutil.copy2(SERVER, self.area / "bin" / SERVER.name)
        os.chmod(self.area / "bin" / SERVER.name, 0o644)
        ours, theirs = socket.socketpair()
        memory = Limits(**{**self.limits.__dict__, "memory_bytes": self.limits.memory_bytes + SERVER_MEMORY})
        self.cgroup = cgroups.Cgroup(memory, sandbox.status()["cgroup"])
        argv = isolation.bwrap_argv(self.area, [sandbox.python(), str(self.area / "bin" / SERVER.name), str(theirs.fileno()),
                                              str(self.uid)],
                                  uid=isolation.server_uid(self.limits), tmp_bytes=self.limits.disk_bytes,
                                  env={"HOME": str(self.area / "home")}, keep_caps=KEEP_CAPS)
        cgroup = self.cgroup

        def pre():
            os.setsid()
            workspace.new_session_keyring()
            if cgroup.active:
                cgroup.enter()
            apply_rlimits(self.limits, cgroup.active)

        self.proc = subprocess.Popen(argv, cwd=self.area, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=pre, pass_fds=[theirs.fileno()],
                                     close_fds=True)
        theirs.close()
        self.sock = ours
        self._ready.clear()
        self.warmed = []
        self.starts += 1
        threading.Thread(target=self._read_events, args=(ours, self.proc), daemon=True).start()
        self._waking = cgroup.start_waking() if cgroup.active else None

    def finish_start(self) -> None:
        """Wait until the server started by :meth:`begin_start` has imported what every run needs."""
        ok = self._ready.wait(START_SECONDS) and self.alive
        self.start_seconds.append(time.monotonic() - self._t0)
        if not ok:
            self.stop()
            raise ZygoteError("the pre-started sandbox did not start")
        if self.info.get("os_threads", 1) > 1:  # a fork keeps one thread: a lock another held stays held
            threads = self.info["os_threads"]
            self.stop()
            raise ZygoteError(f"the pre-started sandbox had {threads} threads after its imports: forking it is not "
                              "safe (switch it off with COURSE_ZYGOTE=off, and report the PyTorch version)")
        self.warm(self.wanted_warm)

    def warm(self, what) -> None:
        """Have the server do ``what`` (names of the server's ``WARMERS``: ``"meta"``, the first use of meta
        tensors) once, before its first run, instead of every run that needs it paying for it again. The
        server refuses once a run was forked (nothing a run did may reach what the server does); its
        thread count is checked again, as after its imports."""
        want = [w for w in what if w not in self.warmed]
        if not want or not self.alive:
            return
        self._warm_reply.clear()
        self._request({"op": "warm", "what": want})
        if not (self._warm_reply.wait(START_SECONDS) and self.alive):
            self.stop()
            raise ZygoteError("the pre-started sandbox did not answer")
        if self.info.get("warm_threads", 1) > 1:
            threads = self.info["warm_threads"]
            self.stop()
            raise ZygoteError(f"the pre-started sandbox had {threads} threads after warming {', '.join(want)}: "
                              "forking it is not safe (switch it off with COURSE_ZYGOTE=off)")

    def stop(self) -> None:
        """End the server and everything in it; keep the area (a running submission's files)."""
        sock, proc, self.sock, self.proc = self.sock, self.proc, None, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
        if proc is not None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        if self._waking is not None:
            self._waking.set()
            self._waking = None
        if self.cgroup is not None:
            self.cgroup.cleanup()
            self.cgroup = None
        for child in list(self._children.values()):
            child._ended(-signal.SIGKILL)
        self._children.clear()
        if not self.in_submission and self._space is not None:
            self._space.__exit__(None, None, None)
            self._space, self.area = None, None

    def _read_events(self, sock: socket.socket, proc: subprocess.Popen) -> None:
        buf = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                kind = ev.get("ev")
                child = self._children.get(ev.get("id"))
                if kind == "ready":
                    self.info = ev
                    self._ready.set()
                elif kind == "started" and child is not None:
                    child.pid = ev.get("pid")
                    child.started.set()
                elif kind == "exited" and child is not None:
                    child._ended(int(ev.get("status", -9)))
                    self._children.pop(child.id, None)
                elif kind == "warmed":
                    self.warmed = [str(x) for x in ev.get("warmed", [])][:8]
                    self.info["warm_threads"] = int(ev.get("os_threads", 1))
                    self.info["warm_refused"] = bool(ev.get("refused"))
                    self._warm_reply.set()
                elif kind == "clean":
                    self.left = [str(x) for x in ev.get("left", [])][:50]
                    self._cleaned.set()
        # the server ended (a run killed it, or it was stopped): every run of it ended with it
        if self.proc is proc:
            with contextlib.suppress(OSError):
                sock.close()
            self.sock = None
        for child in list(self._children.values()):
            child._ended(-signal.SIGKILL)

    def _request(self, req: dict) -> None:
        sock = self.sock
        if sock is None:
            raise ZygoteError("the pre-started sandbox is not running")
        with self._lock:
            sock.sendall((json.dumps(req) + "\n").encode())

    # ------------------------------------------------------------------ submissions
    @contextlib.contextmanager
    def submission(self):
        """The folder of one submission in the area; everything of it goes when it ends."""
        self._make_area()
        folder = self.area / f"sub-{next(self._ids)}"
        folder.mkdir(mode=0o755)
        self.in_submission = True
        try:
            yield folder
        finally:
            self.in_submission = False
            # first every process of the submission ends (and its /tmp, IPC objects and keys go): only
            # then does anything touch its folder, and by file descriptor (links inside are not followed)
            self.reset()
            shutil.rmtree(folder, ignore_errors=True)

    def clean(self) -> None:
        """Kill every process a run left in the sandbox; drop its shared memory."""
        self._ask("clean")

    def reset(self) -> None:
        """A submission ended: everything it left in the sandbox goes (processes, ``/tmp``, shared memory,
        message queues, System V IPC, its uid's keys); if anything is still there, this sandbox is
        stopped and the next submission gets a new one."""
        self._ask("reset")
        if self.left and self.alive:
            self.restarts_for_leftovers += 1
            self.stop()

    def _ask(self, op: str) -> None:
        if not self.alive:
            return
        self._cleaned.clear()
        self.left = []
        try:
            self._request({"op": op})
        except (OSError, ZygoteError):
            self.stop()
            return
        if not self._cleaned.wait(20):
            self.stop()  # it did not answer: a new one next time

    # ------------------------------------------------------------------ runs
    def spawn(self, target: str, argv: list[str], cwd: Path, *, env: dict | None = None, module: bool = False,
              stdout: Path | None = None, stderr: Path | None = None) -> Child:
        """Fork a run: ``target`` (a script path, or a module with ``module=True``) as ``python argv``
        in ``cwd`` with the sandbox's environment plus ``env``."""
        if not self.alive:
            self.start()
        full_env = isolation.sandbox_env(Path(cwd), env)
        child = Child(self, next(self._ids))
        self._children[child.id] = child
        self._request({"op": "spawn", "id": child.id, "target": target, "module": module, "argv": argv,
                       "cwd": str(cwd), "env": full_env, "stdout": str(stdout) if stdout else None,
                       "stderr": str(stderr) if stderr else None})
        if not child.started.wait(30):
            child._ended(-signal.SIGKILL)
            raise ZygoteError("the pre-started sandbox did not fork")
        return child

    def oom_kills(self) -> int:
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

    def run(self, script: str, args: list[str], scratch: Path, *, wall_seconds: float) -> "RunResult":
        """Like :func:`.sandbox.run` for ``python script args`` in ``scratch``, as a fork of the server."""
        t0 = time.monotonic()
        scratch = Path(scratch)
        self.clean()  # nothing of an earlier run is alive while root hands the folder over
        os.chmod(scratch, 0o777)
        workspace.give_to(scratch, self.uid)
        ooms = self.oom_kills()
        timed_out = False
        try:
            child = self.spawn(str(scratch / script), [script, *args], scratch, stderr=scratch / ".sandbox-stderr")
        except ZygoteError as err:
            return RunResult(None, False, True, time.monotonic() - t0, str(err))
        try:
            code = child.wait(timeout=wall_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            child.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=10)
            code = None
        self.clean()
        reason = ""
        if code != 0 or timed_out:
            if not timed_out and code == -signal.SIGKILL and self.oom_kills() > ooms:
                reason = "it ran out of its memory limit"
            else:
                reason = describe_exit(code, None, timed_out, wall_seconds)
        return RunResult(code, timed_out, True, time.monotonic() - t0, reason)

    def kernel(self, connection_file: str, env: dict) -> Child:
        """The notebook's kernel (``python -m ipykernel_launcher -f CONNECTION``), as a fork of the server,
        with the settings :func:`.kernel.kernel_main` reads, given as data (``env``: the kernel's start
        environment, :meth:`.kernel.KernelBox.env`): its folders, the verdicts file, its language, whether a
        grader runs it (:func:`.kernel.notebook_settings`)."""
        scratch = Path(env["COURSE_SANDBOX_SCRATCH"])
        rundir = Path(env["COURSE_SANDBOX_RUN"])
        # A restart (a cell that ended the kernel, a timeout, exit()): what the old kernel left (a daemon
        # racing the walk below, swapping a folder for a link) is killed before root touches its folders.
        self.clean()
        for path in (scratch, rundir):
            workspace.give_to(path, self.uid)
        given = {}
        if env.get("COURSE_VERDICTS"):
            given["COURSE_VERDICTS"] = env["COURSE_VERDICTS"]
        given.update(kernel.notebook_settings(env))
        argv = kernel.kernel_argv(connection_file)
        log = rundir / "kernel.log"
        return self.spawn(argv[0], argv, scratch, env=given, module=True, stdout=log, stderr=log)
