"""The course's editions: the English one (the repository itself) and the translated ones (``zh_CN/``).

An edition in another language is a course folder of its own inside the repository, laid out like the
English one and generated from it, never edited by hand:

* ``zh_CN/source/<a>/<a>.ipynb`` and ``zh_CN/notebooks/*.ipynb``: ``python -m instructor.translate build``
  (the English notebooks plus ``i18n/zh_CN/*.po``), with the Colab lines of ``scripts/course_links.py``;
* ``zh_CN/release/<a>/<a>.ipynb``: nbgrader's ``generate_assignment`` on those, exactly as ``release/`` is
  made from ``source/``, with ``zh_CN/nbgrader_config.py`` (the course's configuration, stubs in Chinese).

One setting picks the edition: ``COURSE_LANG=zh_CN`` (``make release|demo|lab|hub``), or ``--lang zh_CN``.
A notebook says which edition it belongs to in its metadata (``course.language``, written by the build);
grading reads it from the *released* notebook of the course folder (never from the student's copy) and
runs the kernel in that language.
"""
from __future__ import annotations

import copy
import importlib.util
import os
from pathlib import Path

from .layout import REPO
from .translate import LANGS

#: the environment variable that picks the edition (``make``, ``autograder.lab``, the kernels)
LANG_ENV = "COURSE_LANG"
ENGLISH = "en"

__all__ = ["LANG_ENV", "LANGS", "edition_root", "lang_from_env", "notebook_language", "kernel_env",
           "release_edition", "transplant"]


def _normal(lang: str | None) -> str | None:
    """``None`` for the English edition, else the edition's code; refuses a language the course lacks."""
    if lang is None or lang.strip() in ("", ENGLISH, "en_US", "C"):
        return None
    lang = lang.strip().replace("-", "_")
    if lang not in LANGS:
        raise SystemExit(f"error: the course has no edition in {lang!r}: {LANG_ENV} or --lang must be one of "
                         f"{', '.join((ENGLISH,) + LANGS)}")
    return lang


def lang_from_env(environ=None) -> str | None:
    """The edition ``COURSE_LANG`` asks for: None (English) or a code of :data:`LANGS`."""
    return _normal((os.environ if environ is None else environ).get(LANG_ENV))


def edition_root(lang: str | None, root: Path = REPO) -> Path:
    """The course folder of the edition: the repository for English, ``<root>/<lang>`` otherwise."""
    lang = _normal(lang)
    return Path(root) if lang is None else Path(root) / lang


def notebook_language(nb) -> str | None:
    """The edition a notebook says it belongs to (``metadata.course.language``), when the course has it."""
    meta = nb.get("metadata", {}) if isinstance(nb, dict) else {}
    course = meta.get("course") if isinstance(meta, dict) else None
    lang = course.get("language") if isinstance(course, dict) else None
    return lang if isinstance(lang, str) and lang in LANGS else None


def kernel_env(release_nb) -> dict[str, str]:
    """What a kernel that runs a submission of this released notebook needs in its environment:
    ``{"COURSE_LANG": "zh_CN"}`` for a notebook of the Chinese edition, nothing for an English one."""
    lang = notebook_language(release_nb)
    return {LANG_ENV: lang} if lang else {}


def _course_links():
    spec = importlib.util.spec_from_file_location("course_links", REPO / "scripts" / "course_links.py")
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules.setdefault("course_links", module)   # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def build_edition(lang: str, root: Path = REPO) -> list[Path]:
    """``<root>/<lang>/source`` and ``notebooks`` written from the English notebooks and the catalogues,
    with their Colab lines. Raises :class:`instructor.translate.Untranslated` (naming every unit) when any
    text has no reviewed translation: an edition is never released half in English."""
    from . import translate

    written = translate.build(lang, root)
    if (Path(root) / "pyproject.toml").is_file():
        _course_links().render_edition(Path(root), lang)
    return written


def release_edition(lang: str, names: list[str] | None = None, root: Path = REPO) -> list[Path]:
    """The whole edition: :func:`build_edition`, then nbgrader's release in ``<root>/<lang>/`` (as
    ``python -m autograder release`` makes ``release/`` from ``source/``). The release notebooks written."""
    from .batch import course

    build_edition(lang, root)
    return course.release(names, root=edition_root(lang, root))


def transplant(submitted, english_release, edition_release, lang: str):
    """A notebook filled in on the English release, as the same student's work on the edition's release:
    every cell the student left as released (same id, type and source as the English release's) takes
    the edition's text; every other cell (answers, the student's own cells, deleted ones) stays exactly as
    handed in, metadata and outputs included. The notebook says it is of the edition ``lang``."""
    en = {c.get("id"): c for c in english_release.cells if c.get("id")}
    ed = {c.get("id"): c for c in edition_release.cells if c.get("id")}
    out = copy.deepcopy(submitted)
    for cell in out.cells:
        cid = cell.get("id")
        if cid in en and cid in ed and cell.cell_type == en[cid].cell_type == ed[cid].cell_type \
                and cell.source == en[cid].source:
            cell.source = ed[cid].source
    if not isinstance(out.metadata.get("course"), dict):
        out.metadata["course"] = {}
    out.metadata["course"]["language"] = lang
    return out
