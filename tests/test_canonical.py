"""The canonical stage (:mod:`instructor.engine.canonical`) on its own, in milliseconds: no kernel, no sandbox.

A submitted notebook is rebuilt on the released one. Only the *source* of answer cells and the student's own
extra cells come from the submission; the nbgrader metadata, the locked and test cells and the kernelspec
come from ``release/``. Each kind of tampering :func:`canonical_notebook` undoes (each branch that appends a
flag) has a test here: the flag is one line naming what was undone, and the rebuilt notebook says what the
release says. The control for each is an honest notebook: no flag, and the student's answers byte for byte.

The notebooks are generated here: a small nbformat notebook built in the test, and the real release
notebook of ``00_orientation`` as the base a student starts from.
"""
from __future__ import annotations

import base64
import copy
import json
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.engine import canonical  # noqa: E402
from instructor.engine.canonical import (MAX_ATTACHMENT_BYTES, MAX_CELLS, MAX_NOTEBOOK_CHARS,  # noqa: E402
                                          MAX_SOURCE_CHARS, canonical_notebook)

RELEASED = REPO / "release" / "00_orientation" / "00_orientation.ipynb"
KERNEL = {"display_name": "Python 3 (course)", "language": "python", "name": "python3"}

# Answers a student might write: non-ASCII, CRLF, tabs, trailing blanks, no final newline. Kept byte for byte.
ANSWERS = {
    "environment_report": "def environment_report():\r\n\treturn {'torch': 'ok'}   \n# déjà vu — ∂y/∂x\n",
    "cube_sum_grad": "def cube_sum_grad(values, fn=lambda x: x ** 3):\n    import torch\n    x = torch.tensor(values, "
                     "requires_grad=True)\n    fn(x).sum().backward()\n    return x.grad",
    "grad_fn_chain": "def grad_fn_chain(t):\n    names = []\n    node = t.grad_fn\n    while node is not None:\n"
                     "        names.append(type(node).__name__)\n        node = node.next_functions[0][0] "
                     "if node.next_functions else None\n    return names\n\n\n",
    "intermediate_grad": "def intermediate_grad(values, fn=lambda h: h * h):\n    raise NotImplementedError  # 🙃\n",
}


# --------------------------------------------------------------------------- notebooks built here

def gid(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta.get("grade_id") if isinstance(meta, dict) else None


def graded(nb) -> dict:
    """grade_id -> cell, for every cell with nbgrader metadata."""
    return {gid(c): c for c in nb.cells if gid(c)}


def nbg(grade_id: str, *, solution=False, grade=False, locked=False, points=None, cell_type="code") -> dict:
    meta = {"grade_id": grade_id, "solution": solution, "grade": grade, "locked": locked, "schema_version": 3,
            "task": False, "cell_type": cell_type}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def small_release():
    """A small released notebook: every kind of cell the course has."""
    return new_notebook(metadata={"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}, cells=[
        new_markdown_cell("# A small assignment"),
        new_code_cell("import math", metadata=nbg("setup", locked=True)),
        new_code_cell("def area(r):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
                      metadata=nbg("area", solution=True)),
        new_code_cell("assert abs(area(1) - math.pi) < 1e-9", metadata=nbg("area_tests", grade=True, locked=True,
                                                                              points=2)),
        new_markdown_cell("YOUR ANSWER HERE", metadata=nbg("why", solution=True, grade=True, points=3,
                                                           cell_type="markdown")),
        new_markdown_cell("The end.", metadata=nbg("closing", locked=True, cell_type="markdown")),
    ])


@pytest.fixture(scope="module")
def released_file():
    return nbformat.read(RELEASED, as_version=4)


@pytest.fixture()
def release(released_file):
    return copy.deepcopy(released_file)


def handed_in(release_nb, answers=ANSWERS):
    """What an honest student hands in: the release with their answers, run in JupyterLab (outputs,
    execution counts, JupyterLab's own cell metadata), one cell of their own, the same kernel."""
    nb = copy.deepcopy(release_nb)
    for k, cell in enumerate(nb.cells):
        if gid(cell) in answers:
            cell.source = answers[gid(cell)]
        cell.metadata["tags"] = []
        if cell.cell_type == "code":
            cell.execution_count = k + 1
            cell.metadata["execution"] = {"iopub.status.busy": "2026-12-01T10:00:00.000Z"}
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"cell {k}\n")]
    at = next(k for k, c in enumerate(nb.cells) if gid(c) == "cube_sum_grad")
    nb.cells.insert(at + 1, new_code_cell("print(cube_sum_grad([1.0, 2.0]))  # trying it out",
                                          outputs=[nbformat.v4.new_output("stream", name="stdout", text="x\n")],
                                          execution_count=99))
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    return nb


def snapshot(nb) -> str:
    return json.dumps(nb, sort_keys=True)


def canon(nb, release_nb):
    """canonical_notebook, checking what holds for every input: ``nb`` untouched, the notebook's metadata
    the release's, every flag one line, no flag twice, every released cell's nbgrader metadata the release's,
    in the release's order, no cell of the student's keeping nbgrader metadata, no output."""
    before = snapshot(nb)
    t0 = time.perf_counter()
    out, flags = canonical_notebook(nb, release_nb)
    assert time.perf_counter() - t0 < 2.0  # milliseconds here; generous for a loaded machine
    assert snapshot(nb) == before, "the submitted notebook was modified"
    nbformat.validate(out)
    assert out.metadata == release_nb.metadata
    assert all(isinstance(f, str) and f and "\n" not in f for f in flags), flags
    assert len(flags) == len(set(flags))
    ids = [gid(c) for c in out.cells if gid(c)]
    assert ids == [gid(c) for c in release_nb.cells if gid(c)], "released cells missing, doubled or out of order"
    rel = graded(release_nb)
    for cell in out.cells:
        if gid(cell):
            assert cell.metadata == rel[gid(cell)].metadata and cell.cell_type == rel[gid(cell)].cell_type
        else:
            assert "nbgrader" not in cell.metadata
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    return out, flags


def assert_released_cells_as_released(out, release_nb, answers: dict):
    """Every released cell as released, but the answer cells, which hold ``answers`` (grade_id -> source)."""
    rel = graded(release_nb)
    for cell in out.cells:
        g = gid(cell)
        if g:
            want = answers.get(g, rel[g].source) if rel[g].metadata["nbgrader"].get("solution") else rel[g].source
            assert cell.source == want, g


def one_flag(flags: list[str], *words: str) -> str:
    """The one flag that contains all ``words``."""
    hits = [f for f in flags if all(w in f for w in words)]
    assert len(hits) == 1, (words, flags)
    return hits[0]


# --------------------------------------------------------------------------- honest notebooks (the controls)

def test_an_honest_notebook_gets_no_flag_and_keeps_every_answer_byte_for_byte(release):
    nb = handed_in(release)
    out, flags = canon(nb, release)
    assert flags == []
    assert_released_cells_as_released(out, release, ANSWERS)
    for g, src in ANSWERS.items():
        assert graded(out)[g].source.encode("utf-8") == src.encode("utf-8")
    # the student's own cell is kept where they put it, without its output
    own = [c for c in out.cells if "trying it out" in c.source]
    assert len(own) == 1 and out.cells[out.cells.index(own[0]) - 1].metadata["nbgrader"]["grade_id"] == "cube_sum_grad"
    # and the ungraded cells of the release (markdown, demonstrations) are kept as handed in
    assert [c.source for c in out.cells if not gid(c) and c is not own[0]] == \
           [c.source for c in release.cells if not gid(c)]


def test_the_release_itself_is_rebuilt_into_itself(release):
    out, flags = canon(release, release)
    assert flags == []
    assert [(c.cell_type, c.source, c.metadata) for c in out.cells] == \
           [(c.cell_type, c.source, c.metadata) for c in release.cells]


def test_a_small_generated_notebook_answered_honestly_is_kept():
    rel = small_release()
    nb = copy.deepcopy(rel)
    nb.cells[2].source = "def area(r):\n    return math.pi * r ** 2\n"
    nb.cells[4].source = "Because *π r²*.\n"
    out, flags = canon(nb, rel)
    assert flags == []
    assert [c.source for c in out.cells] == [c.source for c in nb.cells]


# --------------------------------------------------------------------------- each kind of tampering

def test_an_answer_cell_turned_into_another_type_is_graded_as_released(release):
    nb = handed_in(release)
    cell = graded(nb)["environment_report"]
    nb.cells[nb.cells.index(cell)] = new_markdown_cell(cell.source, metadata=copy.deepcopy(cell.metadata))
    out, flags = canon(nb, release)
    flag = one_flag(flags, "environment_report")
    assert flag == ("answer cell 'environment_report' was turned into a markdown cell: its text is graded as a "
                    "code cell")
    assert graded(out)["environment_report"].cell_type == "code"
    assert graded(out)["environment_report"].source == ANSWERS["environment_report"]
    assert_released_cells_as_released(out, release, ANSWERS)


def test_an_answer_over_the_size_limit_is_cut(release):
    huge = "x = 1\n" * (MAX_SOURCE_CHARS // 6 + 10)
    nb = handed_in(release, {**ANSWERS, "grad_fn_chain": huge})
    out, flags = canon(nb, release)
    assert flags == [f"answer cell 'grad_fn_chain' is over {MAX_SOURCE_CHARS} characters: cut"]
    assert graded(out)["grad_fn_chain"].source == huge[:MAX_SOURCE_CHARS]
    assert_released_cells_as_released(out, release, {**ANSWERS, "grad_fn_chain": huge[:MAX_SOURCE_CHARS]})


@pytest.mark.parametrize("deleted, what", [
    ("environment_report_tests", "test"),
    ("setup", "locked"),
    ("grad_fn_chain", "answer"),
])
def test_a_deleted_released_cell_is_put_back_in_place(release, deleted, what):
    nb = handed_in(release)
    nb.cells = [c for c in nb.cells if gid(c) != deleted]
    out, flags = canon(nb, release)
    assert flags == [f"{what} cell '{deleted}' was missing (deleted, or its id edited): put back"
                     + (" unanswered" if what == "answer" else "")]
    answers = {g: s for g, s in ANSWERS.items() if g != deleted}  # a deleted answer comes back as the stub
    assert_released_cells_as_released(out, release, answers)
    assert graded(out)[deleted].source == graded(release)[deleted].source


def test_a_test_cell_whose_id_was_edited_is_put_back_and_the_impostor_loses_its_metadata(release):
    nb = handed_in(release)
    cell = graded(nb)["cube_sum_grad_tests"]
    cell.source = "pass  # all good"
    cell.metadata["nbgrader"]["grade_id"] = cell["id"] = "cube_sum_grad_tests_v2"
    out, flags = canon(nb, release)
    one_flag(flags, "test cell 'cube_sum_grad_tests' was missing", "put back")
    one_flag(flags, "claimed nbgrader metadata (cube_sum_grad_tests_v2): removed")
    assert graded(out)["cube_sum_grad_tests"].source == graded(release)["cube_sum_grad_tests"].source
    assert "cube_sum_grad_tests_v2" not in graded(out)


def test_all_released_cells_deleted_are_all_put_back(release):
    nb = handed_in(release)
    nb.cells = [c for c in nb.cells if not gid(c)]
    out, flags = canon(nb, release)
    assert len(flags) == len(graded(release))
    assert all("was missing" in f for f in flags)
    assert_released_cells_as_released(out, release, {})


@pytest.mark.parametrize("grade_id, edit, keys", [
    ("environment_report_tests", {"points": 200}, "points"),                           # more points
    ("cube_sum_grad_tests", {"grade": False, "locked": False}, "grade, locked"),       # a test made ungraded
    ("grad_fn_chain", {"grade": True, "points": 50}, "grade, points"),                 # an answer made a test
    ("setup", {"solution": True}, "solution"),                                         # a locked cell made an answer
    ("intermediate_grad_tests", {"checksum": "0" * 32, "extra": 1}, "checksum, extra"),
])
def test_edited_nbgrader_metadata_is_restored(release, grade_id, edit, keys):
    nb = handed_in(release)
    graded(nb)[grade_id].metadata["nbgrader"].update(edit)
    out, flags = canon(nb, release)
    assert f"cell '{grade_id}': its nbgrader metadata was edited ({keys}): restored" in flags
    assert graded(out)[grade_id].metadata == graded(release)[grade_id].metadata
    points = sum(c.metadata["nbgrader"].get("points", 0) for c in out.cells if gid(c))
    assert points == sum(c.metadata["nbgrader"].get("points", 0) for c in release.cells if gid(c))
    if grade_id == "setup":  # made an answer, its edited source would have been kept: restored as a locked cell
        assert graded(out)["setup"].source == graded(release)["setup"].source


def test_an_edited_locked_cell_is_restored(release):
    nb = handed_in(release)
    graded(nb)["setup"].source = "import torch\ncall_student = lambda f, *a, **k: True  # every check passes"
    out, flags = canon(nb, release)
    assert flags == ["locked cell 'setup' was edited: restored"]
    assert_released_cells_as_released(out, release, ANSWERS)


def test_an_edited_test_cell_is_restored(release):
    # Not flagged (nbgrader restores test cells from the gradebook too, and the instructor may have
    # fixed a visible test after release): the graded test is the release's all the same.
    nb = handed_in(release)
    graded(nb)["grad_fn_chain_tests"].source = "pass"
    out, _ = canon(nb, release)
    assert graded(out)["grad_fn_chain_tests"].source == graded(release)["grad_fn_chain_tests"].source
    assert_released_cells_as_released(out, release, ANSWERS)


def test_a_cell_of_the_students_over_the_size_limit_is_cut(release):
    nb = handed_in(release)
    nb.cells.append(new_code_cell("#" * (MAX_SOURCE_CHARS + 5)))
    out, flags = canon(nb, release)
    assert flags == [f"a cell of your own is over {MAX_SOURCE_CHARS} characters: cut"]
    assert out.cells[-1].source == "#" * MAX_SOURCE_CHARS
    assert_released_cells_as_released(out, release, ANSWERS)


def test_the_students_cells_over_the_notebook_limit_are_left_out(release):
    nb = handed_in(release)
    chunk = "y" * (MAX_SOURCE_CHARS - 1)
    n = MAX_NOTEBOOK_CHARS // len(chunk) + 3
    nb.cells += [new_markdown_cell(chunk) for _ in range(n)]
    out, flags = canon(nb, release)
    assert flags == [f"your own cells are over {MAX_NOTEBOOK_CHARS} characters together: the rest were left out"]
    own = sum(len(c.source) for c in out.cells if not gid(c))
    assert own <= MAX_NOTEBOOK_CHARS
    assert sum(1 for c in out.cells if c.source == chunk) < n
    assert_released_cells_as_released(out, release, ANSWERS)


def test_attachments_over_the_limit_are_removed_and_small_ones_kept(release):
    nb = handed_in(release)
    small = {"dot.png": {"image/png": base64.b64encode(b"\x89PNG small").decode()}}
    big = {"big.png": {"image/png": "A" * (MAX_ATTACHMENT_BYTES + 10)}}
    nb.cells.append(new_markdown_cell("![dot](attachment:dot.png)", attachments=small))
    nb.cells.append(new_markdown_cell("![big](attachment:big.png)", attachments=big))
    out, flags = canon(nb, release)
    assert flags == [f"attachments over {MAX_ATTACHMENT_BYTES >> 10} KiB per notebook were removed"]
    kept, cut = out.cells[-2], out.cells[-1]
    assert kept.attachments == small and kept.source == "![dot](attachment:dot.png)"
    assert "attachments" not in cut and "removed by the grader" in cut.source
    assert_released_cells_as_released(out, release, ANSWERS)


@pytest.mark.parametrize("claim, shown", [
    (nbg("bonus_tests", grade=True, locked=True, points=100), "bonus_tests"),           # a new test cell
    (nbg("environment_report_tests", grade=True, locked=True, points=2), "environment_report_tests"),  # a copy
    ({"nbgrader": {"points": 5, "grade": True}}, "no id"),                             # metadata without an id
    ({"nbgrader": "grade"}, "no id"),                                                  # not even a dict
    ({"nbgrader": {"grade_id": ["environment_report_tests"]}}, "no id"),               # an id that is a list
    ({"nbgrader": {"grade_id": {"id": "x"}, "grade": True, "points": 9}}, "no id"),    # ... or an object
    ({"nbgrader": {"grade_id": 7, "grade": True, "points": 9}}, "no id"),              # ... or a number
])
def test_a_cell_of_the_students_claiming_nbgrader_metadata_loses_it(release, claim, shown):
    nb = handed_in(release)
    nb.cells.append(new_code_cell("pass  # full marks please", metadata=copy.deepcopy(claim)))
    out, flags = canon(nb, release)
    assert flags == [f"a cell of your own claimed nbgrader metadata ({shown}): removed"]
    assert out.cells[-1].source == "pass  # full marks please" and "nbgrader" not in out.cells[-1].metadata
    assert_released_cells_as_released(out, release, ANSWERS)


def test_a_released_cell_whose_id_was_made_a_list_is_put_back(release):
    nb = handed_in(release)
    meta = graded(nb)["environment_report_tests"].metadata["nbgrader"]
    meta["grade_id"] = ["environment_report_tests"]
    out, flags = canon(nb, release)
    assert sorted(flags) == ["a cell of your own claimed nbgrader metadata (no id): removed",
                             "test cell 'environment_report_tests' was missing (deleted, or its id edited): put back"]
    assert_released_cells_as_released(out, release, ANSWERS)


def test_control_an_id_that_is_a_list_crashed_the_stage_when_ids_were_not_checked(release, monkeypatch):
    monkeypatch.setattr(canonical, "_gid", lambda cell: canonical._nbmeta(cell).get("grade_id"))  # as it was
    nb = handed_in(release)
    nb.cells.append(new_code_cell("pass", metadata={"nbgrader": {"grade_id": ["x"]}}))
    with pytest.raises(TypeError, match="unhashable"):
        canonical_notebook(nb, release)


@pytest.mark.parametrize("meta", [{"points": 5, "grade": True}, "grade", {"grade_id": ["x"], "grade": True}],
                         ids=["no id", "not a dict", "list id"])
def test_the_autograde_chain_reaches_canonical_with_broken_nbgrader_metadata(release, meta):
    from instructor.engine import pipeline

    chain = pipeline.sandboxed_config(REPO).Autograde.sanitize_preprocessors
    names = [p.__name__ for p in chain]
    assert names.index("Canonicalize") < names.index("DeduplicateIds"), names   # nbgrader's step crashed first
    nb = handed_in(release)
    nb.cells.append(new_code_cell("pass", metadata={"nbgrader": meta}))
    flags = None
    for step in chain[:names.index("DeduplicateIds") + 1]:
        if step.__name__ == "Canonicalize":
            nb, flags = canon(nb, release)
        elif step.__name__ != "OverwriteKernelspec":   # reads the gradebook; nothing to do with the cells
            nb, _ = step().preprocess(nb, {})
    assert "a cell of your own claimed nbgrader metadata (no id): removed" in flags


@pytest.mark.parametrize("meta", [{"points": 5, "grade": True}, "grade", {"grade_id": ["x"], "grade": True}],
                         ids=["no id", "not a dict", "list id"])
def test_without_the_reorder_nbgraders_step_crashes_on_it(release, meta):
    """The control: nbgrader's DeduplicateIds alone, on the same notebook, before anything repaired it."""
    from nbgrader.preprocessors import DeduplicateIds

    nb = handed_in(release)
    nb.cells.append(new_code_cell("pass", metadata={"nbgrader": meta}))
    with pytest.raises((KeyError, AttributeError, TypeError)):
        DeduplicateIds().preprocess(nb, {})


def test_a_copy_of_an_answer_cell_above_it_is_the_answer_and_the_later_one_the_students_own(release):
    nb = handed_in(release)
    at = nb.cells.index(graded(nb)["grad_fn_chain"])
    first = copy.deepcopy(nb.cells[at])
    first.source, first["id"] = "def grad_fn_chain(t):\n    return ['first']\n", "a-copy"
    nb.cells.insert(at, first)
    out, flags = canon(nb, release)
    assert flags == ["a cell of your own claimed nbgrader metadata (grad_fn_chain): removed"]
    assert graded(out)["grad_fn_chain"].source == first.source
    assert ANSWERS["grad_fn_chain"] in [c.source for c in out.cells if not gid(c)]


def test_a_notebook_of_ten_thousand_cells_is_graded_on_the_released_cells_with_the_answers(release):
    nb = handed_in(release)
    filler = new_code_cell("x = 1")
    nb.cells += [filler] * 10_000   # one object, many times: cheap to build
    count = len(nb.cells)
    assert count > MAX_CELLS
    out, flags = canon(nb, release)
    assert flags == [f"the notebook has {count} cells (limit {MAX_CELLS}): only the assignment's own cells were "
                     "graded, with your answers"]
    assert len(out.cells) == len(release.cells)
    assert_released_cells_as_released(out, release, ANSWERS)
    assert [c.source for c in out.cells if not gid(c)] == [c.source for c in release.cells if not gid(c)]


@pytest.mark.parametrize("kernelspec", [
    {"display_name": "Python 3 (course)", "language": "python", "name": "does-not-exist"},
    {"display_name": "Bash", "language": "bash", "name": "bash"},
    None,   # no kernelspec at all
])
def test_a_changed_kernel_is_replaced_by_the_course_kernel(release, kernelspec):
    nb = handed_in(release)
    if kernelspec is None:
        del nb.metadata["kernelspec"]
    else:
        nb.metadata["kernelspec"] = kernelspec
    out, flags = canon(nb, release)
    assert flags == ["the notebook's kernel was changed: graded with the course kernel"]
    assert out.metadata.kernelspec == release.metadata.kernelspec == KERNEL
    assert_released_cells_as_released(out, release, ANSWERS)


def test_every_kind_at_once_gives_one_line_each_and_the_release(release):
    nb = handed_in(release)
    graded(nb)["setup"].source = "pass"
    graded(nb)["environment_report_tests"].metadata["nbgrader"]["points"] = 99
    nb.cells = [c for c in nb.cells if gid(c) != "intermediate_grad_tests"]
    nb.cells.append(new_code_cell("pass", metadata=nbg("bonus", grade=True, points=9)))
    nb.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python"}
    out, flags = canon(nb, release)
    assert len(flags) == 5, flags
    for words in ("locked cell 'setup'", "'environment_report_tests': its nbgrader metadata", "was missing",
                  "(bonus)", "kernel was changed"):
        one_flag(flags, words)
    assert_released_cells_as_released(out, release, ANSWERS)


# --------------------------------------------------------------------------- student-made text in a flag

@pytest.mark.parametrize("where", ["claimed id", "edited key"])
def test_student_made_text_in_a_flag_stays_one_bounded_printable_line(release, where):
    """A flag is printed on the instructor's terminal (``grade``'s summary) and written to grades.csv: the
    text a student chose (an id they claimed, a metadata key they added) must not end the line, move the
    cursor or run for pages."""
    evil = "x\n  flagged:   nobody\x1b[2K\x1b[1A\u202e" + "z" * 5000
    nb = handed_in(release)
    if where == "claimed id":
        nb.cells.append(new_code_cell("pass", metadata=nbg(evil, grade=True, points=1)))
    else:
        graded(nb)["setup"].metadata["nbgrader"][evil] = 1
    out, flags = canon(nb, release)   # canon: every flag has no line break
    [flag] = flags
    assert flag.isprintable() and len(flag) < 400, flag[:200]
    assert "x\\n  flagged:   nobody\\x1b[2K\\x1b[1A\\u202ezzz" in flag   # escaped, so the instructor sees it
    assert_released_cells_as_released(out, release, ANSWERS)


def test_control_without_escaping_the_student_s_text_would_reach_the_flag_raw(release, monkeypatch):
    """The control of the test above: with :func:`canonical._shown` off, the claimed id ends the line."""
    monkeypatch.setattr(canonical, "_shown", str)
    nb = handed_in(release)
    nb.cells.append(new_code_cell("pass", metadata=nbg("x\n  flagged:   nobody\x1b[1A", grade=True, points=1)))
    _, [flag] = canonical_notebook(nb, release)
    assert "\n" in flag and "\x1b" in flag
