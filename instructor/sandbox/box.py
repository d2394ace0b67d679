"""One submission's sandbox as one object: :class:`Sandbox`.

The engine asks for a sandbox with the submission's limits and gets one face, whichever sandbox this
machine gives it:

* **pre-started** (:mod:`.zygote`): a sandbox of this process that has imported torch and IPython
  once; each run is a fork of it, and it is held by this submission alone until the block ends;
* **fresh**: each run starts its own bubblewrap sandbox (:func:`instructor.sandbox.run`,
  :func:`.kernel.kernel_main`) in a bounded folder of the submission (:class:`.workspace.Workspace`);
  without bubblewrap, the limits alone (said once, loudly, by :func:`~instructor.sandbox.warn_if_unsandboxed`).

What the face offers::

    with Sandbox(limits) as box:          # the submission's folder: box.folder (bounded, root-owned)
        box.run("probe_driver.py", ["job.pt", "out"], scratch, wall_seconds=...)  # -> RunResult
        kernel = box.launch(verdicts)       # the kernel's box (.kernel.KernelBox): folders, kernelspec, cgroup
        box.kernel_env("zh_CN")             # what the kernel's process is told (start_kernel(env=...))
        with box.kernel_running(): ...      # the kernel's cgroup woken and cleaned up around its run
        box.status()                        # {'bwrap', 'cgroup', 'pre_started', 'why'}

Everything it knows is the submission's: two submissions graded at once in one process hold two
Sandbox objects and share nothing (``tests/test_per_submission_state.py``). It knows nothing of nbgrader,
torch or the checks: what runs in it is the engine's.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from . import zygote
from .cgroups import Cgroup
from .kernel import KernelBox, write_kernelspec
from .limits import Limits, RunResult
from .workspace import Workspace

__all__ = ["Sandbox"]


class Sandbox:
    """One submission's sandbox: pre-started when this machine allows it (``pre_started``), else fresh;
    the same face either way. Use it as a context manager: the block is the submission."""

    def __init__(self, limits: Limits, *, pre_started: bool = True):
        self.limits = limits
        self._want_pre_started = pre_started
        self._zygote = None
        self._stack: contextlib.ExitStack | None = None
        self._cgroup: Cgroup | None = None
        self._kernel: KernelBox | None = None
        self.folder: Path | None = None

    # ------------------------------------------------------------------ the submission's block

    def __enter__(self) -> "Sandbox":
        if self._stack is not None:
            raise RuntimeError("a Sandbox holds one submission: make a new one for the next")
        self._stack = contextlib.ExitStack()
        try:
            if self._want_pre_started:
                self._zygote = self._stack.enter_context(zygote.acquire(self.limits))
            self.folder = Path(self._stack.enter_context(
                self._zygote.submission() if self._zygote is not None else Workspace(self.limits)))
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        stack, self._stack = self._stack, None
        if self._cgroup is not None:
            self._cgroup.cleanup()
        if stack is not None:
            stack.close()

    @property
    def pre_started(self) -> bool:
        """Whether the runs are forks of this process's pre-started sandbox."""
        return self._zygote is not None

    def _held(self) -> None:
        if self._stack is None:
            raise RuntimeError("the Sandbox is used outside its block (with Sandbox(limits) as box: ...)")

    # ------------------------------------------------------------------ what runs in it

    def run(self, script: str, args: list[str], scratch: Path, *, wall_seconds: float,
            use_sandbox: bool = True) -> RunResult:
        """``python script args...`` in ``scratch`` (a folder of :attr:`folder`), ended after
        ``wall_seconds``; how it ended (:class:`~.limits.RunResult`). ``use_sandbox=False``: the limits
        alone, in a fresh process (a caller that grades without the sandbox on purpose)."""
        self._held()
        if self._zygote is not None and use_sandbox:
            return self._zygote.run(script, args, Path(scratch), wall_seconds=wall_seconds)
        from . import python, run

        return run([python(), script, *args], Path(scratch), limits=self.limits, wall_seconds=wall_seconds,
                   use_sandbox=use_sandbox)

    def launch(self, verdicts: Path | None = None) -> KernelBox:
        """The kernel's box for this submission: its scratch and run folders, its kernelspec, its cgroup
        (fresh sandbox, as root) and, pre-started, how to start it there. ``verdicts``: the judge's
        verdicts file the kernel may read (its feedback). One kernel box per submission."""
        self._held()
        if self._kernel is not None:
            raise RuntimeError("this submission's kernel box was made already")
        from . import status

        scratch, rundir, specs = self.folder / "kernel", self.folder / "run", self.folder / "jupyter"
        for d in (scratch, rundir):
            d.mkdir()
            os.chmod(d, 0o777)
        write_kernelspec(specs)
        self._cgroup = Cgroup(self.limits, None if self.pre_started else status()["cgroup"])
        self._kernel = KernelBox(scratch=scratch, rundir=rundir, limits=self.limits, specs=specs,
                                 cgroup_dirs=list(self._cgroup.dirs), bwrap=bool(status()["bwrap"]),
                                 verdicts=verdicts, launch=self._zygote.kernel if self._zygote is not None else None)
        return self._kernel

    def kernel_env(self, language: str = "") -> dict[str, str]:
        """What the kernel's process is told (given to ``start_kernel(env=...)``), with the notebook's
        ``language``."""
        if self._kernel is None:
            raise RuntimeError("launch() first: the kernel's box holds what its process is told")
        return self._kernel.env(language)

    @contextlib.contextmanager
    def kernel_running(self):
        """Around the kernel's run: its cgroup (when it has one) woken from a frozen state, and emptied
        and removed after."""
        cgroup = self._cgroup
        waking = cgroup.start_waking() if cgroup is not None and cgroup.active else None
        try:
            yield
        finally:
            if waking is not None:
                waking.set()
            if cgroup is not None:
                cgroup.cleanup()

    def status(self) -> dict:
        """What this machine gives the submission: bubblewrap, the cgroup version, why not, and whether
        the runs are forks of a pre-started sandbox."""
        from . import status

        return {**status(), "pre_started": self.pre_started}
