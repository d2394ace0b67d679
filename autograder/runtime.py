"""Device policy, seeding and warning routing: the few things every notebook does first.

Every notebook of the course starts with ``DEVICE = setup_notebook()``. It

* seeds ``random``, NumPy and torch (CPU and CUDA) from one number, so reruns agree;
* sends Python warnings to *stdout*: nbgrader scores a test cell 0 when anything is written
  to stderr, and a correct answer must not lose marks because PyTorch printed a
  ``UserWarning`` (nbgrader_config.py's ``IgnorePattern`` is the second line of defence);
* picks the device the course uses: CUDA when present, else the CPU (one thread: tiny tensors).
"""
from __future__ import annotations

import os
import random
import sys
import warnings

import numpy as np
import torch

from .i18n import _

__all__ = [
    "course_device",
    "seed_everything",
    "warnings_to_stdout",
    "setup_notebook",
    "test_configs",
    "describe_environment",
    "grading",
    "demonstration_steps",
]

#: Set to ``1`` by the grader in the processes that run a notebook to grade it (the confirmation run
#: and nbgrader's kernel).
GRADING_ENV = "COURSE_GRADING"


def course_device() -> torch.device:
    """``cuda`` when PyTorch sees a GPU, else ``cpu``.

    ``COURSE_DEVICE=cpu`` forces the CPU (useful to compare with a GPU run).
    """
    forced = os.environ.get("COURSE_DEVICE")
    if forced:
        return torch.device(forced)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def grading() -> bool:
    """Is the grader running this notebook (``COURSE_GRADING=1``)?

    The grader runs a submission twice: the confirmation run (every cell but the tests, then the hidden
    checks) and nbgrader's kernel (every cell; its outputs become the feedback). In both, the course's
    few slow cells that only *show* something (assignment 3's timing table and attacks, assignment 4's
    GAN training) do less: fewer rounds (:func:`demonstration_steps`), no attack figures. Nothing graded
    reads what they compute. Read at each call, so it follows the process's environment.
    """
    return os.environ.get(GRADING_ENV) == "1"


def demonstration_steps(full: int, graded: int) -> int:
    """How many rounds (steps, repeats) a slow demonstration cell runs: ``full`` in your notebook,
    ``graded`` while the grader runs it (:func:`grading`). Then it also prints one line saying so, and
    that line is what the feedback shows above the shortened output."""
    if not grading():
        return full
    print(_(f"(graded run: this demonstration ran {graded} of its {full} rounds; your own notebook runs all of them)"))
    return graded


def seed_everything(seed: int = 0) -> None:
    """Seed Python's ``random``, NumPy and torch (every CUDA device too) with one number."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    os.environ.setdefault("PYTHONHASHSEED", str(seed))


def _show_on_stdout(message, category, filename, lineno, file=None, line=None):
    sys.stdout.write(warnings.formatwarning(message, category, filename, lineno, line))


def warnings_to_stdout() -> None:
    """Print warnings on stdout instead of stderr (still shown, no longer fatal to a test cell)."""
    warnings.showwarning = _show_on_stdout


def test_configs(device: torch.device | None = None) -> list[tuple[torch.device, torch.dtype]]:
    """The (device, dtype) pairs hidden tests run on.

    Always float64 and float32 on the CPU (float64 is the reference); on a GPU also float32 and
    float16 on CUDA, the dtype of the original bug report (``torch.cuda.HalfTensor``).
    """
    configs = [(torch.device("cpu"), torch.float64), (torch.device("cpu"), torch.float32)]
    device = device or course_device()
    if device.type == "cuda":
        configs += [(device, torch.float32), (device, torch.float16)]
    return configs


def describe_environment(device: torch.device | None = None) -> str:
    device = device or course_device()
    why = (_("a CUDA GPU is available") if device.type == "cuda"
           else _("no CUDA GPU is visible to PyTorch, so the course runs on the CPU"))
    name = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
    return _(f"Python {sys.version.split()[0]}, torch {torch.__version__}; "
             f"course device: {device}{name} because {why}.")


def setup_notebook(seed: int = 0, verbose: bool = True) -> torch.device:
    """Seed everything, route warnings to stdout, and return the course device."""
    seed_everything(seed)
    warnings_to_stdout()
    device = course_device()
    if device.type == "cpu":
        # The course's tensors are tiny: one thread is faster than several fighting over shared
        # cores (measured 30x on one attack step when graders ran side by side).
        torch.set_num_threads(1)
    if verbose:
        print(describe_environment(device))
    from .i18n import language
    if language() == "zh_CN":   # the Chinese edition's figures need a font with Chinese characters
        from .cjk_fonts import use_cjk_font
        use_cjk_font(verbose)
    return device
