"""The root-owned grading service: formgrader, running as the grader account, hands it submissions.

Graded as the grader account (a hub's formgrader), the sandbox is bubblewrap without privileges:
the host identity of a submission is the grader account, memory and processes are per-process
rlimits, and nothing bounds the disk (docs/deploying.md, "threat model"). Graded as root, each
submission runs as a reserved uid, in a cgroup, on a tmpfs of its own. This service gives a hub the
second without giving the grader account root:

* **root runs it** (the hub starts it as a managed service, ``hub/jupyterhub_config.py``), from the
  checkout (root's, closed to other accounts): its own code, its own ``source/`` and hidden checks, its
  own ``nbgrader_config.py``. Nothing it imports or executes comes from the course folder the grader
  account writes.
* **a Unix socket** in a folder of root's, group the graders, 0750; the socket 0660. Each connection's
  peer is checked again by its credentials (``SO_PEERCRED``): root, or an account in the graders' group
  (looked up at each connection: a grader added later needs no restart).
* **JSON both ways**, never pickle: a request names the student and the assignment and carries the
  notebooks' bytes; the service reads no path the client names. Names are checked (no ``/``, no
  leading dot); the assignment must be one of the checkout's; the client's copy of the assignment must
  match the checkout's (a digest), or grading would use other hidden checks than the gradebook's.
* **the same grading** as a Dask worker on another machine (:func:`instructor.batch.parallel.execute`): the submission
  is graded in a private, root-owned course folder and the executed notebooks go back; the client (the
  grader account's process) records them in its gradebook (:func:`instructor.engine.pipeline.record`). Root writes
  nothing in the course folder.
* grading workers are kept between requests (their pre-started sandboxes with them); a submission that
  kills its worker is retried alone, on a fresh one, and flagged after two deaths.

Command line::

    sudo .venv/bin/python -m instructor.service serve --socket /srv/inplace-hub/grading-service/grading.sock \\
        --group inplace-graders [--jobs 2]
    python -m instructor.service report --socket PATH      # the service's sandbox, measured as it grades

A grading process uses it when ``COURSE_GRADING_SERVICE`` names the socket (the hub sets it for
formgrader): :func:`instructor.batch.course.grade` then sends every submission there.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import grp
import json
import os
import pwd
import re
import socket
import stat
import struct
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ..batch.client import (ENV, MAX_REPLY, MAX_REQUEST, ServiceError, ask, configured, grade_request,  # noqa: F401
                            peer, receive, result_from_json, result_to_json, send, source_digest, submitter)

REPO = Path(__file__).resolve().parents[2]
MAX_NOTEBOOKS = 20
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+\-]{0,99}$")
NOTEBOOK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+\- ]{0,150}\.ipynb$")
REQUEST_SECONDS = 60.0          # to send a whole request, once connected


# --------------------------------------------------------------------------- the server (root)

def pidfile_for(path: Path) -> Path:
    """Where the service serving ``path`` writes its pid: beside the socket, in the service's own folder."""
    return Path(path).with_name(Path(path).name + ".pid")


def write_pidfile(pidfile: Path) -> None:
    fd = os.open(pidfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()}\n")


def drop_pidfile(pidfile: Path) -> None:
    """Remove ``pidfile`` if it is this process's (a newer service's stays)."""
    with contextlib.suppress(OSError, ValueError):
        if int(Path(pidfile).read_text().split()[0]) == os.getpid():
            Path(pidfile).unlink()


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def serving(pid: int, path: Path) -> bool:
    """Is ``pid`` a grading service of this account's, serving the socket ``path``?"""
    argv = _cmdline(pid)
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return False
    if owner != os.geteuid() or "instructor.service" not in argv or "serve" not in argv:
        return False
    try:
        sock = argv[argv.index("--socket") + 1]
    except (ValueError, IndexError):
        return False
    return os.path.abspath(sock) == os.path.abspath(path)


def stale_services(path: Path) -> list[int]:
    """Other running services on the socket ``path``: the one its pidfile names, and any other found in
    /proc (one started before pidfiles were written)."""
    found = set()
    with contextlib.suppress(OSError, ValueError, IndexError):
        found.add(int(pidfile_for(path).read_text().split()[0]))
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found.add(int(entry))
    me = os.getpid()
    return sorted(pid for pid in found if pid not in (me, os.getppid()) and serving(pid, path))


def _gone(pid: int, path: Path, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not serving(pid, path):
            return True
        time.sleep(0.05)
    return not serving(pid, path)


def stop_stale(path: Path, *, grace: float = 5.0) -> list[int]:
    """End every other service on the socket ``path`` (SIGTERM, then SIGKILL after ``grace`` seconds):
    its grading workers watch it and end with it, and their sandboxes with them. The pids ended."""
    import signal

    pids = stale_services(path)
    for pid in pids:
        print(f"grading service: ending an earlier service on {path} (pid {pid}) before taking its socket",
              file=sys.stderr, flush=True)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in pids:
        if not _gone(pid, path, grace):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _gone(pid, path, grace)
    return pids


def exit_with_parent() -> None:
    """End this process (SIGTERM, as a hub's stop would) when its parent ends, however it ends: a hub
    killed by a signal or the OOM killer never stops its services, and a root service left behind
    keeps its socket's path and its pre-started sandboxes. The kernel's ``PR_SET_PDEATHSIG`` says so at
    once; a pidfd on the parent (or, without one, its pid polled) says so too, in case the parent
    thread that started this process ended before the parent did."""
    import signal

    parent = os.getppid()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    if parent == 1 or os.getppid() != parent:   # the parent went before the watch began
        os.kill(os.getpid(), signal.SIGTERM)
        return

    def watch() -> None:
        import select
        import time

        try:
            fd = os.pidfd_open(parent)
        except ProcessLookupError:
            fd = None
        except (AttributeError, OSError):
            while os.getppid() == parent:
                time.sleep(0.5)
            fd = None
        if fd is not None:
            select.select([fd], [], [])
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)                           # the stop did not end the process: end it
        os._exit(3)

    threading.Thread(target=watch, name="hub-watch", daemon=True).start()


def allowed(uid: int, group: str | None, uids: set[int]) -> bool:
    """Root, a uid named at start, or an account in the graders' ``group`` (looked up now)."""
    if uid == 0 or uid in uids:
        return True
    if not group:
        return False
    try:
        user = pwd.getpwuid(uid)
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        return False
    return gid == user.pw_gid or gid in os.getgrouplist(user.pw_name, user.pw_gid)


def _check_request(req: dict, assignments: dict[str, str]) -> tuple[str, str, dict]:
    student, assignment = req.get("student"), req.get("assignment")
    if not isinstance(student, str) or not NAME.match(student):
        raise ServiceError(f"student {student!r}: a name of letters, digits and _.@+- (not starting with . or -)")
    if assignment not in assignments:
        raise ServiceError(f"assignment {assignment!r} is not one of this service's: {', '.join(sorted(assignments))}")
    if req.get("source_digest") != assignments[assignment]:
        raise ServiceError(f"the course folder's source/{assignment} differs from the grading service's "
                           f"({REPO / 'source' / assignment}): the service grades with its own copy and hidden "
                           "checks. Copy the assignment there (or yours from there), then restart the service")
    notebooks = req.get("notebooks")
    if not isinstance(notebooks, dict) or not notebooks or len(notebooks) > MAX_NOTEBOOKS:
        raise ServiceError(f"notebooks: 1 to {MAX_NOTEBOOKS} file names with their bytes (base64)")
    out = {}
    for name, data in notebooks.items():
        if not isinstance(name, str) or not NOTEBOOK.match(name) or not isinstance(data, str):
            raise ServiceError(f"notebook {name!r}: a plain .ipynb file name (no folder) with base64 bytes")
        try:
            out[name] = base64.b64decode(data, validate=True)
        except ValueError:
            raise ServiceError(f"notebook {name!r}: its bytes are not base64") from None
    return student, assignment, out


class Server:
    """Grades what authorised peers send; one thread per connection, ``jobs`` grading workers."""

    def __init__(self, path: Path, *, group: str | None, uids: set[int] = frozenset(), jobs: int = 1):
        from ..layout import assignments, load_config
        from ..sandbox import Limits

        self.path, self.group, self.uids, self.jobs = Path(path), group, set(uids), max(1, jobs)
        self.limits = Limits.from_config(load_config(REPO))
        self.config_text = (REPO / "nbgrader_config.py").read_text() if (REPO / "nbgrader_config.py").is_file() else None
        self.assignments = {a: source_digest(REPO, a) for a in assignments()}
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.stopping = threading.Event()
        self.pidfile = pidfile_for(self.path)
        self._owns_path = False

    # ---------------------------------------------------------------- the socket
    def bind(self) -> None:
        """The socket in a folder of root's (group: the graders), made here; nothing in the way is followed."""
        folder = self.path.parent
        gid = grp.getgrnam(self.group).gr_gid if self.group else 0
        folder.mkdir(mode=0o750, parents=True, exist_ok=True)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise ServiceError(f"{folder}: must be a folder of this service's account (uid {os.geteuid()}), "
                               "not a link or another account's folder")
        os.chown(folder, os.geteuid(), gid, follow_symlinks=False)
        os.chmod(folder, 0o750)
        # another service on this socket (one a hub that died left running, with its sandboxes): ended
        # before its socket is taken over, so no root service outlives the hub that started it
        self.stale = stop_stale(self.path)
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(self.path)
            if not stat.S_ISSOCK(st.st_mode):
                raise ServiceError(f"{self.path}: something other than a socket is in the way")
            os.unlink(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(self.path))
        finally:
            os.umask(old)
        os.chown(self.path, os.geteuid(), gid, follow_symlinks=False)
        os.chmod(self.path, 0o660)
        sock.listen(16)
        self.sock = sock
        self._owns_path = True
        write_pidfile(self.pidfile)

    def serve_forever(self) -> None:
        if self.sock is None:
            self.bind()
        self._start_pool()
        print(f"grading service: {self.path} (group {self.group or '-'}; {self.jobs} worker(s); "
              f"assignments {', '.join(sorted(self.assignments))})", flush=True)
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                break
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def stop(self) -> None:
        """Stop serving and end the grading workers now (their pre-started sandboxes die with them): a
        submission being graded is not waited for, so a hub's stop takes a second, not a grading's length."""
        self.stopping.set()
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
        if self._owns_path:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._owns_path = False
        drop_pidfile(self.pidfile)
        pool, self._pool = self._pool, None
        if pool is not None:
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                with contextlib.suppress(Exception):
                    p.kill()

    # ---------------------------------------------------------------- one connection
    def handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                _pid, uid, _gid = peer(conn)
                if not allowed(uid, self.group, self.uids):
                    send(conn, {"error": f"uid {uid} may not use the grading service (only root and the group "
                                         f"{self.group or '(none)'})"})
                    return
                conn.settimeout(REQUEST_SECONDS)    # a request that does not come does not hold a thread forever
                req = receive(conn, MAX_REQUEST)
                conn.settimeout(None)
                op = req.get("op")
                if op == "hello":
                    send(conn, {"ok": True, "uid": os.geteuid(), "assignments": self.assignments,
                                "jobs": self.jobs, "repo": str(REPO)})
                elif op == "report":
                    from .. import sandbox

                    send(conn, {"ok": True, "report": sandbox.report(self.limits)})
                elif op == "grade":
                    student, assignment, notebooks = _check_request(req, self.assignments)
                    res = self.grade(student, assignment, notebooks)
                    send(conn, {"ok": True, "result": result_to_json(res)})
                else:
                    send(conn, {"error": f"unknown op {op!r} (hello, report, grade)"})
            except (ServiceError, OSError, struct.error) as err:
                with contextlib.suppress(OSError):
                    send(conn, {"error": str(err)})
            except Exception as err:  # noqa: BLE001 - one bad request never ends the service
                with contextlib.suppress(OSError):
                    send(conn, {"error": f"the service failed on this request: {type(err).__name__}: {err}"})

    # ---------------------------------------------------------------- grading
    def _start_pool(self) -> None:
        from ..batch.parallel import start_workers

        with self._lock:
            if self._pool is None:
                self._pool = start_workers(self.jobs, self.limits)

    def grade(self, student: str, assignment: str, notebooks: dict):
        from ..batch.parallel import DeadWorkerRule, WorkerDied, execute, start_workers

        args = (student, assignment, notebooks, self.config_text, dict(self.limits.__dict__), None, False)
        self._start_pool()
        pool = self._pool
        try:
            res = pool.submit(execute, *args).result()
        except BrokenProcessPool:
            # a worker died (this submission's, or another's beside it): a fresh pool for the others, and
            # this one retried alone, so that only a submission that kills its worker again is blamed
            with self._lock:
                if self._pool is pool:
                    self._pool = None

            def grade_alone():
                alone = start_workers(1, self.limits)
                try:
                    return alone.submit(execute, *args).result()
                except BrokenProcessPool:
                    raise WorkerDied(student) from None
                finally:
                    alone.shutdown(wait=False, cancel_futures=True)

            res = DeadWorkerRule().alone_until_graded(student, student, assignment, grade_alone)
        res.notes.append(f"graded by the root-owned grading service ({self.path}), in a private folder")
        return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m instructor.service", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the service (as root)")
    s.add_argument("--socket", required=True, help="where to listen (its folder is made root's, group --group, 0750)")
    s.add_argument("--group", help="the graders' group: its members may grade")
    s.add_argument("--allow-uid", type=int, action="append", default=[], help="a uid that may grade (repeatable)")
    s.add_argument("--jobs", type=int, default=1, help="grading workers (default 1)")
    s.add_argument("--exit-with-parent", action="store_true",
                   help="end when the process that started this one ends (the hub: however it ends)")
    r = sub.add_parser("report", help="the service's sandbox, measured where it grades")
    r.add_argument("--socket", default=configured(), required=configured() is None)
    h = sub.add_parser("hello", help="is the service there, and what does it grade?")
    h.add_argument("--socket", default=configured(), required=configured() is None)
    args = parser.parse_args(argv)
    if args.cmd == "serve":
        if os.geteuid() != 0:
            print("warning: not root: the service grades with the same sandbox as the grader account would "
                  "(run it as root for a cgroup, a tmpfs and a reserved uid per submission)", file=sys.stderr)
        import signal

        # A stop is SIGINT (a hub's first signal), then SIGTERM: both end the service at once, also where
        # SIGINT came ignored from the parent (a hub started in the background), which used to hold a
        # hub's stop for its interrupt timeout.
        def on_signal(*_):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        server = None
        try:
            if args.exit_with_parent:
                exit_with_parent()
            tmp = os.environ.get("TMPDIR")
            if tmp and not os.path.isdir(tmp):
                os.makedirs(tmp, mode=0o700)  # the workspaces' folder: this account's alone
            try:
                server = Server(Path(args.socket), group=args.group, uids=set(args.allow_uid), jobs=args.jobs)
                server.bind()
            except (ServiceError, KeyError, OSError) as err:
                print(f"error: {args.socket}: {err}", file=sys.stderr)
                return 2
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if server is not None:
                server.stop()   # the workers are killed: exiting waits for no submission being graded
        return 0
    try:
        reply = ask(args.socket, {"op": args.cmd})
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    reply.pop("ok", None)
    print(json.dumps(reply.get("report", reply), indent=1))
    return 0

