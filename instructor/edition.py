"""The course's editions: the English one (the repository itself) and the translated ones (``zh_CN/``).

An edition in another language is a course folder of its own inside the repository, laid out like the
English one and generated from it, never edited by hand:

* ``zh_CN/source/<a>/<a>.ipynb`` and ``zh_CN/notebooks/*.ipynb``: ``python -m instructor.translate build``
  (the English notebooks plus ``i18n/zh_CN/*.po``), with the Colab lines of ``scripts/course_links.py``;
* ``zh_CN/release/<a>/<a>.ipynb``: nbgrader's ``generate_assignment`` on those, exactly as ``release/`` is
  made from ``source/``, with ``zh_CN/nbgrader_config.py`` (the course's configuration, stubs in Chinese).

One setting picks the edition: ``COURSE_LANG=zh_CN`` (``make release|demo|lab|hub``), or ``--lang zh_CN``
(:mod:`instructor.layout`: ``edition_root``). A notebook says which edition it belongs to in its metadata
(``course.language``, written by the build); grading reads it from the *released* notebook of the course
folder, never from the student's copy, and runs the kernel in that language.

    python -m instructor.edition build [--lang zh_CN]     # source/ and notebooks/ of the edition
    python -m autograder release --lang zh_CN             # that, then nbgrader's release (make release)
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from .layout import EDITIONS, LANG_ENV, REPO, edition_lang, edition_root, notebook_language
from .translate import LANGS, BadTranslation, Untranslated

__all__ = ["EDITIONS", "LANG_ENV", "edition_lang", "edition_root", "notebook_language", "build_edition",
           "release_edition", "main"]

assert set(LANGS) == set(EDITIONS), "instructor/translate.py's LANGS and instructor/layout.py's EDITIONS differ"


def _course_links():
    spec = importlib.util.spec_from_file_location("course_links", REPO / "scripts" / "course_links.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("course_links", module)   # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def build_edition(lang: str, root: Path = REPO) -> list[Path]:
    """``<root>/<lang>/source`` and ``notebooks`` written from the English notebooks and the catalogues,
    with their Colab lines. Raises :class:`instructor.translate.Untranslated` (naming every unit) when any
    text has no reviewed translation: an edition is never released half in English."""
    from . import translate

    written = translate.build(edition_lang(lang), root)
    if (Path(root) / "pyproject.toml").is_file():
        _course_links().render_edition(Path(root), lang)
    return written


def release_edition(lang: str, names: list[str] | None = None, root: Path = REPO) -> list[Path]:
    """The whole edition: :func:`build_edition`, then nbgrader's release in ``<root>/<lang>/`` (as
    ``python -m autograder release`` makes ``release/`` from ``source/``). The release notebooks written."""
    from .batch import course

    build_edition(lang, root)
    return course.release(names, root=edition_root(lang, root))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m instructor.edition", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["build"])
    ap.add_argument("--lang", default=EDITIONS[0], choices=list(EDITIONS))
    ap.add_argument("--root", type=Path, default=REPO, help="the repository (default: this one)")
    args = ap.parse_args(argv)
    try:
        for p in build_edition(args.lang, args.root):
            print("wrote", p.relative_to(args.root))
    except (Untranslated, BadTranslation) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
