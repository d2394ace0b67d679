"""Tests for autograder.detector: data, committed weights, detection, metrics."""

import pytest
import torch

from autograder.detector import (
    CLASSES, EVAL_SEED, WEIGHTS_PATH, TinyDetector, best_objectness, box_iou, detect, evaluate,
    load_pretrained, make_dataset, nms, replace_head, yolo_loss,
)
from autograder.yolo import LegacyDetect
from instructor.hidden.a03_yolo_head import ReferenceFixedDetect

# Measured with the committed weights (scripts/train_detector.py, seed 0):
# 500 held-out images: precision 0.974, recall 0.999, mAP@0.5 0.999;
# the 100 images used here: precision 0.980, recall 1.000, mAP@0.5 1.000.
# The thresholds leave a wide margin so that CI is stable across platforms.
MIN_RECALL = 0.85
MIN_PRECISION = 0.75
MIN_MAP50 = 0.85


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return load_pretrained()


# What a student's fix looks like: the same head, decoded out of place (the course's reference).
FixedDetect = ReferenceFixedDetect


def test_weights_file_small_and_loads(model):
    assert WEIGHTS_PATH.is_file()
    assert WEIGHTS_PATH.stat().st_size < 2 * 1024 * 1024
    assert not model.training
    assert isinstance(model.head, LegacyDetect)
    assert model.head.nc == len(CLASSES) == 3
    assert model.head.stride.tolist() == [8.0, 16.0]
    # release-5.0 convention: anchors in grid units, anchor_grid in pixels
    torch.testing.assert_close(model.head.anchors * model.head.stride.view(-1, 1, 1),
                               model.head.anchor_grid.view(2, -1, 2))
    for key in ("seed", "image_size", "epochs", "eval", "torch_version"):
        assert key in model.meta
    assert set(model.head.state_dict()) == {"anchors", "anchor_grid", "m.0.weight", "m.0.bias",
                                             "m.1.weight", "m.1.bias"}


def test_eval_forward_shapes(model):
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        out, raw = model(x)
    assert out.shape == (2, 3 * (8 * 8 + 4 * 4), 8)
    assert [tuple(r.shape) for r in raw] == [(2, 3, 8, 8, 8), (2, 3, 4, 4, 8)]


def test_heldout_quality(model):
    m = evaluate(model, n=100, seed=EVAL_SEED)
    assert m["n_gt"] > 150
    assert m["recall"] >= MIN_RECALL, m
    assert m["precision"] >= MIN_PRECISION, m
    assert m["map50"] >= MIN_MAP50, m


def test_detect_returns_sane_boxes(model):
    images, targets = make_dataset(8, seed=EVAL_SEED + 1)
    dets = detect(model, images, conf=0.5, iou=0.45)
    assert len(dets) == 8
    matched = total = 0
    for det, tgt in zip(dets, targets):
        scores = [s for _, s, _ in det]
        assert scores == sorted(scores, reverse=True)
        for box, score, cls in det:
            assert box.shape == (4,)
            x1, y1, x2, y2 = box.tolist()
            assert -8 <= x1 < x2 <= 72 and -8 <= y1 < y2 <= 72
            assert 0.5 < score <= 1.0
            assert cls in range(3)
        gt = torch.cat((tgt[:, 1:3] - tgt[:, 3:5] / 2, tgt[:, 1:3] + tgt[:, 3:5] / 2), 1)
        if det:
            ious = box_iou(gt, torch.stack([b for b, _, _ in det]))
            matched += int((ious.amax(1) >= 0.5).sum())
        total += len(tgt)
    assert matched >= 0.8 * total
    as_tensor = detect(model, images, as_tensor=True)
    assert all(t.shape[1] == 6 for t in as_tensor)


def test_nms_suppresses_overlaps():
    boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30.]])
    keep = nms(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.45)
    assert keep.tolist() == [0, 2]


def test_best_objectness_is_differentiable(model):
    images, _ = make_dataset(4, seed=EVAL_SEED + 2)
    images.requires_grad_(True)
    score = best_objectness(model, images)
    assert score.shape == (4,)
    assert bool(((score > 0) & (score < 1)).all())
    assert float(score.detach().min()) > 0.5  # every image has an object
    (grad,) = torch.autograd.grad(score.sum(), images)
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    assert not model.training
    # the same objective through the legacy eval-mode head is what breaks
    x = images.detach().clone().requires_grad_(True)
    out, _ = model(x)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 0"):
        torch.autograd.grad(out[..., 4].amax(1).sum(), x)
    # with the class probability too
    s2 = best_objectness(model, images, use_class=True)
    assert bool((s2 <= score + 1e-6).all())


def test_swap_head_keeps_weights_and_fixes_backward(model):
    fixed = model.with_head(FixedDetect)
    assert isinstance(fixed.head, FixedDetect) and type(model.head) is LegacyDetect
    assert fixed is not model and not fixed.training
    assert torch.equal(fixed.head.stride, model.head.stride)
    for k, v in model.state_dict().items():
        assert torch.equal(fixed.state_dict()[k], v)
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        ref, _ = model(x)
    x.requires_grad_(True)
    out, _ = fixed(x)
    torch.testing.assert_close(out, ref)
    (g,) = torch.autograd.grad(out[..., 4].amax(1).sum(), x)
    assert torch.isfinite(g).all() and g.abs().sum() > 0
    assert isinstance(replace_head(model, FixedDetect).head, FixedDetect)


def test_dataset_is_deterministic():
    a_img, a_tgt = make_dataset(16, seed=123)
    b_img, b_tgt = make_dataset(16, seed=123)
    c_img, _ = make_dataset(16, seed=124)
    assert torch.equal(a_img, b_img)
    assert all(torch.equal(s, t) for s, t in zip(a_tgt, b_tgt))
    assert not torch.equal(a_img, c_img)
    assert a_img.shape == (16, 3, 64, 64) and a_img.dtype == torch.float32
    assert float(a_img.min()) >= 0 and float(a_img.max()) <= 1
    for t in a_tgt:
        assert 1 <= len(t) <= 3 and t.shape[1] == 5
        assert set(t[:, 0].tolist()) <= {0.0, 1.0, 2.0}
        x1, y1 = t[:, 1] - t[:, 3] / 2, t[:, 2] - t[:, 4] / 2
        x2, y2 = t[:, 1] + t[:, 3] / 2, t[:, 2] + t[:, 4] / 2
        assert bool((x1 >= 0).all() and (y1 >= 0).all() and (x2 <= 64).all() and (y2 <= 64).all())
    img96, tgt96 = make_dataset(2, seed=5, image_size=96)
    assert img96.shape == (2, 3, 96, 96)


def test_loss_backward_on_fresh_model():
    torch.manual_seed(0)
    net = TinyDetector().train()
    images, targets = make_dataset(4, seed=7)
    loss, parts = yolo_loss(net, net(images), targets)
    loss.backward()
    assert torch.isfinite(loss) and set(parts) == {"box", "obj", "cls"}
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)


def test_load_pretrained_reads_the_file_once_and_hands_out_independent_models(tmp_path, monkeypatch):
    """The weights are read once per process while the file is unchanged (the hidden checks load the
    detector once per case); every model is its own: changing one changes neither the next nor the cache,
    and a rewritten file (``make train``) is read again."""
    import shutil

    import torch

    from autograder import detector

    path = tmp_path / "w.pt"
    shutil.copy2(detector.WEIGHTS_PATH, path)
    reads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: reads.append(a[0]) or real_load(*a, **k))
    a, b = load_pretrained(path=path), load_pretrained(path=path)
    assert len(reads) == 1, "the unchanged file was read again"
    with torch.no_grad():
        for p in a.parameters():
            p.add_(1.0)
    a.meta["changed"] = True
    c = load_pretrained(path=path)
    assert all(torch.equal(x, y) for x, y in zip(b.parameters(), c.parameters())), "a model shared tensors with the cache"
    assert "changed" not in c.meta
    ckpt = real_load(path, weights_only=True)
    ckpt["state_dict"] = {k: v + 1 if v.is_floating_point() else v for k, v in ckpt["state_dict"].items()}
    torch.save(ckpt, path)
    os_stat = path.stat()
    import os
    os.utime(path, ns=(os_stat.st_atime_ns, os_stat.st_mtime_ns + 10**9))
    d = load_pretrained(path=path)
    assert len(reads) == 2, "a rewritten weights file was not read again"
    assert all(torch.allclose(x + 1, y) for x, y in zip(c.parameters(), d.parameters()))
