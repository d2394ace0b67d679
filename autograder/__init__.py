"""The student package: what a course notebook imports. It holds no answers and no hidden checks.

Modules, by what they hold:

* :mod:`autograder.runtime`       — device policy, seeding, warnings routed to stdout;
* :mod:`autograder.checks`        — assertion helpers for the visible tests (messages say what to try next);
* :mod:`autograder.verdicts`      — the hidden part of a test cell: reports the verdict of the check that
  ran outside the kernel;
* :mod:`autograder.inplace`       — the in-place locator (which line wrote into a saved tensor);
* :mod:`autograder.yolo`          — the legacy YOLOv5 (release 5.0) Detect head;
* :mod:`autograder.detector`      — a small detector trained on synthetic shapes;
* :mod:`autograder.saved_tensors` — assignment 1's decode constants and version program;
* :mod:`autograder.storage`       — assignment 2's witnesses (id, storage, _version) and explorer;
* :mod:`autograder.attack`        — assignment 3's attack model, objectives and figures;
* :mod:`autograder.explorers`     — the lessons' widgets and the autograd graph picture;
* :mod:`autograder.lab`           — JupyterLab in the student (or instructor) view;
* :mod:`autograder.cli`           — ``python -m autograder``: hands the grading commands to the
  repository's instructor side (``instructor/``), which a student install does not have.
* :mod:`autograder.check`         — ``autograder.check()``: points per question from the visible tests,
  in the notebook (``hidden=True``: also the hidden ones, through ``selfgrade``, in a clone);
* :mod:`autograder.handin`        — ``autograder.export()``: a validated hand-in zip for an LMS (Binder, Colab).

The instructor side lives in the repository's ``instructor/`` folder: the grader in layers
(``instructor.sandbox``, ``.engine``, ``.batch``, ``.service``, ``.classroom``, ``.authoring``) and ``instructor.hidden`` (the hidden
checks of each assignment, as probes and judges, with the reference answers).
"""
__all__ = ["check", "export", "course_device", "describe_environment", "seed_everything", "setup_notebook", "test_configs",
           "grading", "demonstration_steps"]
__version__ = "0.1.0"

# Bound here, at import, so that ``autograder.check`` is the function, not its module (importing a
# submodule later does not rebind the name). The module imports neither torch nor instructor/.
from .check import check  # noqa: E402
from .handin import export  # noqa: E402


def __getattr__(name):
    # Lazy: the command line (python -m autograder) must not pay for importing torch.
    if name in __all__:
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")
