"""One submission through the trusted pipeline: nbgrader's own steps, with the sandbox and the confirmation.

The stages, in the order a submission meets them (each a public function the batch loops call —
:func:`instructor.batch.course.grade` one at a time, :mod:`instructor.batch.parallel` on workers and Dask):

1. :func:`stage` — the submitted files copied where nbgrader looks (nothing overwritten: kept aside);
2. :func:`grade_submission` (``grade_one``: the same in a sandbox of its own), readable top to bottom:
   *canonicalize* (:func:`canonical_notebooks`, :mod:`.canonical`), *confirm* every test cell outside the
   student's kernel (:func:`confirmation`, :mod:`.confirm`: probes in the submission's
   :class:`~instructor.sandbox.box.Sandbox`, judged here), *execute* with nbgrader's autograde, its kernel
   in the same sandbox (:func:`execution_settings`, :func:`autograde`), the outputs made inert (:mod:`.sanitize`);
3. :func:`keep_lower` — *judge*: per test cell, the gradebook keeps the lower of the two verdicts;
4. :func:`record` — the same bookkeeping for a notebook a worker executed (one process writes the gradebook);
5. *report*: :func:`scores`, nbgrader's ``generate_feedback`` and :func:`.feedback.annotate_feedback`.

nbgrader itself is configured here (:func:`sandboxed_config`, :func:`replay_config`) as a chain of its
own preprocessors, each with one job.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.nbgrader_cells import is_test_cell, nbgrader_meta

from ..layout import NB_EXT, REPO, RESTAMP_NOTE, gradebook_layout, load_config, test_cell_ids
from .. import sandbox
from ..sandbox.box import Sandbox
from .feedback import annotate_feedback, exporter_class
from .canonical import canonical_notebook
from .execute import sandboxed_execute_class, source_key
from .i18n import shown_verdicts

__all__ = ["Submission", "QuestionScore", "Outcome", "Result", "sandboxed_config", "replay_config", "nbgrader_api", "check_ok",
           "prepare_environment", "stage", "grade_one", "grade_submission", "CourseFolder", "keep_lower", "record",
           "scores", "annotate_feedback", "read_notebook", "failing_tests", "short_error", "failure_reason",
           "write_atomically"]


def sandboxed_config(root: Path):
    """The course's nbgrader configuration with the grading-only parts: submissions rebuilt on the
    released notebook first (:mod:`.canonical`), and the kernel run in the sandbox (:mod:`instructor.sandbox`)."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, IgnorePattern, LimitOutput,
                                        OverwriteCells, OverwriteKernelspec, SaveAutoGrades)

    from .sanitize import InertNotebook, clean_html

    config = load_config(root)
    # No live student HTML/JavaScript (:mod:`.sanitize`): markdown made inert before execution (so a
    # worker's notebook and the recorder's have the same sources), outputs right after it; the
    # autograded notebook on disk is inert.
    # Canonicalize before nbgrader's own steps: DeduplicateIds crashes on nbgrader metadata a student broke
    # (no id, not a dict, a list as id) that canonical repairs and flags; after it, DeduplicateIds has nothing
    # to do (canonical keeps the first cell of a grade id, as DeduplicateIds would).
    config.Autograde.sanitize_preprocessors = [ClearOutput, _canonicalize_preprocessor(), DeduplicateIds, OverwriteKernelspec,
                                               OverwriteCells, InertNotebook, CheckCellMetadata]
    config.Autograde.autograde_preprocessors = [sandboxed_execute_class(), IgnorePattern, ClearMetadataPreprocessor,
                                                LimitOutput, InertNotebook, SaveAutoGrades, AssignLatePenalties,
                                                CheckCellMetadata]
    # Feedback shows what failed and why (the cells' outputs), never the hidden part of a test cell,
    # and nothing that runs in the student's browser: inert again, and the template's HTML sanitized.
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import ClearHiddenTests, GetGrades

    config.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, ClearHiddenTests, InertNotebook]
    config.GenerateFeedback.exporter_class = exporter_class()   # nbconvert's HTML, minus two costs (:mod:`.feedback`)
    config.HTMLExporter.sanitize_html = True
    # nbconvert validates the whole notebook after each preprocessor (eight per autograde): once, after the
    # last, is the same check (an invalid notebook still fails, naming the last step). 0.05 s a notebook.
    config.Exporter.optimistic_validation = True
    config.HTMLExporter.filters = {**dict(config.HTMLExporter.get("filters", {})), "clean_html": clean_html}
    return config


@functools.lru_cache(maxsize=None)
def replay_config(root: Path):
    """The configuration of the one process that records grades from notebooks workers executed.

    A worker ran the whole of :func:`sandboxed_config`'s chain (sanitize, execute, outputs made inert)
    on the same released assignment; its autograded notebook is the final one. So the recorder takes it
    as is (``ReplayExecution``, in place of the sanitize steps) and runs only the steps that write the
    gradebook: nbgrader's ``SaveAutoGrades`` and ``AssignLatePenalties``. nbgrader's converter still does
    the rest of its bookkeeping (the submission's rows, missing notebooks, timestamps, files)."""
    from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

    config = sandboxed_config(root)
    config.Autograde.sanitize_preprocessors = [_replay_preprocessor()]
    config.Autograde.autograde_preprocessors = [SaveAutoGrades, AssignLatePenalties]
    return config


@functools.lru_cache(maxsize=None)
def _replay_preprocessor():
    from nbgrader.preprocessors import NbGraderPreprocessor
    from traitlets import Dict

    class ReplayExecution(NbGraderPreprocessor):
        """The worker's autograded notebook in place of the submitted one (nothing is run here)."""
        executed = Dict(help="notebook name -> the executed notebook (JSON) a worker sent: set per submission")

        def preprocess(self, nb, resources):
            name = resources.get("nbgrader", {})["notebook"] + NB_EXT
            if name not in self.executed:
                raise ValueError(f"{name}: the worker sent no executed notebook of that name")
            return nbformat.reads(self.executed[name], as_version=4), resources

    return ReplayExecution


@functools.lru_cache(maxsize=None)
def _submission_autograde_class():
    from nbgrader.converters import Autograde
    from traitlets import Dict

    class SubmissionAutograde(Autograde):
        """nbgrader's autograde of one submission, whose preprocessors are given that submission's settings
        on their instances (``settings``: preprocessor class -> {trait: value}), as each is made."""
        settings = Dict()

        def _init_preprocessors(self):
            super()._init_preprocessors()
            for pp in self.exporter._preprocessors:
                for cls, traits in self.settings.items():
                    if isinstance(pp, cls):
                        for name, value in traits.items():
                            pp.set_trait(name, value)
                self.made.append(pp)

    return SubmissionAutograde


def autograde(api, assignment: str, student: str, settings: dict | None = None) -> tuple[dict, list[str]]:
    """nbgrader's ``api.autograde(assignment, student, force=True, create=True)`` with this submission's
    ``settings`` (preprocessor class -> {trait: value}) on the preprocessors' instances; returns what the
    API returns and the flags the preprocessors raised (their ``course_flags``). Nothing of the submission
    is put in the process (environment, class attributes) or in ``api`` (its own course directory object),
    so two submissions may be graded at once with one ``api``."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    coursedir = CourseDirectory(parent=api)
    coursedir.root = api.coursedir.root
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = _submission_autograde_class()(coursedir=coursedir, parent=api)
    app.settings = dict(settings or {})
    app.made = []
    app.force, app.create_student = True, True
    out = capture_log(app)
    return out, [f for pp in app.made for f in getattr(pp, "course_flags", ())]


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
            if is_test_cell(cell):
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
    verdict and the feedback (see :func:`grade_one`)."""
    t0 = time.perf_counter()
    out, _ = autograde(api, sub.assignment, sub.student, {_replay_preprocessor(): {"executed": res.executed}})
    res.executed = {}
    if not out.get("success"):
        res.ok, res.error = False, failure_reason(out)
        return
    judge_and_report(api, sub, workdir, res, res.verdicts, feedback, t0)


def judge_and_report(api, sub: Submission, workdir: Path, res: Result, verdicts: dict, feedback: bool,
                     t0: float) -> None:
    """After nbgrader's autograde: the lower verdict per test cell, the scores, then the feedback with
    the grader's notes (``t0``: when the bookkeeping began, for the phase timings)."""
    keep_lower(api, sub, verdicts, res)
    res.questions = scores(api, sub.assignment, sub.student)
    res.autograded = sorted((workdir / "autograded" / sub.student / sub.assignment).glob("*" + NB_EXT))
    _add_phase(res, "bookkeeping", time.perf_counter() - t0)
    if feedback:
        t0 = time.perf_counter()
        fb = api.generate_feedback(sub.assignment, sub.student, force=True)
        _add_phase(res, "feedback", time.perf_counter() - t0)
        if fb.get("success"):
            res.feedback = sorted((workdir / "feedback" / sub.student / sub.assignment).glob("*.html"))
            annotate_feedback(res)
        else:
            res.error = "feedback: " + failure_reason(fb)


@functools.lru_cache(maxsize=None)
def _canonicalize_preprocessor():
    from nbgrader.preprocessors import NbGraderPreprocessor

    from traitlets import Dict, Unicode

    class Canonicalize(NbGraderPreprocessor):
        """The submitted notebook rebuilt on the released one (see :mod:`.canonical`): the one the engine
        already made for this submission (``canonical``: notebook name -> canonical notebook, set per
        submission), else made here from the release under ``course_root`` (default: the checkout)."""
        canonical = Dict(help="notebook name -> its canonical notebook, made once per submission by the engine")
        course_root = Unicode(str(REPO), help="the course folder whose release/ a notebook is rebuilt on")

        def preprocess(self, nb, resources):
            info = resources.get("nbgrader", {})
            name = info["notebook"] + NB_EXT
            if name in self.canonical:
                nb = copy.deepcopy(self.canonical[name])
                for cell in nb.cells:   # what nbgrader's ClearOutput, before this step, leaves out
                    for key in ("collapsed", "scrolled"):
                        cell.get("metadata", {}).pop(key, None)
                return nb, resources
            release_nb = Path(self.course_root) / "release" / info["assignment"] / name
            nb, _ = canonical_notebook(nb, nbformat.read(release_nb, as_version=4))
            return nb, resources

    return Canonicalize



def nbgrader_api(root: Path, sandboxed: bool = False):
    from nbgrader.apps import NbGraderAPI

    return NbGraderAPI(config=sandboxed_config(root) if sandboxed else load_config(root))


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all (a temporary file, then a rename)."""
    tmp = Path(path).with_name(f".{Path(path).name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def check_ok(result: dict, what: str) -> None:
    if not result.get("success"):
        raise RuntimeError(f"{what} failed:\n{result.get('error') or ''}\n{result.get('log') or ''}")


def prepare_environment() -> None:
    """nbgrader shells out to ``alembic`` and starts kernels by name: put this Python's bin first."""
    import warnings

    # nbgrader's gradebook trips SQLAlchemy's autoflush warning on every resubmission; it is harmless
    # (nbgrader's own tests see it too) and would bury the lines an instructor needs to read.
    warnings.filterwarnings("ignore", message=r"Object of type <Submitted", module=r"nbgrader\.")
    bindir = str(Path(sys.executable).parent)
    if not os.environ.get("PATH", "").startswith(bindir):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    _gradebooks_without_alembic()
    _gradebook_writers_wait()


def warm_up(report: bool = False) -> None:
    """Import what grading the first submission needs, while the pre-started sandbox starts (another
    process, on another core): torch and the hidden checks (the judge), the module
    ``torch.testing.assert_close`` imports on its first call (``torch.distributed.tensor``, 0.8 s here)
    and, with ``report``, matplotlib's figure (the class report). Only imports: nothing here can change
    a score, and what fails is imported (and fails) where it is used, as before."""
    import importlib

    names = ["instructor.engine.confirm", "torch.distributed.tensor"]
    if report:
        names += ["matplotlib.figure", "matplotlib.backends.backend_agg"]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - see above
            pass


def sandbox_warm(assignments) -> tuple[str, ...]:
    """What the pre-started sandbox should do once before its first run for a batch of ``assignments``
    (:meth:`~instructor.sandbox.zygote.Zygote.warm`): ``"meta"`` when one of their hidden checks draws meta
    tensors (the draws its task text promises, :attr:`~instructor.hidden.Check.draws`), whose first use
    costs every run that makes it 1.2-1.8 s of CPU here; nothing for the others (assignment 0)."""
    from instructor.hidden import ASSIGNMENT_MODULES, draws_of

    for name in sorted(set(assignments)):
        if name not in ASSIGNMENT_MODULES or "meta" in draws_of(name):  # not the course's: as before, everything
            return ("meta",)
    return ()


#: how long a gradebook writer waits for another process's write transaction (``--jobs`` workers share
#: one SQLite gradebook; each transaction lasts milliseconds, pysqlite's default wait is 5 s)
GRADEBOOK_WAIT_MS = 120_000


@functools.lru_cache(maxsize=None)
def _gradebook_writers_wait() -> None:
    """Every SQLite connection of this process waits :data:`GRADEBOOK_WAIT_MS` for a lock held by
    another process, instead of failing with "database is locked"."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _wait(dbapi_connection, _record):
        if type(dbapi_connection).__module__.startswith("sqlite3"):
            dbapi_connection.execute(f"PRAGMA busy_timeout = {GRADEBOOK_WAIT_MS}")


@functools.lru_cache(maxsize=None)
def alembic_head() -> str | None:
    """The head revision of nbgrader's gradebook schema, read from its migration scripts (the last
    ``revision`` no other script names as its ``down_revision``). None when that is not one revision."""
    import re

    import nbgrader

    versions = Path(nbgrader.__file__).parent / "alembic" / "versions"
    revisions, downs = set(), set()
    for script in versions.glob("*.py"):
        text = script.read_text(encoding="utf-8")
        rev = re.search(r"^revision\s*=\s*['\"](\w+)['\"]", text, re.M)
        down = re.search(r"^down_revision\s*=\s*['\"](\w+)['\"]", text, re.M)
        if rev:
            revisions.add(rev.group(1))
        if down:
            downs.add(down.group(1))
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None


def _gradebooks_without_alembic() -> None:
    """A new gradebook asks ``alembic heads`` in a subprocess that imports nbgrader's whole server stack
    (2.5 s here, once per worker and assignment); the answer is in nbgrader's own migration scripts."""
    import nbgrader.api

    if getattr(nbgrader.api.get_alembic_version, "_course", False) or alembic_head() is None:
        return
    original = nbgrader.api.get_alembic_version

    def get_alembic_version() -> str:
        return alembic_head() or original()

    get_alembic_version._course = True
    get_alembic_version._original = original
    nbgrader.api.get_alembic_version = get_alembic_version


@dataclass
class Submission:
    student: str
    assignment: str
    notebooks: list[Path]
    flags: list[str] = field(default_factory=list)  # what was wrong with the files handed in (links, ...)
    graded_as: dict = field(default_factory=dict)   # a renamed copy's file name -> the course's name for it

    def name_of(self, nb: Path) -> str:
        """The name ``nb`` is graded under: its own, or the course's for a copy recognised by its cell ids."""
        return self.graded_as.get(nb.name, nb.name)

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

# --------------------------------------------------------------------------- grading

@dataclass
class QuestionScore:
    grade_id: str
    score: float | None
    max_score: float
    kind: str


@dataclass
class Outcome:
    """What grading one submission gave, as plain data: the scores, the judge's verdicts, the flags and
    notes, the timings. It is what every runner returns and what crosses a process or a socket
    (:meth:`to_json` / :meth:`from_json`, the one serializer); the files grading wrote are not part of
    it (:class:`Result`'s artifacts). A submission that could not be graded: :meth:`failed`."""
    student: str
    assignment: str
    ok: bool
    questions: list[QuestionScore] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0  # wall time of grading this submission (confirmation + nbgrader autograde)
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)      # what the submission did that grading undid or stopped
    integrity: list[str] = field(default_factory=list)  # in-kernel tests and outside confirmation disagreed
    confirm_seconds: float = 0.0
    sandboxed: bool = False
    verdicts: dict = field(default_factory=dict)   # grade_id -> the judge's verdict (plain data)
    recorded: bool = False                         # a worker recorded it in the course's gradebook itself
    phases: dict = field(default_factory=dict)     # where the seconds went (see :func:`_add_phase`)
    started: float = 0.0                           # when its grading began (time.time(), on its worker)

    @classmethod
    def failed(cls, student: str, assignment: str, reason: str, *, flags=(), **more):
        """A submission not graded, and why (``reason``: the one line a reader sees first)."""
        return cls(student, assignment, ok=False, error=str(reason), flags=list(dict.fromkeys(flags)), **more)

    def to_json(self) -> dict:
        """The outcome as JSON-able data (its fields; never a file or a path)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(Outcome)}
        out["questions"] = [dataclasses.asdict(q) for q in self.questions]
        return json.loads(json.dumps(out, default=str))

    @classmethod
    def from_json(cls, data: dict):
        """What :meth:`to_json` wrote, back (keys it does not know are left out); a ``ValueError`` names
        what is wrong with data that is not an outcome."""
        if not isinstance(data, dict):
            raise ValueError(f"an outcome is a JSON object, not {type(data).__name__}")
        known = {f.name: f for f in dataclasses.fields(Outcome)}
        missing = [k for k in ("student", "assignment", "ok") if k not in data]
        if missing:
            raise ValueError(f"an outcome needs {', '.join(missing)}")
        kept = {k: v for k, v in data.items() if k in known}
        try:
            kept["questions"] = [QuestionScore(**q) for q in kept.get("questions") or []]
        except TypeError as err:
            raise ValueError(f"an outcome's questions are not what to_json writes ({err})") from None
        return cls(**kept)

    @property
    def auto_score(self) -> float:
        return sum(q.score or 0 for q in self.questions if q.kind == "auto")

    @property
    def auto_max(self) -> float:
        return sum(q.max_score for q in self.questions if q.kind == "auto")

    @property
    def manual_pending(self) -> float:
        return sum(q.max_score for q in self.questions if q.kind != "auto" and q.score is None)


@dataclass
class Result(Outcome):
    """An :class:`Outcome` with the artifacts grading left where it ran: the feedback pages and autograded
    notebooks (paths on that machine), and the executed notebooks a worker hands to the one process
    that records grades (``executed``: notebook name -> JSON). Artifacts never travel in :meth:`to_json`."""
    feedback: list[Path] = field(default_factory=list)
    autograded: list[Path] = field(default_factory=list)
    executed: dict = field(default_factory=dict)

    @property
    def outcome(self) -> Outcome:
        return Outcome.from_json(self.to_json())


def scores(api, assignment: str, student: str) -> list[QuestionScore]:
    """Per-question scores from nbgrader's gradebook, in the order of the source notebook."""
    layout = {c["grade_id"]: c for c in gradebook_layout(assignment)}
    scores = {}
    with api.gradebook as gb:
        for nb in gb.find_submission(assignment, student).notebooks:
            for g in nb.grades:
                graded = g.auto_score is not None or g.manual_score is not None
                scores[g.name] = g.score if graded else None
    return [QuestionScore(gid, scores.get(gid), c["points"], c["kind"]) for gid, c in layout.items()]

@dataclass
class CourseFolder:
    """Where and how a submission is graded: nbgrader's API on the course folder ``workdir``, the
    sandbox's ``limits``, whether to write the feedback, and whether this process records the grades
    (``record=False``: a worker hands the executed notebooks to the one process that does)."""
    api: object
    workdir: Path
    limits: object
    feedback: bool = True
    record: bool = True


def grade_one(api, sub: Submission, workdir: Path, res: Result, limits, feedback: bool,
              record: bool = True) -> None:
    """:func:`grade_submission` in a sandbox of its own (:class:`~instructor.sandbox.box.Sandbox`:
    pre-started when this process has one), its outcome in ``res``."""
    try:
        with Sandbox(limits) as box:
            grade_submission(sub, box, CourseFolder(api, Path(workdir), limits, feedback, record), res)
    finally:
        res.flags = list(dict.fromkeys(res.flags))


def grade_submission(sub: Submission, box: Sandbox, course: CourseFolder, res: Result | None = None) -> Result:
    """One submission, top to bottom: its canonical notebooks (made once), the confirmation's probes in
    ``box``, nbgrader's autograde with its kernel in ``box``, then the lower of the two verdicts per
    test cell into the gradebook and the feedback. Everything of this submission is data handed down
    (the notebooks, the box, the kernel's settings as traits on the preprocessors' instances and its
    environment through ``start_kernel(env=...)``); the flags come back in the result."""
    res = res if res is not None else Result(sub.student, sub.assignment, ok=False)
    res.started = time.time()
    deadline = time.monotonic() + course.limits.wall_seconds
    canonical = canonical_notebooks(sub, course, res)
    conf = confirmation(sub, canonical, box, course, deadline, res)
    kernel = box.launch(verdicts=verdicts_file(box, conf["verdicts"], course.workdir / "release" / sub.assignment))
    t_exec = time.perf_counter()
    with box.kernel_running():
        out, kernel_flags = autograde(course.api, sub.assignment, sub.student, execution_settings(
            canonical, kernel, course, deadline, conf))
    t_exec = time.perf_counter() - t_exec
    res.flags += kernel_flags
    if not out.get("success"):
        res.error = failure_reason(out)
        kernel_failure(res, kernel.rundir)
        return res
    res.ok = True
    res.verdicts = {g: v.as_json() for g, v in conf["verdicts"].items()}
    executed = sorted((course.workdir / "autograded" / sub.student / sub.assignment).glob("*" + NB_EXT))
    _book_execution(res, t_exec, executed)
    if not course.record:  # a worker: hand the executed notebooks to the one process that records grades
        res.executed = {p.name: p.read_text(encoding="utf-8") for p in executed}
        return res
    judge_and_report(course.api, sub, course.workdir, res, conf["verdicts"], course.feedback, time.perf_counter())
    return res


def canonical_notebooks(sub: Submission, course: CourseFolder, res: Result) -> dict:
    """{notebook name: the canonical notebook} of the staged submission (:mod:`.canonical`: the released
    notebook's cells and metadata, the student's answers); what was undone goes to ``res.flags``. A file
    that is no notebook stops the grading (``ValueError`` naming it)."""
    staged = course.workdir / "submitted" / sub.student / sub.assignment
    canonical = {}
    for path in sorted(staged.glob("*" + NB_EXT)):
        release_nb = nbformat.read(course.workdir / "release" / sub.assignment / path.name, as_version=4)
        nb, why = read_notebook(path)
        if why:
            raise ValueError(f"{path.name}: {why}")
        canon, flags = canonical_notebook(nb, release_nb)
        canonical[path.name] = canon
        res.flags += flags
    return canonical


def confirmation(sub: Submission, canonical: dict, box: Sandbox, course: CourseFolder, deadline: float,
                 res: Result) -> dict:
    """The confirmation of each canonical notebook (:mod:`.confirm`: the answer and lesson cells, then the
    hidden checks' probes, in ``box``; judged here): {"verdicts", "hung_cells", "hung_tests"}."""
    from .confirm import confirm  # imports torch and the hidden checks: only when grading

    got = {"verdicts": {}, "hung_cells": [], "hung_tests": []}
    for name, canon in canonical.items():
        release_nb = nbformat.read(course.workdir / "release" / sub.assignment / name, as_version=4)
        lim = sandbox.Limits(**{**course.limits.__dict__, "wall_seconds": max(1.0, deadline - time.monotonic())})
        conf = confirm(canon, sub.assignment, limits=lim, workdir=box.folder / "confirm" / Path(name).stem,
                       wanted=test_cell_ids(release_nb), box=box)
        res.flags += conf.flags
        res.confirm_seconds += conf.seconds
        _add_phase(res, "confirm", conf.seconds)
        res.sandboxed = conf.sandboxed
        got["verdicts"].update(conf.verdicts)
        got["hung_cells"] += conf.hung_cells
        got["hung_tests"] += conf.hung_tests
    return got


def verdicts_file(box: Sandbox, verdicts: dict, release: Path) -> Path:
    """The judge's verdicts, in the language of the release (the gradebook keeps English), in a file of
    ``box`` the kernel may read: what its feedback shows."""
    vfile = box.folder / "verdicts.json"
    vfile.write_text(json.dumps(shown_verdicts({g: v.as_json() for g, v in verdicts.items()}, release)))
    os.chmod(vfile, 0o644)
    return vfile


def execution_settings(canonical: dict, kernel, course: CourseFolder, deadline: float, conf: dict) -> dict:
    """The per-submission traits of nbgrader's preprocessors (:func:`autograde`): the canonical notebooks,
    the kernel's box, the time left, what never returned in the confirmation."""
    return {
        _canonicalize_preprocessor(): {"canonical": canonical, "course_root": str(Path(course.workdir).resolve())},
        sandboxed_execute_class(): {"box": kernel, "wall_seconds": max(1.0, deadline - time.monotonic()),
                                    "hung_tests": sorted(set(conf["hung_tests"])),
                                    "hung_cells": sorted({source_key(c) for c in conf["hung_cells"]})}}


def keep_lower(api, sub: Submission, verdicts: dict, res: Result) -> None:
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
                    first = "".join(ch for ch in first if ch.isprintable())  # it may quote the student's error
                    res.integrity.append(f"{g.name}: the notebook's own tests gave {g.auto_score:g}, the check outside "
                                         f"the kernel gave {judged:g} ({first[:160]}); kept {judged:g}")
                    g.auto_score = judged
                elif g.auto_score < judged:
                    res.integrity.append(f"{g.name}: the check outside the kernel passed but the notebook's own "
                                         f"tests gave {g.auto_score:g}; kept {g.auto_score:g}")
        gb.db.commit()


def _timestamp_of(sub: Submission) -> Path | None:
    """The ``timestamp.txt`` next to the submission's notebooks (what nbgrader's submit writes and its late
    penalty reads): a small regular file, not a link, or nothing."""
    ts = sub.notebooks[0].parent / "timestamp.txt" if sub.notebooks else None
    if ts is None or ts.is_symlink() or not ts.is_file() or ts.stat().st_size > 256:
        return None
    return ts


def _restamp_note(sub: Submission) -> str:
    """What the course's collect wrote when it re-stamped this hand-in (:data:`RESTAMP_NOTE`), or ``""``:
    read like ``timestamp.txt``, a small regular file and never a link, one line of printable text."""
    p = sub.notebooks[0].parent / RESTAMP_NOTE if sub.notebooks else None
    if p is None or p.is_symlink() or not p.is_file() or p.stat().st_size > 512:
        return ""
    text = p.read_text(encoding="utf-8", errors="replace")
    return "".join(ch for ch in text if ch.isprintable()).strip()[:400]


def stage(sub: Submission, target: Path, workdir: Path, res: Result) -> None:
    """Put the submission where nbgrader looks for it, never losing anything already there.

    Grading the course's own ``submitted/`` folder copies nothing. A different earlier copy in the
    way is moved to ``replaced_submissions/<time>/`` (reported), never deleted. The submission's
    ``timestamp.txt`` goes with its notebooks, so that nbgrader's late penalty sees when it was handed in.
    """
    note = _restamp_note(sub)
    if note:
        res.flags.append(f"re-stamped: {note}")
    if all(nb.parent.resolve() == target.resolve() for nb in sub.notebooks):
        return
    ts = _timestamp_of(sub)
    wanted = {sub.name_of(nb): nb for nb in sub.notebooks}
    if ts is not None:
        wanted["timestamp.txt"] = ts
    if target.exists():
        same = sorted(p.name for p in target.iterdir()) == sorted(wanted) and all(
            (target / name).read_bytes() == src.read_bytes() for name, src in wanted.items())
        if same:
            return
        backup = workdir / "replaced_submissions" / time.strftime("%Y%m%d-%H%M%S") / sub.student / sub.assignment
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(target), str(backup))
        res.notes.append(f"an earlier {target} was moved to {backup}")
    target.mkdir(parents=True)
    for name, src in wanted.items():
        shutil.copy2(src, target / name)
    for nb in sub.notebooks:
        if sub.name_of(nb) != nb.name:
            res.notes.append(f"{nb.name} was graded as {sub.name_of(nb)} (recognised by its cell ids)")


#: nbgrader's closing line when a step failed: it points at a traceback it logged, and says nothing alone.
SEE_ABOVE = ("above traceback", "see the error log")
_LOG_RECORD = re.compile(r"(?m)^(?=\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL)\] )")


def _bounded(lines: list[str], count: int, limit: int) -> list[str]:
    """The last ``count`` of ``lines``, fewer if they pass ``limit`` characters together."""
    kept, size = [], 0
    for line in reversed(lines[-count:]):
        size += len(line) + 1
        if size > limit and kept:
            break
        kept.append(line[-limit:])
    return kept[::-1]


def failure_reason(out: dict, lines: int | None = None, limit: int | None = None) -> str:
    """Why an nbgrader step (``autograde``, ``generate_feedback``) failed, from what the API returned
    (``error``: the traceback of the exception that ended it; ``log``: what it logged): the exception
    nbgrader logged on its first line, then the last lines of that traceback (at most ``lines`` lines,
    ``limit`` characters). Never nbgrader's closing "Please see the above traceback" alone: that
    traceback is what is given."""
    from .confirm import ERROR_TAIL_BYTES, ERROR_TAIL_LINES, clean_text

    lines, limit = lines or ERROR_TAIL_LINES, limit or ERROR_TAIL_BYTES
    log, error = clean_text(out.get("log") or ""), clean_text(out.get("error") or "")
    records = [r for r in _LOG_RECORD.split(log) if r.strip()]
    traced = [r for r in records if "Traceback (most recent call last)" in r]
    if not traced and "Traceback (most recent call last)" in error and not any(
            s in error.strip().splitlines()[-1].lower() for s in SEE_ABOVE):
        traced = [error]
    if traced:
        tb = [l.rstrip() for l in traced[-1].splitlines() if l.strip()]
        tb[0] = re.sub(r"^\[\w+\] ", "", tb[0])
        indent = min((len(l) - len(l.lstrip()) for l in tb[1:]), default=0)  # the log indents a record's lines
        tb = tb[:1] + [l[indent:] for l in tb[1:]]
        return "\n".join([tb[-1].strip()[:300]] + _bounded(tb[:-1], lines - 1, limit))
    # no traceback: what was logged as an error, less the pointer to a traceback
    said = [re.sub(r"^\[\w+\] ", "", l).strip() for r in records for l in r.splitlines()[:1]
            if re.match(r"\[(ERROR|CRITICAL|FATAL)\]", r)]
    said += [l.strip() for l in error.splitlines()[-1:]]
    said = [l for l in dict.fromkeys(said) if l and not any(s in l.lower() for s in SEE_ABOVE)]
    if said:
        return "\n".join(_bounded(said, lines, limit))
    return "nbgrader failed and logged no reason" + (f" (its last words: {error.strip().splitlines()[-1][:300]})"
                                                     if error.strip() else "")


short_error = failure_reason  # the name it had; formgrader's worker calls it


def kernel_failure(res: Result, rundir: Path) -> None:
    """After a failed autograde: the last lines of the sandboxed kernel's own error output (its
    ``kernel.log``, in a folder the kernel could write: read by :func:`.confirm.error_tail`) join the
    reason, so that a kernel that could not start says why."""
    from .confirm import error_tail

    tail = error_tail(Path(rundir) / "kernel.log")
    if tail:
        res.error += "\nthe kernel's last error output:\n" + tail

def failing_tests(notebook: Path) -> list[tuple[str, str]]:
    """(grade_id, message) for each graded test cell that failed in an autograded notebook.

    Only the error's name and message: never the (hidden) test code.
    """
    from nbgrader.utils import has_failed

    nb = nbformat.read(notebook, as_version=4)
    failures = []
    for cell in nb.cells:
        if not is_test_cell(cell) or not has_failed(cell):
            continue
        msgs = []
        for out in cell.outputs:
            if out.output_type == "error":
                msgs.append(f"{out.ename}: {out.evalue}".strip())
            elif out.output_type == "stream" and out.name == "stderr":
                msgs.append("wrote to stderr: " + out.text.strip()[:300])
        failures.append((nbgrader_meta(cell)["grade_id"], "\n".join(msgs) or "failed"))
    return failures
