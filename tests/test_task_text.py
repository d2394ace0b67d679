"""Text and checks agree, by construction (issue 20, item 1).

Each hidden check names the input kinds its cases draw (``Check.draws``, in the words of
``instructor.hidden.KINDS``: dtypes, "0-dim", "meta", "GPU", "repeated calls", ...). Here every one of
them must appear in its task's text in the source notebook: the markdown cells from the previous
task's graded cell to the solution cell of the function the check grades, and those between that
solution cell and the check's test cell. A check that starts drawing a new kind fails this test until
the text says it. The case labels (what a failing student is told) are read too: a dtype or device
they name must be one the check declares.
"""
from __future__ import annotations

import functools
import re

import nbformat
import pytest

from instructor.layout import source_notebooks
from instructor.hidden import ASSIGNMENT_MODULES, KINDS, checks_for

#: Every assignment: each of its checks declares its draws.
DECLARED = tuple(ASSIGNMENT_MODULES)
#: Kinds a label names with the same word the text uses (the free-form kinds, "view", "empty" or
#: "repeated calls", also describe wrong answers in labels, so they are not read from labels).
LABEL_KINDS = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64",
               "0-dim", "meta", "GPU")

CHECKS = [(a, c) for a in ASSIGNMENT_MODULES for c in checks_for(a)]


def says(text: str, kind: str) -> bool:
    """Whether ``text`` names ``kind``: its pattern as a whole word, any case."""
    return re.search(rf"(?<![\w-])(?:{KINDS[kind]})(?![\w-])", text, re.I) is not None


@functools.lru_cache(maxsize=None)
def _cells(assignment: str) -> tuple:
    [path] = source_notebooks(assignment)[:1]
    return tuple(nbformat.read(path, as_version=4).cells)


def _nbg(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def task_text(assignment: str, grade_id: str) -> str:
    """The text of the task a test cell grades (see the module's docstring)."""
    cells = _cells(assignment)
    [test] = [i for i, c in enumerate(cells) if _nbg(c).get("grade_id") == grade_id]
    solution = max(i for i, c in enumerate(cells[:test]) if c.cell_type == "code" and _nbg(c).get("solution"))
    before = [i for i, c in enumerate(cells[:solution]) if _nbg(c).get("grade") or _nbg(c).get("solution")]
    start = before[-1] + 1 if before else 0
    return "\n\n".join(c.source for c in cells[start:test] if c.cell_type == "markdown")


def test_the_task_text_is_the_tasks_own():
    text = task_text("01_version_counter", "read_error_message_tests")
    assert "Write `read_error_message(err)`" in text and "predict_versions" not in text
    assert "saved_by" not in text and says(text, "bfloat16") and not says(text, "uint8")
    contract = task_text("03_yolo_head", "decode_contract_tests")  # the task, then the cells up to its test
    assert "Write `decode(p, grid, anchor_grid, stride)`" in contract and "**Contract**" in contract
    assert "**Gradients**" not in contract
    assert not says("the metadata of a cell", "meta") and says("PyTorch's `meta` device", "meta")
    assert says("torch.cuda.HalfTensor", "GPU") and not says("CUDABFloat16Type", "GPU")
    assert says("an empty tensor of shape (0, 3)", "empty") and not says("torch.empty_like(t)", "empty")


def test_issue_38_texts_say_what_their_checks_draw():
    """Issue 38: where a check drew more than its text said, the text now says it (and the draws agree)."""
    safe = task_text("04_in_the_wild", "safe_inplace_tests")
    assert "`LayerNorm`s" in safe and "end in an" in safe and "ELU, CELU and SELU" in safe
    sigmoid = task_text("04_in_the_wild", "sigmoid_inplace_tests")
    assert "write into `y` after `apply`" in sigmoid and "never return a wrong gradient" in sigmoid
    to_autograd = task_text("04_in_the_wild", "to_autograd_tests")
    assert says(to_autograd, "empty") and "cannot run on `meta`" in to_autograd and "any other" in to_autograd
    assert "t ** 2 + 1" in task_text("01_version_counter", "saved_by_tests")
    assert "its own error" in task_text("01_version_counter", "reproduce_sigmoid_error_tests")
    for grade_id in ("cube_sum_grad_tests", "intermediate_grad_tests"):
        assert "`.detach()`" in task_text("00_orientation", grade_id)


@pytest.mark.parametrize("assignment", DECLARED)
def test_every_check_declares_what_it_draws(assignment):
    for check in checks_for(assignment):
        assert "draws" in vars(type(check)), f"{check.grade_id}: no `draws` (say `draws = ()` if it draws no kind)"


@pytest.mark.parametrize("assignment,check", CHECKS, ids=[c.grade_id for _, c in CHECKS])
def test_every_kind_a_check_draws_is_named_in_its_task_text(assignment, check):
    unknown = [k for k in check.draws if k not in KINDS]
    assert not unknown, f"{check.grade_id} draws kinds outside the vocabulary (instructor.hidden.KINDS): {unknown}"
    text = task_text(assignment, check.grade_id)
    unsaid = [k for k in check.draws if not says(text, k)]
    assert not unsaid, (f"{assignment}: the hidden check {check.grade_id} draws {unsaid}, which the task's text "
                        f"never names (pattern: {[KINDS[k] for k in unsaid]})")


@pytest.mark.parametrize("assignment", DECLARED)
def test_labels_name_only_declared_kinds(assignment):
    wrong = {}
    for check in checks_for(assignment):
        labels = "\n".join(str(case.get("label", "")) for case in check.cases())
        named = [k for k in LABEL_KINDS if says(labels, k) and k not in check.draws]
        if named:
            wrong[check.grade_id] = named
    assert not wrong, f"case labels name kinds their checks do not declare in `draws`: {wrong}"
