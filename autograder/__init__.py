"""The course package: checks used by tests, course code, the in-place locator, the command line.

Modules, by what they hold:

* :mod:`autograder.runtime`       — device policy, seeding, warnings routed to stdout;
* :mod:`autograder.checks`        — assertion helpers whose messages say what to try next;
* :mod:`autograder.inplace`       — the in-place locator (which line wrote into a saved tensor);
* :mod:`autograder.yolo`          — the legacy YOLOv5 (release 5.0) Detect head;
* :mod:`autograder.detector`      — a small detector trained on synthetic shapes;
* :mod:`autograder.saved_tensors` — assignment 1's decode constants and version program;
* :mod:`autograder.storage`       — assignment 2's witnesses (id, storage, _version) and explorer;
* :mod:`autograder.attack`        — assignment 3's decode checks, the attack and its figures;
* :mod:`autograder.explorers`     — the lessons' widgets and the autograd graph picture;
* :mod:`autograder.course`, :mod:`autograder.cli` — nbgrader plumbing and ``python -m autograder``;
* :mod:`autograder.samples`       — sample submissions with their expected scores;
* :mod:`autograder.authoring`     — cell constructors for writing ``source/`` notebooks;
* :mod:`autograder.lab`           — JupyterLab in the student (or instructor) view.
"""
__all__ = ["course_device", "describe_environment", "seed_everything", "setup_notebook", "test_configs"]
__version__ = "0.1.0"


def __getattr__(name):
    # Lazy: the command line (python -m autograder) must not pay for importing torch.
    if name in __all__:
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")
