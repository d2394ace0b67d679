"""The writable space of one submission on the host, and what the sandbox's uid leaves behind.

* :class:`Workspace` — one folder per submission, a sized tmpfs when the grader may mount one
  (:func:`can_bound_disk`), so that everything a submission writes is bounded as a whole;
* :func:`give_to` — what the grader put there handed to the sandbox's host uid, by file descriptor
  (never by a path a submission could swap for a link);
* :func:`clear_keyrings`, :func:`new_session_keyring` — the kernel's keyrings are per uid, in no
  namespace: emptied when a workspace opens and closes, and never the grader's own;
* :func:`sweep_leftovers` — workspaces and cgroups of graders that were killed.
"""
from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import isolation
from .cgroups import CGROUP_PARENT, CGROUP_ROOT_V1
from .limits import Limits


@functools.lru_cache(maxsize=None)
def can_bound_disk() -> bool:
    """Can the grader mount a sized tmpfs per submission here (root with CAP_SYS_ADMIN)? (Probed once.)"""
    if os.geteuid() != 0 or os.environ.get("COURSE_SANDBOX_DISK") == "off":
        return False
    probe = Path(tempfile.mkdtemp(prefix="disk-probe-"))
    try:
        libc = _libc()
        if libc.mount(b"tmpfs", str(probe).encode(), b"tmpfs", 2 | 4, b"size=1048576,mode=0755") != 0:
            return False
        libc.umount2(str(probe).encode(), 2)
        return True
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def give_to(folder: Path, uid: int) -> None:
    """Hand ``folder`` and what the grader put in it to the sandbox's host uid (grading as root).

    Root never acts here by path: the folder is opened with ``O_NOFOLLOW``, every entry below it is
    reached through its parent's file descriptor (``dir_fd``, ``O_NOFOLLOW|O_DIRECTORY``) and changed
    with ``follow_symlinks=False``, so a folder swapped for a link while the walk runs (a process of
    the submission, racing it) stops the walk there instead of leading it onto the host. Only what
    root owns is handed over (what the grader wrote; a run cannot make a root-owned file), and never a
    file with a second hard link (one that names a file elsewhere)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if st.st_uid == 0:
            os.fchown(fd, uid, uid)
        _give_below(fd, uid, depth=0)
    finally:
        os.close(fd)


def _give_below(dir_fd: int, uid: int, depth: int) -> None:
    if depth > 64:
        return
    try:
        names = os.listdir(dir_fd)
    except OSError:
        return
    for name in names:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:  # swapped for a link (or gone) since it was listed: not followed
                continue
            try:
                sst = os.fstat(sub)
                if sst.st_uid == 0:
                    os.fchown(sub, uid, uid)
                _give_below(sub, uid, depth + 1)
            finally:
                os.close(sub)
        elif st.st_uid == 0 and st.st_nlink == 1 and not stat.S_ISLNK(st.st_mode):
            try:
                os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                pass


def open_log(path: Path) -> int:
    """A file descriptor to append to ``path``, a log in a folder a run could write, opened by root:
    never through a link (``O_NOFOLLOW``), never a FIFO or device (``O_NONBLOCK``, then ``fstat``), never a
    file with a second hard link. Whatever else is there is replaced by a new file; failing that, the
    log goes to ``/dev/null``."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_CREAT, 0o644)
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            os.set_blocking(fd, True)
            return fd
        os.close(fd)
    except OSError:
        pass
    try:
        os.unlink(path)  # unlink never follows the last component: a link goes, its target stays
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)


#: what a uid's processes leave in the kernel's keyrings outlives them (keyrings are per uid, in no
#: namespace): cleared, as that uid, when a submission's workspace opens and closes (the pre-started
#: sandbox clears them itself)
_KEYRING_CLEANER = Path(__file__).resolve().with_name("zygote_server.py")


def clear_keyrings(uid: int) -> bool:
    """Empty the user, user-session and persistent keyrings of host ``uid`` (a sandbox's) as that uid."""
    if os.geteuid() != 0:
        return False
    # The cleaner joins a session keyring of its own before it clears anything (no preexec_fn: Python
    # 3.12+ raises "preexec_fn not supported at interpreter shutdown", and the last workspace of a
    # selfgrade is swept then).
    argv = isolation.drop_to(uid, [sys.executable, "-I", "-S", str(_KEYRING_CLEANER), "--clear-keyrings"])
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=30, cwd="/").returncode == 0
    except (OSError, subprocess.SubprocessError, RuntimeError):
        return False


def new_session_keyring() -> None:
    """In a child before exec: a session keyring of its own, not the grader's (which every sandboxed
    run would share, and could leave keys in for the next one)."""
    try:
        import ctypes

        number = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
        if number is not None:
            ctypes.CDLL(None, use_errno=True).syscall(number, ctypes.c_long(1), None)  # KEYCTL_JOIN_SESSION_KEYRING
    except Exception:  # noqa: BLE001 - best effort: the per-submission clear still runs
        pass


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def private_parent(base: Path) -> Path:
    """``base/inplace-grading-<uid>``: a folder of this account's alone (0700), for workspaces that hold
    folders of mode 0777 (the sandbox's uid writes there). In a shared ``/var/tmp`` any account could
    otherwise reach them by path, and students may have shells on a hub. Bubblewrap binds what a run
    needs under a fresh root, so the modes of the folders above do not matter inside."""
    folder = Path(base) / f"inplace-grading-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(f"{folder}: not a folder of this account's (uid {os.geteuid()}): refusing to grade in it")
    if st.st_mode & 0o777 != 0o700:
        os.chmod(folder, 0o700, follow_symlinks=False)
    return folder


class Workspace:
    """The writable space of one submission, bounded as a whole.

    Grading as root, it is a tmpfs of ``Limits.disk_bytes`` mounted on a fresh folder: every run of the
    submission (confirmation, kernel, their scratch, sockets and results) writes there, writes past the
    bound fail inside the sandbox with ``ENOSPC``, and the host's disk does not move. Without root it is
    a plain temporary folder (``RLIMIT_FSIZE`` bounds each file; the sandbox's own ``/tmp`` is a sized
    tmpfs either way). ``with Workspace(limits) as path: ...``; ``.bounded`` says which it was.
    """

    def __init__(self, limits: "Limits | None" = None, prefix: str = "grade-", parent: str | None = None,
                 clear_keys: bool = True):
        self.limits = limits or Limits()
        self.clear_keys = clear_keys
        # the grader's pid in the name: what a grader that was killed leaves is found (:func:`sweep_leftovers`)
        self.path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
        self.bounded = False

    def __enter__(self) -> Path:
        os.chmod(self.path, 0o755)
        self._clear_keys()
        if can_bound_disk():
            opts = f"size={max(1 << 20, int(self.limits.disk_bytes))},mode=0755".encode()
            self.bounded = _libc().mount(b"tmpfs", str(self.path).encode(), b"tmpfs", 2 | 4, opts) == 0  # nosuid, nodev
        return self.path

    def __exit__(self, *exc) -> None:
        if self.bounded:
            libc = _libc()
            if libc.umount2(str(self.path).encode(), 0) != 0:
                libc.umount2(str(self.path).encode(), 2)  # MNT_DETACH: a process still holds a file
        shutil.rmtree(self.path, ignore_errors=True)  # by file descriptor (Linux): links inside are not followed
        self._clear_keys()

    def _clear_keys(self) -> None:
        if isolation.drops_privileges() and self.clear_keys:
            clear_keyrings(isolation.sandbox_uid(self.limits))


# --------------------------------------------------------------------------- leftovers of dead graders

#: the workspaces this module makes (:class:`Workspace`'s prefixes), named ``<prefix><grader's pid>-<random>``
WORKSPACE_PREFIXES = ("grade-", "confirm-", "course-zygote-", "sandbox-report-")
_LEFTOVER = re.compile(r"^(?:%s)(\d+)-[A-Za-z0-9_]+$" % "|".join(re.escape(p) for p in WORKSPACE_PREFIXES))
MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        pass
    return True


def sweep_leftovers(min_age: float = 120.0, roots: list[Path] | None = None,
                    cgroups: list[Path] | None = None) -> list[str]:
    """Remove what graders that died (killed, out of memory) left on this machine; returns what went.

    A grader removes its workspaces and cgroups when a run ends, and at its own end; one that is killed
    cannot. Its bounded workspaces stay mounted (each a tmpfs holding what a submission wrote, in the
    machine's memory) and its cgroups stay. A workspace's name carries its grader's pid: one whose
    grader is gone, a folder of this user (not a link), is unmounted and removed. A cgroup of this
    course with no process in it, made more than ``min_age`` seconds ago (a live grader fills its
    cgroup right after making it), is removed; the kernel refuses to remove one that has a process.
    """
    gone = []
    if roots is None:
        roots = sorted({Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/var/tmp") / f"inplace-grading-{os.geteuid()}"})
    for root in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            m = _LEFTOVER.match(name)
            if not m or _alive(int(m.group(1))):
                continue
            path = root / name
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if os.geteuid() == 0:
                _libc().umount2(str(path).encode(), MNT_DETACH | UMOUNT_NOFOLLOW)
            shutil.rmtree(path, ignore_errors=True)
            gone.append(str(path))
    if cgroups is None:
        cgroups = [CGROUP_ROOT_V1 / "memory" / CGROUP_PARENT, CGROUP_ROOT_V1 / "pids" / CGROUP_PARENT,
                   CGROUP_ROOT_V1 / CGROUP_PARENT]   # v1's two hierarchies, v2's one
    now = time.time()
    for parent in cgroups:
        try:
            children = [parent / n for n in os.listdir(parent) if re.fullmatch(r"[0-9a-f]{12}", n)]
        except OSError:
            continue
        for d in children:
            try:
                if now - d.stat().st_mtime < min_age or (d / "cgroup.procs").read_text().strip():
                    continue
                d.rmdir()
                gone.append(str(d))
            except OSError:
                continue
    return gone
