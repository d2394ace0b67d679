"""The hidden checks' verdicts in the language of the notebook they are written into.

The grader judges in English (the gradebook, the class report and the worker's JSON keep the English
verdicts, so both editions grade and report alike). Where a student reads a verdict, in the feedback of
a notebook of the Chinese edition (its released notebook says ``course.language``), the message is
translated from the student package's catalogue and the grader's own (``instructor/locale/<lang>.po``:
the hidden checks' texts, never shipped to students), piece by piece as :mod:`autograder.i18n` does.
"""
from __future__ import annotations

import functools
from pathlib import Path

from autograder import i18n

from ..layout import REPO

GRADER_LOCALE = REPO / "instructor" / "locale"

__all__ = ["GRADER_LOCALE", "catalogue", "release_language", "shown_verdicts", "translate_verdict", "translate_text"]


@functools.lru_cache(maxsize=None)
def catalogue(lang: str) -> i18n.Catalogue:
    """The student package's catalogue and the grader's, for ``lang``."""
    grader = GRADER_LOCALE / f"{lang}.po"
    return i18n.catalogue(lang).merged(i18n.load_catalogue(grader) if grader.is_file() else i18n.Catalogue())


def release_language(release_dir: str | Path) -> str | None:
    """The language of an assignment's released notebooks (``metadata.course.language``); None: English."""
    langs = {i18n.notebook_language(p) for p in sorted(Path(release_dir).glob("*.ipynb"))}
    langs.discard(None)
    langs.discard("en")
    return sorted(langs)[0] if langs else None


def translate_verdict(message: str, lang: str | None) -> str:
    """A verdict's message as a student of the ``lang`` edition reads it (unchanged for English)."""
    if not lang or lang == "en" or not message:
        return message
    return i18n.translate_message(message, lang, catalogue(lang))


def translate_text(text: str, lang: str | None) -> str:
    """One of the grader's own texts (a heading of the class report, a note) in ``lang``: exactly or by
    template (unchanged for English)."""
    if not lang or lang == "en" or not text:
        return text
    return i18n.translate(text, lang, catalogue(lang))


def shown_verdicts(verdicts: dict[str, dict], release_dir: str | Path) -> dict[str, dict]:
    """The verdicts (``Verdict.as_json()`` by grade id) for the kernel that writes the feedback: their
    messages in the language of the assignment's release; the same dict for English."""
    lang = release_language(release_dir)
    if lang is None:
        return verdicts
    return {g: ({**v, "message": translate_verdict(v.get("message", ""), lang)} if isinstance(v, dict) else v)
            for g, v in verdicts.items()}
