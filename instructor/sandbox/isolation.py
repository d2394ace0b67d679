"""The bubblewrap command line of a sandboxed run, and the host uid it runs as.

What a submission's process tree sees and may do (each item is tested by a hostile submission in
``tests/hostile/``):

* **files** — a read-only view of the system (``/usr``, ``/lib*``, ``/bin``, ``/etc``), the Python
  installation, the course's virtual environment and the *student* package ``autograder/``; one
  writable scratch folder (its working directory and ``HOME``) and a private, sized ``/tmp``. Nothing
  else exists in it: not ``source/``, not ``instructor/``, not the gradebook, not other submissions,
  not the grades.
* **no network** (own network namespace), own PID namespace (it cannot see or signal the grader;
  when the sandbox ends, every process it started ends with it), own IPC and UTS namespaces, an
  unprivileged user, no capabilities, a new session (no terminal injection), none of the grader's
  environment (:func:`sandbox_env`).

Grading as root, bubblewrap runs privileged and the sandboxed process drops to an unprivileged *host*
uid (:func:`sandbox_uid`, :func:`drop_to`) before anything of the submission runs; as another user,
a user namespace maps it to uid 65534 inside.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .limits import REPO, Limits

STUDENT_PACKAGE = REPO / "autograder"
#: the most a sandbox's POSIX shared memory (/dev/shm) may hold; /tmp's bound if that is smaller. Its pages
#: count against the sandbox's memory bound (its cgroup) as well.
SHM_BYTES = 64 << 20


def _python_prefix() -> Path:
    return Path(os.path.realpath(sys.executable)).parents[1]


def _device_binds() -> list[str]:
    out = []
    for dev in sorted(Path("/dev").glob("nvidia*")):
        out += ["--dev-bind", str(dev), str(dev)]
    return out


def drops_privileges() -> bool:
    """Grading as root: bubblewrap runs privileged (no user namespace) and the sandboxed process
    drops to an unprivileged *host* uid before anything of the submission runs. (Root starting
    bubblewrap with ``--unshare-user`` would map the sandbox user to host uid 0: owner checks on
    root's files would pass.) Where the host does not let root run bubblewrap privileged (no
    CAP_SYS_ADMIN in a container), the user-namespace mode is used and
    ``python -m instructor.sandbox`` reports the sandbox as root outside."""
    return os.geteuid() == 0 and _privileged_bwrap()


@functools.lru_cache(maxsize=None)
def _privileged_bwrap() -> bool:
    """Can this process run bubblewrap without a user namespace? (Probed once.)"""
    if not shutil.which("bwrap") or os.environ.get("COURSE_SANDBOX") == "off":
        return False
    try:
        r = subprocess.run(["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/",
                            "--proc", "/proc", "--dev", "/dev", "--cap-drop", "ALL", "--", "/bin/true"],
                           capture_output=True, timeout=30)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sandbox_uid(limits: "Limits | None" = None) -> int:
    """The host uid (and gid) a sandbox of this process runs as when grading as root: one of a
    range reserved by ``c.Sandbox.host_uid``, different for concurrent grading processes so that
    ``RLIMIT_NPROC`` counts each sandbox's processes alone."""
    return (limits or Limits()).host_uid + os.getpid() % 1000


_DROP_SNIPPET = ("import os,sys;u=int(sys.argv[1]);os.setgroups([]);os.setresgid(u,u,u);os.setresuid(u,u,u);"
                 "os.execv(sys.argv[2],sys.argv[2:])")


def server_uid(limits: "Limits | None" = None) -> int:
    """The host uid of a worker's pre-started sandbox (:mod:`.zygote`): not :func:`sandbox_uid`, the
    uid its runs drop to, so that a run cannot signal it (the range above ``c.Sandbox.host_uid``'s)."""
    return (limits or Limits()).host_uid + 1000 + os.getpid() % 1000


def drop_to(uid: int, command: list[str], keep: tuple[str, ...] = ()) -> list[str]:
    """``command`` run as host ``uid``/``gid``, no groups, no capabilities left (bounding set too),
    but for ``keep`` (names such as ``setuid``: the pre-started sandbox's server only; needs setpriv)."""
    setpriv = shutil.which("setpriv")
    if setpriv and keep:
        caps = "-all," + ",".join("+" + c for c in keep)
        return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", f"--bounding-set={caps}",
                f"--inh-caps={caps}", f"--ambient-caps={caps}", "--", *command]
    if setpriv:
        return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--bounding-set=-all",
                "--inh-caps=-all", "--", *command]
    return [sys.executable, "-I", "-S", "-c", _DROP_SNIPPET, str(uid), *command]


def _parents_to_make(targets: list[str], system: list[str]) -> list[str]:
    """Folders above the bind targets that bubblewrap would otherwise create (privileged, it makes
    them mode 0700: the unprivileged sandbox user could not reach the binds below)."""
    out = set()
    for t in targets:
        for parent in Path(t).parents:
            p = str(parent)
            if p in ("/", "/tmp") or any(p == s or p.startswith(s + "/") for s in system):
                continue
            if any(p == b or p.startswith(b + "/") for b in targets):
                continue
            out.add(p)
    return sorted(out, key=lambda p: (p.count("/"), p))


def sandbox_env(scratch: Path, env: dict | None = None) -> dict:
    """The whole environment of a sandboxed process working in ``scratch`` (nothing of the grader's)."""
    venv = Path(sys.prefix)
    base_env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(scratch), "LANG": "C.UTF-8",
                "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "IPYTHONDIR": str(scratch / ".ipython"), "MPLCONFIGDIR": str(scratch / ".matplotlib"),
                "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "TMPDIR": "/tmp"}
    for key in ("COURSE_DEVICE", "CUDA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(key):
            base_env[key] = os.environ[key]
    base_env.update(env or {})
    return base_env


def bwrap_argv(scratch: Path, command: list[str], *, extra_ro: list[Path] = (), extra_rw: list[Path] = (),
               env: dict | None = None, uid: int | None = None, tmp_bytes: int | None = None,
               keep_caps: tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap command line that runs ``command`` in ``scratch``.

    As root: privileged bubblewrap, every namespace but the user one, then :func:`drop_to` the host
    ``uid`` (default :func:`sandbox_uid`). As another user: a user namespace (uid 65534 inside, the
    grader's own unprivileged uid outside)."""
    scratch = Path(scratch)
    if drops_privileges():
        uid = sandbox_uid() if uid is None else uid
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
                "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
        for cap in dict.fromkeys(("setuid", "setgid", "setpcap", *keep_caps)):  # what the drop to `uid` needs
            argv += ["--cap-add", "CAP_" + cap.upper()]
        command = drop_to(uid, command, tuple(keep_caps))
    else:
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
                "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    # /tmp: a sized tmpfs of this sandbox, never a host folder (the pre-started sandbox empties it between
    # submissions from inside); /dev/mqueue: the IPC namespace's POSIX queues, so that they can be listed;
    # /dev/shm: POSIX shared memory, a sized tmpfs of this sandbox too (bubblewrap's own /dev/shm is a folder
    # no run may write: `tensor.share_memory_()`, a cell of assignment 2's lesson, failed in every graded
    # kernel, and every student's feedback showed its traceback). What a run leaves there is removed
    # between submissions, as /tmp's files are (zygote_server's reset).
    tmp = int(tmp_bytes or Limits().disk_bytes)
    argv += ["--clearenv", "--proc", "/proc", "--dev", "/dev", "--mqueue", "/dev/mqueue",
             "--perms", "1777", "--size", str(tmp), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(min(tmp, SHM_BYTES)), "--tmpfs", "/dev/shm"]
    system = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]
    for p in system:
        if os.path.lexists(p):
            argv += ["--ro-bind", p, p] if not os.path.islink(p) else ["--symlink", os.readlink(p), p]
    venv = Path(sys.prefix)
    ro = [_python_prefix(), venv, STUDENT_PACKAGE, *extra_ro]
    ro_binds = [p for p in dict.fromkeys(str(Path(p)) for p in ro)
                if os.path.exists(p) and not any(p == s or p.startswith(s + "/") for s in system)]
    rw_binds = [str(p) for p in [scratch, *extra_rw]]
    for parent in _parents_to_make(ro_binds + rw_binds, system):
        argv += ["--perms", "0755", "--dir", parent]
    for p in ro_binds:
        argv += ["--ro-bind", p, p]
    for p in rw_binds:
        argv += ["--bind", p, p]
    argv += _device_binds()
    for k, v in sandbox_env(scratch, env).items():
        argv += ["--setenv", k, v]
    argv += ["--chdir", str(scratch), "--", *command]
    # bubblewrap itself starts with an empty environment: its own process is pid 1 in the sandbox's pid
    # namespace, and /proc/1/environ, readable by the submission, would show the grader's (a hub token).
    return ["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", *argv] if os.path.exists("/usr/bin/env") else argv


def unsandboxed_env(scratch: Path, env: dict | None) -> dict:
    """The environment of a run where bubblewrap cannot run: the grader's (less Jupyter's), with the
    scratch folder as its home."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("JPY_")}
    e.update({"HOME": str(scratch), "IPYTHONDIR": str(scratch / ".ipython"), "MPLBACKEND": "Agg",
              "MPLCONFIGDIR": str(scratch / ".matplotlib"), "PYTHONNOUSERSITE": "1"})
    e.update(env or {})
    return e
