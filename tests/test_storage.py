"""autograder.storage: the measuring instrument, the reference classifier, the explorer (driven
headless through its callbacks) and the model question's checks."""
from __future__ import annotations

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

# Behaviour that holds on every PyTorch the course supports; the hidden tests never rely on a table like
# this (they call storage.classify), this only pins down that the reference measures what it claims to.
KNOWN = {
    "x = x + 1": "new-tensor", "x = x.clone()": "new-tensor", "x = torch.sigmoid(x)": "new-tensor",
    "x += 1": "in-place", "x[0] = 1": "in-place", "x[:] = x + 1": "in-place", "x.add_(1)": "in-place",
    "x = x.add_(1)": "in-place", "torch.add(x, 1, out=x)": "in-place", "x.sigmoid_()": "in-place",
    "x *= 1": "in-place", "y = x[0]; y += 1": "in-place",
    "x = x[:]": "new-view", "x = x.view(-1)": "new-view", "x = x[1:]": "new-view", "x = x.detach()": "new-view",
    "x = x.contiguous()": "no-change", "pass": "no-change", "y = x + 1": "no-change",
    "x.data += 1": "untracked-write", "x.data = x.data + 1": "untracked-write",
}


@pytest.mark.parametrize("device,dtype", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("statement", sorted(KNOWN))
def test_reference_classifier(statement, device, dtype):
    assert storage.classify(statement, device, dtype) == KNOWN[statement]


def test_detach_shares_the_version_counter_and_data_does_not():
    # The two facts the notebook's 'untracked-write' category rests on, measured.
    assert storage.classify("x.detach().add_(1)", "cpu") == "in-place"
    assert storage.classify("x.data.add_(1)", "cpu") == "untracked-write"


def test_make_x_is_fresh_distinct_and_nonzero():
    a, b = storage.make_x("cpu"), storage.make_x("cpu")
    assert a is not b and a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert a.shape == (2, 3) and a.dtype == torch.float32 and not a.requires_grad
    assert (a != 0).all() and a.flatten().unique().numel() == a.numel()
    assert torch.equal(storage.make_x("cpu", torch.float16).double(), a.double())  # exact in half


def test_measure_reports_the_witnesses():
    m = storage.measure("x = x[:]", "cpu")
    assert not m.same_object and m.same_storage and not m.version_bumped and not m.contents_changed
    assert m.before.id == m.original_after.id != m.after.id
    m = storage.measure("x += 1", "cpu")
    assert m.same_object and m.version_bumped and m.original_after.version == m.before.version + 1
    with pytest.raises(TypeError):
        storage.measure("x = 3", "cpu")


def _reference_student(statement, device=None, dtype=None):
    return storage.classify(statement, device, dtype)


def _id_only_student(statement, device=None, dtype=None):
    x = storage.make_x(device, dtype)
    old, scope = x, {"torch": torch, "x": x}
    exec(statement, scope)
    return "in-place" if scope["x"] is old else "new-tensor"


def test_check_category_accepts_right_and_explains_wrong():
    for statement in ("x += 1", "x = x[:]", "x.data += 1"):
        assert storage.check_category(_reference_student, statement, "cpu", torch.float64) == storage.classify(statement, "cpu", torch.float64)
    with pytest.raises(CheckFailed) as err:
        storage.check_category(_id_only_student, "x.data += 1", "cpu")
    text = str(err.value)
    assert "'untracked-write'" in text and "'in-place'" in text and "try next" in text and "_version" in text
    with pytest.raises(CheckFailed, match="unknown category"):
        storage.check_category(lambda s, device=None, dtype=None: "inplace", "x += 1", "cpu")
    with pytest.raises(CheckFailed, match="not implemented"):
        storage.check_category(lambda s, device=None, dtype=None: (_ for _ in ()).throw(NotImplementedError), "x += 1")


# --------------------------------------------------------------------------- the explorer, headless

def test_explorer_callbacks_show_the_measured_values():
    ex = storage.StorageExplorer(device="cpu")
    assert ex.last is not None and ex.last.statement == storage.EXAMPLES[0]
    ex.text.value = "x.data += 1"
    ex.button.click()                                  # what a click in the browser does
    m = ex.last
    assert m.statement == "x.data += 1" and m.category == "untracked-write"
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

def _leaky(x, w):
    h = x @ w
    h += 0.1
    h.relu_()
    y = h.sigmoid()
    y[:, :2] = y[:, :2] * 2 - 0.5
    y[:, 2:] = (y[:, 2:] * 2) ** 2
    return y


def _clone_fix(x, w):
    h = x @ w
    h += 0.1
    h.relu_()
    y = h.sigmoid().clone()
    y[:, :2] = y[:, :2] * 2 - 0.5
    y[:, 2:] = (y[:, 2:] * 2) ** 2
    return y


def _data_fix(x, w):
    y = torch.relu(x @ w + 0.1).sigmoid()
    y.data[:, :2] = y.data[:, :2] * 2 - 0.5
    y.data[:, 2:] = (y.data[:, 2:] * 2) ** 2
    return y


def _hooks_fix(x, w):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return _leaky(x, w)


def _detach_fix(x, w):
    return _leaky(x.detach(), w.detach())


def _no_grad_fix(x, w):
    with torch.no_grad():
        return _leaky(x, w)


def test_reference_model_matches_leaky_forward():
    x, w = storage.model_inputs("cpu")
    with torch.no_grad():
        torch.testing.assert_close(storage.reference_model(x, w), _leaky(x, w))


@pytest.mark.parametrize("device,dtype", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("fn", [storage.reference_model, _clone_fix], ids=["cat", "clone"])
def test_check_fixed_model_accepts_correct_fixes(fn, device, dtype):
    storage.check_fixed_model(fn, device, dtype, seed=1)


@pytest.mark.parametrize("fn,message", [
    (_leaky, "backward through fixed_model"),
    (_data_fix, "gradient of fixed_model"),
    (_hooks_fix, "gradient of fixed_model"),
    (_detach_fix, "cut off from autograd"),
    (_no_grad_fix, "cut off from autograd"),
])
def test_check_fixed_model_rejects_silent_and_loud_failures(fn, message):
    with pytest.raises(CheckFailed, match=message):
        storage.check_fixed_model(fn, "cpu", torch.float64, seed=0)
