"""The sandbox every submitted notebook runs in: bubblewrap, limits, and a kernel that lives inside.

What a submission's process tree sees and may do (each item is tested by a hostile submission in
``tests/hostile/``):

* **files** — a read-only view of the system (``/usr``, ``/lib*``, ``/bin``, ``/etc``), the Python
  installation, the course's virtual environment and the *student* package ``autograder/``; one
  writable scratch folder (its working directory and ``HOME``) and a private ``/tmp``. Nothing else
  exists in it: not ``source/``, not ``instructor/``, not the gradebook, not other submissions, not
  the grades.
* **no network** (own network namespace), own PID namespace (it cannot see or signal the grader;
  when the sandbox ends, every process it started ends with it), own IPC and UTS namespaces, an
  unprivileged user (uid 65534 inside), no capabilities, a new session (no terminal injection).
* **limits** — memory and number of processes (a cgroup when the grader may make one, else
  ``RLIMIT_AS``/``RLIMIT_NPROC``), CPU time (``RLIMIT_CPU``), file size (``RLIMIT_FSIZE``), open
  files, no core dumps, and a wall-clock limit per submission enforced by the grader.

Where bubblewrap cannot run, grading says so once, loudly, and falls back to the limits alone.

The limits are set in ``nbgrader_config.py`` next to the other grading settings (``c.Sandbox.*``).

The kernel that nbgrader drives runs inside the sandbox: a kernelspec whose command is this file's
:func:`kernel_main`, which execs ``bwrap ... python -m ipykernel_launcher``; kernel and grader talk
over Unix sockets in a folder shared with the sandbox (``transport=ipc``), since the sandbox has no
network. This file must stay importable as a plain script (no relative imports at module level).
"""
from __future__ import annotations

import functools
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STUDENT_PACKAGE = REPO / "autograder"
KERNEL_NAME = "course-sandbox"
CGROUP_ROOT_V1 = Path("/sys/fs/cgroup")
CGROUP_PARENT = "course-grading"   # every sandbox's cgroup is a child of this one, named by 12 hex digits
GIB = 1 << 30


@dataclass
class Limits:
    memory_bytes: int = 4 * GIB         # whole sandbox (cgroup), or per process (RLIMIT_AS fallback)
    processes: int = 256                # processes and threads in the sandbox
    cpu_seconds: int = 900              # CPU time of each process
    wall_seconds: float = 900.0         # one submission, all its runs together
    file_bytes: int = 256 << 20         # largest file it may write
    open_files: int = 1024
    case_seconds: float = 60.0          # one probe call in the confirmation run
    cell_seconds: float = 180.0         # one cell (nbgrader's Execute.timeout)
    output_bytes: int = 1 << 20         # outputs kept per cell in the autograded notebook
    notebook_output_bytes: int = 8 << 20  # outputs kept per notebook, all cells together
    disk_bytes: int = 512 << 20         # everything one submission writes, all its runs together
    result_bytes: int = 64 << 20        # the confirmation's result files of one run, unpacked
    host_uid: int = 61000               # first host uid the sandbox runs as when grading as root
    zygote: bool = True                 # one pre-started sandbox per worker, a fork per run (:mod:`.zygote`)

    @classmethod
    def from_config(cls, config=None) -> "Limits":
        """The ``c.Sandbox.*`` settings of ``nbgrader_config.py`` (or the defaults)."""
        if config is None:
            try:
                from instructor.layout import load_config

                config = load_config(REPO)
            except Exception:  # noqa: BLE001 - defaults when run outside the course
                config = {}
        section = config.get("Sandbox", {}) if hasattr(config, "get") else {}
        lim = cls()
        gb = section.get("memory_gb")
        if gb:
            lim.memory_bytes = int(float(gb) * GIB)
        for key in ("processes", "cpu_seconds", "file_bytes", "open_files", "output_bytes",
                    "notebook_output_bytes", "host_uid"):
            if key in section:
                setattr(lim, key, int(section[key]))
        for key, attr in (("disk_mb", "disk_bytes"), ("result_mb", "result_bytes")):
            if key in section:
                setattr(lim, attr, int(float(section[key]) * (1 << 20)))
        if "wall_minutes" in section:
            lim.wall_seconds = float(section["wall_minutes"]) * 60
        timeout = config.get("Execute", {}).get("timeout") if hasattr(config, "get") else None
        if timeout:
            lim.cell_seconds = float(timeout)
        if "case_seconds" in section:
            lim.case_seconds = float(section["case_seconds"])
        if "zygote" in section:
            lim.zygote = bool(section["zygote"])
        return lim

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, text: str | None) -> "Limits":
        return cls(**json.loads(text)) if text else cls()


# --------------------------------------------------------------------------- what is available

_STATUS: dict | None = None


def python() -> str:
    """The interpreter of the course environment (the grader's own)."""
    return sys.executable


def _python_prefix() -> Path:
    return Path(os.path.realpath(sys.executable)).parents[1]


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
                r = subprocess.run(bwrap_argv(Path(d), ["/bin/true"]), capture_output=True, timeout=30)
                st["bwrap"] = r.returncode == 0
                st["why"] = "" if st["bwrap"] else r.stderr.decode(errors="replace").strip()[:300]
            except (OSError, subprocess.TimeoutExpired) as err:
                st["why"] = str(err)
    st["cgroup"] = _cgroup_kind()
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


# --------------------------------------------------------------------------- cgroups

def _cgroup_kind() -> str | None:
    if os.geteuid() != 0:
        return None
    if (CGROUP_ROOT_V1 / "memory" / "cgroup.procs").exists() and os.access(CGROUP_ROOT_V1 / "memory", os.W_OK) \
            and (CGROUP_ROOT_V1 / "pids").is_dir():
        return "v1"
    if (CGROUP_ROOT_V1 / "cgroup.controllers").exists() and os.access(CGROUP_ROOT_V1, os.W_OK):
        return "v2"
    return None


class Cgroup:
    """A memory + pids cgroup for one sandbox run (when the grader runs as root)."""

    def __init__(self, limits: Limits, kind: str | None):
        self.kind, self.dirs = kind, []
        name = f"{CGROUP_PARENT}/{uuid.uuid4().hex[:12]}"
        try:
            if kind == "v1":
                mem, pids = CGROUP_ROOT_V1 / "memory" / name, CGROUP_ROOT_V1 / "pids" / name
                for d in (mem, pids):
                    d.mkdir(parents=True)
                    self.dirs.append(d)
                (mem / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
                (pids / "pids.max").write_text(str(limits.processes))
            elif kind == "v2":
                parent = CGROUP_ROOT_V1 / CGROUP_PARENT
                parent.mkdir(exist_ok=True)
                (CGROUP_ROOT_V1 / "cgroup.subtree_control").write_text("+memory +pids")
                (parent / "cgroup.subtree_control").write_text("+memory +pids")
                d = CGROUP_ROOT_V1 / name
                d.mkdir()
                self.dirs.append(d)
                (d / "memory.max").write_text(str(limits.memory_bytes))
                (d / "memory.swap.max").write_text("0") if (d / "memory.swap.max").exists() else None
                (d / "pids.max").write_text(str(limits.processes))
        except OSError:
            self.cleanup()
            self.kind, self.dirs = None, []

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def enter(self, pid: int | None = None) -> None:
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(pid or os.getpid()))

    def pids(self) -> set[int]:
        out = set()
        for d in self.dirs:
            try:
                out |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return out

    def oom_kills(self) -> int:
        """How many processes the memory limit has killed in this cgroup so far."""
        n = 0
        for d in self.dirs:
            for f in ("memory.oom_control", "memory.events"):
                try:
                    text = (d / f).read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        n += int(v or 0)
        return n

    def oom_killed(self) -> bool:
        if self.oom_kills() > 0:
            return True
        for d in self.dirs:
            try:
                if int((d / "memory.failcnt").read_text()) > 0 and not self.pids():
                    return True
            except (OSError, ValueError):
                pass
        return False

    def resume_all(self) -> None:
        """SIGCONT to every process of the sandbox: a submission that stops itself is woken up."""
        for p in self.pids():
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass

    def start_waking(self, every: float = 1.0) -> threading.Event:
        """Resume stopped processes every ``every`` seconds until the returned event is set."""
        stop = threading.Event()

        def loop():
            while not stop.wait(every):
                self.resume_all()

        threading.Thread(target=loop, daemon=True).start()
        return stop

    def cleanup(self) -> None:
        for _ in range(50):
            left = self.pids()
            if not left:
                break
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
        for d in self.dirs:
            try:
                d.rmdir()
            except OSError:
                pass


# --------------------------------------------------------------------------- bubblewrap

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
    ``python -m instructor.grading.sandbox`` reports the sandbox as root outside."""
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


def _drop_to(uid: int, command: list[str], keep: tuple[str, ...] = ()) -> list[str]:
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

    As root: privileged bubblewrap, every namespace but the user one, then :func:`_drop_to` the host
    ``uid`` (default :func:`sandbox_uid`). As another user: a user namespace (uid 65534 inside, the
    grader's own unprivileged uid outside)."""
    scratch = Path(scratch)
    if drops_privileges():
        uid = sandbox_uid() if uid is None else uid
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
                "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
        for cap in dict.fromkeys(("setuid", "setgid", "setpcap", *keep_caps)):  # what the drop to `uid` needs
            argv += ["--cap-add", "CAP_" + cap.upper()]
        command = _drop_to(uid, command, tuple(keep_caps))
    else:
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
                "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    # /tmp: a sized tmpfs of this sandbox, never a host folder (the pre-started sandbox empties it between
    # submissions from inside); /dev/mqueue: the IPC namespace's POSIX queues, so that they can be listed
    argv += ["--clearenv", "--proc", "/proc", "--dev", "/dev", "--mqueue", "/dev/mqueue",
             "--perms", "1777", "--size", str(int(tmp_bytes or Limits().disk_bytes)), "--tmpfs", "/tmp"]
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
    return argv


def _unsandboxed_env(scratch: Path, env: dict | None) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("JPY_")}
    e.update({"HOME": str(scratch), "IPYTHONDIR": str(scratch / ".ipython"), "MPLBACKEND": "Agg",
              "MPLCONFIGDIR": str(scratch / ".matplotlib"), "PYTHONNOUSERSITE": "1"})
    e.update(env or {})
    return e


def apply_rlimits(limits: Limits, cgroup_active: bool) -> None:
    """Resource limits for this process and everything it starts (call before exec)."""
    def setl(what, value):
        try:
            soft, hard = resource.getrlimit(what)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(what, (value, value))
        except (ValueError, OSError):
            pass

    setl(resource.RLIMIT_CPU, int(limits.cpu_seconds))
    setl(resource.RLIMIT_FSIZE, int(limits.file_bytes))
    setl(resource.RLIMIT_CORE, 0)
    setl(resource.RLIMIT_NOFILE, int(limits.open_files))
    if not cgroup_active:
        # counted per real uid: as root it takes effect once the sandbox drops to its own uid
        setl(resource.RLIMIT_NPROC, int(limits.processes))
        if not any(Path("/dev").glob("nvidia*")):  # CUDA maps huge virtual ranges
            setl(resource.RLIMIT_AS, int(limits.memory_bytes) + GIB)


@dataclass
class RunResult:
    returncode: int | None
    timed_out: bool
    sandboxed: bool
    seconds: float
    reason: str = ""


def describe_exit(code: int | None, cgroup: Cgroup | None, timed_out: bool, wall: float) -> str:
    if timed_out:
        return f"it ran past the wall-clock limit of {wall:.0f} s"
    if cgroup is not None and cgroup.oom_killed():
        return "it ran out of its memory limit"
    if code is None:
        return "it did not finish"
    if code < 0:
        sig = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        extra = {"SIGXCPU": " (CPU-time limit)", "SIGXFSZ": " (file-size limit)",
                 "SIGKILL": " (killed: memory limit or a crash)"}.get(sig, "")
        return f"it was ended by {sig}{extra}"
    if code > 128:
        return describe_exit(128 - code, cgroup, False, wall)
    return f"it exited with status {code}"


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
    uid = sandbox_uid(limits) if sandboxed and drops_privileges() else None
    if uid is not None:
        give_to(scratch, uid)
    argv = bwrap_argv(scratch, command, env=env, extra_ro=extra_ro, uid=uid,
                      tmp_bytes=limits.disk_bytes) if sandboxed else command

    def pre():
        os.setsid()
        new_session_keyring()
        if cgroup is not None and cgroup.active:
            cgroup.enter()
        apply_rlimits(limits, cgroup is not None and cgroup.active)

    t0 = time.monotonic()
    timed_out = False
    waking = cgroup.start_waking() if cgroup is not None and cgroup.active else None
    err_path = scratch / ".sandbox-stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, preexec_fn=pre, close_fds=True,
                                env=None if sandboxed else _unsandboxed_env(scratch, env))
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


#: what a uid's processes leave in the kernel's keyrings outlives them (keyrings are per uid, in no
#: namespace): cleared, as that uid, when a submission's workspace opens and closes (the pre-started
#: sandbox clears them itself)
_KEYRING_CLEANER = Path(__file__).resolve().with_name("zygote_server.py")


def clear_keyrings(uid: int) -> bool:
    """Empty the user, user-session and persistent keyrings of host ``uid`` (a sandbox's) as that uid."""
    if os.geteuid() != 0:
        return False
    argv = _drop_to(uid, [sys.executable, "-I", "-S", str(_KEYRING_CLEANER), "--clear-keyrings"])
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=30, cwd="/", preexec_fn=new_session_keyring).returncode == 0
    except (OSError, subprocess.SubprocessError):
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


# --------------------------------------------------------------------------- bounded disk

def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


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
        if drops_privileges() and self.clear_keys:
            clear_keyrings(sandbox_uid(self.limits))


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
    roots = roots if roots is not None else sorted({Path(tempfile.gettempdir()), Path("/var/tmp")})
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


# --------------------------------------------------------------------------- bounded results

class ResultTooLarge(ValueError):
    """A result file outside the limits: forged (or a runaway answer); never unpickled."""


MAX_RECORDS = 20_000       # tensors (storages) in one result file
MAX_PICKLE_BYTES = 4 << 20  # the pickle itself (structure, strings); tensors' bytes are separate records
MAX_NODES = 2_000_000      # lists, dicts, strings, numbers... in one loaded result, shared ones counted each time


def check_result_file(path: Path, max_bytes: int) -> int:
    """Check a ``torch.save`` file without unpickling it; return its unpacked size in bytes.

    Honest results are zip archives of *stored* (uncompressed) records, as ``torch.save`` writes them:
    a compressed record, more than :data:`MAX_RECORDS` records, a pickle over :data:`MAX_PICKLE_BYTES`
    or more than ``max_bytes`` unpacked is refused (:class:`ResultTooLarge`)."""
    import zipfile

    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise ResultTooLarge(f"{path.name} is {size >> 20} MiB on disk (limit {max_bytes >> 20} MiB)")
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError) as err:
        raise ResultTooLarge(f"{path.name} is not a result file ({err})") from None
    if len(infos) > MAX_RECORDS:
        raise ResultTooLarge(f"{path.name} holds {len(infos)} records (limit {MAX_RECORDS})")
    total = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ResultTooLarge(f"{path.name}: record {info.filename[:60]} is compressed (torch.save never does that)")
        if info.filename.endswith(".pkl") and info.file_size > MAX_PICKLE_BYTES:
            raise ResultTooLarge(f"{path.name}: its pickle is {info.file_size >> 20} MiB "
                                 f"(limit {MAX_PICKLE_BYTES >> 20} MiB)")
        total += info.file_size
    if total > max_bytes:
        raise ResultTooLarge(f"{path.name} unpacks to {total >> 20} MiB (limit {max_bytes >> 20} MiB)")
    return total


def check_loaded(value, max_bytes: int, max_nodes: int = MAX_NODES) -> None:
    """Walk a loaded result as the judge will, counting shared objects every time they are reached
    (a structure that shares its parts can be exponentially larger than its file), and tensors by the
    memory a dense copy would take (a stride-0 view of a small storage can claim any size)."""
    import torch

    budget = {"nodes": 0, "bytes": 0}
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        budget["nodes"] += 1
        if budget["nodes"] > max_nodes:
            raise ResultTooLarge(f"the result has more than {max_nodes} items")
        if depth > 64:
            raise ResultTooLarge("the result is nested more than 64 levels deep")
        if isinstance(v, torch.Tensor):
            budget["bytes"] += v.numel() * v.element_size()
            if budget["bytes"] > max_bytes:
                raise ResultTooLarge(f"the result's tensors would take more than {max_bytes >> 20} MiB")
        elif isinstance(v, (str, bytes)):
            budget["bytes"] += len(v)
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for kv in v.items() for x in kv)
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend((x, depth + 1) for x in v)


def load_data(path: Path, max_bytes: int = 64 << 20):
    """Read a result file written in the sandbox: plain data only (no pickled objects), and only once
    :func:`check_result_file` found it within the limits; the loaded value is walked by
    :func:`check_loaded` before anyone uses it. Raises :class:`ResultTooLarge` otherwise."""
    import torch

    check_result_file(path, max_bytes)
    value = torch.load(path, weights_only=True, map_location="cpu")
    check_loaded(value, max_bytes)
    return value


# --------------------------------------------------------------------------- the sandboxed kernel

def write_kernelspec(dest: Path) -> Path:
    """A kernelspec named :data:`KERNEL_NAME` under ``dest/kernels/``; put ``dest`` on JUPYTER_PATH."""
    spec = Path(dest) / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(Path(__file__).resolve()), "kernel", "{connection_file}"],
        "display_name": "Python 3 (course sandbox)", "language": "python", "interrupt_mode": "message",
    }, indent=1))
    return spec


def kernel_argv(connection_file: str) -> list[str]:
    """The sandboxed kernel's module and arguments (``python -m`` these)."""
    return ["ipykernel_launcher", "-f", connection_file, "--IPKernelApp.log_level=ERROR",
            "--HistoryManager.hist_file=:memory:"]


def kernel_main(connection_file: str) -> None:
    """The kernelspec's command: set limits and cgroup, then exec the kernel inside bubblewrap.

    Settings come from the grader through the environment: ``COURSE_SANDBOX_SCRATCH`` (the
    submission's scratch folder), ``COURSE_SANDBOX_RUN`` (the folder of the connection file and
    sockets), ``COURSE_SANDBOX_LIMITS``, ``COURSE_SANDBOX_CGROUP`` (a folder list, made by the grader)
    and ``COURSE_VERDICTS`` (the judge's verdicts, bound read-only).
    """
    scratch = Path(os.environ["COURSE_SANDBOX_SCRATCH"])
    rundir = Path(os.environ["COURSE_SANDBOX_RUN"])
    limits = Limits.from_env(os.environ.get("COURSE_SANDBOX_LIMITS"))
    sandboxed = os.environ.get("COURSE_SANDBOX_BWRAP") == "1"
    uid = sandbox_uid(limits) if sandboxed and drops_privileges() else None
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
    # The kernel's own banner and logs are not the grader's output: keep them in the run folder.
    log = os.open(str(rundir / "kernel.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    if sandboxed:
        argv = bwrap_argv(scratch, kernel, extra_ro=extra_ro, extra_rw=[rundir], env=env, uid=uid,
                          tmp_bytes=limits.disk_bytes)
        os.execvp(argv[0], argv)
    os.chdir(scratch)
    os.environ.update(_unsandboxed_env(scratch, env))
    os.execv(sys.executable, kernel)


_LAUNCHER = threading.local()


def use_kernel_launcher(launch) -> None:
    """On this thread, kernels start through ``launch(connection_file) -> Popen-like`` instead of the
    kernelspec's command (the pre-started sandbox of :mod:`.zygote`); ``None``: the kernelspec again."""
    _LAUNCHER.launch = launch


@functools.lru_cache(maxsize=None)
def _ready_client_class():
    from queue import Empty

    from jupyter_client.asynchronous import AsyncKernelClient

    class ReadyClient(AsyncKernelClient):
        """jupyter_client's kernel client, ready as soon as the kernel answers.

        Its own ``wait_for_ready`` ends by waiting until IOPub has been quiet for 0.2 s — 0.2 s of every
        notebook, idle. nbclient reads only the IOPub messages whose parent is the cell it runs, so the
        status messages of the handshake may stay queued."""

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


def _kernel_manager_class():
    from jupyter_client.manager import AsyncKernelManager

    class SandboxKernelManager(AsyncKernelManager):
        """Connection file and IPC sockets in the folder shared with the sandbox; the kernel is ready
        when it answers, and found ended within milliseconds (jupyter_client polls every 0.1 s)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            rundir = Path(os.environ["COURSE_SANDBOX_RUN"])
            self.transport = "ipc"
            self.connection_file = str(rundir / f"kernel-{uuid.uuid4().hex[:8]}.json")
            self.ip = str(rundir / "k")
            self.client_factory = _ready_client_class()
            # made on the grading thread; the kernel may be started from another (run_sync)
            self.course_launch = getattr(_LAUNCHER, "launch", None)

        async def _async_finish_shutdown(self, waittime=None, pollinterval: float = 0.1, restart: bool = False):
            return await super()._async_finish_shutdown(waittime, min(pollinterval, 0.005), restart)

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if self.course_launch is None:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            prov = self.provisioner
            proc = self.course_launch(self.connection_file)
            prov.process, prov.pid, prov.pgid = proc, proc.pid, None
            prov.cwd = os.environ.get("COURSE_SANDBOX_SCRATCH")
            self._reconcile_connection_info(prov.connection_info)

    return SandboxKernelManager


HUNG_CELL_SECONDS = 10        # a test cell whose function never returned in the confirmation run
HUNG_AFTER_LOOP_SECONDS = 30  # any cell, once an earlier cell ran into the per-cell limit


def source_key(source) -> str:
    import hashlib

    text = source if isinstance(source, str) else "".join(source)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _message_size(content: dict) -> int:
    """Bytes an output message would add to the notebook (roughly: its text and data)."""
    size = 0
    for key in ("text", "evalue", "ename"):
        size += len(str(content.get(key, "")))
    for tb in content.get("traceback") or []:
        size += len(str(tb))
    for part in ("data", "metadata"):
        for v in (content.get(part) or {}).values():
            size += len(v) if isinstance(v, str) else len(json.dumps(v, default=str))
    return size + 64


def _short_error_content(content: dict) -> dict:
    tb = [str(t)[:2000] for t in (content.get("traceback") or [])][-20:]
    return {**content, "evalue": str(content.get("evalue", ""))[:2000], "traceback": tb}


@functools.lru_cache(maxsize=None)
def sandboxed_execute_class():
    """nbgrader's Execute preprocessor, with the kernel in the sandbox and the grader in charge:

    * the notebook's kernel name is ignored (a made-up or missing kernel cannot stop grading);
    * past the submission's wall-clock limit no further cell runs (each gets a one-line error);
    * a cell that ends the kernel (``os._exit``, ``exit()``, a crash, the memory limit) gets an error
      output saying so, the kernel is restarted, the cells before it are run again (at most three
      times per submission), and grading goes on: the submission is graded as far as it ran;
    * outputs beyond ``Limits.output_bytes`` per cell are cut.
    """
    from nbclient.exceptions import DeadKernelError
    from nbformat.v4 import new_output
    from nbgrader.preprocessors import Execute

    class SandboxedExecute(Execute):
        max_restarts = 3

        def preprocess(self, nb, resources=None, km=None):
            self.kernel_name = KERNEL_NAME
            self.kernel_manager_class = _kernel_manager_class()
            self._limits = Limits.from_env(os.environ.get("COURSE_SANDBOX_LIMITS"))
            self._deadline = time.monotonic() + float(os.environ.get("COURSE_SANDBOX_WALL", self._limits.wall_seconds))
            self._restarts, self._ran = 0, []
            self._nb_used, self._cell_used, self._cut_cells = 0, 0, {}
            hung = json.loads(os.environ.get("COURSE_HUNG") or "{}")  # from the confirmation run
            self._hung, self._hung_cells = set(hung.get("tests", ())), set(hung.get("cells", ()))
            self._loop_seen = False  # a cell already ran into the per-cell limit here
            self._skipped_hung = False  # a cell that never returned in the confirmation was left out
            self.timeout_func = self._cell_timeout
            self.course_flags = []
            self._asked_exit = False
            self.on_cell_executed = self._note_exit_request
            type(self).last_flags = self.course_flags
            return super().preprocess(nb, resources, km)

        def _note_exit_request(self, cell=None, cell_index=None, execute_reply=None):
            """IPython's ``exit()`` / ``quit()`` ends the kernel 0.1 s *after* the cell's reply, which says
            so in its payload. Noted here, so that the kernel's end is met at this cell — not left to
            whichever later cell finds the kernel dead, or to none when the notebook ends within 0.1 s."""
            for p in ((execute_reply or {}).get("content") or {}).get("payload") or []:
                if isinstance(p, dict) and p.get("source") == "ask_exit" and not p.get("keepkernel"):
                    self._asked_exit = True

        def _exit_requested(self) -> bool:
            """The cell just run asked the kernel to end: wait (at most 2 s) for it to be gone."""
            from jupyter_core.utils import run_sync

            if not self._asked_exit:
                return False
            self._asked_exit = False
            end = time.monotonic() + 2
            while time.monotonic() < end and run_sync(self.km.is_alive)():
                time.sleep(0.01)
            return True

        def _cell_timeout(self, cell):
            """The confirmation already saw the function a test cell calls never return: that cell gets
            :data:`HUNG_CELL_SECONDS`, not the full cell limit (its points are lost either way)."""
            gid = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
            if gid in self._hung or source_key(cell.get("source", "")) in self._hung_cells:
                return min(int(self.timeout or HUNG_CELL_SECONDS), HUNG_CELL_SECONDS)
            if self._loop_seen:
                return min(int(self.timeout or HUNG_AFTER_LOOP_SECONDS), HUNG_AFTER_LOOP_SECONDS)
            return self.timeout

        def _error(self, cell, name, text):
            cell.outputs.append(new_output("error", ename=name, evalue=text, traceback=[f"{name}: {text}"]))

        def _watchdog_kill(self):
            try:
                self.km.provisioner.process.kill() if self.km.provisioner else None
            except Exception:  # noqa: BLE001
                pass

        def output(self, outs, msg, display_id, cell_index):
            """Outputs are counted as they arrive, per cell and per notebook: past either cap they are
            dropped before they are kept in memory. Errors and stderr are always kept (shortened): they
            decide whether a test cell failed."""
            content = msg.get("content") or {}
            size = _message_size(content)
            notebook_full = self._nb_used + size > self._limits.notebook_output_bytes
            if notebook_full or self._cell_used + size > self._limits.output_bytes:
                if notebook_full or cell_index not in self._cut_cells:
                    self._cut_cells[cell_index] = "notebook" if notebook_full else "cell"
                kind = msg.get("msg_type")
                if kind == "error":
                    msg = {**msg, "content": _short_error_content(content)}
                elif kind == "stream" and content.get("name") == "stderr":
                    msg = {**msg, "content": {**content, "text": str(content.get("text", ""))[:1000]}}
                else:
                    return None
                size = _message_size(msg["content"])
            self._cell_used += size
            self._nb_used += size
            return super().output(outs, msg, display_id, cell_index)

        def preprocess_cell(self, cell, resources, index):
            if cell.cell_type != "code":
                return cell, self.resources
            self._cell_used = 0
            gid = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
            if gid in self._hung or source_key(cell.get("source", "")) in self._hung_cells:
                # it never returned in the confirmation run: not called again (an endless loop costs once)
                cell.outputs = []
                self._error(cell, "NotRunAgain", "this cell never returned in the grader's confirmation run "
                                                 "(an endless loop?): it was not run again")
                if not self._skipped_hung:
                    self._skipped_hung = True
                    self.course_flags.append(f"cell {index + 1} (and any other that never returned in the confirmation "
                                             "run) was not run again in the kernel: look for a loop that never ends")
                return cell, self.resources
            for attempt in (0, 1):
                left = self._deadline - time.monotonic()
                if left <= 0:
                    cell.outputs = []
                    self._error(cell, "TimeLimit", "not run: the submission used up its time limit")
                    if not any("time limit" in f for f in self.course_flags):
                        self.course_flags.append(f"stopped at cell {index + 1}: the submission used up its "
                                                 f"wall-clock limit ({self._limits.wall_seconds:.0f} s)")
                    return cell, self.resources
                timer = threading.Timer(left, self._watchdog_kill)
                timer.daemon = True
                timer.start()
                try:
                    cell, res = super().preprocess_cell(cell, resources, index)
                except (DeadKernelError, RuntimeError) as err:
                    if isinstance(err, RuntimeError) and "kernel" not in str(err).lower():
                        raise
                    timed_out = time.monotonic() >= self._deadline
                    if timed_out or self._restarts >= self.max_restarts:
                        why = ("the submission's time limit ended it" if timed_out else
                               "the kernel died again and was not restarted (too many restarts)")
                        cell.outputs = []
                        self._error(cell, "KernelDied", why)
                        self.course_flags.append(f"cell {index + 1}: {why}")
                        self._deadline = time.monotonic()
                        return cell, self.resources
                    self._restarts += 1
                    self._restart_and_replay()
                    if attempt == 0:
                        cell.outputs = []  # the kernel may have died of an earlier cell (exit()): try once more
                        continue
                    cell.outputs = []
                    self._error(cell, "KernelDied", "this cell ended the Python process (os._exit, exit(), a crash "
                                                    "or the memory limit); it was skipped and grading went on")
                    self.course_flags.append(f"cell {index + 1} ended the Python process (os._exit, exit(), a crash "
                                             "or the memory limit); the kernel was restarted")
                    return cell, self.resources
                finally:
                    timer.cancel()
                if any(o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])):
                    # an endless loop the interrupt did not stop: start afresh without this cell
                    self.course_flags.append(f"cell {index + 1} ran past the per-cell time limit ({self._cell_timeout(cell)} s); "
                                             "the kernel was restarted")
                    self._loop_seen = True
                    if self._restarts < self.max_restarts and time.monotonic() < self._deadline:
                        self._restarts += 1
                        self._watchdog_kill()
                        self._restart_and_replay()
                    else:
                        self._deadline = time.monotonic()
                elif self._exit_requested():
                    self.course_flags.append(f"cell {index + 1} ended the Python process after it finished (exit() "
                                             "or quit()); the kernel was restarted without it")
                    if self._restarts < self.max_restarts:  # else the next cell meets the ended kernel
                        self._restarts += 1
                        self._restart_and_replay()
                else:
                    self._ran.append(cell)
                self._cap_outputs(cell, index)
                return cell, res
            return cell, self.resources

        def _alive(self, source: str = "") -> bool:
            """Is the kernel still there after ``source`` ran? A cell that may end it later (exit(),
            signals) is watched for a second: ipykernel stops shortly after replying."""
            from jupyter_core.utils import run_sync

            suspicious = any(w in source for w in ("exit", "kill", "signal", "abort", "quit"))
            for _ in range(12 if suspicious else 1):
                if not run_sync(self.km.is_alive)():
                    return False
                time.sleep(0.1 if suspicious else 0)
            return True

        def _restart_and_replay(self):
            """A fresh kernel with the cells that ran before; a cell that kills it again is dropped."""
            from jupyter_core.utils import run_sync

            for _ in range(self.max_restarts + 1):
                try:
                    if self.kc is not None:
                        self.kc.stop_channels()
                    run_sync(self.km.restart_kernel)(now=True)
                    self.start_new_kernel_client()
                    culprit, before = None, None
                    for prev in list(self._ran):
                        try:
                            run_sync(self.kc.execute_interactive)(
                                prev.source, store_history=False, allow_stdin=False, output_hook=lambda msg: None,
                                timeout=max(1.0, min(self.timeout or 180, self._deadline - time.monotonic())))
                        except TimeoutError:
                            if run_sync(self.km.is_alive)():
                                raise
                            culprit = before or prev  # it died of the cell before (exit() after its reply)
                            break
                        if not self._alive(prev.source):
                            culprit = prev
                            break
                        before = prev
                    if culprit is None:
                        return
                    self._ran.remove(culprit)
                    self.course_flags.append("a cell ended the Python process after it finished (e.g. exit()); "
                                             "it was left out when the kernel was restarted")
                except Exception as err:  # noqa: BLE001
                    self.course_flags.append(f"the kernel could not be restarted ({type(err).__name__}); grading stopped")
                    self._deadline = time.monotonic()
                    return

        def _cap_outputs(self, cell, index=None):
            """Say where outputs were cut (and why), on the cell where it happened; keep every error."""
            cap, used, kept, cut = self._limits.output_bytes, 0, [], index in self._cut_cells
            for out in cell.get("outputs", []):
                size = len(json.dumps(out, default=str))
                if used + size > cap and out.get("output_type") != "error":
                    cut = True
                    continue
                used += size
                kept.append(out)
            if cut:
                notebook_full = self._cut_cells.get(index) == "notebook"
                why = (f"the notebook's outputs passed {self._limits.notebook_output_bytes >> 10} KiB" if notebook_full
                       else f"over {cap >> 10} KiB in this cell")
                kept.append(new_output("stream", name="stdout", text=f"\n... output cut by the grader: {why} ...\n"))
                flag = (f"outputs over {self._limits.notebook_output_bytes >> 10} KiB per notebook were cut "
                        f"(from cell {index + 1 if index is not None else '?'} on)" if notebook_full
                        else f"outputs over {cap >> 10} KiB per cell were cut")
                if not any(f.split(" (")[0] == flag.split(" (")[0] for f in self.course_flags):
                    self.course_flags.append(flag)
            cell.outputs = kept

    return SandboxedExecute


_PROBE = r"""
import json, os
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
inside, outside, _ = open("/proc/self/uid_map").read().split()[:3]
closed = {}
for p in ("/etc/shadow", "/root/.bashrc", "/root/.profile", "/proc/1/environ", "/etc/ssh/ssh_host_ed25519_key"):
    try:
        open(p, "rb").read(1)
        closed[p] = "READABLE"
    except OSError as err:
        closed[p] = type(err).__name__
vfs = os.statvfs("/tmp")
print(json.dumps({"uid inside": os.getuid(), "host uid": int(outside) + os.getuid() - int(inside),
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
            uid = sandbox_uid(limits) if drops_privileges() else None
            if uid is not None:
                give_to(space / "run", uid)
            r = subprocess.run(bwrap_argv(space / "run", [python(), "probe.py"], uid=uid, tmp_bytes=limits.disk_bytes),
                               capture_output=True, text=True, timeout=60)
            try:
                out["sandboxed process"] = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                out["sandboxed process"] = {"error": (r.stderr or r.stdout)[-300:]}
    sp = out.get("sandboxed process", {})
    out["never root outside"] = bool(sp) and sp.get("host uid", 0) != 0 and \
        all(v != "READABLE" for v in sp.get("root's files", {"?": "READABLE"}).values())
    return out


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "kernel":
        kernel_main(sys.argv[2])
    else:
        print(json.dumps(report(), indent=1))
