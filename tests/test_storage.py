"""autograder.storage: the measuring instrument of the lessons (raw facts, no category), the visible
tests' example check, the explorer (driven headless through its callbacks) and the model's inputs.

The reference classifier and the hidden checks moved to instructor/hidden/a02_names_and_storage/
(tested in test_hidden_a02.py): the student package must not answer classify_update."""
from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from autograder import storage  # noqa: E402
from autograder.checks import CheckFailed  # noqa: E402
from autograder import runtime  # noqa: E402

CONFIGS = runtime.test_configs()
CONFIG_IDS = [f"{d.type}-{str(t).replace('torch.', '')}" for d, t in CONFIGS]

# Behaviour that holds on every PyTorch the course supports, checked on the raw facts measure() reports
# (with the task's rules applied here, in the test: the package itself never names a category).
KNOWN = {
    "x = x + 1": "new-tensor", "x = x.clone()": "new-tensor", "x = torch.sigmoid(x)": "new-tensor",
    "x += 1": "in-place", "x[0] = 1": "in-place", "x[:] = x + 1": "in-place", "x.add_(1)": "in-place",
    "x = x.add_(1)": "in-place", "torch.add(x, 1, out=x)": "in-place", "x.sigmoid_()": "in-place",
    "x *= 1": "in-place", "y = x[0]; y += 1": "in-place", "x.detach().add_(1)": "in-place",
    "x = x[:]": "new-view", "x = x.view(-1)": "new-view", "x = x[1:]": "new-view", "x = x.detach()": "new-view",
    "x = x.contiguous()": "no-change", "pass": "no-change", "y = x + 1": "no-change",
    "x.data += 1": "untracked-write", "x.data = x.data + 1": "untracked-write", "x.data.add_(1)": "untracked-write",
}


def _rules(m: storage.Measurement) -> str:
    if m.version_bumped:
        return "in-place"
    if m.contents_changed:
        return "untracked-write"
    return "no-change" if m.same_object else "new-view" if m.same_storage else "new-tensor"


@pytest.mark.parametrize("device,dtype", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("statement", sorted(KNOWN))
def test_measure_reports_facts_that_give_the_known_categories(statement, device, dtype):
    assert _rules(storage.measure(statement, device, dtype)) == KNOWN[statement]


def test_the_student_package_does_not_answer_classify_update():
    for name in ("classify", "check_category", "reference_model", "check_fixed_model", "_HINTS"):
        assert not hasattr(storage, name), name
    assert "category" not in {f.name for f in dataclasses.fields(storage.Measurement)}
    assert not hasattr(storage.measure("x += 1", "cpu"), "category")


def test_make_x_is_fresh_distinct_and_nonzero():
    a, b = storage.make_x("cpu"), storage.make_x("cpu")
    assert a is not b and a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert a.shape == (2, 3) and a.dtype == torch.float32 and not a.requires_grad
    assert (a != 0).all() and a.flatten().unique().numel() == a.numel()
    assert torch.equal(storage.make_x("cpu", torch.float16).double(), a.double())  # exact in half
    assert torch.equal(storage.make_x("cpu", torch.bfloat16).double(), a.double())  # and in bfloat16


def test_measure_reports_the_witnesses():
    m = storage.measure("x = x[:]", "cpu")
    assert not m.same_object and m.same_storage and not m.version_bumped and not m.contents_changed
    assert m.before.id == m.original_after.id != m.after.id
    m = storage.measure("x += 1", "cpu")
    assert m.same_object and m.version_bumped and m.original_after.version == m.before.version + 1
    assert m.facts() == "same object True, same storage True, x0._version 0 -> 1, x0's contents changed True"
    with pytest.raises(TypeError):
        storage.measure("x = 3", "cpu")


def _reference_student(statement, device=None, dtype=None):
    return _rules(storage.measure(statement, device, dtype))


def _id_only_student(statement, device=None, dtype=None):
    x = storage.make_x(device, dtype)
    old, scope = x, {"torch": torch, "x": x}
    exec(statement, scope)
    return "in-place" if scope["x"] is old else "new-tensor"


def test_check_example_category_accepts_right_and_explains_wrong():
    for statement in ("x += 1", "x = x[:]", "x.data += 1"):
        assert storage.check_example_category(_reference_student, statement, KNOWN[statement], "cpu",
                                              torch.float64) == KNOWN[statement]
    with pytest.raises(CheckFailed) as err:
        storage.check_example_category(_id_only_student, "x.data += 1", "untracked-write", "cpu")
    text = str(err.value)
    assert "'untracked-write'" in text and "'in-place'" in text and "try next" in text and "_version" in text
    assert "measured: same object True" in text
    with pytest.raises(CheckFailed, match="unknown category"):
        storage.check_example_category(lambda s, device=None, dtype=None: "inplace", "x += 1", "in-place", "cpu")
    with pytest.raises(CheckFailed, match="not implemented"):
        storage.check_example_category(lambda s, device=None, dtype=None: (_ for _ in ()).throw(NotImplementedError),
                                       "x += 1", "in-place")


# --------------------------------------------------------------------------- the explorer, headless

def test_explorer_callbacks_show_the_measured_values():
    ex = storage.StorageExplorer(device="cpu")
    assert ex.last is not None and ex.last.statement == storage.EXAMPLES[0]
    ex.text.value = "x.data += 1"
    ex.button.click()                                  # what a click in the browser does
    m = ex.last
    assert m.statement == "x.data += 1" and m.contents_changed and not m.version_bumped
    for who, ident, ptr, version in storage.measurement_rows(m):
        assert ident in ex.html.value and ptr in ex.html.value
    assert "<b>True</b>" in ex.html.value              # contents changed
    assert ex.figures >= 2                             # the picture was redrawn
    # the alias row: a = x before the statement still names the original object
    assert m.original_after.id == m.before.id and m.original_after.version == m.before.version


def test_explorer_dropdown_measures_the_picked_example():
    ex = storage.StorageExplorer(device="cpu", draw=False)
    ex.dropdown.value = "x = x[:]"                     # fires on_pick through the observer
    assert ex.text.value == "x = x[:]"
    assert ex.last.statement == "x = x[:]" and not ex.last.same_object and ex.last.same_storage
    assert f"{ex.last.after.id:#x}" in ex.html.value and f"{ex.last.before.id:#x}" in ex.html.value


def test_explorer_reports_a_broken_statement_instead_of_crashing():
    ex = storage.StorageExplorer(device="cpu", draw=False)
    ex.text.value = "x.no_such_method_()"
    ex.on_measure()
    assert ex.last is None and "AttributeError" in ex.error and "raised" in ex.html.value


def test_explorer_without_front_end_draws_a_static_figure(capsys):
    assert not storage.has_front_end()
    before = len(plt.get_fignums())
    assert storage.explorer(("x += 1",), device="cpu") is None
    assert "_version" in capsys.readouterr().out
    assert len(plt.get_fignums()) >= before  # Agg: the figure exists, plt.show() is a no-op
    plt.close("all")


@pytest.mark.parametrize("statement", ["x = x + 1", "x += 1", "x = x[:]", "x = x.contiguous()", "x.data += 1",
                                       "x.data = x.data + 1"])
def test_picture_draws_for_every_category(statement):
    fig = storage.draw_names_objects_storage(storage.measure(statement, "cpu"))
    assert len(fig.axes) == 2
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "x" in texts and "a" in texts and any("storage" in t for t in texts)
    plt.close(fig)


# --------------------------------------------------------------------------- the model question

def test_model_inputs_are_reproducible_leaves():
    x, w = storage.model_inputs("cpu")
    assert x.shape == (5, 3) and w.shape == (3, 4) and x.dtype == w.dtype == torch.float64
    assert x.is_leaf and w.is_leaf and x.requires_grad and w.requires_grad
    x2, w2 = storage.model_inputs("cpu", torch.float32, n=7, seed=0)
    assert x2.shape == (7, 3) and x2.dtype == torch.float32
    assert torch.equal(storage.model_inputs("cpu", seed=3)[1], storage.model_inputs("cpu", seed=3)[1])
    assert not torch.equal(storage.model_inputs("cpu", seed=3)[1], w)


# Statements whose category depends on the dtype: the hidden checks also try them with the default
# arguments, so a classifier whose default dtype is not float32 loses points (mutation testing).
DTYPE_DEPENDENT = {
    "x = x.float()": {torch.float32: "no-change", torch.float64: "new-tensor", torch.float16: "new-tensor"},
    "x = x.double()": {torch.float32: "new-tensor", torch.float64: "no-change", torch.float16: "new-tensor"},
    "x.data += 1e-5": {torch.float32: "untracked-write", torch.float64: "untracked-write",
                       torch.float16: "no-change", torch.bfloat16: "no-change"},
}


@pytest.mark.parametrize("statement", sorted(DTYPE_DEPENDENT))
def test_measure_sees_dtype_dependent_answers(statement):
    for dtype, category in DTYPE_DEPENDENT[statement].items():
        assert _rules(storage.measure(statement, "cpu", dtype)) == category, dtype


def test_model_inputs_move_to_the_meta_device():
    """The hidden checks run fixed_model on 'meta' (the CPU grader's stand-in for a GPU): like CUDA it takes
    Python numbers and 0-dim CPU tensors next to its tensors and refuses other CPU tensors."""
    x, w = (t.detach().to("meta").requires_grad_() for t in storage.model_inputs("cpu"))
    out = torch.sigmoid(torch.relu(x @ w + torch.tensor(0.1, dtype=x.dtype))) * 2
    assert out.device.type == "meta" and out.shape == (5, 4) and out.requires_grad
    with pytest.raises(RuntimeError, match="device"):
        x @ w + torch.full((1, 4), 0.1, dtype=x.dtype)
