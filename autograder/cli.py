"""``python -m autograder ...``: the instructor's commands, when the whole repository is here.

The student package holds no grading code and no answers. ``release``, ``grade``, ``selfgrade`` and
``demo`` live in the repository's ``instructor/`` folder (next to this package in a clone); a student
install (``pip install .``, Binder) does not have it and says so.
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def instructor_available() -> bool:
    """True when this package sits in a clone of the repository (``instructor/`` beside it)."""
    return (REPO / "instructor" / "classroom" / "cli.py").is_file()


def use_instructor_side() -> None:
    """Put the repository root on ``sys.path`` so ``import instructor`` works from any folder."""
    if not instructor_available():
        from .i18n import _

        raise SystemExit(_("error: the grading commands (release, grade, selfgrade, demo) need the whole course "
                           "repository (its instructor/ folder); this is a student install of 'autograder'. "
                           "Clone the repository and run them from there."))
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    use_instructor_side()
    from instructor.classroom.cli import main as instructor_main

    return instructor_main(argv)
