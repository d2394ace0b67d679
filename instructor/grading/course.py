"""The course as nbgrader sees it: assignments, releasing, collecting and autograding.

A thin layer over nbgrader's own API (:class:`nbgrader.apps.NbGraderAPI`), so that what the
command line does is exactly what ``nbgrader generate_assignment`` / ``autograde`` /
``generate_feedback`` do, plus what nbgrader leaves to the instructor:

* checking every submitted file *before* grading, with a one-line error naming it;
* grading each (student, assignment) on its own, so one broken submission never stops the others;
* never touching the submitted files: they are copied into a working course folder first.
"""
from __future__ import annotations

import csv
import functools
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
NB_EXT = ".ipynb"

__all__ = [
    "REPO", "Submission", "Problem", "QuestionScore", "Result",
    "assignments", "source_notebooks", "gradebook_layout", "load_config", "release",
    "collect_submissions", "grade", "failing_tests", "read_notebook",
]


# --------------------------------------------------------------------------- the course itself

def assignments(root: Path = REPO) -> list[str]:
    """Assignment names: the folders of ``source/`` that hold a notebook, in course order."""
    src = Path(root) / "source"
    return sorted(p.name for p in src.iterdir() if p.is_dir() and any(p.glob("*" + NB_EXT)))


def source_notebooks(assignment: str, root: Path = REPO) -> list[Path]:
    return sorted((Path(root) / "source" / assignment).glob("*" + NB_EXT))


def notebook_owner(root: Path = REPO) -> dict[str, str]:
    """Map each notebook file name to its assignment (names are unique across the course)."""
    return {nb.name: a for a in assignments(root) for nb in source_notebooks(a, root)}


def gradebook_layout(assignment: str, root: Path = REPO) -> list[dict]:
    """The graded cells of an assignment, in notebook order, read from the source notebooks.

    Each item: notebook, grade_id, points, kind ('auto' for test cells, 'manual' for written
    answers, 'task' for tasks).
    """
    cells = []
    for path in source_notebooks(assignment, root):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") or meta.get("task"):
                kind = "task" if meta.get("task") else ("manual" if meta.get("solution") else "auto")
                if kind == "auto" and cell.cell_type != "code":
                    kind = "manual"
                cells.append(dict(notebook=path.stem, grade_id=meta["grade_id"],
                                  points=float(meta.get("points", 0)), kind=kind))
    return cells


def load_config(root: Path):
    """nbgrader's configuration from the repo's ``nbgrader_config.py``, rooted at ``root``."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    local = Path(root).resolve() / "nbgrader_config.py"
    if local.is_file() and local.parent != REPO.resolve():
        # a course folder's own settings (e.g. shorter limits) override the repository's
        config.merge(PyFileConfigLoader(local.name, path=str(local.parent)).load_config())
    config.CourseDirectory.root = str(Path(root).resolve())
    return config if isinstance(config, Config) else Config(config)


def sandboxed_config(root: Path):
    """The course's nbgrader configuration with the grading-only parts: submissions rebuilt on the
    released notebook first (:mod:`.canonical`), and the kernel run in the sandbox (:mod:`.sandbox`)."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, IgnorePattern, LimitOutput,
                                        OverwriteCells, OverwriteKernelspec, SaveAutoGrades)

    from .sandbox import sandboxed_execute_class
    from .sanitize import InertNotebook, clean_html

    config = load_config(root)
    _canonicalize_preprocessor().course_root = Path(root).resolve()
    # No live student HTML/JavaScript (:mod:`.sanitize`): markdown made inert before execution (so a
    # worker's notebook and the recorder's have the same sources), outputs right after it; the
    # autograded notebook on disk is inert.
    config.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, _canonicalize_preprocessor(),
                                               OverwriteCells, InertNotebook, CheckCellMetadata]
    config.Autograde.autograde_preprocessors = [sandboxed_execute_class(), IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, InertNotebook, SaveAutoGrades, AssignLatePenalties,
                                                CheckCellMetadata]
    # Feedback shows what failed and why (the cells' outputs), never the hidden part of a test cell,
    # and nothing that runs in the student's browser: inert again, and the template's HTML sanitized.
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import ClearHiddenTests, GetGrades

    config.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests, InertNotebook]
    config.HTMLExporter.sanitize_html = True
    config.HTMLExporter.filters = {**dict(config.HTMLExporter.get("filters", {})), "clean_html": clean_html}
    return config


@functools.lru_cache(maxsize=None)
def replay_config(root: Path):
    """The configuration of the one process that records grades from notebooks workers executed:
    the same as :func:`sandboxed_config`, with the kernel replaced by the workers' outputs."""
    config = sandboxed_config(root)
    steps = list(config.Autograde.autograde_preprocessors)
    steps[0] = _replay_preprocessor()
    config.Autograde.autograde_preprocessors = steps
    return config


@functools.lru_cache(maxsize=None)
def _replay_preprocessor():
    from nbgrader.preprocessors import NbGraderPreprocessor

    class ReplayExecution(NbGraderPreprocessor):
        """Put a worker's outputs on the cells, instead of running a kernel; refuse a mismatch."""
        executed: dict = {}

        def preprocess(self, nb, resources):
            name = resources.get("nbgrader", {})["notebook"] + NB_EXT
            done = nbformat.reads(type(self).executed[name], as_version=4)
            if [c.source for c in done.cells] != [c.source for c in nb.cells]:
                raise ValueError(f"{name}: the worker's executed notebook does not match the submission")
            for cell, ran in zip(nb.cells, done.cells):
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = ran.outputs, ran.get("execution_count")
            return nb, resources

    return ReplayExecution


def _add_phase(res: Result, name: str, seconds: float) -> None:
    """Book ``seconds`` under ``name``. The phases, in order: ``confirm`` (the outside confirmation run),
    ``kernel start`` (nbgrader's autograde less the kernel's cells: the sandboxed kernel starting and
    nbgrader's own steps around it; ``import torch`` is in the first answer cell), ``answer cells`` and ``test cells`` (the notebook's own code, and the
    visible + hidden tests, as timed by the kernel), ``bookkeeping`` (nbgrader's database and files, the
    lower verdict, the scores) and ``feedback``."""
    res.phases[name] = res.phases.get(name, 0.0) + seconds


def _cell_seconds(paths) -> tuple[float, float]:
    """Seconds the kernel spent in answer/other cells and in test cells, from nbclient's timing metadata."""
    from datetime import datetime

    answers = tests = 0.0
    for p in paths:
        nb = nbformat.read(p, as_version=4) if isinstance(p, Path) else nbformat.reads(p, as_version=4)
        for cell in nb.cells:
            ex = cell.get("metadata", {}).get("execution", {})
            start, end = ex.get("iopub.execute_input") or ex.get("iopub.status.busy"), ex.get("shell.execute_reply")
            if cell.cell_type != "code" or not (start and end):
                continue
            try:
                took = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                        - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
            except ValueError:
                continue
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                tests += took
            else:
                answers += took
    return answers, tests


def _book_execution(res: Result, wall: float, executed) -> None:
    answers, tests = _cell_seconds(executed)
    _add_phase(res, "kernel start", max(0.0, wall - answers - tests))
    _add_phase(res, "answer cells", answers)
    _add_phase(res, "test cells", tests)


def record(api, sub: Submission, workdir: Path, res: Result, feedback: bool) -> None:
    """The single writer: nbgrader autograde of a submission a worker executed, then the lower
    verdict and the feedback (see :func:`_grade_one`)."""
    t0 = time.perf_counter()
    _replay_preprocessor().executed = res.executed
    _canonicalize_preprocessor().course_root = Path(workdir).resolve()
    out = api.autograde(sub.assignment, sub.student, force=True, create=True)
    res.executed = {}
    if not out.get("success"):
        res.ok, res.error = False, _short_error(out)
        return
    _keep_lower(api, sub, res.verdicts, res)
    res.questions = _scores(api, sub.assignment, sub.student)
    res.autograded = sorted((workdir / "autograded" / sub.student / sub.assignment).glob("*" + NB_EXT))
    _add_phase(res, "bookkeeping", time.perf_counter() - t0)
    if feedback:
        t0 = time.perf_counter()
        fb = api.generate_feedback(sub.assignment, sub.student, force=True)
        _add_phase(res, "feedback", time.perf_counter() - t0)
        if fb.get("success"):
            res.feedback = sorted((workdir / "feedback" / sub.student / sub.assignment).glob("*.html"))
            _annotate_feedback(res)
        else:
            res.error = "feedback: " + _short_error(fb)


@functools.lru_cache(maxsize=None)
def _canonicalize_preprocessor():
    from nbgrader.preprocessors import NbGraderPreprocessor

    class Canonicalize(NbGraderPreprocessor):
        """Rebuild the submitted notebook on the released one (see :mod:`.canonical`)."""
        course_root = REPO

        def preprocess(self, nb, resources):
            from .canonical import canonical_notebook

            info = resources.get("nbgrader", {})
            release_nb = Path(self.course_root) / "release" / info["assignment"] / (info["notebook"] + NB_EXT)
            nb, _ = canonical_notebook(nb, nbformat.read(release_nb, as_version=4))
            return nb, resources

    return Canonicalize



def _api(root: Path, sandboxed: bool = False):
    from nbgrader.apps import NbGraderAPI

    return NbGraderAPI(config=sandboxed_config(root) if sandboxed else load_config(root))


def _check(result: dict, what: str) -> None:
    if not result.get("success"):
        raise RuntimeError(f"{what} failed:\n{result.get('error') or ''}\n{result.get('log') or ''}")


def _environment() -> None:
    """nbgrader shells out to ``alembic`` and starts kernels by name: put this Python's bin first."""
    import warnings

    # nbgrader's gradebook trips SQLAlchemy's autoflush warning on every resubmission; it is harmless
    # (nbgrader's own tests see it too) and would bury the lines an instructor needs to read.
    warnings.filterwarnings("ignore", message=r"Object of type <Submitted", module=r"nbgrader\.")
    bindir = str(Path(sys.executable).parent)
    if not os.environ.get("PATH", "").startswith(bindir):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def release(names: list[str] | None = None, root: Path = REPO) -> list[Path]:
    """Regenerate ``release/<assignment>/`` from ``source/`` with nbgrader (deterministic).

    Runs ``generate_assignment`` in a throw-away course folder and copies the result, so the
    repository gets no gradebook and the bytes depend only on ``source/``.
    """
    import tempfile

    _environment()
    names = names or assignments(root)
    unknown = sorted(set(names) - set(assignments(root)))
    if unknown:
        raise SystemExit(f"error: unknown assignment(s) {', '.join(unknown)}; "
                         f"known: {', '.join(assignments(root))}")
    written = []
    with tempfile.TemporaryDirectory(prefix="course-release-") as tmp:
        work = Path(tmp)
        for name in names:
            shutil.copytree(Path(root) / "source" / name, work / "source" / name,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
            _check(_api(work).generate_assignment(name, force=True, create=True),
                   f"nbgrader generate_assignment {name}")
            dest = Path(root) / "release" / name
            if dest.exists():
                keep_student_changes(dest, work / "release" / name, root)
                shutil.rmtree(dest)
            shutil.copytree(work / "release" / name, dest)
            written += sorted(dest.glob("*" + NB_EXT))
    return written


def _committed(path: Path, root: Path) -> bytes | None:
    """The bytes git has for ``path`` at HEAD (None: no git, or not tracked)."""
    import subprocess

    try:
        rel = Path(path).resolve().relative_to(Path(root).resolve())
        out = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel.as_posix()}"], capture_output=True, timeout=30)
    except (ValueError, OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def keep_student_changes(old_release: Path, new_release: Path, root: Path = REPO) -> list[Path]:
    """Before ``release/<assignment>/`` is replaced: a notebook there that someone changed (a student
    who filled it in where the release lives) is copied to ``workspace/<assignment>/`` first — never
    lost. Changed means: not what git committed and not what the new release holds. Returns the copies."""
    kept = []
    for nb in sorted(Path(old_release).glob("*" + NB_EXT)):
        data = nb.read_bytes()
        fresh = Path(new_release) / nb.name
        if fresh.is_file() and fresh.read_bytes() == data:
            continue
        if _committed(nb, root) == data:
            continue
        dest_dir = Path(root) / "workspace" / Path(old_release).name
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / nb.name
        if dest.exists():
            dest = dest_dir / f"{nb.stem}-from-release-{time.strftime('%Y%m%d-%H%M%S')}{NB_EXT}"
        shutil.copy2(nb, dest)
        kept.append(dest)
        print(f"note: {nb} had changes of its own (your answers?): kept as {dest} before release/ was regenerated",
              file=sys.stderr, flush=True)
    return kept


# --------------------------------------------------------------------------- submissions

@dataclass
class Submission:
    student: str
    assignment: str
    notebooks: list[Path]
    flags: list[str] = field(default_factory=list)  # what was wrong with the files handed in (links, ...)


@dataclass
class Problem:
    path: Path
    message: str
    student: str | None = None     # who handed it in, when the layout says so: a row in grades.csv
    assignment: str | None = None

    def __str__(self) -> str:
        return f"error: {self.path}: {self.message}"


def _link(path: Path) -> str | None:
    """Why ``path`` must not be read: a symbolic link, or a file with other hard links (it may be
    another student's notebook, or a file of the course). None for a plain file or folder."""
    import stat

    try:
        st = os.lstat(path)
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link: not followed, not graded (hand in the file itself)"
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return (f"is a hard link ({st.st_nlink} names for one file): not read, not graded "
                "(hand in a copy of the file)")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return "is not a regular file or folder: not read"
    return None


def read_notebook(path: Path) -> tuple[nbformat.NotebookNode | None, str | None]:
    """Parse a submitted notebook; on failure return (None, a short reason naming what is wrong)."""
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, "not a text file (is it really a notebook?)"
    except OSError as err:
        return None, f"cannot be read ({err.strerror})"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        return None, f"corrupt notebook: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
    if not isinstance(data, dict) or "cells" not in data:
        return None, "not a Jupyter notebook (no 'cells' in the JSON)"
    try:
        nb = nbformat.reads(raw, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # nbformat raises several types
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, f"not a valid Jupyter notebook ({first[:160]})"
    return nb, None


def _grade_ids(nb) -> set[str]:
    return {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells} - {None}


def collect_submissions(path: Path, root: Path = REPO) -> tuple[list[Submission], list[Problem]]:
    """Find and check the submissions under ``path``.

    Accepted layouts:

    * nbgrader's ``submitted/<student>/<assignment>/<notebook>.ipynb`` (pass ``submitted`` itself
      or the course folder that contains it);
    * ``<student>/<notebook>.ipynb``: the assignment is found from the notebook's file name.

    Every file that cannot be graded becomes a :class:`Problem` naming it; the rest are graded.
    """
    path = Path(path)
    problems: list[Problem] = []
    if not path.exists():
        return [], [Problem(path, "no such folder")]
    if not path.is_dir():
        return [], [Problem(path, "is a file; give the folder that holds <student>/<assignment>/ folders")]
    if (path / "submitted").is_dir():
        path = path / "submitted"
    known = set(assignments(root))
    owner = notebook_owner(root)
    found: dict[tuple[str, str], list[Path]] = {}

    links: dict[tuple[str, str], list[str]] = {}

    def linked(p: Path, student: str, assignment: str | None) -> bool:
        why = _link(p)
        if why is None:
            return False
        problems.append(Problem(p, why, student, assignment))
        if assignment:
            links.setdefault((student, assignment), []).append(f"{p.relative_to(path)} {why}")
        return True

    for student_dir in sorted(p for p in path.iterdir() if not p.name.startswith(".")):
        if linked(student_dir, student_dir.name, None):
            continue
        if not student_dir.is_dir():
            problems.append(Problem(student_dir, "expected a folder per student, found a file"))
            continue
        for entry in sorted(p for p in student_dir.iterdir() if not p.name.startswith(".")):
            if linked(entry, student_dir.name, entry.name if entry.name in known else owner.get(entry.name)):
                continue
            if entry.is_dir():
                if entry.name not in known:
                    problems.append(Problem(entry, f"unknown assignment '{entry.name}' "
                                                   f"(known: {', '.join(sorted(known))})", student_dir.name))
                    continue
                files = []
                for dirpath, dirnames, filenames in os.walk(entry):  # never into a linked folder
                    dirnames[:] = sorted(d for d in dirnames if d != ".ipynb_checkpoints"
                                         and not linked(Path(dirpath) / d, student_dir.name, entry.name))
                    files += [Path(dirpath) / n for n in sorted(filenames)]
                for f in sorted(files):
                    if linked(f, student_dir.name, entry.name):
                        continue
                    if f.suffix != NB_EXT:
                        if f.name not in ("timestamp.txt", "submission_secret.txt"):  # nbgrader's own
                            problems.append(Problem(f, "not a notebook (.ipynb); skipped, the rest is graded"))
                        continue
                    nb, why = read_notebook(f)
                    if why:
                        problems.append(Problem(f, why, student_dir.name, entry.name))
                    elif f.name not in {p.name for p in source_notebooks(entry.name, root)}:
                        problems.append(Problem(f, f"assignment {entry.name} has no notebook named {f.name} "
                                                   f"(expected {', '.join(p.name for p in source_notebooks(entry.name, root))})",
                                                student_dir.name, entry.name))
                    else:
                        found.setdefault((student_dir.name, entry.name), []).append(f)
            elif entry.suffix == NB_EXT:
                nb, why = read_notebook(entry)
                if why:
                    problems.append(Problem(entry, why, student_dir.name, owner.get(entry.name)))
                elif entry.name not in owner:
                    problems.append(Problem(entry, "notebook of an unknown assignment (its name matches no "
                                                   "notebook in source/)", student_dir.name))
                else:
                    found.setdefault((student_dir.name, owner[entry.name]), []).append(entry)
            else:
                problems.append(Problem(entry, "not a notebook (.ipynb); skipped"))
    subs = [Submission(s, a, nbs, [f"linked file handed in: {w}" for w in links.get((s, a), [])])
            for (s, a), nbs in sorted(found.items())]
    return subs, problems


# --------------------------------------------------------------------------- grading

@dataclass
class QuestionScore:
    grade_id: str
    score: float | None
    max_score: float
    kind: str


@dataclass
class Result:
    student: str
    assignment: str
    ok: bool
    questions: list[QuestionScore] = field(default_factory=list)
    error: str = ""
    feedback: list[Path] = field(default_factory=list)
    autograded: list[Path] = field(default_factory=list)
    seconds: float = 0.0  # wall time of grading this submission (confirmation + nbgrader autograde)
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)      # what the submission did that grading undid or stopped
    integrity: list[str] = field(default_factory=list)  # in-kernel tests and outside confirmation disagreed
    confirm_seconds: float = 0.0
    sandboxed: bool = False
    verdicts: dict = field(default_factory=dict)   # grade_id -> the judge's verdict (plain data)
    executed: dict = field(default_factory=dict)   # notebook name -> executed notebook (JSON), from a worker
    phases: dict = field(default_factory=dict)     # where the seconds went (see :func:`_add_phase`)

    @property
    def auto_score(self) -> float:
        return sum(q.score or 0 for q in self.questions if q.kind == "auto")

    @property
    def auto_max(self) -> float:
        return sum(q.max_score for q in self.questions if q.kind == "auto")

    @property
    def manual_pending(self) -> float:
        return sum(q.max_score for q in self.questions if q.kind != "auto" and q.score is None)


def _scores(api, assignment: str, student: str) -> list[QuestionScore]:
    """Per-question scores from nbgrader's gradebook, in the order of the source notebook."""
    layout = {c["grade_id"]: c for c in gradebook_layout(assignment)}
    scores = {}
    with api.gradebook as gb:
        for nb in gb.find_submission(assignment, student).notebooks:
            for g in nb.grades:
                graded = g.auto_score is not None or g.manual_score is not None
                scores[g.name] = g.score if graded else None
    return [QuestionScore(gid, scores.get(gid), c["points"], c["kind"]) for gid, c in layout.items()]


def grade(subs: list[Submission], workdir: Path, *, feedback: bool = True, progress: bool = True,
          root: Path = REPO, jobs: int = 1, force: bool = False, scheduler=None) -> list[Result]:
    """Autograde each submission in the course folder ``workdir`` (created if needed).

    The submitted files are copied to ``workdir/submitted/<student>/<assignment>/``; nbgrader
    writes ``autograded/``, ``feedback/`` and ``gradebook.db`` there. Each submission is graded
    on its own: a crash is recorded in its :class:`Result` and the loop goes on.
    """
    from tqdm.auto import tqdm

    _environment()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    api = _api(workdir)
    for name in sorted({s.assignment for s in subs}):
        dest = workdir / "source" / name
        if dest.resolve() != (Path(root) / "source" / name).resolve():
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(Path(root) / "source" / name, dest,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        _check(api.generate_assignment(name, force=True, create=True), f"nbgrader generate_assignment {name}")

    from .sandbox import Limits, warn_if_unsandboxed

    limits = Limits.from_config(load_config(workdir))
    warn_if_unsandboxed()
    ledger = Ledger(workdir)
    done: dict[int, Result] = {}
    todo: list[int] = []
    for i, sub in enumerate(subs):
        earlier = None if force else ledger.unchanged(sub)
        died = None if force else ledger.died_on(sub)
        if earlier is not None:
            earlier.notes.append("unchanged since it was last graded: not graded again (--force regrades)")
            done[i] = earlier
        elif died is not None:
            why = (f"the grading process died while grading this submission (run started {died}); it is not "
                   "graded again, so that it cannot stop the others: look at it, then `grade --force` retries it")
            done[i] = Result(sub.student, sub.assignment, ok=False, error="not graded: " + why,
                             flags=list(dict.fromkeys(sub.flags + [why])))
        else:
            todo.append(i)
    if done:
        print(f"{len(done)} submission(s) unchanged since they were last graded: kept their grades "
              f"({len(todo)} to grade)", flush=True)

    def on_result(i: int, res: Result) -> None:
        res.flags = list(dict.fromkeys(subs[i].flags + res.flags))
        done[i] = res
        ledger.record(subs[i], res)
        _injected_stop(len(done) - (len(subs) - len(todo)))

    if (jobs > 1 and len(todo) > 1) or (scheduler and todo):
        from .parallel import grade_parallel

        grade_parallel([subs[i] for i in todo], workdir, jobs=jobs, feedback=feedback, progress=progress,
                       limits=limits, on_result=lambda k, res: on_result(todo[k], res), scheduler=scheduler)
        return [done[i] for i in range(len(subs))]
    sandboxed_api = _api(workdir, sandboxed=True)
    bar = tqdm(todo, desc="autograding", unit="notebook", disable=not progress, file=sys.stdout)
    for i in bar:
        sub = subs[i]
        bar.set_postfix_str(f"{sub.student}/{sub.assignment}")
        res = Result(sub.student, sub.assignment, ok=False)
        _stage(sub, workdir / "submitted" / sub.student / sub.assignment, workdir, res)
        t0 = time.perf_counter()
        ledger.begin(sub)  # if this process dies now (a kill, the OOM killer), the rerun knows which one
        _injected_death(sub.student)
        try:
            _grade_one(sandboxed_api, sub, workdir, res, limits, feedback)
        except Exception as err:  # noqa: BLE001 - one broken submission must not stop the rest
            res.ok, res.error = False, f"{type(err).__name__}: {err}"
        except BaseException:  # Ctrl-C: the submission did not kill the grader
            ledger.abandon(sub)
            raise
        res.seconds = time.perf_counter() - t0
        if res.flags and progress:
            bar.write(f"flagged: {sub.student}/{sub.assignment}: {res.flags[0]}"
                      + (f" (+{len(res.flags) - 1} more)" if len(res.flags) > 1 else ""))
        on_result(i, res)
    bar.close()
    return [done[i] for i in range(len(subs))]


def _injected_death(student: str) -> None:
    """Fault injection for the tests: ``COURSE_GRADING_DIE_ON=ann`` ends this process (as the OOM
    killer would) while it grades ``ann``."""
    if os.environ.get("COURSE_GRADING_DIE_ON") == student:
        os._exit(137)


def _injected_stop(graded_now: int) -> None:
    """Fault injection for the tests: ``COURSE_GRADING_STOP_AFTER=K`` ends this process (as a killed
    machine would) right after the K-th submission of this run was recorded."""
    limit = os.environ.get("COURSE_GRADING_STOP_AFTER")
    if limit and graded_now >= int(limit):
        os._exit(137)


class Ledger:
    """What was graded, from which files: ``<workdir>/grading-ledger.json``, rewritten atomically
    (temporary file, then rename) after each recorded submission. A rerun skips submissions whose
    files hash the same and whose grade is in the gradebook; ``times`` counts gradings of each."""

    def __init__(self, workdir: Path):
        self.path = Path(workdir) / "grading-ledger.json"
        try:
            self.data = json.loads(self.path.read_text()) if self.path.is_file() else {}
        except (OSError, ValueError):
            self.data = {}

    @staticmethod
    def key(sub: Submission) -> str:
        return f"{sub.student}/{sub.assignment}"

    @staticmethod
    def digest(sub: Submission) -> str:
        import hashlib

        h = hashlib.sha256()
        for nb in sorted(sub.notebooks, key=lambda p: p.name):
            h.update(nb.name.encode() + b"\0" + nb.read_bytes() + b"\0")
        return h.hexdigest()

    def begin(self, sub: Submission) -> None:
        """Note that grading of ``sub`` starts (cleared when its result is recorded)."""
        entry = self.data.setdefault(self.key(sub), {})
        entry["attempt"] = {"hash": self.digest(sub), "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        _write_atomically(self.path, json.dumps(self.data, indent=1, default=str))

    def abandon(self, sub: Submission) -> None:
        entry = self.data.get(self.key(sub), {})
        if entry.pop("attempt", None) is not None:
            _write_atomically(self.path, json.dumps(self.data, indent=1, default=str))

    def died_on(self, sub: Submission) -> str | None:
        """When an earlier run began grading these very files and never recorded a result: its time."""
        attempt = self.data.get(self.key(sub), {}).get("attempt")
        if attempt and attempt.get("hash") == self.digest(sub):
            return attempt.get("started", "?")
        return None

    def unchanged(self, sub: Submission) -> "Result | None":
        entry = self.data.get(self.key(sub))
        if not entry or entry.get("hash") != self.digest(sub) or not entry["result"].get("ok"):
            return None
        r = dict(entry["result"])
        r["questions"] = [QuestionScore(**q) for q in r["questions"]]
        r["feedback"] = [Path(p) for p in r["feedback"]]
        r["autograded"] = [Path(p) for p in r["autograded"]]
        return Result(**r)

    def record(self, sub: Submission, res: Result) -> None:
        from dataclasses import asdict

        result = asdict(res)
        result["feedback"] = [str(p) for p in res.feedback]
        result["autograded"] = [str(p) for p in res.autograded]
        result["executed"], result["verdicts"], result["notes"] = {}, res.verdicts, []
        entry = self.data.get(self.key(sub), {})
        self.data[self.key(sub)] = {"hash": self.digest(sub), "result": result, "times": entry.get("times", 0) + 1,
                                    "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        _write_atomically(self.path, json.dumps(self.data, indent=1, default=str))


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _grade_one(api, sub: Submission, workdir: Path, res: Result, limits, feedback: bool,
               record: bool = True) -> None:
    """Confirmation in the sandbox, then nbgrader autograde with its kernel in the sandbox, then the
    lower of the two verdicts per test cell into the gradebook."""
    from . import sandbox
    from .canonical import canonical_notebook
    from .confirm import confirm, test_cell_ids

    staged = workdir / "submitted" / sub.student / sub.assignment
    deadline = time.monotonic() + limits.wall_seconds
    space = sandbox.Workspace(limits)  # everything this submission's runs write, bounded as a whole
    tmp = space.__enter__()
    try:
        verdicts, hung_cells = {}, []
        for path in sorted(staged.glob("*" + NB_EXT)):
            release_nb = nbformat.read(workdir / "release" / sub.assignment / path.name, as_version=4)
            nb, why = read_notebook(path)
            if why:
                raise ValueError(f"{path.name}: {why}")
            canon, flags = canonical_notebook(nb, release_nb)
            res.flags += flags
            lim = sandbox.Limits(**{**limits.__dict__, "wall_seconds": max(1.0, deadline - time.monotonic())})
            conf = confirm(canon, sub.assignment, limits=lim, workdir=tmp / "confirm" / path.stem,
                           wanted=test_cell_ids(release_nb))
            res.flags += conf.flags
            res.confirm_seconds += conf.seconds
            _add_phase(res, "confirm", conf.seconds)
            res.sandboxed = conf.sandboxed
            verdicts.update(conf.verdicts)
            hung_cells += conf.hung_cells
        vfile = tmp / "verdicts.json"
        vfile.write_text(json.dumps({g: v.as_json() for g, v in verdicts.items()}))
        os.chmod(vfile, 0o644)
        kernel_scratch, rundir, specs = tmp / "kernel", tmp / "run", tmp / "jupyter"
        for d in (kernel_scratch, rundir):
            d.mkdir()
            os.chmod(d, 0o777)
        sandbox.write_kernelspec(specs)
        cgroup = sandbox.Cgroup(limits, sandbox.status()["cgroup"])
        env = {"COURSE_SANDBOX_SCRATCH": str(kernel_scratch), "COURSE_SANDBOX_RUN": str(rundir),
               "COURSE_SANDBOX_LIMITS": limits.to_env(), "COURSE_VERDICTS": str(vfile),
               "COURSE_SANDBOX_CGROUP": os.pathsep.join(str(d) for d in cgroup.dirs),
               "COURSE_SANDBOX_BWRAP": "1" if sandbox.status()["bwrap"] else "0",
               "COURSE_SANDBOX_WALL": str(max(1.0, deadline - time.monotonic())),
               "COURSE_HUNG_CELLS": json.dumps(sorted({sandbox.source_key(c) for c in hung_cells})),
               "JUPYTER_PATH": str(specs) + os.pathsep + os.environ.get("JUPYTER_PATH", "")}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        waking = cgroup.start_waking() if cgroup.active else None
        _canonicalize_preprocessor().course_root = Path(workdir).resolve()  # this submission's course folder
        t_exec = time.perf_counter()
        try:
            out = api.autograde(sub.assignment, sub.student, force=True, create=True)
        finally:
            t_exec = time.perf_counter() - t_exec
            if waking is not None:
                waking.set()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            cgroup.cleanup()
        res.flags += list(getattr(sandbox.sandboxed_execute_class(), "last_flags", []))
        if not out.get("success"):
            res.error = _short_error(out)
            return
        res.ok = True
        res.verdicts = {g: v.as_json() for g, v in verdicts.items()}
        executed = sorted((workdir / "autograded" / sub.student / sub.assignment).glob("*" + NB_EXT))
        _book_execution(res, t_exec, executed)
        if not record:  # a worker: hand the executed notebooks to the one process that records grades
            res.executed = {p.name: p.read_text(encoding="utf-8") for p in executed}
            return
        t0 = time.perf_counter()
        _keep_lower(api, sub, verdicts, res)
        res.questions = _scores(api, sub.assignment, sub.student)
        res.autograded = executed
        _add_phase(res, "bookkeeping", time.perf_counter() - t0)
        if feedback:
            t0 = time.perf_counter()
            fb = api.generate_feedback(sub.assignment, sub.student, force=True)
            _add_phase(res, "feedback", time.perf_counter() - t0)
            if fb.get("success"):
                res.feedback = sorted((workdir / "feedback" / sub.student / sub.assignment).glob("*.html"))
                _annotate_feedback(res)
            else:
                res.error = "feedback: " + _short_error(fb)
    finally:
        space.__exit__(None, None, None)
        res.flags = list(dict.fromkeys(res.flags))


def _keep_lower(api, sub: Submission, verdicts: dict, res: Result) -> None:
    """Per test cell: the gradebook keeps the lower of nbgrader's in-kernel score and the judge's."""
    with api.gradebook as gb:
        for nb in gb.find_submission(sub.assignment, sub.student).notebooks:
            for g in nb.grades:
                v = verdicts.get(g.name)
                if v is None or g.auto_score is None:
                    continue
                passed = v["passed"] if isinstance(v, dict) else v.passed
                message = v["message"] if isinstance(v, dict) else v.message
                judged = g.max_score if passed else 0.0
                if g.auto_score > judged:
                    first = message.strip().splitlines()[0] if message.strip() else "failed"
                    res.integrity.append(f"{g.name}: the notebook's own tests gave {g.auto_score:g}, the check outside "
                                         f"the kernel gave {judged:g} ({first[:160]}); kept {judged:g}")
                    g.auto_score = judged
                elif g.auto_score < judged:
                    res.integrity.append(f"{g.name}: the check outside the kernel passed but the notebook's own "
                                         f"tests gave {g.auto_score:g}; kept {g.auto_score:g}")
        gb.db.commit()


def _annotate_feedback(res: Result) -> None:
    """A short note at the top of the feedback: what grading undid or stopped, and disagreements."""
    import html

    lines = res.flags + res.integrity
    if not lines:
        return
    note = ("<div style='border:2px solid #c60;padding:8px;margin:8px'><b>Notes from the grader</b><ul>"
            + "".join(f"<li>{html.escape(l)}</li>" for l in lines) + "</ul></div>")
    for path in res.feedback:
        text = path.read_text(encoding="utf-8")
        i = text.find("<body")
        j = text.find(">", i) + 1 if i >= 0 else 0
        path.write_text(text[:j] + note + text[j:], encoding="utf-8")


def _stage(sub: Submission, target: Path, workdir: Path, res: Result) -> None:
    """Put the submission where nbgrader looks for it, never losing anything already there.

    Grading the course's own ``submitted/`` folder copies nothing. A different earlier copy in the
    way is moved to ``replaced_submissions/<time>/`` (reported), never deleted.
    """
    if all(nb.parent.resolve() == target.resolve() for nb in sub.notebooks):
        return
    if target.exists():
        same = sorted(p.name for p in target.iterdir()) == sorted(nb.name for nb in sub.notebooks) and all(
            (target / nb.name).read_bytes() == nb.read_bytes() for nb in sub.notebooks)
        if same:
            return
        backup = workdir / "replaced_submissions" / time.strftime("%Y%m%d-%H%M%S") / sub.student / sub.assignment
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(target), str(backup))
        res.notes.append(f"an earlier {target} was moved to {backup}")
    target.mkdir(parents=True)
    for nb in sub.notebooks:
        shutil.copy2(nb, target / nb.name)


def _short_error(out: dict) -> str:
    text = (out.get("error") or "") + "\n" + (out.get("log") or "")
    lines = [l for l in text.splitlines() if "[ERROR]" in l or "Error" in l]
    return (lines[-1] if lines else text.strip().splitlines()[-1] if text.strip() else "unknown error")[:300]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """A CSV cell a spreadsheet will not run: text that begins like a formula (OWASP's list: ``=``,
    ``+``, ``-``, ``@``, tab, carriage return) gets a leading apostrophe. Numbers the course writes
    itself are left as they are."""
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class SafeWriter:
    """``csv.writer`` whose every text cell goes through :func:`csv_cell`: the one way the course
    writes CSV."""

    def __init__(self, f):
        self._w = csv.writer(f)

    def writerow(self, row) -> None:
        self._w.writerow([csv_cell(v) for v in row])


def write_csv(results: list[Result], dest_dir: Path, problems: list[Problem] = ()) -> tuple[Path, Path]:
    """``grades.csv`` (one row per student and assignment, and one for each student whose files could
    not be graded, with the reason) and ``grades_by_question.csv``."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    totals, by_q = dest_dir / "grades.csv", dest_dir / "grades_by_question.csv"
    graded = {(r.student, r.assignment) for r in results}
    skipped: dict[tuple[str, str], list[str]] = {}
    for p in problems:
        if p.student and (p.student, p.assignment or "") not in graded and (p.student, p.assignment) not in graded:
            skipped.setdefault((p.student, p.assignment or ""), []).append(f"{Path(p.path).name}: {p.message}")
    with (tmp_totals := totals.with_name(".grades.csv.tmp")).open("w", newline="") as f:
        w = SafeWriter(f)
        w.writerow(["student", "assignment", "status", "auto_score", "auto_max", "manual_pending",
                    "autograde_seconds", "confirm_seconds", "flags", "integrity"])
        for r in results:
            w.writerow([r.student, r.assignment, "graded" if r.ok else "error: " + r.error,
                        f"{r.auto_score:g}", f"{r.auto_max:g}", f"{r.manual_pending:g}", f"{r.seconds:.1f}",
                        f"{r.confirm_seconds:.1f}", " | ".join(r.flags), " | ".join(r.integrity)])
        for (student, assignment), why in sorted(skipped.items()):
            w.writerow([student, assignment, "not graded: " + " | ".join(why), "0", "", "", "", "", "", ""])
    with (tmp_by_q := by_q.with_name(".grades_by_question.csv.tmp")).open("w", newline="") as f:
        w = SafeWriter(f)
        w.writerow(["student", "assignment", "question", "kind", "score", "max_score"])
        for r in results:
            for q in r.questions:
                w.writerow([r.student, r.assignment, q.grade_id, q.kind,
                            "" if q.score is None else f"{q.score:g}", f"{q.max_score:g}"])
    os.replace(tmp_totals, totals)  # never half-written: a rename is atomic
    os.replace(tmp_by_q, by_q)
    return totals, by_q


def failing_tests(notebook: Path) -> list[tuple[str, str]]:
    """(grade_id, message) for each graded test cell that failed in an autograded notebook.

    Only the error's name and message: never the (hidden) test code.
    """
    from nbgrader.utils import has_failed

    nb = nbformat.read(notebook, as_version=4)
    failures = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        if not has_failed(cell):
            continue
        msgs = []
        for out in cell.outputs:
            if out.output_type == "error":
                msgs.append(f"{out.ename}: {out.evalue}".strip())
            elif out.output_type == "stream" and out.name == "stderr":
                msgs.append("wrote to stderr: " + out.text.strip()[:300])
        failures.append((meta["grade_id"], "\n".join(msgs) or "failed"))
    return failures
