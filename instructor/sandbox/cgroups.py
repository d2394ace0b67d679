"""The memory + pids cgroup of one sandboxed run, when the grader runs as root (v1 or v2).

Every sandbox's cgroup is a child of :data:`CGROUP_PARENT`, named by 12 hex digits (what a killed
grader leaves is found by that name: :func:`.workspace.sweep_leftovers`). Without one, memory and
processes are bounded per process (``RLIMIT_AS``/``RLIMIT_NPROC``: :func:`.limits.apply_rlimits`).
"""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

from .limits import Limits

CGROUP_ROOT_V1 = Path("/sys/fs/cgroup")
CGROUP_PARENT = "course-grading"   # every sandbox's cgroup is a child of this one, named by 12 hex digits


def cgroup_kind() -> str | None:
    """'v1' or 'v2' where this process may make cgroups (root, a writable hierarchy); else None."""
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
