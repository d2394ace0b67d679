"""Tests for autograder.yolo: the release-5.0 Detect head re-implementation."""

import re

import pytest
import torch

from autograder.yolo import LegacyDetect, legacy_decode, make_grid
from instructor.hidden.a03_yolo_head import reference_decode  # the answer: instructor side only

ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
CH = (8, 16, 32)
STRIDE = torch.tensor([8.0, 16.0, 32.0])

INPLACE_ERROR = re.compile(
    r"modified by an inplace operation.*output 0 of Sigmoid(Backward0)?, "
    r"is at version 2; expected version 0",
    re.S,
)


def make_head(nc=80, anchors=ANCHORS, ch=CH):
    torch.manual_seed(0)
    head = LegacyDetect(nc, anchors, ch)
    head.stride = STRIDE[: len(anchors)].clone()
    return head


def feature_maps(bs=2, sizes=((8, 12), (4, 6), (2, 3)), ch=CH, **kw):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(bs, c, ny, nx, generator=g, **kw) for c, (ny, nx) in zip(ch, sizes)]


def test_attributes_and_buffers():
    head = LegacyDetect(80, ANCHORS, CH)
    assert (head.nc, head.no, head.nl, head.na) == (80, 85, 3, 3)
    assert head.stride is None
    assert len(head.grid) == 3 and all(g.shape == (1,) for g in head.grid)
    assert head.anchors.shape == (3, 3, 2) and head.anchors.dtype == torch.float32
    assert head.anchor_grid.shape == (3, 1, 3, 1, 1, 2)
    assert torch.equal(head.anchors[1, 2], torch.tensor([59.0, 119.0]))
    assert torch.equal(head.anchor_grid.view(3, 3, 2), head.anchors)
    assert [tuple(m.weight.shape) for m in head.m] == [(255, c, 1, 1) for c in CH]


def test_state_dict_from_original_layout_loads_strict():
    nc, na = 5, 3
    no = nc + 5
    original = {
        "anchors": torch.rand(3, na, 2),
        "anchor_grid": torch.rand(3, 1, na, 1, 1, 2),
    }
    for i, c in enumerate(CH):
        original[f"m.{i}.weight"] = torch.randn(no * na, c, 1, 1)
        original[f"m.{i}.bias"] = torch.randn(no * na)
    head = LegacyDetect(nc, ANCHORS, CH)
    assert set(head.state_dict()) == set(original)
    assert {k: v.shape for k, v in head.state_dict().items()} == {k: v.shape for k, v in original.items()}
    head.load_state_dict(original, strict=True)
    assert torch.equal(head.anchor_grid, original["anchor_grid"])
    assert torch.equal(head.m[2].bias, original["m.2.bias"])


def test_grid_is_x_then_y():
    g = make_grid(5, 3)
    assert g.shape == (1, 1, 3, 5, 2) and g.dtype == torch.float32
    for row in range(3):
        for col in range(5):
            assert g[0, 0, row, col].tolist() == [col, row]
    assert torch.equal(LegacyDetect._make_grid(5, 3), g)
    assert make_grid(2, 2, dtype=torch.float64).dtype == torch.float64


def test_training_mode_returns_raw_list():
    head = make_head(nc=3).train()
    x = feature_maps()
    out = head(x)
    assert out is x
    assert [tuple(t.shape) for t in out] == [(2, 3, 8, 12, 8), (2, 3, 4, 6, 8), (2, 3, 2, 3, 8)]


def test_forward_overwrites_callers_list():
    head = make_head(nc=3).eval()
    x = feature_maps()
    originals = list(x)
    with torch.no_grad():
        _, raw = head(x)
    assert raw is x
    for before, after in zip(originals, x):
        assert after is not before
        assert after.dim() == 5


def test_eval_output_shape_and_values():
    head = make_head(nc=3).eval()
    sizes = ((8, 12), (4, 6), (2, 3))
    with torch.no_grad():
        out, raw = head(feature_maps(sizes=sizes))
    n = sum(3 * ny * nx for ny, nx in sizes)
    assert out.shape == (2, n, 8)
    assert [tuple(g.shape) for g in head.grid] == [(1, 1, ny, nx, 2) for ny, nx in sizes]
    expected = torch.cat([
        reference_decode(raw[i], head.grid[i], head.anchor_grid[i], head.stride[i]).view(2, -1, 8)
        for i in range(3)
    ], 1)
    torch.testing.assert_close(out, expected)
    # a decoded centre lies within (-0.5, 1.5) cells of its own cell
    y = out[:, : 3 * 8 * 12].view(2, 3, 8, 12, 8)
    off = y[..., 0:2] / 8.0 - make_grid(12, 8)
    assert bool(((off > -0.5) & (off < 1.5)).all())


def test_grid_rebuilt_when_map_size_changes():
    head = make_head(nc=1, anchors=ANCHORS[:1], ch=CH[:1]).eval()
    with torch.no_grad():
        head([torch.randn(1, 8, 4, 4)])
        assert head.grid[0].shape == (1, 1, 4, 4, 2)
        out, _ = head([torch.randn(1, 8, 6, 10)])
    assert head.grid[0].shape == (1, 1, 6, 10, 2)
    assert out.shape == (1, 3 * 60, 6)


def test_eval_backward_raises_version_counter_error():
    head = make_head(nc=3).eval()
    x = feature_maps()
    x[0].requires_grad_(True)
    inp = x[0]
    out, _ = head(x)
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):
        torch.autograd.grad(out[..., 4].sum(), inp)


def test_legacy_decode_backward_raises():
    p = torch.randn(1, 3, 2, 2, 7, requires_grad=True)
    y = legacy_decode(p, make_grid(2, 2), torch.rand(1, 3, 1, 1, 2), 8.0)
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):
        y.sum().backward()


def test_training_mode_backward_is_fine():
    head = make_head(nc=3).train()
    x = feature_maps()
    x[0].requires_grad_(True)
    inp = x[0]
    out = head(x)
    (g,) = torch.autograd.grad(out[0][..., 4].sum(), inp)
    assert torch.isfinite(g).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("nc", [1, 3, 80])
@pytest.mark.parametrize("ny,nx", [(3, 5), (7, 2)])
def test_reference_decode_matches_legacy(dtype, nc, ny, nx):
    g = torch.Generator().manual_seed(nc * 100 + ny * 10 + nx)
    p = torch.randn(2, 3, ny, nx, nc + 5, generator=g, dtype=dtype) * 3
    grid = make_grid(nx, ny)
    anchor = torch.rand(1, 3, 1, 1, 2, generator=g) * 50 + 5
    stride = torch.tensor(16.0)
    ref = reference_decode(p, grid, anchor, stride)
    leg = legacy_decode(p, grid, anchor, stride)
    assert ref.dtype == dtype and ref.shape == p.shape
    torch.testing.assert_close(ref, leg, rtol=0, atol=0)


def test_reference_decode_keeps_half_dtype():
    p = (torch.randn(1, 3, 4, 5, 8) * 2).half()
    grid = make_grid(5, 4)  # float32, like the head's grid
    anchor = torch.rand(1, 3, 1, 1, 2) * 30 + 5  # float32
    ref = reference_decode(p, grid, anchor, torch.tensor(8.0))
    leg = legacy_decode(p, grid, anchor, torch.tensor(8.0))
    assert ref.dtype == torch.float16
    torch.testing.assert_close(ref, leg)


def test_reference_decode_gradcheck():
    g = torch.Generator().manual_seed(3)
    p = torch.randn(1, 2, 3, 4, 7, generator=g, dtype=torch.float64, requires_grad=True)
    grid = make_grid(4, 3, dtype=torch.float64)
    anchor = torch.rand(1, 2, 1, 1, 2, generator=g, dtype=torch.float64) * 20 + 4
    assert torch.autograd.gradcheck(lambda t: reference_decode(t, grid, anchor, 8.0), (p,))


def test_half_precision_head_matches_float():
    head = make_head(nc=3).eval()
    x = feature_maps()
    with torch.no_grad():
        ref, _ = head([t.clone() for t in x])
        half = make_head(nc=3).half().eval()
        out, raw = half([t.half() for t in x])
    assert out.dtype == torch.float16 and raw[0].dtype == torch.float16
    assert half.grid[0].device == raw[0].device
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=0.1)
