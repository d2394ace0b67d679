"""The pre-started interpreter of a sandbox: runs *inside* bubblewrap, forks one child per run.

A grading worker starts it once (``zygote.py`` on the host side, :class:`.zygote.Zygote`): a
sandboxed Python that has already imported torch, IPython and ipykernel. Every run of a submission —
the confirmation's probe driver, the notebook's kernel — is a fresh ``fork()`` of it, so no run pays
for an interpreter start and ``import torch`` again (about 2 s each on a 2-core machine).

It imports nothing from ``instructor`` (that folder is not visible in the sandbox): the grader copies
this one file into the sandbox's area and runs it as a script::

    python zygote_server.py FD UID

``FD`` is one end of a socket pair the grader kept the other end of; nothing else can reach this
process (no socket file a submission could replace). ``UID`` is the host uid every run drops to
before anything else: not this server's own, so a run cannot signal it. Requests and events are JSON lines:

* ``{"op": "spawn", "id": N, "target": path or module, "module": bool, "argv": [...], "cwd": ...,
  "env": {...}, "stdout": path|null, "stderr": path|null}`` -> ``{"ev": "started", "id": N, "pid": P}``,
  later ``{"ev": "exited", "id": N, "status": S}`` (a return code; ``-signal`` when killed);
* ``{"op": "signal", "id": N, "sig": S}`` -> the child's process group gets the signal;
* ``{"op": "clean"}`` -> every other process of the sandbox is killed (whatever a run left behind:
  daemons, double forks), POSIX shared memory and System V IPC objects removed -> ``{"ev": "clean"}``.

Between two runs nothing of the earlier run is left but its files (the grader wipes those): a
child is never a parent of the next one. The server runs as a uid of its own with CAP_SETUID,
CAP_SETGID, CAP_SETPCAP and CAP_KILL only; a run drops to ``UID`` with no capability left (checked),
so it can neither signal nor trace the server. The server is not dumpable and reaps orphans
(``PR_SET_CHILD_SUBREAPER``).
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
MAX_REQUEST = 1 << 20


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort
        pass


#: What runs import: the kernel and the probe driver (torch, IPython, ipykernel), and what the course's
#: notebooks import in their first cells (the student package, matplotlib with the sandbox's Agg
#: backend). Each one imported here is not imported again in every run, twice per notebook.
PRELOAD = ("torch", "numpy", "IPython", "IPython.core.interactiveshell", "ipykernel.kernelapp",
           "ipykernel.ipkernel", "ipykernel_launcher", "jupyter_client.session", "zmq", "tornado.ioloop",
           "ipykernel.debugger", "tqdm", "tqdm.auto", "matplotlib.pyplot", "torch.nn", "torch.utils._python_dispatch",
           "autograder", "autograder.runtime", "autograder.checks", "autograder.verdicts", "autograder.inplace",
           "autograder.storage", "autograder.saved_tensors", "autograder.yolo", "autograder.detector",
           "autograder.attack", "autograder.wild")


def _warm_meta() -> None:
    """The first operation on a ``meta`` tensor imports torch's symbolic-shape machinery (sympy and
    torch's meta registrations: about a second here); assignments 1 and 3 use meta tensors."""
    import torch

    torch.empty(2, device="meta") * 2


def os_threads() -> int:
    """Threads of this process as the kernel counts them (fork keeps only the calling one)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def preload() -> list[str]:
    """What every run would import first: imported once, here (no thread may start: fork-safety; the
    server reports its thread count and the grader refuses a server with more than one)."""
    # A grading kernel has no debugger: ipykernel imports debugpy at every kernel start (0.25 s here),
    # and debugpy starts a thread when imported, so it could not be imported here either. Without it
    # ipykernel says "debugger": false in its kernel_info and carries on.
    sys.modules.setdefault("debugpy", None)
    loaded = []
    for name in PRELOAD:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - a module that does not import here is imported by the run
            pass
    try:
        _warm_meta()
        loaded.append("(meta tensors)")
    except Exception:  # noqa: BLE001
        pass
    return loaded


def drop_to(uid: int) -> None:
    """This process as host ``uid``/``gid``, no groups, no capabilities at all (this server keeps
    CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL to make its runs and end them; a run keeps none)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (past the last capability it fails: harmless)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    if libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    if int(status["CapEff"], 16) or int(status["CapPrm"], 16) or os.getuid() != uid or os.geteuid() != uid:
        raise OSError("the run kept a capability or the server's uid")


def _send(sock, event: dict) -> None:
    sock.sendall((json.dumps(event) + "\n").encode())


def _child(req: dict, keep: set[int], uid: int) -> None:
    """In the forked child: become the run the grader asked for; never returns."""
    code = 1
    try:
        drop_to(uid)  # before anything else: a run never has this server's uid (it could signal it)
        os.setsid()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        for fd in keep:
            try:
                os.close(fd)
            except OSError:
                pass
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in req.get("env", {}).items()})
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        for fd, path in ((1, req.get("stdout")), (2, req.get("stderr"))):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if path else null
            os.dup2(target, fd)
        try:  # a run may be killed first when memory runs out, never this server
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        import runpy

        sys.argv = list(req["argv"])
        if req.get("module"):
            sys.path[0] = req["cwd"]
            runpy.run_module(req["target"], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(req["target"]))
            runpy.run_path(req["target"], run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _kill_everything_else() -> None:
    """SIGKILL to every process of the sandbox this server may signal (all but itself and pid 1),
    then reap them."""
    me = os.getpid()
    for _ in range(3):
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.005)
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not others:
            return


#: where a run may leave something for the next one outside its files
IPC_DIRS = ("/dev/shm", "/dev/mqueue")
SYSV_IPC = {"shm": "shmctl", "msg": "msgctl", "sem": "semctl"}  # /proc/sysvipc/KIND -> its libc call


def _ipc_objects() -> tuple[list[str], list[tuple[str, int]]]:
    """Entries of :data:`IPC_DIRS` and System V IPC objects (kind, id) there are now."""
    paths: list[str] = []
    for name in IPC_DIRS:
        try:
            paths += [os.path.join(name, entry) for entry in os.listdir(name)]
        except OSError:
            pass
    ids: list[tuple[str, int]] = []
    for kind in SYSV_IPC:
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        ids += [(kind, int(parts[1])) for parts in map(str.split, lines) if len(parts) > 1 and parts[1].isdigit()]
    return paths, ids


def _clean_ipc() -> None:
    """Remove what a run may leave for the next one outside its files: /dev/shm and System V IPC."""
    import shutil

    paths, ids = _ipc_objects()
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for kind, ident in ids:
            getattr(libc, SYSV_IPC[kind])(ident, 0, 0)  # IPC_RMID
    except Exception:  # noqa: BLE001
        pass


def _clean(uid: int) -> None:
    """After a run: every process it left killed; its shared memory and IPC objects removed (by a
    helper with the runs' uid: they own them)."""
    _kill_everything_else()
    if _ipc_objects() == ([], []):  # nothing to remove: no fork of this (large) server for it
        return
    pid = os.fork()
    if pid == 0:
        try:
            drop_to(uid)
            _clean_ipc()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def serve(fd: int, uid: int) -> int:
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    sys.dont_write_bytecode = True
    sock = socket.socket(fileno=fd)
    loaded = preload()
    # What was imported lives as long as this server: out of the collector's sight, a run's garbage
    # collections do not walk (and so copy, page by page, out of the memory it shares with this
    # server) the preloaded modules' objects.
    import gc

    gc.collect()
    gc.freeze()
    import threading

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _send(sock, {"ev": "ready", "loaded": loaded, "threads": threading.active_count(), "os_threads": os_threads(),
                 "pid": os.getpid()})
    children: dict[int, int] = {}  # pid -> request id
    buf = b""
    keep = {sock.fileno(), wake_r, wake_w}
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [], 1.0)
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        while True:  # reap: runs that ended, and orphans they left (this process is their reaper)
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in children:
                _send(sock, {"ev": "exited", "id": children.pop(pid), "status": os.waitstatus_to_exitcode(status)})
        if sock not in ready:
            continue
        data = sock.recv(65536)
        if not data:
            _kill_everything_else()
            return 0
        buf += data
        if len(buf) > MAX_REQUEST:
            return 2
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            op = req.get("op")
            if op == "spawn":
                pid = os.fork()
                if pid == 0:
                    _child(req, keep, uid)
                children[pid] = req["id"]
                _send(sock, {"ev": "started", "id": req["id"], "pid": pid})
            elif op == "signal":
                for pid, rid in children.items():
                    if rid == req["id"]:
                        try:
                            os.killpg(pid, int(req["sig"]))
                        except OSError:
                            try:
                                os.kill(pid, int(req["sig"]))
                            except OSError:
                                pass
            elif op == "clean":
                _clean(uid)
                for pid in list(children):
                    _send(sock, {"ev": "exited", "id": children.pop(pid), "status": -signal.SIGKILL})
                _send(sock, {"ev": "clean"})


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1]), int(sys.argv[2])))
