"""autograder.inplace: writes into memory autograd saved that PyTorch's version check cannot see (issue 38).

A write through ``.data`` (a tensor with a version counter of its own) or into a tensor that identity
saved-tensor hooks hand back to backward breaks no save and raises nothing; backward silently uses the new
values. The locator matches each write to the saves by the bytes of storage each covers and lists such saves
in ``InplaceLocator.hidden``; ``assert_no_write_on_saved`` fails them. ``assert_no_inplace_on_saved`` (the
version check only) is the control: it passes every one of them.
"""
from __future__ import annotations

import pytest
import torch

from autograder.inplace import (InplaceLocator, InplaceOnSavedError, _overlaps, assert_no_inplace_on_saved,
                                assert_no_write_on_saved)


def data_write(x):
    y = x.sigmoid()
    y.data[..., 0:2] = y[..., 0:2] * 2          # the saved output, written through .data
    return y


def identity_hooks(x):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.sigmoid()
        y[..., 0:2] = y[..., 0:2] * 2           # the version check is skipped for hooked saves
    return y


def detach_write(x):
    y = x.sigmoid()
    with torch.no_grad():
        y.detach()[..., 0:2] *= 2               # detach shares the version counter: a visible write
    return y


HIDDEN = {"data": data_write, "identity hooks": identity_hooks}


def leaf():
    return torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("name", list(HIDDEN))
def test_a_write_autograd_cannot_see_is_located_and_the_version_check_misses_it(name):
    fn = HIDDEN[name]
    assert_no_inplace_on_saved(fn, leaf())  # the control: the version check alone sees nothing
    with pytest.raises(InplaceOnSavedError, match="where autograd cannot see it") as err:
        assert_no_write_on_saved(fn, leaf())
    [saved] = err.value.saved
    assert saved.node == "SigmoidBackward0" and saved.message is None and len(saved.writes) == 1
    assert saved.writes[0].version_before == saved.writes[0].version_after  # the counter never moved
    assert "in data_write" in err.value.report or "in identity_hooks" in err.value.report
    with InplaceLocator() as loc:
        fn(leaf())
    assert [r.node for r in loc.hidden] == ["SigmoidBackward0"] and loc.broken == []


def test_the_gradient_of_such_a_write_is_silently_wrong():
    """Why it must fail: backward raises nothing and uses the new values."""
    x = leaf()
    (g,) = torch.autograd.grad(data_write(x).sum(), x)
    s = x.detach().sigmoid()
    assert not torch.allclose(g, s * (1 - s) * torch.ones_like(s))


def test_a_visible_write_is_reported_as_broken_not_as_hidden():
    with pytest.raises(InplaceOnSavedError, match="is at version|version 0") as err:
        assert_no_write_on_saved(detach_write, leaf())
    assert all(s.message is not None for s in err.value.saved)
    with InplaceLocator() as loc:
        detach_write(leaf())
    assert loc.hidden == [] and len(loc.broken) == 1


@pytest.mark.parametrize("name, fn", [
    ("a .data write into a clone", lambda x: (lambda y: (y.data.mul_(2), y)[1])(x.sigmoid().clone())),
    ("cloning saved-tensor hooks", lambda x: _cloning_hooks(x)),
    ("a .data write into columns no save covers", lambda x: _disjoint_columns(x)),
    ("out of place", lambda x: torch.cat((x.sigmoid()[..., :2] * 2, x.sigmoid()[..., 2:]), -1)),
])
def test_writes_that_reach_no_saved_byte_pass(name, fn):
    assert_no_write_on_saved(fn, leaf())


def _cloning_hooks(x):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = x.sigmoid()
        y[..., 0:2] = 0                          # backward uses the copy: the save's memory is untouched
    return y


def _disjoint_columns(x):
    buf = torch.zeros(2, 3, 5, dtype=x.dtype)
    z = buf[..., 0:2] * x[..., 0:2]              # mul saves buf's columns 0:2 (interleaved with the rest)
    buf.data[..., 2:4] = 1                       # the same storage, other columns: nothing saved is touched
    return z


def test_overlap_is_exact_for_interleaved_views():
    t = torch.zeros(4, 5)
    geometry = lambda v: (v.storage_offset(), tuple(v.shape), tuple(v.stride()), v.element_size())  # noqa: E731
    assert not _overlaps(geometry(t[:, 0:2]), geometry(t[:, 2:4]))  # spans meet, bytes do not
    assert _overlaps(geometry(t[:, 1:3]), geometry(t[:, 2:4]))
    assert not _overlaps(geometry(t[0:2]), geometry(t[2:4]))
    assert _overlaps(geometry(t), geometry(t.view(torch.int32)[3, 4:5]))  # another dtype, the last element
    assert not _overlaps(geometry(t[:0]), geometry(t))
