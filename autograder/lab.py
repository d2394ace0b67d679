"""JupyterLab on the course, as a student sees it or as an instructor does.

Students get nbgrader's Assignments list and Validate button; the instructor panels (formgrader,
course list, create assignment) are off and locked. The lists come from ``postBuild`` — the file
Binder runs — so ``make lab``, Binder and the browser test show the same student view.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from .cli import REPO

__all__ = ["student_view", "student_env", "student_exchange_config", "instructor_env", "interface_language", "main"]

#: The course's editions in other languages (a folder of the repository each, ``zh_CN/``), chosen by
#: ``COURSE_LANG`` or ``--lang``; for each, the locale of JupyterLab's own interface (its language pack,
#: ``jupyterlab-language-pack-zh-CN``, pinned in constraints.txt).
EDITIONS = {"zh_CN": "zh_CN"}
LANG_ENV = "COURSE_LANG"
TRANSLATION_PLUGIN = "@jupyterlab/translation-extension:plugin"


def student_view(postbuild: Path = REPO / "postBuild") -> tuple[list[str], list[str]]:
    """(JupyterLab plugin ids, server extensions) that the student view turns off."""
    text = Path(postbuild).read_text()
    lab = re.search(r'^LAB_PLUGINS="([^"]+)"', text, re.M)
    server = re.search(r'^SERVER_EXTENSIONS="([^"]+)"', text, re.M)
    if not (lab and server):
        raise ValueError(f"{postbuild}: must define LAB_PLUGINS=\"...\" and SERVER_EXTENSIONS=\"...\"")
    return lab.group(1).split(), server.group(1).split()


def student_env(config: Path, extra_lab_off: tuple[str, ...] = ()) -> dict:
    """Write a Jupyter config folder for the student view; return the environment that uses it.

    A ``JUPYTER_CONFIG_PATH`` entry ranks above the venv's own config (where nbgrader.json turns
    every nbgrader server extension on); this is what ``jupyter labextension disable/lock`` would
    write, without touching the venv.
    """
    lab_off, server_off = student_view()
    config = Path(config)
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.d").mkdir(exist_ok=True)
    off = {p: True for p in lab_off + list(extra_lab_off)}
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": off, "lockedExtensions": off}, indent=1))
    (config / "jupyter_server_config.d" / "zz-course-student.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {e: False for e in server_off}}}, indent=1))
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["JUPYTER_CONFIG_PATH"] = str(config) + (os.pathsep + env["JUPYTER_CONFIG_PATH"]
                                                if env.get("JUPYTER_CONFIG_PATH") else "")
    return env


def instructor_env(config: Path) -> dict:
    """Write a Jupyter config folder for the instructor view; return the environment that uses it.

    Formgrader is served by ``instructor.classroom.formgrader`` instead of nbgrader's own extension:
    the same pages, with Autograde and Generate Feedback running the trusted grading pipeline
    (sandbox, confirmation outside the kernel, lower verdict, flags). The repository goes on the
    server's ``sys.path`` (a config file) so that it finds ``instructor/``; not on ``PYTHONPATH``,
    which kernels would inherit.
    """
    config = Path(config)
    (config / "jupyter_server_config.d").mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.d" / "zz-course-instructor.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"nbgrader.server_extensions.formgrader": False,
                                                "instructor.classroom.formgrader": True}}}, indent=1))
    (config / "jupyter_server_config.py").write_text(
        "# written by autograder/lab.py: the trusted formgrader (instructor.classroom.formgrader) lives here\n"
        f"import sys\nif {str(REPO)!r} not in sys.path:\n    sys.path.insert(0, {str(REPO)!r})\n")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["JUPYTER_CONFIG_PATH"] = str(config) + (os.pathsep + env["JUPYTER_CONFIG_PATH"]
                                                if env.get("JUPYTER_CONFIG_PATH") else "")
    return env


def interface_language(view: Path, lang: str) -> list[str]:
    """JupyterLab's arguments that show its own interface (menus, dialogs) in ``lang``: an application
    settings folder whose ``overrides.json`` picks the locale in JupyterLab's own setting
    (``@jupyterlab/translation-extension:plugin``), the installed application's overrides kept, beside a
    link to the application's static files (JupyterLab reads its extensions' metadata there)."""
    from jupyterlab.commands import get_app_dir

    app = Path(get_app_dir())
    settings = Path(view) / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    own = app / "settings" / "overrides.json"
    overrides = json.loads(own.read_text(encoding="utf-8")) if own.is_file() else {}
    overrides.setdefault(TRANSLATION_PLUGIN, {})["locale"] = EDITIONS[lang]
    (settings / "overrides.json").write_text(json.dumps(overrides, indent=1), encoding="utf-8")
    if (app / "static").is_dir() and not (settings.parent / "static").exists():
        (settings.parent / "static").symlink_to(app / "static")
    pack = "jupyterlab_language_pack_" + EDITIONS[lang]
    import importlib.util

    if importlib.util.find_spec(pack) is None:
        print(f"note: JupyterLab's {lang} language pack is not installed (pip install -c constraints.txt "
              f"{pack.replace('_', '-')}): its interface stays in English", file=sys.stderr, flush=True)
    return [f"--LabApp.app_settings_dir={settings}"]


#: Where the lessons' own copies go: run there, a lesson's outputs and edits never touch the tracked
#: ``notebooks/`` (JupyterLab autosaves what it runs).
LESSONS = "lessons"


def lesson_copy(text: str) -> str:
    """A lesson notebook as it reads from ``workspace/lessons/``: its links into ``../workspace/`` become
    ``../`` (the same files, one folder down); links between lessons stay as they are."""
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = re.sub(r"\]\(\.\./workspace/", "](../", src).splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def prepare_workspace(root: Path = REPO) -> tuple[Path, list[Path]]:
    """The student's own copies: ``workspace/<assignment>/<notebook>.ipynb`` (nbgrader's student
    layout), copied from ``release/``, and the lessons in ``workspace/lessons/``, from ``notebooks/``,
    each only where missing. No course command writes into ``workspace/`` over a file that is there:
    answers written in it are never overwritten."""
    import shutil

    ws = Path(root) / "workspace"
    made = []
    for nb in sorted((Path(root) / "release").glob("*/*.ipynb")):
        dest = ws / nb.parent.name / nb.name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(nb, dest)
            made.append(dest)
    for nb in sorted((Path(root) / "notebooks").glob("*.ipynb")):
        dest = ws / LESSONS / nb.name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with open(dest, "x", encoding="utf-8") as f:   # never over a file that appeared meanwhile
                    f.write(lesson_copy(nb.read_text(encoding="utf-8")))
            except FileExistsError:
                continue
            made.append(dest)
    return ws, made


def prepare_exchange(root: Path = REPO) -> Path:
    """The course-local nbgrader exchange (``c.Exchange.root`` in nbgrader_config.py): made if missing,
    writable by every user (sticky, as /tmp), as nbgrader's exchange must be."""
    exchange = Path(root) / "grading" / "exchange"
    exchange.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(exchange, 0o1777)
    except OSError:  # someone else's folder: nbgrader says what is wrong with it
        pass
    return exchange


def student_exchange_config(config: Path, root: Path = REPO) -> Path:
    """nbgrader settings of the student view: the Assignments list fetches into, submits from and
    fetches feedback into ``workspace/<assignment>/``, the folder the student works in (nbgrader's
    default, the server's root folder, would submit a fresh copy beside it, not the student's work).
    A copy already there counts as fetched; Fetch only adds files that are missing, never replaces
    one. Written to the view's Jupyter config folder: nbgrader reads it there after changing into the
    assignment folder, where the course's nbgrader_config.py (loaded first) is not."""
    path = Path(config) / "nbgrader_config.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# written by autograder/lab.py: the student view's Assignments list works in workspace/\n"
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(Path(root) / 'nbgrader_config.py')!r})  # noqa: F821 - the course's (its exchange)\n"
        f"c.Exchange.assignment_dir = {str(Path(root) / 'workspace')!r}\n"
        "c.ExchangeFetchAssignment.replace_missing_files = True\n")
    return path


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m autograder.lab",
                                     description="JupyterLab on the course (student view by default).")
    parser.add_argument("--instructor", action="store_true", help="keep nbgrader's instructor panels")
    parser.add_argument("--course", type=Path, default=None, metavar="DIR",
                        help="the course folder to serve (default: this repository), e.g. a `grade --workdir`: "
                             "its nbgrader_config.py, gradebook and exchange")
    chosen = os.environ.get(LANG_ENV, "").strip()
    parser.add_argument("--lang", choices=sorted(EDITIONS), default=None if chosen in ("", "en") else chosen,
                        help=f"the course's edition in this language (its folder, e.g. zh_CN/) with JupyterLab's "
                             f"own interface in it (default: ${LANG_ENV}, else English)")
    args, lab_args = parser.parse_known_args(argv)  # anything else goes to jupyter lab
    if args.lang is not None and args.lang not in EDITIONS:
        parser.error(f"{LANG_ENV}={args.lang}: the course's editions are {', '.join(sorted(EDITIONS))} (or English)")
    root = (args.course or (REPO / args.lang if args.lang else REPO)).resolve()
    cmd = [str(Path(sys.executable).parent / "jupyter"), "lab", f"--ServerApp.root_dir={root}", *lab_args]
    if not args.instructor and not any(a.startswith(("--LabApp.default_url", "--ServerApp.default_url"))
                                       for a in lab_args):   # the lessons' own copy, not the tracked notebooks/
        cmd.append(f"--LabApp.default_url=/lab/tree/workspace/{LESSONS}/00_start_here.ipynb")
    if os.geteuid() == 0 and not any(a.startswith(("--allow-root", "--ServerApp.allow_root")) for a in lab_args):
        cmd.append("--allow-root")  # Jupyter refuses to start as root without it (containers, Binder-like hosts)
    # an edition's folder shares the course's exchange (its nbgrader_config.py loads the repository's)
    prepare_exchange(REPO if args.lang and args.course is None else root)
    ui = Path(tempfile.mkdtemp(prefix="course-interface-")) if args.lang else None
    if ui is not None:
        cmd += interface_language(ui, args.lang)
    if args.instructor:
        env = instructor_env(Path(tempfile.mkdtemp(prefix="course-instructor-view-")))
        print("JupyterLab, instructor view: formgrader's Autograde and Generate Feedback run the trusted "
              "grading pipeline (as python -m autograder grade does)", flush=True)
    else:
        view = Path(tempfile.mkdtemp(prefix="course-student-view-"))
        env = student_env(view)
        student_exchange_config(view, root)
        ws, made = prepare_workspace(root)
        print("JupyterLab, student view (Assignments list and Validate; no instructor panels). "
              "Instructors: make lab-instructor", flush=True)
        print(f"Your notebooks: {ws.relative_to(root)}/<assignment>/ and the lessons in {ws.relative_to(root)}/"
              f"{LESSONS}/ ({len(made)} new copies from release/ and notebooks/); work there: no course "
              "command overwrites them.", flush=True)
    if args.lang:
        env[LANG_ENV] = args.lang   # the kernels speak the edition's language (autograder.i18n)
    # Validate, formgrader and the Assignments list read nbgrader_config.py from the server's working folder
    os.chdir(root)
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    sys.exit(main())
