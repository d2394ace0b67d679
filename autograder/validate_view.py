"""Validate's dialog leads with what failed and what to try next, not with the test's code.

nbgrader's Validate button (the notebook toolbar) lists each failing test cell with its whole source
first and the error under it: for this course's tests about 18 lines of test code before the
``expected`` / ``got`` / ``try next`` lines a student needs, often below the dialog's fold. This Jupyter
server extension, switched on in the course's environment by ``python -m autograder.course_formgrader
install`` (``make setup``; Binder's postBuild) and kept on in the student view, gives the Validate handler
a :class:`TaskFirstValidator`: the same validation (nbgrader's own, untouched), each failing or passing
test cell shown by one line naming its task (``# the test of decode (its code is in the notebook, under
your answer)``). Cells that were *changed* or changed type keep their source: that is how a student
finds which one to put back.
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

EXTENSION = "autograder.validate_view"

__all__ = ["EXTENSION", "shown_source", "reshape", "TaskFirstValidator"]


def shown_source(source: str, nb: dict) -> str:
    """The one line Validate shows for a test cell: which task it tests."""
    from .handin import task_name

    from .i18n import _

    return _(f"# the test of {task_name(source, nb)} (its code is in the notebook, under your answer)")


def reshape(result: dict, nb: dict) -> dict:
    """nbgrader's validation result with each failed and passed test cell named by its task (and, for a
    notebook of the Chinese edition, its failures in Chinese: the kernel that validated it may not know)."""
    from .i18n import metadata_language, speaking, translate_message

    lang = metadata_language(nb)
    for key in ("failed", "passed"):
        for entry in result.get(key, []) or []:
            if isinstance(entry, dict) and isinstance(entry.get("source"), str):
                with speaking(lang) if lang else contextlib.nullcontext():   # the notebook's own language
                    entry["source"] = shown_source(entry["source"], nb)
            if lang and lang != "en" and isinstance(entry, dict) and isinstance(entry.get("raw_error"), str):
                from nbconvert.filters import ansi2html

                entry["raw_error"] = translate_message(entry["raw_error"], lang)
                entry["error"] = ansi2html(entry["raw_error"])
    return result


def _validator_class():
    from nbgrader.validator import Validator

    class TaskFirstValidator(Validator):
        """nbgrader's Validator; its result names each test cell by its task (:func:`reshape`)."""

        def validate(self, filename: str):
            result = super().validate(filename)
            try:
                nb = json.loads(Path(filename).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return result
            return reshape(result, nb)

    return TaskFirstValidator


def __getattr__(name):
    if name == "TaskFirstValidator":
        return _validator_class()
    raise AttributeError(name)


def _jupyter_server_extension_points():
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(serverapp) -> None:
    from nbgrader.server_extensions.validate_assignment import handlers

    handlers.Validator = _validator_class()   # the handler builds its Validator by this name, per request
    serverapp.log.info("%s: Validate names each test cell by its task", EXTENSION)
