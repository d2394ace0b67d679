"""What one submission may use, and how a run that went past it is described.

* :class:`Limits` — memory and number of processes, CPU time, file size, open files, disk, outputs,
  result files and the wall clock of one submission; set in ``nbgrader_config.py`` next to the other
  grading settings (``c.Sandbox.*``);
* :func:`apply_rlimits` — the per-process resource limits, set in a sandboxed run's first process
  before it execs (memory and processes go to a cgroup instead when the grader may make one:
  :mod:`.cgroups`);
* :class:`RunResult` and :func:`describe_exit` — how a run ended, in words (which limit ended it).
"""
from __future__ import annotations

import json
import resource
import signal
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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


def describe_exit(code: int | None, cgroup, timed_out: bool, wall: float) -> str:
    """Why a run ended, in words: the wall clock, the memory limit (``cgroup``: its :class:`.cgroups.Cgroup` or None),
    a signal (and the limit that sends it) or its exit status."""
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
