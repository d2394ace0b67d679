"""The confirmation leaves out the course's demonstration cells only when nothing reads what they define
(instructor/engine/demonstrations.py), and no verdict moves because of it."""
from __future__ import annotations

import nbformat
import pytest

from instructor.engine import confirm, demonstrations as demos
from instructor.authoring.samples import build_notebook, load_samples
from instructor.hidden import checks_for, probe_source
from instructor.layout import REPO

MARKED = {"03_yolo_head": 3, "04_in_the_wild": 1}  # the slow demonstrations of each assignment


def _reference(assignment: str):
    return nbformat.read(REPO / "source" / assignment / f"{assignment}.ipynb", as_version=4)


def _probe_reads(assignment: str) -> frozenset[str]:
    checks = checks_for(assignment)
    return demos.probe_names([probe_source(c) for c in checks]) | {c.function for c in checks}


def _skipped(nb, assignment: str) -> list[str]:
    cells = confirm.confirmation_cells(nb)
    return [cells[i] for i in demos.skippable(cells, demos.demonstration_sources(assignment), _probe_reads(assignment))]


# -- what a cell binds and reads ----------------------------------------------------------------------

def test_bound_names_follow_pythons_own_scopes():
    src = ("import os, numpy as np\nfrom math import pi as PI\na, (b, c) = 1, (2, 3)\nfor i in range(2): pass\n"
           "with open('f') as fh: pass\ndef f(p):\n    global g\n    g = p\n    local = 1\nclass K: attr = 1\n"
           "(w := 4)\ndel a\n")
    assert demos.names_bound(src) == {"os", "np", "PI", "a", "b", "c", "i", "fh", "f", "g", "K", "w"}
    assert demos.names_bound("%timeit 1") is None  # an IPython magic: not plain Python, cannot tell


def test_reads_now_at_the_top_level_and_later_in_functions():
    src = ("y = x + 1\ntotal += y\ndef f(p):\n    q = p + offset\n    return [k for k in q] + helper(q)\n"
           "class K(Base):\n    size = width\n    def m(self): return self.size + scale\n")
    now, later = demos.names_read(src)
    assert {"x", "y", "total", "Base"} <= now and "offset" not in now
    assert {"offset", "helper", "width", "scale"} <= later
    assert not {"p", "q", "k", "self", "size"} & later  # parameters and locals are not the notebook's names


@pytest.mark.parametrize("src", ["print(globals()['delta_all'])", "eval('delta_all')", "import __main__",
                                 "import sys\nsys.modules['__main__'].delta_all",
                                 "import inspect\ninspect.currentframe().f_back.f_globals",
                                 "def f(): return f.__globals__['x']", "get_ipython().user_ns['x']",
                                 "!ls", "%time x = 1", "def broken(:"])
def test_a_cell_reaching_the_namespace_another_way_cannot_be_read(src):
    assert demos.names_read(src) is None


def test_the_probes_read_only_the_students_functions():
    for assignment in ("00_orientation", "01_version_counter", "02_names_and_storage", "03_yolo_head",
                       "04_in_the_wild"):
        checks = checks_for(assignment)
        assert demos.probe_names([probe_source(c) for c in checks]) == {c.function for c in checks}, assignment
    assert demos.probe_names(["def probe(ns, case):\n    return sorted(ns)\n"]) is None
    assert demos.probe_names(["def h(ns):\n    return ns['b']\ndef probe(ns, case):\n"
                              "    return student(ns, 'f')(ns.get('a'), h(ns))\n"]) == {"a", "b", "f"}


# -- which cells the confirmation leaves out ------------------------------------------------------------

@pytest.mark.parametrize("assignment", sorted(MARKED))
def test_every_marked_demonstration_is_left_out_of_the_reference(assignment):
    """A mark that never leaves its cell out is an authoring mistake (a later cell reads what it binds)."""
    release = nbformat.read(REPO / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    marked = [c.source for c in release.cells if demos.is_marked(c)]
    assert len(marked) == MARKED[assignment] == len(demos.demonstration_sources(assignment))
    assert sorted(_skipped(_reference(assignment), assignment)) == sorted(marked)


def test_marks_are_read_from_the_release_not_from_the_submission():
    nb = _reference("03_yolo_head")
    own = nbformat.v4.new_code_cell("slow = sum(range(10))", metadata={"course": {"demonstration": True}})
    nb.cells.append(own)
    assert own.source not in _skipped(nb, "03_yolo_head")
    edited = next(c for c in nb.cells if demos.is_marked(c))
    edited.source += "\nprint('mine now')"
    assert edited.source not in _skipped(nb, "03_yolo_head") and len(_skipped(nb, "03_yolo_head")) == 2


def test_a_demonstration_runs_when_a_students_cell_reads_what_it_binds():
    every_box = next(s for s in demos.demonstration_sources("03_yolo_head") if "delta_all" in s)
    nb = _reference("03_yolo_head")
    nb.cells.append(nbformat.v4.new_code_cell("print(delta_all.abs().max())"))  # after it: needs it
    assert every_box not in _skipped(nb, "03_yolo_head")
    nb = _reference("03_yolo_head")
    nb.cells.insert(3, nbformat.v4.new_code_cell("def show():\n    return history[-1]\n"))  # a function: any time
    assert every_box not in _skipped(nb, "03_yolo_head")
    nb = _reference("03_yolo_head")
    nb.cells.insert(3, nbformat.v4.new_code_cell("history = []\nprint(len(history))"))  # before it: not needed
    assert every_box in _skipped(nb, "03_yolo_head")


def test_a_demonstration_another_running_one_needs_runs_too():
    nb = _reference("03_yolo_head")
    attack_demo = next(s for s in demos.demonstration_sources("03_yolo_head") if s.startswith("EPS, STEPS"))
    every_box = next(s for s in demos.demonstration_sources("03_yolo_head") if "delta_all" in s)
    cell = next(c for c in nb.cells if c.source == every_box)
    cell.source = every_box + "\nprint(delta.shape)"  # edited: the student's own now, and it reads `delta`
    assert attack_demo not in _skipped(nb, "03_yolo_head")


def test_nothing_is_left_out_of_a_notebook_that_reads_its_namespace_dynamically():
    nb = _reference("04_in_the_wild")
    assert _skipped(nb, "04_in_the_wild")
    nb.cells.append(nbformat.v4.new_code_cell("print(sorted(globals()))"))
    assert _skipped(nb, "04_in_the_wild") == []


# -- and no verdict moves --------------------------------------------------------------------------------

def _verdicts(nb, assignment, **kw):
    conf = confirm.confirm(nb, assignment, use_sandbox=False, **kw)
    return {g: (v.passed, v.message) for g, v in conf.verdicts.items()}, conf


@pytest.mark.slow
@pytest.mark.parametrize("assignment,student", [("03_yolo_head", "unclamped_attack"),
                                                ("04_in_the_wild", "stale_graph")])
def test_leaving_demonstrations_out_moves_no_verdict(assignment, student):
    sample = next(s for s in load_samples(assignment) if s.student == student)
    nb = build_notebook(sample)[1]
    left_out, conf = _verdicts(nb, assignment)
    assert len(conf.skipped) == MARKED[assignment]
    all_run, conf = _verdicts(nb, assignment, skip_demonstrations=False)
    assert conf.skipped == []
    assert left_out == all_run


@pytest.mark.slow
def test_without_the_check_an_honest_answer_that_reads_a_demonstration_would_lose_its_point(monkeypatch):
    """The control: to_autograd reads the GAN demonstration's `history` when called. With the check the
    demonstration runs (then the confirmation is the one it always was); leaving every marked cell out
    blindly fails the answer."""
    nb = _reference("04_in_the_wild")
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "to_autograd")
    answer.source = ("def to_autograd(t):\n    assert len(history) == 400, 'run the training cell first'\n"
                     "    return t.clone()\n")
    assert _skipped(nb, "04_in_the_wild") == []  # with the check: it runs, as in the kernel (passes there)
    monkeypatch.setattr(demos, "skippable", lambda cells, marked, reads=frozenset():
                        [i for i, s in enumerate(cells) if s in marked])
    blind, conf = _verdicts(nb, "04_in_the_wild")
    assert len(conf.skipped) == 1 and blind["to_autograd_tests"][0] is False
    assert "history" in blind["to_autograd_tests"][1]
