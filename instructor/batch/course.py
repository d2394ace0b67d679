"""The course as the instructor drives it: releasing, collecting a class's submissions, grading the batch.

* :func:`release` — ``release/`` regenerated with nbgrader, a student's answers found there kept first;
* :func:`collect_submissions` — every submitted file checked *before* grading (links never followed),
  one line naming each that cannot be graded;
* :func:`grade` — the batch loop: each (student, assignment) through :mod:`instructor.engine.pipeline` on its own (one at a
  time here, or on workers with :mod:`.parallel`), so one broken submission never stops the others;
  the :class:`Ledger` skips unchanged work and remembers a submission that killed the grader;
* :func:`write_csv` — ``grades.csv`` and ``grades_by_question.csv``, every cell neutralised.

The submitted files are never touched: they are copied into a working course folder first.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.nbgrader_cells import grade_id

from ..layout import (NB_EXT, REPO, RESTAMP_NOTE, assignments, gradebook_layout, load_config, notebook_owner,  # noqa: F401
                      source_notebooks)
from .parallel import Executor, grade_parallel, start_workers
from .client import configured as configured_service, submitter
from ..engine.pipeline import (QuestionScore, Result, Submission, check_ok, failing_tests, grade_one, warm_up,  # noqa: F401
                               nbgrader_api, prepare_environment, read_notebook, sandbox_warm, scores, stage,
                               write_atomically)
from ..sandbox import Limits, sweep_leftovers, warn_if_unsandboxed, zygote

__all__ = [
    "REPO", "Submission", "Problem", "QuestionScore", "Result", "Ledger",
    "assignments", "source_notebooks", "gradebook_layout", "load_config", "release", "keep_student_changes",
    "collect_submissions", "recognise", "grade_ids", "grade", "failing_tests", "read_notebook", "write_csv", "csv_cell",
    "SafeWriter",
]


# --------------------------------------------------------------------------- the course itself

def release(names: list[str] | None = None, root: Path = REPO) -> list[Path]:
    """Regenerate ``release/<assignment>/`` from ``source/`` with nbgrader (deterministic).

    Runs ``generate_assignment`` in a throw-away course folder and copies the result, so the
    repository gets no gradebook and the bytes depend only on ``source/``.
    """
    import tempfile

    prepare_environment()
    names = names or assignments(root)
    unknown = sorted(set(names) - set(assignments(root)))
    if unknown:
        raise SystemExit(f"error: unknown assignment(s) {', '.join(unknown)}; "
                         f"known: {', '.join(assignments(root))}")
    written = []
    with tempfile.TemporaryDirectory(prefix="course-release-") as tmp:
        work = Path(tmp)
        if Path(root).resolve() != REPO.resolve() and (Path(root) / "nbgrader_config.py").is_file():
            # a course folder's own settings (an edition's, zh_CN/: its stubs in Chinese) go with its source
            shutil.copy2(Path(root) / "nbgrader_config.py", work / "nbgrader_config.py")
        for name in names:
            shutil.copytree(Path(root) / "source" / name, work / "source" / name,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
            check_ok(nbgrader_api(work).generate_assignment(name, force=True, create=True),
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


def collect_submissions(path: Path, root: Path = REPO) -> tuple[list[Submission], list[Problem]]:
    """Find and check the submissions under ``path``.

    Accepted layouts:

    * nbgrader's ``submitted/<student>/<assignment>/<notebook>.ipynb`` (pass ``submitted`` itself
      or the course folder that contains it);
    * ``<student>/<notebook>.ipynb``: the assignment is found from the notebook's file name.

    A notebook whose name is not the course's (JupyterLab's ``-Copy1``, ``Untitled.ipynb``) is
    recognised by its nbgrader cell ids (:func:`recognise`) and graded under the course's name
    (``Submission.graded_as``); where a file with the course's name is there too, it wins and the copy is
    listed as a problem.

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
    renamed: dict[tuple[str, str, Path], tuple[str, str]] = {}   # a renamed copy -> (assignment, name)

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
                        if f.name not in ("timestamp.txt", "submission_secret.txt", RESTAMP_NOTE):  # nbgrader's, collect's
                            problems.append(Problem(f, "not a notebook (.ipynb); skipped, the rest is graded"))
                        continue
                    nb, why = read_notebook(f)
                    if why:
                        problems.append(Problem(f, why, student_dir.name, entry.name))
                    elif f.name not in {p.name for p in source_notebooks(entry.name, root)}:
                        as_ = _recognised(nb, f, entry.name, root)
                        if as_:
                            renamed[(student_dir.name, entry.name, f)] = as_
                            found.setdefault((student_dir.name, entry.name), []).append(f)
                        else:
                            problems.append(Problem(f, f"assignment {entry.name} has no notebook named {f.name} "
                                                       f"(expected {', '.join(p.name for p in source_notebooks(entry.name, root))}) "
                                                       "and its cell ids are not those of one",
                                                    student_dir.name, entry.name))
                    else:
                        found.setdefault((student_dir.name, entry.name), []).append(f)
            elif entry.suffix == NB_EXT:
                nb, why = read_notebook(entry)
                if why:
                    problems.append(Problem(entry, why, student_dir.name, owner.get(entry.name)))
                elif entry.name not in owner:
                    as_ = _recognised(nb, entry, None, root)
                    if as_:
                        renamed[(student_dir.name, as_[0], entry)] = as_
                        found.setdefault((student_dir.name, as_[0]), []).append(entry)
                    else:
                        problems.append(Problem(entry, "notebook of an unknown assignment (its name matches no "
                                                       "notebook in source/, nor do its cell ids)", student_dir.name))
                else:
                    found.setdefault((student_dir.name, owner[entry.name]), []).append(entry)
            else:
                problems.append(Problem(entry, "not a notebook (.ipynb); skipped"))
    for (s, a), nbs in found.items():   # a renamed copy is graded only where no file has the course's name
        taken = {f.name for f in nbs if (s, a, f) not in renamed}
        copies = sorted((f for f in nbs if (s, a, f) in renamed), key=lambda f: (-f.stat().st_mtime, f.name))
        for f in copies:
            name = renamed[(s, a, f)][1]
            if name in taken:
                problems.append(Problem(f, f"another copy of {name} (recognised by its cell ids); the file "
                                           f"{'named ' + name if name in {g.name for g in nbs} else 'saved last'} "
                                           "is graded", s, a))
                nbs.remove(f)
                del renamed[(s, a, f)]
            else:
                taken.add(name)
    subs = [Submission(s, a, nbs, [f"linked file handed in: {w}" for w in links.get((s, a), [])],
                       {f.name: renamed[(s, a, f)][1] for f in nbs if (s, a, f) in renamed})
            for (s, a), nbs in sorted(found.items())]
    return subs, problems


# --------------------------------------------------------------------------- which assignment

def grade_ids(nb) -> set:
    """The nbgrader grade ids of a notebook's cells (:func:`autograder.nbgrader_cells.grade_id`: a
    student's id that is no string names no cell)."""
    return {grade_id(c) for c in nb.cells} - {None}


def recognise(nb, filename: str, root: Path = REPO) -> tuple[str, str, str] | None:
    """``(assignment, notebook name, how)`` for a handed-in notebook, or None when neither its name nor
    its cell ids say (at least half of a release notebook's nbgrader cells, the largest share).

    The one rule for "which assignment is this notebook": :func:`collect_submissions` (renamed copies),
    ``selfgrade`` and the hand-in importer all ask it."""
    owner = notebook_owner(root)
    best = None
    mine = grade_ids(nb)
    for a in assignments(root):
        for src in source_notebooks(a, root):
            release_nb, _ = read_notebook(Path(root) / "release" / a / src.name)
            theirs = grade_ids(release_nb) if release_nb is not None else set()
            if theirs and (best is None or len(mine & theirs) / len(theirs) > best[0]):
                best = (len(mine & theirs) / len(theirs), a, src.name, len(mine & theirs), len(theirs))
    by_ids = best if best and best[0] >= 0.5 else None
    named = owner.get(filename)
    if named and (by_ids is None or by_ids[1] == named):
        return named, filename, "from its file name"
    if by_ids:
        return by_ids[1], by_ids[2], f"from its cell ids: {by_ids[3]} of the {by_ids[4]} nbgrader cells of {by_ids[2]}"
    return None


def _recognised(nb, path: Path, assignment: str | None, root: Path) -> tuple[str, str] | None:
    """(assignment, the course's notebook name) for a renamed copy (``01_version_counter-Copy1.ipynb``),
    from its nbgrader cell ids; None when they do not say, or say another assignment than its folder."""
    found = recognise(nb, path.name, root)
    if found is None or (assignment is not None and found[0] != assignment):
        return None
    return found[0], found[1]


#: ``grade`` without ``--jobs`` starts one worker per this many submissions at most, up to the cores.
#: A worker costs a process that imports the grading code and starts its own pre-started sandbox: on
#: this 2-core VM ``--jobs 2`` began its first submission 9 s after the start against 5 s in the grading
#: process, and graded 2, 8 and 16 notebooks of assignment 0 in 15.8, 18.5 and 22.5 s against 10.8,
#: 17.6 and 27.2 s with ``--jobs 1`` (docs/performance.md, "Workers only where they pay").
SUBMISSIONS_PER_WORKER = 5


def auto_jobs(todo: int, cores: int | None = None) -> int:
    """How many submissions at once when the instructor did not say: the cores, but no more than one worker
    per :data:`SUBMISSIONS_PER_WORKER` submissions to grade (fewer than twice that: this process grades)."""
    cores = cores or os.cpu_count() or 1
    return max(1, min(cores, todo // SUBMISSIONS_PER_WORKER))


def grade(subs: list[Submission], workdir: Path, *, feedback: bool = True, progress: bool = True,
          root: Path = REPO, jobs: int | None = 1, force: bool = False, scheduler=None,
          shared_disk: bool = True, service: str | None = None) -> list[Result]:
    """Autograde each submission in the course folder ``workdir`` (created if needed).

    The submitted files are copied to ``workdir/submitted/<student>/<assignment>/``; nbgrader
    writes ``autograded/``, ``feedback/`` and ``gradebook.db`` there. Each submission is graded
    on its own: a crash is recorded in its :class:`Result` and the loop goes on. ``jobs=None``: as many as
    :func:`auto_jobs` gives for what there is to grade (the command line's default). With ``jobs`` > 1 or
    a Dask ``scheduler`` the submissions go to workers (:mod:`.parallel`); ``shared_disk=False`` makes
    every worker grade in a private folder and this process record, as for workers on other machines.
    ``service`` (default: ``COURSE_GRADING_SERVICE``): the socket of a root-owned grading service
    (:mod:`instructor.service`) that grades each submission; this process records.
    """
    from tqdm.auto import tqdm

    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    own = Path(root) / "nbgrader_config.py"
    if Path(root).resolve() not in (REPO.resolve(), workdir) and own.is_file() \
            and not (workdir / "nbgrader_config.py").exists():
        # an edition's settings (zh_CN/: its stubs) go with its assignments: the release generated here is its own
        shutil.copy2(own, workdir / "nbgrader_config.py")
    limits = Limits.from_config(load_config(workdir))
    warn_if_unsandboxed()
    swept = sweep_leftovers()
    if swept:
        print(f"removed {len(swept)} workspace(s) and cgroup(s) left on this machine by grading processes that "
              "were killed", flush=True)
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
            done[i] = Result.failed(sub.student, sub.assignment, "not graded: " + why, flags=sub.flags + [why])
        else:
            todo.append(i)
    if done:
        print(f"{len(done)} submission(s) unchanged since they were last graded: kept their grades "
              f"({len(todo)} to grade)", flush=True)
    if service is None and scheduler is None:
        service = configured_service()
    if jobs is None:
        jobs = auto_jobs(len(todo))
    on_workers = (jobs > 1 and len(todo) > 1) or bool((scheduler or service) and todo)
    # Graded here (--jobs 1): this process's pre-started sandbox starts now, importing torch and IPython
    # while this process prepares the course folder; joined before the first submission.
    prestarting = zygote.prestart_in_background(limits) if todo and not on_workers else None
    prepare_environment()
    # --jobs: the workers start now, importing the grading code and starting their pre-started
    # sandboxes while this process prepares the course folder.
    pool = start_workers(min(jobs, len(todo)), limits, [subs[i].assignment for i in todo]) if on_workers and not (scheduler or service) else None
    try:
        api = nbgrader_api(workdir)
        if workdir == Path(root).resolve() and subs:
            # grading in the repository regenerates its release/: answers a student wrote there are kept first
            release(sorted({s.assignment for s in subs}), root)
        for name in sorted({s.assignment for s in subs}):
            dest = workdir / "source" / name
            if dest.resolve() != (Path(root) / "source" / name).resolve():
                if dest.exists():
                    shutil.rmtree(dest)
                shutil.copytree(Path(root) / "source" / name, dest,
                                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
            check_ok(api.generate_assignment(name, force=True, create=True), f"nbgrader generate_assignment {name}")
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if prestarting is not None:  # to this process's pool (a long-lived one grades again), not left held
            prestarting.join()
        raise

    def on_result(i: int, res: Result) -> None:
        res.flags = list(dict.fromkeys(subs[i].flags + res.flags))
        done[i] = res
        ledger.record(subs[i], res)
        _injected_stop(len(done) - (len(subs) - len(todo)))

    if on_workers:  # grade_parallel shuts the workers down
        grade_parallel([subs[i] for i in todo], workdir, jobs=jobs, feedback=feedback, progress=progress,
                       limits=limits, on_result=lambda k, res: on_result(todo[k], res), scheduler=scheduler,
                       shared_disk=shared_disk and not service, pool=pool,
                       remote=submitter(service, root) if service else None)
        return [done[i] for i in range(len(subs))]
    if prestarting is not None:
        warm_up(report=True)
        prestarting.join(warm=sandbox_warm(subs[i].assignment for i in todo))
    InProcessExecutor(subs, workdir, limits, feedback=feedback, progress=progress, ledger=ledger).run(todo, on_result)
    return [done[i] for i in range(len(subs))]


class InProcessExecutor(Executor):
    """``--jobs 1``: each submission graded in this process, one after the other (:class:`.parallel.Executor`'s
    face). A worker's death here is this process's: the ledger names the submission being graded
    (:meth:`Ledger.begin`), and the rerun flags it instead of grading it again (:meth:`Ledger.died_on`)."""

    def __init__(self, subs, workdir: Path, limits, *, feedback: bool, progress: bool, ledger: "Ledger"):
        self.subs, self.workdir, self.limits = subs, Path(workdir), limits
        self.feedback, self.progress, self.ledger = feedback, progress, ledger

    def run(self, order: list[int], finish) -> None:
        from tqdm.auto import tqdm

        subs, workdir = self.subs, self.workdir
        sandboxed_api = nbgrader_api(workdir, sandboxed=True)
        bar = tqdm(order, desc="autograding", unit="notebook", disable=not self.progress, file=sys.stdout)
        for i in bar:
            sub = subs[i]
            bar.set_postfix_str(f"{sub.student}/{sub.assignment}")
            res = Result(sub.student, sub.assignment, ok=False)
            stage(sub, workdir / "submitted" / sub.student / sub.assignment, workdir, res)
            t0 = time.perf_counter()
            self.ledger.begin(sub)  # if this process dies now (a kill, the OOM killer), the rerun knows which one
            _injected_death(sub.student)
            try:
                grade_one(sandboxed_api, sub, workdir, res, self.limits, self.feedback)
            except Exception as err:  # noqa: BLE001 - one broken submission must not stop the rest
                res.ok, res.error = False, f"{type(err).__name__}: {err}"
            except BaseException:  # Ctrl-C: the submission did not kill the grader
                self.ledger.abandon(sub)
                raise
            res.seconds = time.perf_counter() - t0
            if res.flags and self.progress:
                bar.write(f"flagged: {sub.student}/{sub.assignment}: {res.flags[0]}"
                          + (f" (+{len(res.flags) - 1} more)" if len(res.flags) > 1 else ""))
            finish(i, res)
        bar.close()


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
        write_atomically(self.path, json.dumps(self.data, indent=1, default=str))

    def abandon(self, sub: Submission) -> None:
        entry = self.data.get(self.key(sub), {})
        if entry.pop("attempt", None) is not None:
            write_atomically(self.path, json.dumps(self.data, indent=1, default=str))

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
        res = Result.from_json(entry["result"])
        files = entry.get("files", entry["result"])   # (a ledger before 2026-12-05 kept them in the result)
        res.feedback = [Path(p) for p in files.get("feedback", [])]
        res.autograded = [Path(p) for p in files.get("autograded", [])]
        return res

    def record(self, sub: Submission, res: Result) -> None:
        result = res.to_json()
        result["notes"] = []
        entry = self.data.get(self.key(sub), {})
        self.data[self.key(sub)] = {"hash": self.digest(sub), "result": result,
                                    "files": {"feedback": [str(p) for p in res.feedback],
                                              "autograded": [str(p) for p in res.autograded]},
                                    "times": entry.get("times", 0) + 1,
                                    "graded_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        write_atomically(self.path, json.dumps(self.data, indent=1, default=str))


#: Characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection": ``=``, ``+``,
#: ``-``, ``@``), with their fullwidth and small-form twins, which Excel's East Asian input and
#: LibreOffice's autocorrection turn into the ASCII ones.
FORMULA_CHARS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20\ufe66\ufe62\ufe63\ufe6b")
#: The cells a spreadsheet may run: each starts with one of these (kept for callers; see :func:`formula_like`).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def _skipped_before_formula(ch: str) -> bool:
    """A character a spreadsheet may skip before reading a formula: whitespace (spaces, line feeds,
    no-break and ideographic spaces), control characters and invisible format characters (zero-width
    space, byte-order mark)."""
    import unicodedata

    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def formula_like(text: str) -> bool:
    """True when a spreadsheet could take ``text`` for a formula: it starts with a control character
    (OWASP: tab, carriage return; line feed and the others too), or its first character after
    whitespace and invisible characters is ``=``, ``+``, ``-``, ``@`` or a fullwidth/small-form twin
    (``" =1+2"``, ``"\\n=HYPERLINK(...)"``, ``"\uff1dcmd"``)."""
    import unicodedata

    if not text:
        return False
    if unicodedata.category(text[0]) == "Cc":
        return True
    for ch in text:
        if not _skipped_before_formula(ch):
            return ch in FORMULA_CHARS
    return False


def csv_cell(value) -> str:
    """A CSV cell a spreadsheet will not run: text that :func:`formula_like` finds (OWASP's list and
    the same after leading whitespace, line feeds or invisible characters, and fullwidth twins) gets a
    leading apostrophe. Numbers the course writes itself (an ``int`` or a finite ``float``, also a
    negative score) are written as numbers, never prefixed; a number passed as text is text."""
    import math
    import numbers

    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return f"{float(value):.12g}"
    text = "" if value is None else str(value)
    return "'" + text if formula_like(text) else text


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
            # numbers as numbers (csv_cell never prefixes one, a negative score included), text as text
            w.writerow([r.student, r.assignment, "graded" if r.ok else "error: " + r.error,
                        r.auto_score, r.auto_max, r.manual_pending, round(r.seconds, 1),
                        round(r.confirm_seconds, 1), " | ".join(r.flags), " | ".join(r.integrity)])
        for (student, assignment), why in sorted(skipped.items()):
            w.writerow([student, assignment, "not graded: " + " | ".join(why), 0, "", "", "", "", "", ""])
    with (tmp_by_q := by_q.with_name(".grades_by_question.csv.tmp")).open("w", newline="") as f:
        w = SafeWriter(f)
        w.writerow(["student", "assignment", "question", "kind", "score", "max_score"])
        for r in results:
            for q in r.questions:
                w.writerow([r.student, r.assignment, q.grade_id, q.kind,
                            "" if q.score is None else q.score, q.max_score])
    os.replace(tmp_totals, totals)  # never half-written: a rename is atomic
    os.replace(tmp_by_q, by_q)
    return totals, by_q


