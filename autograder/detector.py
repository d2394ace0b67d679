"""A tiny two-level YOLO-style detector, synthetic shape data, a loss and metrics.

Everything here is small enough to train on a laptop CPU in a few minutes
(``scripts/train_detector.py``) and to run inside the course's autograder.

Public API
----------
``TinyDetector(nc=3, anchors=ANCHORS, head_cls=LegacyDetect)``
    backbone (stride-8 and stride-16 outputs) + ``head`` (a ``LegacyDetect``).
    ``model.with_head(head_cls)`` / ``replace_head(model, head_cls)`` return a
    *new* model whose head is ``head_cls(nc, anchors, ch)`` with the old head's
    state dict and stride (e.g. the course's ``FixedDetect(LegacyDetect)``).
``make_dataset(n, seed, image_size=64)`` / ``synthetic_batch(...)``
    deterministic synthetic images + ground-truth boxes.
``yolo_loss(model, raw, targets)``
    YOLO-style training loss on the raw (training-mode) level outputs.
``load_pretrained(device='cpu')``
    the committed weights, in eval mode.
``detect(model, images, conf=0.5, iou=0.45)``
    per-image detections after NMS.
``evaluate(model, n=200, seed=EVAL_SEED)``
    precision / recall at IoU 0.5 and ``conf``, and mAP@0.5 on held-out data.
``best_objectness(model, images, use_class=False)``
    differentiable per-image max objectness, computed from the raw maps.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .i18n import N_
from .yolo import LegacyDetect

__all__ = [
    "CLASSES", "ANCHORS", "STRIDES", "IMAGE_SIZE", "EVAL_SEED", "WEIGHTS_PATH",
    "TinyDetector", "replace_head", "make_dataset", "synthetic_batch",
    "targets_to_flat", "yolo_loss", "load_pretrained", "detect", "evaluate",
    "best_objectness", "box_iou", "nms",
]

CLASSES = (N_("square"), N_("disc"), N_("triangle"))   # English names; a figure shows them translated
IMAGE_SIZE = 64
STRIDES = (8, 16)
# pixels, (w, h) pairs per level; objects are 9..26 px for 64x64 images
ANCHORS = ((9, 9, 12, 12, 15, 15), (18, 18, 22, 22, 27, 27))
# held-out evaluation seed: the training script never uses it
EVAL_SEED = 20_240_517
WEIGHTS_PATH = Path(__file__).resolve().parent / "weights" / "tiny_detector.pt"


# --------------------------------------------------------------------------- model
def _conv(c_in, c_out, stride):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.SiLU(),
    )


class TinyDetector(nn.Module):
    """Small conv backbone with stride-8 and stride-16 outputs + a YOLO head.

    Input: float images ``(bs, 3, H, W)`` in [0, 1] (H, W multiples of 16;
    trained at 64x64).  ``forward`` returns whatever the head returns: the list
    of raw level maps in training mode, ``(decoded, raw_list)`` in eval mode.

    Anchor convention (as in YOLOv5 release 5.0): ``head.anchors`` is stored in
    grid-cell units (pixels / stride), ``head.anchor_grid`` in pixels, and
    ``head.stride`` is ``tensor([8., 16.])``.
    """

    def __init__(self, nc: int = 3, anchors=ANCHORS, width=(16, 32, 48, 64), head_cls=LegacyDetect):
        super().__init__()
        c1, c2, c3, c4 = width
        self.stem = nn.Sequential(_conv(3, c1, 2), _conv(c1, c2, 2), _conv(c2, c2, 1))  # /4
        self.stage3 = nn.Sequential(_conv(c2, c3, 2), _conv(c3, c3, 1))  # /8
        self.stage4 = nn.Sequential(_conv(c3, c4, 2), _conv(c4, c4, 1))  # /16
        self.lateral = nn.Conv2d(c4, c3, 1)  # top-down context for the stride-8 level
        self.head_args = dict(nc=nc, anchors=tuple(tuple(a) for a in anchors), ch=(c3, c4))
        self.width = tuple(width)
        self.head = head_cls(**self.head_args)
        stride = torch.tensor([float(s) for s in STRIDES])
        self.head.stride = stride
        with torch.no_grad():
            self.head.anchors /= stride.view(-1, 1, 1)  # release-5.0 convention: grid units
        self._init_head_biases()

    def _init_head_biases(self):
        # YOLOv5-style prior: low objectness, uniform class probabilities
        with torch.no_grad():
            for conv, s in zip(self.head.m, STRIDES):
                b = conv.bias.view(self.head.na, -1)
                b[:, 4] += math.log(8 / (IMAGE_SIZE / s) ** 2)
                b[:, 5:] += math.log(0.6 / (self.head.nc - 0.99))

    @property
    def stride(self):
        return self.head.stride

    def features(self, x):
        """The two feature maps ``[P3 (stride 8), P4 (stride 16)]`` fed to the head."""
        p3 = self.stage3(self.stem(x))
        p4 = self.stage4(p3)
        p3 = p3 + F.interpolate(self.lateral(p4), size=p3.shape[-2:], mode="nearest")
        return [p3, p4]

    def forward(self, x):
        return self.head(self.features(x))

    def raw_outputs(self, x):
        """Raw level maps ``(bs, na, ny, nx, no)`` computed with the head's convs only.

        Does not call the head's ``forward`` (so no in-place decode, no mode
        dependence); works with any head that keeps ``m``, ``na`` and ``no``.
        """
        head = self.head
        out = []
        for conv, f in zip(head.m, self.features(x)):
            p = conv(f)
            bs, _, ny, nx = p.shape
            out.append(p.view(bs, head.na, head.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous())
        return out

    def with_head(self, head_cls):
        """Return a new model (deep copy) whose head is a ``head_cls`` instance.

        The new head is built with the same constructor arguments
        ``(nc, anchors, ch)``, loads the current head's state dict (strict) and
        gets a copy of its ``stride``; device, dtype and train/eval mode follow
        the current model.  ``self`` is left untouched.
        """
        new = copy.deepcopy(self)
        old_head = self.head
        head = head_cls(**self.head_args)
        ref = next(old_head.parameters())
        head.to(device=ref.device, dtype=ref.dtype)
        head.load_state_dict(old_head.state_dict())
        head.stride = None if old_head.stride is None else old_head.stride.clone()
        head.train(old_head.training)
        new.head = head
        return new


def replace_head(model: TinyDetector, head_cls) -> TinyDetector:
    """Functional spelling of :meth:`TinyDetector.with_head`."""
    return model.with_head(head_cls)


# --------------------------------------------------------------------------- data
def _sample_layout(gen, n, size, max_objects=3, tries=12):
    """Per image: 1..max_objects non-overlapping boxes (cls, cx, cy, w, h)."""
    scale = size / 64.0
    counts = torch.randint(1, max_objects + 1, (n,), generator=gen).tolist()
    cls = torch.randint(0, len(CLASSES), (n, tries), generator=gen)
    side = (9 + 17 * torch.rand(n, tries, generator=gen)) * scale
    aspect = torch.exp((torch.rand(n, tries, generator=gen) - 0.5) * 0.45)  # ~0.8 .. 1.25
    w = (side * aspect.sqrt()).clamp(max=28 * scale)
    h = (side / aspect.sqrt()).clamp(max=28 * scale)
    u = torch.rand(n, tries, 2, generator=gen)
    margin = 1.0
    cx = margin + w / 2 + u[..., 0] * (size - 2 * margin - w)
    cy = margin + h / 2 + u[..., 1] * (size - 2 * margin - h)
    cand = torch.stack((cls.float(), cx, cy, w, h), -1)  # (n, tries, 5)
    x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
    boxes = torch.stack((x1, y1, x2, y2), -1).tolist()
    cand_list = cand.tolist()
    layouts = []
    gap = 2.0
    for i in range(n):
        kept, kept_boxes = [], []
        for j in range(tries):
            if len(kept) == counts[i]:
                break
            b = boxes[i][j]
            if all(b[0] > k[2] + gap or b[2] < k[0] - gap or b[1] > k[3] + gap or b[3] < k[1] - gap
                   for k in kept_boxes):
                kept.append(cand_list[i][j])
                kept_boxes.append(b)
        layouts.append(torch.tensor(kept, dtype=torch.float32).view(-1, 5))
    return layouts


def _shape_masks(obj, size):
    """Boolean masks (m, size, size) for objects (m, 5) = (cls, cx, cy, w, h)."""
    c = torch.arange(size, dtype=torch.float32) + 0.5
    px = c.view(1, 1, size)
    py = c.view(1, size, 1)
    cls = obj[:, 0].long().view(-1, 1, 1)
    cx, cy, w, h = (obj[:, k].view(-1, 1, 1) for k in range(1, 5))
    dx, dy = px - cx, py - cy
    square = (dx.abs() <= w / 2) & (dy.abs() <= h / 2)
    disc = (dx / (w / 2)) ** 2 + (dy / (h / 2)) ** 2 <= 1.0
    top = cy - h / 2
    t = (py - top) / h  # 0 at the apex, 1 at the base
    triangle = (t >= 0) & (t <= 1) & (dx.abs() <= (w / 2) * t)
    return torch.where(cls == 0, square, torch.where(cls == 1, disc, triangle))


def synthetic_batch(n: int, seed: int = 0, image_size: int = IMAGE_SIZE, generator=None):
    """Generate ``n`` synthetic images with 1-3 bright shapes each.

    Returns ``(images, targets)``: ``images`` float32 ``(n, 3, S, S)`` in [0, 1]
    (shapes of random bright colours over dim textured noise), ``targets`` a
    list of ``n`` float tensors ``(k, 5)`` = ``(class, cx, cy, w, h)`` in
    pixels.  Classes: 0 square/rectangle, 1 disc/ellipse, 2 triangle.
    Deterministic given ``seed`` (or pass your own ``torch.Generator``).
    """
    gen = generator if generator is not None else torch.Generator().manual_seed(int(seed))
    S = int(image_size)
    # background: smooth low-frequency texture + fine noise, dim
    coarse = torch.rand(n, 3, max(S // 8, 2), max(S // 8, 2), generator=gen)
    bg = F.interpolate(coarse, size=(S, S), mode="bilinear", align_corners=False)
    level = 0.05 + 0.25 * torch.rand(n, 1, 1, 1, generator=gen)
    images = level + 0.3 * bg + 0.12 * torch.rand(n, 3, S, S, generator=gen)
    layouts = _sample_layout(gen, n, S)
    for slot in range(3):
        idx = [i for i, lay in enumerate(layouts) if lay.shape[0] > slot]
        if not idx:
            continue
        obj = torch.stack([layouts[i][slot] for i in idx])
        colour = 0.55 + 0.45 * torch.rand(len(idx), 3, generator=gen)
        colour[torch.arange(len(idx)), torch.randint(0, 3, (len(idx),), generator=gen)] = 1.0
        shade = colour.view(-1, 3, 1, 1) - 0.1 * torch.rand(len(idx), 1, S, S, generator=gen)
        mask = _shape_masks(obj, S).unsqueeze(1)
        ii = torch.tensor(idx)
        images[ii] = torch.where(mask, shade, images[ii])
    images = images.clamp_(0.0, 1.0)
    return images, layouts


def make_dataset(n: int, seed: int, image_size: int = IMAGE_SIZE):
    """Alias of :func:`synthetic_batch` (deterministic dataset of ``n`` images)."""
    return synthetic_batch(n, seed=seed, image_size=image_size)


def targets_to_flat(targets):
    """List of ``(k, 5)`` tensors -> ``(m, 6)`` = ``(image index, cls, cx, cy, w, h)``."""
    rows = [torch.cat((torch.full((t.shape[0], 1), float(i)), t), 1) for i, t in enumerate(targets)]
    return torch.cat(rows, 0) if rows else torch.zeros(0, 6)


# --------------------------------------------------------------------------- boxes
def xywh_to_xyxy(b):
    xy, wh = b[..., 0:2], b[..., 2:4]
    return torch.cat((xy - wh / 2, xy + wh / 2), -1)


def box_iou(a, b):
    """Pairwise IoU of xyxy boxes ``a`` (n, 4) and ``b`` (m, 4) -> (n, m)."""
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter + 1e-9)


def _giou_xywh(p, t, eps=1e-7):
    """Elementwise generalised IoU of boxes given as (cx, cy, w, h)."""
    p1, p2 = p[..., :2] - p[..., 2:4] / 2, p[..., :2] + p[..., 2:4] / 2
    t1, t2 = t[..., :2] - t[..., 2:4] / 2, t[..., :2] + t[..., 2:4] / 2
    inter = (torch.minimum(p2, t2) - torch.maximum(p1, t1)).clamp(min=0).prod(-1)
    union = p[..., 2:4].prod(-1) + t[..., 2:4].prod(-1) - inter + eps
    iou = inter / union
    hull = (torch.maximum(p2, t2) - torch.minimum(p1, t1)).prod(-1) + eps
    return iou - (hull - union) / hull


def nms(boxes, scores, iou_threshold=0.45):
    """Greedy NMS on xyxy ``boxes`` (n, 4); returns kept indices, best first."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][ious <= iou_threshold]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long)


# --------------------------------------------------------------------------- loss
def yolo_loss(model, raw, targets, anchor_t=4.0, weights=(1.0, 1.0, 0.5), balance=(4.0, 1.0)):
    """YOLOv5-style loss on raw level maps ``raw[i]`` ``(bs, na, ny, nx, no)``.

    ``targets``: list of ``(k, 5)`` tensors or flat ``(m, 6)``.  Each target is
    assigned, on every level, to the anchors whose width/height ratio to it is
    below ``anchor_t`` and to its own cell plus the two nearest neighbouring
    cells (the decode covers offsets in (-0.5, 1.5)).  Box loss: 1 - GIoU of the
    decoded box (same formulas as the head); objectness: BCE with target
    ``clamp(GIoU, 0)`` (detached) on assigned cells/anchors, 0 elsewhere, so
    badly placed boxes learn low confidence; classes: one-hot BCE.
    Returns ``(total, dict of parts)``; ``total`` is scaled by the batch size.
    """
    head = model.head
    if isinstance(targets, (list, tuple)):
        targets = targets_to_flat(targets)
    targets = targets.to(raw[0].device, raw[0].dtype)
    bs = raw[0].shape[0]
    lbox = raw[0].new_zeros(())
    lobj = raw[0].new_zeros(())
    lcls = raw[0].new_zeros(())
    nt = targets.shape[0]
    for i, p in enumerate(raw):
        _, na, ny, nx, no = p.shape
        stride = float(head.stride[i])
        anchors = head.anchor_grid[i].view(na, 2).to(p) / stride  # grid units
        tobj = torch.zeros(p.shape[:4], device=p.device, dtype=p.dtype)
        if nt:
            gxy = targets[:, 2:4] / stride
            gwh = targets[:, 4:6] / stride
            r = gwh[None, :, :] / anchors[:, None, :]  # (na, nt, 2)
            ok = torch.maximum(r, 1 / r).amax(-1) < anchor_t  # (na, nt)
            a_idx, t_idx = ok.nonzero(as_tuple=True)
            if a_idx.numel():
                g = gxy[t_idx]
                cell = g.floor()
                frac = g - cell
                # neighbour in x and in y: the closer side
                dx = torch.where(frac[:, 0] < 0.5, -1.0, 1.0)
                dy = torch.where(frac[:, 1] < 0.5, -1.0, 1.0)
                zero = torch.zeros_like(dx)
                offs = [torch.stack((zero, zero), 1), torch.stack((dx, zero), 1), torch.stack((zero, dy), 1)]
                cells = torch.cat([cell + o for o in offs], 0)
                a_all = a_idx.repeat(3)
                t_all = t_idx.repeat(3)
                g_all = g.repeat(3, 1)
                valid = (cells[:, 0] >= 0) & (cells[:, 0] < nx) & (cells[:, 1] >= 0) & (cells[:, 1] < ny)
                cells, a_all, t_all, g_all = cells[valid], a_all[valid], t_all[valid], g_all[valid]
                b = targets[t_all, 0].long()
                gi, gj = cells[:, 0].long(), cells[:, 1].long()
                ps = p[b, a_all, gj, gi]  # (k, no)
                pxy = ps[:, 0:2].sigmoid() * 2 - 0.5
                pwh = (ps[:, 2:4].sigmoid() * 2) ** 2 * anchors[a_all]
                tbox = torch.cat((g_all - cells, gwh[t_all]), 1)
                giou = _giou_xywh(torch.cat((pxy, pwh), 1), tbox)
                lbox = lbox + (1.0 - giou).mean()
                tobj[b, a_all, gj, gi] = giou.detach().clamp(min=0).to(tobj.dtype)
                tcls = torch.zeros_like(ps[:, 5:])
                tcls[torch.arange(tcls.shape[0]), targets[t_all, 1].long()] = 1.0
                lcls = lcls + F.binary_cross_entropy_with_logits(ps[:, 5:], tcls)
        lobj = lobj + balance[i] * F.binary_cross_entropy_with_logits(p[..., 4], tobj)
    wb, wo, wc = weights
    total = (wb * lbox + wo * lobj + wc * lcls) * bs
    return total, {"box": float(lbox.detach()), "obj": float(lobj.detach()), "cls": float(lcls.detach())}


# --------------------------------------------------------------------------- inference
def load_pretrained(device="cpu", path=None) -> TinyDetector:
    """Load the committed weights (``autograder/weights/tiny_detector.pt``), eval mode.

    The file holds ``{'state_dict', 'meta'}``; ``meta`` (seed, image size,
    epochs, metrics, torch version, width) is attached as ``model.meta``.
    """
    path = Path(path) if path is not None else WEIGHTS_PATH
    state, meta = _checkpoint(path)
    model = TinyDetector(nc=meta.get("nc", 3), anchors=meta.get("anchors", ANCHORS),
                         width=tuple(meta.get("width", (16, 32, 48, 64))))
    model.load_state_dict(state)   # copies the values: the model shares no tensor with the cache
    model.meta = copy.deepcopy(meta)
    return model.to(device).eval()


_CHECKPOINTS: dict = {}


def _checkpoint(path: Path) -> tuple[dict, dict]:
    """The weights file read once per process while it is unchanged (its size and modification time):
    the hidden checks load the detector once per case (about 40 ms each time from the file)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _CHECKPOINTS:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        state = {k: v.float() if v.is_floating_point() else v for k, v in ckpt["state_dict"].items()}
        _CHECKPOINTS.clear()
        _CHECKPOINTS[key] = (state, ckpt.get("meta", {}))
    return _CHECKPOINTS[key]


@torch.no_grad()
def _detect_tensor(model, images, conf=0.5, iou=0.45, max_det=100):
    was_training = model.training
    model.eval()
    try:
        pred = model(images)[0].float()
    finally:
        model.train(was_training)
    out = []
    for p in pred:
        cls_prob, cls = p[:, 5:].max(1)
        score = p[:, 4] * cls_prob
        keep = score > conf
        boxes, score, cls = xywh_to_xyxy(p[keep, :4]), score[keep], cls[keep]
        if boxes.shape[0]:
            # class-aware NMS: shift each class to its own region of the plane
            shift = cls.to(boxes).view(-1, 1) * (4.0 * images.shape[-1] + 4096.0)
            k = nms(boxes + shift, score, iou)[:max_det]
            boxes, score, cls = boxes[k], score[k], cls[k]
        out.append(torch.cat((boxes, score[:, None], cls[:, None].to(boxes)), 1))
    return out


def detect(model, images, conf=0.5, iou=0.45, max_det=100, as_tensor=False):
    """Detect objects in ``images`` ``(bs, 3, H, W)``.

    Score = objectness x best class probability; boxes with score > ``conf``
    go through class-aware greedy NMS at IoU ``iou``.  Returns one entry per
    image: a list of ``(box_xyxy (4,) tensor, score float, class int)`` tuples
    sorted by score, or with ``as_tensor=True`` a ``(k, 6)`` tensor
    ``(x1, y1, x2, y2, score, class)``.  Runs under ``no_grad`` in eval mode.
    """
    dev = next(model.parameters()).device
    dets = _detect_tensor(model, images.to(dev), conf, iou, max_det)
    if as_tensor:
        return dets
    return [[(d[:4].cpu(), float(d[4]), int(d[5])) for d in det] for det in dets]


def _average_precision(recall, precision):
    """All-point interpolated AP (area under the monotone precision envelope)."""
    r = torch.cat((torch.tensor([0.0]), recall, torch.tensor([1.0])))
    p = torch.cat((torch.tensor([1.0]), precision, torch.tensor([0.0])))
    p = torch.flip(torch.cummax(torch.flip(p, [0]), 0).values, [0])
    idx = torch.nonzero(r[1:] != r[:-1]).flatten()
    return float(((r[idx + 1] - r[idx]) * p[idx + 1]).sum())


def evaluate(model, n=200, seed=EVAL_SEED, conf=0.5, iou_match=0.5, nms_iou=0.45,
             batch_size=100, image_size=None):
    """Quality on a held-out synthetic set (``seed`` never used in training).

    Returns a dict: ``precision``, ``recall``, ``f1`` (detections with score >=
    ``conf`` matched greedily to same-class ground truth at IoU >= ``iou_match``),
    ``map50`` (mean over classes of all-point AP at IoU 0.5, computed from all
    detections with score > 0.001), ``ap50`` (per class), ``n_gt``, ``n_det``.
    """
    if image_size is None:
        image_size = getattr(model, "meta", {}).get("image_size", IMAGE_SIZE)
    images, targets = make_dataset(n, seed, image_size)
    dev = next(model.parameters()).device
    records = []  # (class, score, is_tp)
    n_gt = torch.zeros(model.head.nc)
    for s in range(0, n, batch_size):
        dets = _detect_tensor(model, images[s:s + batch_size].to(dev), 0.001, nms_iou)
        for det, tgt in zip(dets, targets[s:s + batch_size]):
            det = det.cpu()
            gt_boxes = xywh_to_xyxy(tgt[:, 1:5])
            gt_cls = tgt[:, 0].long()
            n_gt += torch.bincount(gt_cls, minlength=model.head.nc).float()
            used = torch.zeros(len(tgt), dtype=torch.bool)
            ious = box_iou(det[:, :4], gt_boxes) if len(tgt) and len(det) else None
            for k in range(det.shape[0]):  # det is sorted by score
                c = int(det[k, 5])
                tp = False
                if ious is not None:
                    cand = ious[k].clone()
                    cand[(gt_cls != c) | used] = -1
                    j = int(cand.argmax())
                    if cand[j] >= iou_match:
                        used[j] = True
                        tp = True
                records.append((c, float(det[k, 4]), tp))
    cls_r = torch.tensor([r[0] for r in records], dtype=torch.long)
    score_r = torch.tensor([r[1] for r in records])
    tp_r = torch.tensor([r[2] for r in records], dtype=torch.bool)
    sel = score_r >= conf
    n_tp = int(tp_r[sel].sum())
    n_det = int(sel.sum())
    total_gt = int(n_gt.sum())
    precision = n_tp / max(n_det, 1)
    recall = n_tp / max(total_gt, 1)
    aps = []
    for c in range(model.head.nc):
        if n_gt[c] == 0:
            continue
        m = cls_r == c
        order = score_r[m].argsort(descending=True)
        tps = tp_r[m][order].float()
        ctp = tps.cumsum(0)
        cfp = (1 - tps).cumsum(0)
        rec = ctp / n_gt[c]
        prec = ctp / (ctp + cfp).clamp(min=1)
        aps.append(_average_precision(rec, prec))
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / max(precision + recall, 1e-9),
        "map50": sum(aps) / max(len(aps), 1),
        "ap50": aps,
        "n_gt": total_gt,
        "n_det": n_det,
        "n_images": n,
        "seed": seed,
        "conf": conf,
    }


def best_objectness(model, images, use_class=False):
    """Per-image maximum objectness over all cells/anchors, shape ``(bs,)``.

    Computed out of place from the raw level maps (``model.raw_outputs``),
    never through the head's in-place decode, so it is differentiable w.r.t.
    ``images`` in train *and* eval mode and with any head.  With
    ``use_class=True`` the score is objectness x best class probability.
    """
    scores = []
    for p in model.raw_outputs(images):
        s = p[..., 4].sigmoid()
        if use_class:
            s = s * p[..., 5:].sigmoid().amax(-1)
        scores.append(s.flatten(1))
    return torch.cat(scores, 1).amax(1)
