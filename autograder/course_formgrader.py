"""Every formgrader the course's environment starts is the course's (issue 36, item 2).

nbgrader switches its own formgrader on for every Jupyter server of an environment it is installed in
(``etc/jupyter/jupyter_server_config.d/nbgrader.json``: ``nbgrader.server_extensions.formgrader``).
That formgrader renders a student's notebook in the instructor's authenticated Jupyter server with the
cell-by-cell sanitizer only: markup split across two cells (``<!--`` alone in one markdown cell, an
attribute that closes the comment in the next) comes out whole as live HTML, and a student's script
runs with the instructor's session. The course's formgrader (``instructor.classroom.formgrader``)
sanitizes the whole page and sends a Content-Security-Policy that runs formgrader's own scripts only.

``python -m autograder.course_formgrader install`` (run by ``make setup``; ``--prefix`` for another
environment: TLJH's user environment, an image) writes ``<prefix>/etc/jupyter/jupyter_server_config.d/
zz-course-formgrader.json``, read after nbgrader's file (names in order, the later wins): nbgrader's
formgrader off, this extension on. So ``jupyter lab`` and ``jupyter server`` started the way nbgrader's
own documentation says, ``make lab-instructor``, the hub's formgrader and the deploy recipes all serve
the course's formgrader. Loaded, this extension

* does nothing where ``instructor.classroom.formgrader`` is itself switched on (the hub's grader config,
  ``make lab-instructor``): that one serves formgrader;
* else serves the course's formgrader when the course's instructor code lies beside this package
  (the checkout, where ``pip install -e .`` points);
* else serves no formgrader at all (a student's environment holds ``autograder`` only).

Loaded before nbgrader's extension (jupyter_server loads extensions in name order and tornado serves
the first matching rule), the course's formgrader answers every ``/formgrader/`` URL even where
nbgrader's formgrader is switched on again (a command-line flag, a user's config).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXTENSION = "autograder.course_formgrader"
STOCK = "nbgrader.server_extensions.formgrader"
COURSE = "instructor.classroom.formgrader"
CONFIG_NAME = "zz-course-formgrader.json"
HERE = Path(__file__).resolve().parent

__all__ = ["config", "config_path", "install", "course_code", "EXTENSION", "STOCK", "COURSE", "CONFIG_NAME"]


#: Validate's dialog naming each test cell by its task (:mod:`autograder.validate_view`): on for everyone,
#: students too, so installed by the same file.
VALIDATE_VIEW = "autograder.validate_view"


def config() -> dict:
    """The Jupyter server config this module installs."""
    return {"ServerApp": {"jpserver_extensions": {STOCK: False, EXTENSION: True, VALIDATE_VIEW: True}}}


def config_path(prefix: str | Path = sys.prefix) -> Path:
    return Path(prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / CONFIG_NAME


def install(prefix: str | Path = sys.prefix) -> Path:
    """Write the config into the environment at ``prefix`` (idempotent: the same bytes each time)."""
    path = config_path(prefix)
    text = json.dumps(config(), indent=1) + "\n"
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def course_code(package: Path = HERE) -> Path | None:
    """The checkout that holds the course's formgrader, when this package is the checkout's own."""
    repo = Path(package).resolve().parent
    return repo if (repo / "instructor" / "classroom" / "formgrader.py").is_file() else None


def _jupyter_server_extension_points():
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(serverapp) -> None:
    enabled = dict(getattr(serverapp, "jpserver_extensions", {}) or {})
    if enabled.get(COURSE):
        serverapp.log.info("%s: formgrader is served by %s", EXTENSION, COURSE)
        return
    repo = course_code()
    if repo is None:
        serverapp.log.info("%s: no formgrader here (the course's instructor code is not installed; nbgrader's own "
                           "formgrader stays off)", EXTENSION)
        return
    if str(repo) not in sys.path:
        sys.path.insert(0, str(repo))  # the server's path only: kernels inherit no PYTHONPATH from this
    from instructor.classroom import formgrader

    serverapp.log.info("%s: formgrader is the course's (%s, %s)", EXTENSION, COURSE, repo)
    formgrader._load_jupyter_server_extension(serverapp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.course_formgrader", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install", help="switch nbgrader's formgrader off and the course's on in an environment")
    i.add_argument("--prefix", default=sys.prefix, help="the environment (default: this Python's, %(default)s)")
    args = parser.parse_args(argv)
    print(f"formgrader: the course's, in every Jupyter server of {args.prefix} ({install(args.prefix)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
