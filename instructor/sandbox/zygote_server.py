"""The pre-started interpreter of a sandbox: runs *inside* bubblewrap, forks one child per run.

A grading worker starts it once (``zygote.py`` on the host side, :class:`.zygote.Zygote`): a
sandboxed Python that has already imported torch, IPython and ipykernel. Every run of a submission —
the confirmation's probe driver, the notebook's kernel — is a fresh ``fork()`` of it, so no run pays
for an interpreter start and ``import torch`` again (about 2 s each on a 2-core machine).

It imports nothing from ``instructor`` (that folder is not visible in the sandbox): the grader copies
this one file into the sandbox's area and runs it as a script::

    python zygote_server.py FD UID
    python -I -S zygote_server.py --clear-keyrings     (as a runs' uid: what ``sandbox`` runs per submission)

``FD`` is one end of a socket pair the grader kept the other end of; nothing else can reach this
process (no socket file a submission could replace). ``UID`` is the host uid every run drops to
before anything else: not this server's own, so a run cannot signal it. Requests and events are JSON lines:

* ``{"op": "spawn", "id": N, "target": path or module, "module": bool, "argv": [...], "cwd": ...,
  "env": {...}, "stdout": path|null, "stderr": path|null}`` -> ``{"ev": "started", "id": N, "pid": P}``,
  later ``{"ev": "exited", "id": N, "status": S}`` (a return code; ``-signal`` when killed);
* ``{"op": "signal", "id": N, "sig": S}`` -> the child's process group gets the signal;
* ``{"op": "clean"}`` -> every other process of the sandbox is killed (whatever a run left behind:
  daemons, double forks), POSIX shared memory and System V IPC objects removed -> ``{"ev": "clean"}``;
* ``{"op": "reset"}`` (a submission ended) -> the same, and the runs' files in the sandbox's own ``/tmp``,
  POSIX message queues and the runs' uid's kernel keyrings too -> ``{"ev": "clean", "left": [...]}``,
  what is still there (the grader then starts a new sandbox);
* ``{"op": "warm", "what": ["meta"]}`` -> what a batch's runs would each pay for on first use, done once
  here (:data:`WARMERS`), and only before the first run was forked: a run cannot have touched anything
  this process then does -> ``{"ev": "warmed", "warmed": [...], "refused": bool, "os_threads": N}``.

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
    torch's meta registrations: 1.2-1.8 s of CPU here, a third of this server's start); the hidden
    checks that draw meta tensors need it, the others never do (``op: warm``)."""
    import torch

    torch.empty(2, device="meta") * 2


#: What the grader may ask this server to do before its first run (``{"op": "warm"}``), by name.
WARMERS = {"meta": _warm_meta}


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
    return loaded


def warm(what: list, warmed: list) -> None:
    """Each of :data:`WARMERS` named in ``what`` not done yet, into ``warmed`` (one that fails is left to
    the runs, as an import that fails in :func:`preload`)."""
    for name in what:
        if name in WARMERS and name not in warmed:
            try:
                WARMERS[name]()
                warmed.append(name)
            except Exception:  # noqa: BLE001
                pass


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
        new_session_keyring()  # not the server's: no key a run adds there is seen by the next run
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


#: where a run may leave something for the next one outside its files (``/dev/mqueue``: bubblewrap
#: mounts the IPC namespace's own message-queue file system there, so POSIX queues can be listed)
IPC_DIRS = ("/dev/shm", "/dev/mqueue")
SYSV_IPC = {"shm": "shmctl", "msg": "msgctl", "sem": "semctl"}  # /proc/sysvipc/KIND -> its libc call
#: the kernel keyrings that outlive a process: per uid (user, user-session, persistent), not namespaced
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEY_SPEC_SESSION, KEY_SPEC_USER, KEY_SPEC_USER_SESSION = -3, -4, -5
KEYCTL_JOIN_SESSION, KEYCTL_SETPERM, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 1, 5, 7, 22


def _keyctl(*args) -> int:
    import ctypes

    number = SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        return -1
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(number, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def new_session_keyring() -> None:
    """This process (and what it starts) gets a new, empty session keyring: not the one of the process
    that started it, which every run would otherwise share (and could leave keys in)."""
    _keyctl(KEYCTL_JOIN_SESSION, None)


def clear_keyrings() -> None:
    """Empty this uid's keyrings that outlive its processes (user, user-session, persistent) and this
    process's session keyring. A run may have taken the permission to clear away (``keyctl setperm``):
    their owner may always set it back."""
    for spec in (KEY_SPEC_USER, KEY_SPEC_USER_SESSION, KEY_SPEC_SESSION):
        _keyctl(KEYCTL_SETPERM, spec, 0x3F3F0000)
        _keyctl(KEYCTL_CLEAR, spec)
    persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_SESSION)
    if persistent > 0:
        _keyctl(KEYCTL_SETPERM, persistent, 0x3F3F0000)
        _keyctl(KEYCTL_CLEAR, persistent)
        _keyctl(KEYCTL_CLEAR, KEY_SPEC_SESSION)
    # Keys left in a session keyring of a run that ended are unreachable, but still listed (their
    # descriptions readable) until the kernel's collector takes them, a second or two later: wait for it.
    deadline = time.monotonic() + 5
    while own_keys(os.getuid()) and time.monotonic() < deadline:
        time.sleep(0.05)


def own_keys(uid: int) -> list[str]:
    """Keys of ``uid`` this process can see that are not empty keyrings (``/proc/keys``)."""
    out = []
    try:
        lines = open("/proc/keys").read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(None, 8)
        if len(parts) < 9 or parts[5] != str(uid):
            continue
        kind, desc = parts[7], parts[8]
        if kind == "keyring" and desc.rstrip().endswith(": empty"):
            continue
        out.append(f"{kind} {desc.strip()}")
    return out


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


def _tmp_entries(uid: int) -> list[str]:
    """What ``uid`` left in the sandbox's own ``/tmp`` (a tmpfs of this sandbox: not the mount points
    bubblewrap made there, which are root's, nor what this server keeps there)."""
    out = []
    try:
        top = os.lstat("/tmp")
        names = os.listdir("/tmp")
    except OSError:
        return out
    for name in names:
        path = os.path.join("/tmp", name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_dev == top.st_dev and st.st_uid == uid:
            out.append(path)
    return out


def _remove(path: str) -> None:
    import shutil
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            # a folder its owner made read-only (mode 0500) is still its owner's to remove: writable first
            # (this runs as the runs' uid inside the sandbox: it can reach nothing a run could not)
            for root, dirs, _ in os.walk(path):
                for d in [root, *(os.path.join(root, n) for n in dirs)]:
                    try:
                        if not os.path.islink(d):
                            os.chmod(d, 0o700)
                    except OSError:
                        pass
            shutil.rmtree(path, ignore_errors=True)  # by file descriptor: links inside are removed, not followed
        else:
            os.unlink(path)
    except OSError:
        pass


def _clean_ipc() -> None:
    """Remove what a run may leave for the next one outside its files: /dev/shm, POSIX message queues
    and System V IPC."""
    paths, ids = _ipc_objects()
    for path in paths:
        _remove(path)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for kind, ident in ids:
            getattr(libc, SYSV_IPC[kind])(ident, 0, 0)  # IPC_RMID
    except Exception:  # noqa: BLE001
        pass


def leftovers(uid: int) -> list[str]:
    """Everything of ``uid`` that would reach the next submission: processes, files in ``/tmp``,
    shared memory, message queues, System V IPC objects, keys. (Empty after :func:`_reset`.)"""
    me = os.getpid()
    left = [f"process {p}" for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me, os.getppid())]
    left += _tmp_entries(uid)
    paths, ids = _ipc_objects()
    left += paths + [f"System V {kind} {ident}" for kind, ident in ids]
    left += [f"key {k}" for k in own_keys(uid)]
    return left


def _as_runs(uid: int, work) -> list[str]:
    """``work(uid)`` in a fork dropped to the runs' uid (they own what is to be removed); what it
    returns (a list of strings) comes back over a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            drop_to(uid)
            out = work(uid) or []
            os.write(w, json.dumps(out).encode()[:60000])
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    try:
        return list(json.loads(data or b"[]"))
    except ValueError:
        return ["the clean-up did not report"]


def _clean(uid: int) -> None:
    """After a run: every process it left killed; its shared memory and IPC objects removed (by a
    helper with the runs' uid: they own them)."""
    _kill_everything_else()
    if _ipc_objects() == ([], []):  # nothing to remove: no fork of this (large) server for it
        return
    _as_runs(uid, lambda _: _clean_ipc())


def _reset_work(uid: int) -> list[str]:
    for path in _tmp_entries(uid):
        _remove(path)
    _clean_ipc()
    clear_keyrings()
    return leftovers(uid)


def _reset(uid: int) -> list[str]:
    """At the end of a submission: everything of it goes (processes, ``/tmp``, shared memory, message
    queues, System V IPC, the runs' uid's keys); returns what is still there (nothing, or the grader
    starts a new sandbox)."""
    _kill_everything_else()
    return _as_runs(uid, _reset_work)


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
    warmed: list[str] = []
    forked = False
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
                forked = True
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
            elif op == "warm":
                if not forked:
                    warm([str(x) for x in req.get("what", [])][:8], warmed)
                _send(sock, {"ev": "warmed", "warmed": warmed, "refused": forked, "os_threads": os_threads()})
            elif op in ("clean", "reset"):
                left = _clean(uid) if op == "clean" else _reset(uid)
                for pid in list(children):
                    _send(sock, {"ev": "exited", "id": children.pop(pid), "status": -signal.SIGKILL})
                _send(sock, {"ev": "clean", "left": left or []})


if __name__ == "__main__":
    if sys.argv[1:] == ["--clear-keyrings"]:
        # a session keyring of its own first, not its starter's: joined here rather than in a preexec_fn,
        # which Python 3.12+ refuses at interpreter shutdown, when the last workspace is swept
        new_session_keyring()
        clear_keyrings()
        sys.exit(0)
    sys.exit(serve(int(sys.argv[1]), int(sys.argv[2])))
