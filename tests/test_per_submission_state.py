"""Per-submission settings travel as data, never through the process (#37, item 2).

* Two submissions graded at the same time, in two threads of one process, with one nbgrader API object,
  each get the scores they get when graded alone: nothing of one submission (its sandbox, its kernel's
  folders and verdicts file, its canonical notebook, its flags) reaches the other.
* The engine, the sandbox, the batch and the service write no per-submission state where another
  submission of the process would see it: no ``os.environ`` write, no ``threading.local``, no class
  attribute written at run time (a static check; each rule shown failing on a planted snippet). The few
  process-wide writes (the same value for every submission, made once) are listed with their reason.
"""
from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples
from instructor.batch import course
from instructor.engine import pipeline
from instructor.layout import REPO, load_config
from instructor.sandbox import Limits

INSTRUCTOR = REPO / "instructor"
CHECKED = ("engine", "sandbox", "batch", "service")

#: (file, function) -> why an environment write there is not per-submission state
PROCESS_WIDE = {
    ("instructor/engine/pipeline.py", "prepare_environment"): "this Python's bin first on PATH, once per process",
    ("instructor/sandbox/__init__.py", "warn_if_unsandboxed"): "'said once' for the grading process and its workers",
    ("instructor/batch/parallel.py", "execute"): "a worker says nothing the grading process said (the same value always)",
    ("instructor/batch/parallel.py", "_worker_init"): "a worker process takes the grading process's environment, once",
    ("instructor/batch/parallel.py", "worker_context"): "the workers start with one intra-op thread (restored after)",
    ("instructor/sandbox/zygote_server.py", "*"): "runs inside the box, not in the grader: a forked run's own environment",
}

ENV_WRITERS = {"update", "setdefault", "clear", "pop", "popitem", "__setitem__", "__delitem__"}


def _is_environ(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def violations(source: str, filename: str = "<snippet>") -> list[str]:
    """Where ``source`` keeps per-submission state in the process: (function, what) lines."""
    tree = ast.parse(source, filename)
    found = []
    functions = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                functions.setdefault(id(node), fn.name)

    def where(node) -> str:
        return functions.get(id(node), "<module>")

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            if isinstance(t, ast.Subscript) and _is_environ(t.value):
                found.append(f"{where(node)}: os.environ[...] written (line {node.lineno})")
            elif isinstance(t, ast.Attribute) and where(node) != "<module>":
                owner = t.value
                if isinstance(owner, ast.Call) or (isinstance(owner, ast.Name) and owner.id[:1].isupper()):
                    found.append(f"{where(node)}: class attribute .{t.attr} written at run time (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_environ(node.func.value) \
                and node.func.attr in ENV_WRITERS:
            found.append(f"{where(node)}: os.environ.{node.func.attr}(...) (line {node.lineno})")
        if isinstance(node, ast.Attribute) and node.attr == "local" and isinstance(node.value, ast.Name) \
                and node.value.id == "threading":
            found.append(f"{where(node)}: threading.local (line {node.lineno})")
        if isinstance(node, ast.ImportFrom) and node.module == "threading" and any(a.name == "local" for a in node.names):
            found.append(f"{where(node)}: threading.local imported (line {node.lineno})")
    return found


def _checked_files() -> list[Path]:
    return sorted(p for pkg in CHECKED for p in (INSTRUCTOR / pkg).rglob("*.py"))


def test_no_per_submission_state_in_process_globals():
    bad = []
    for path in _checked_files():
        rel = str(path.relative_to(REPO))
        for v in violations(path.read_text(encoding="utf-8"), rel):
            function = v.split(":")[0]
            if (rel, function) in PROCESS_WIDE or (rel, "*") in PROCESS_WIDE:
                continue
            bad.append(f"{rel}: {v}")
    assert not bad, "per-submission state in process globals:\n" + "\n".join(bad)


def test_every_listed_exception_still_exists():
    """An entry of PROCESS_WIDE whose function no longer writes the environment is removed from the list."""
    for (rel, function), why in PROCESS_WIDE.items():
        found = violations((REPO / rel).read_text(encoding="utf-8"), rel)
        assert any(function == "*" or v.startswith(function + ":") for v in found), (rel, function, why)


PLANTED = '''
import os, threading
from threading import local
_here = threading.local()

class Execute:
    flags = []

def grade(sub, factory):
    os.environ["COURSE_HUNG"] = sub.hung
    os.environ.update({"COURSE_VERDICTS": sub.verdicts})
    os.environ.setdefault("JUPYTER_PATH", sub.specs)
    factory().course_root = sub.root
    type(sub).executed = sub.executed
    Execute.last_flags = sub.flags
    sub.flags = []                   # an instance's own attribute: fine
    env = dict(os.environ, X="1")    # a copy: fine
'''


def test_the_static_check_fails_on_each_planted_kind():
    found = violations(PLANTED)
    for what in ("grade: os.environ[...] written", "grade: os.environ.update", "grade: os.environ.setdefault",
                 "grade: class attribute .course_root", "grade: class attribute .executed",
                 "grade: class attribute .last_flags", "<module>: threading.local (line",
                 "<module>: threading.local imported"):
        assert any(v.startswith(what) for v in found), (what, found)
    assert len(found) == 8, found   # and nothing else: the instance attribute and the copy pass


# --------------------------------------------------------------------------- two submissions at once

STUDENTS = ("ada", "patch_checks")   # 00_orientation: 8 points, and 0 of the 2 its own tests gave


def _submissions(tmp_path: Path) -> list[pipeline.Submission]:
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    by_name["patch_checks"] = samples.parse_sample(REPO / "tests" / "hostile" / "00_orientation" / "patch_checks.py")
    subs = []
    for student in STUDENTS:
        name, nb = samples.build_notebook(by_name[student])
        folder = tmp_path / "incoming" / student / "00_orientation"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)
        subs.append(pipeline.Submission(student, "00_orientation", [folder / name]))
    return subs


def _scores(res) -> dict:
    return {q.grade_id: q.score for q in res.questions}


@pytest.mark.slow
def test_two_submissions_graded_at_once_in_one_process_each_get_their_own_scores(tmp_path):
    subs = _submissions(tmp_path)
    workdir = (tmp_path / "course").resolve()
    alone = {r.student: r for r in course.grade(subs, workdir, feedback=False, progress=False, jobs=1)}
    for r in alone.values():
        assert r.ok, r.error
    assert _scores(alone["ada"]) != _scores(alone["patch_checks"])   # a mix-up would show
    assert alone["patch_checks"].integrity, "the judge's verdict (its verdicts file) lowers patch_checks"

    limits = Limits.from_config(load_config(workdir))
    api = pipeline.nbgrader_api(workdir, sandboxed=True)   # one API object for both threads
    start = threading.Barrier(len(subs))
    results, spans, errors = {}, {}, []

    def grade(sub):
        res = pipeline.Result(sub.student, sub.assignment, ok=False)
        try:
            start.wait(timeout=60)
            t0 = time.monotonic()
            pipeline.grade_one(api, sub, workdir, res, limits, feedback=False)
            spans[sub.student] = (t0, time.monotonic())
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(f"{sub.student}: {type(err).__name__}: {err}")
        results[sub.student] = res

    threads = [threading.Thread(target=grade, args=(s,)) for s in subs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    (a0, a1), (b0, b1) = spans["ada"], spans["patch_checks"]
    assert a0 < b1 and b0 < a1, "the two gradings did not overlap: the test proves nothing"
    for student in STUDENTS:
        res = results[student]
        assert res.ok, f"{student}: {res.error}"
        assert _scores(res) == _scores(alone[student]), (student, _scores(res), _scores(alone[student]))
        assert res.verdicts == alone[student].verdicts, student
        assert sorted(res.integrity) == sorted(alone[student].integrity), student
