"""Assignment 3 (``03_yolo_head``): the detector to attack, and the figures.

Course code for the notebook's lessons, not answers: the checks of ``decode``, ``FixedDetect``
and ``attack`` (and their references) live on the instructor's side.

``attack_model(device)``
    the pretrained detector, frozen, in eval mode, with :class:`ObjectnessHead`: its decoded
    output is differentiable in the scores (objectness, classes), which is all an attack on the
    detector's confidence needs. Its box columns are the legacy decode's values, cut from the
    graph: it is *not* a fix of the head (the box gradients are missing).
``EveryBoxObjective(model, threshold)``
    wraps a detector for an attack function written against "column 4 of the decoded output":
    that column becomes the summed objectness of every confident cell, so the same attack makes
    every box vanish instead of lowering the best one.
``attack_effect(model, images, delta)``
    best objectness before / after, and detection counts.
Plots: :func:`draw_detections`, :func:`show_attack`, :func:`show_vanish`.
"""
from __future__ import annotations

import torch
from torch import nn

from .yolo import LegacyDetect, legacy_decode
from .i18n import _
from .runtime import grading

__all__ = ["ObjectnessHead", "attack_model", "EveryBoxObjective", "attack_effect",
           "draw_detections", "show_attack", "show_vanish"]


# --------------------------------------------------------------------------- the model to attack

class ObjectnessHead(LegacyDetect):
    """LegacyDetect whose eval-mode scores are differentiable; the boxes are detached.

    Columns 4 onwards (objectness, class scores) are ``sigmoid`` of the raw maps, computed out of
    place; columns 0:4 are the legacy decode's values, computed under ``no_grad``. Backward through
    the objectness works, the boxes get no gradient at all.
    """

    def forward(self, x):
        z = []
        raw_only = self.training or self.export
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not raw_only:
                if self.grid[i].shape[2:4] != x[i].shape[2:4] or self.grid[i].device != x[i].device:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                with torch.no_grad():
                    boxes = legacy_decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i])[..., :4]
                scores = x[i][..., 4:].sigmoid()
                z.append(torch.cat((boxes.to(scores.dtype), scores), -1).view(bs, -1, self.no))
        return x if raw_only else (torch.cat(z, 1), x)


def attack_model(device="cpu"):
    """The pretrained detector with :class:`ObjectnessHead`, frozen, in eval mode."""
    from .detector import load_pretrained

    model = load_pretrained(device).with_head(ObjectnessHead).eval()
    for prm in model.parameters():
        prm.requires_grad_(False)
    return model


class EveryBoxObjective(nn.Module):
    """A stand-in detector whose "objectness" is the sum over every confident cell.

    ``EveryBoxObjective(model)(images)`` returns ``(out, raw)`` like a detector in eval mode, but
    ``out`` has shape ``(1, 1, no)``: column 4 holds the sum, over all images, cells and anchors,
    of the objectness above ``threshold`` (a cell below it adds nothing); the other columns are 0.
    An attack that lowers the best "objectness" of ``out`` therefore lowers every confident cell at
    once. Each call also records the number of detections (conf 0.5) of its input in ``history``.
    """

    def __init__(self, model, threshold=0.25):
        super().__init__()
        self.model, self.threshold = model, float(threshold)
        self.history: list[int] = []

    def detections(self, images) -> int:
        from .detector import detect

        with torch.no_grad():
            return sum(len(d) for d in detect(self.model, images.detach()))

    def forward(self, images):
        self.history.append(self.detections(images))
        raw = self.model.raw_outputs(images)
        obj = torch.cat([level[..., 4].flatten(1) for level in raw], 1).sigmoid()
        total = (obj * (obj > self.threshold)).sum()
        no = raw[0].shape[-1]
        out = torch.cat((total.new_zeros(4), total.view(1), total.new_zeros(no - 5))).view(1, 1, no)
        return out, raw


@torch.no_grad()
def attack_effect(model, images, delta):
    """(best objectness before, after) per image, plus detection counts (conf 0.5)."""
    from .detector import best_objectness, detect

    before, after = best_objectness(model, images), best_objectness(model, images + delta)
    n_before = [len(d) for d in detect(model, images)]
    n_after = [len(d) for d in detect(model, images + delta)]
    return before, after, n_before, n_after


# --------------------------------------------------------------------------- plots

def draw_detections(ax, image, dets, title="", classes=None):
    """Show ``image`` (3, H, W) with ``dets`` (list of (box_xyxy, score, cls)) on a matplotlib axis."""
    from matplotlib.patches import Rectangle

    from .detector import CLASSES

    classes = classes or CLASSES
    colours = ("tab:red", "tab:cyan", "tab:olive")
    ax.imshow(image.detach().cpu().permute(1, 2, 0).clamp(0, 1).numpy(), interpolation="nearest")
    for box, score, c in dets:
        x1, y1, x2, y2 = (float(v) for v in box)
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, lw=1.5, ec=colours[c % 3]))
        ax.text(x1, y1 - 1, f"{_(classes[c])} {score:.2f}", color=colours[c % 3], fontsize=7,
                bbox=dict(fc="white", alpha=0.6, pad=0.5, lw=0))
    ax.set_title(title, fontsize=9)
    ax.axis("off")


def show_attack(model, image, delta, eps=None, conf=0.5):
    """Figure: detections before, after, and the perturbation (scaled to +-eps). Returns the figure
    (None, drawing nothing, while the grader runs the notebook: :func:`autograder.runtime.grading`)."""
    if grading():
        return None
    import matplotlib.pyplot as plt

    from .detector import best_objectness, detect

    image = image[:1]
    delta = delta[:1].to(image.device)
    eps = eps or float(delta.abs().max()) or 1.0
    with torch.no_grad():
        b, a = float(best_objectness(model, image)), float(best_objectness(model, image + delta))
    d0, d1 = detect(model, image, conf=conf)[0], detect(model, image + delta, conf=conf)[0]
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.3))
    draw_detections(axes[0], image[0], d0, _(f"before: best objectness {b:.3f}") + "\n" + _(f"{len(d0)} detection(s)"))
    draw_detections(axes[1], (image + delta)[0], d1, _(f"after: best objectness {a:.3f}") + "\n" + _(f"{len(d1)} detection(s)"))
    shown = (delta[0].detach().cpu() / (2 * eps) + 0.5).clamp(0, 1)
    axes[2].imshow(shown.permute(1, 2, 0).numpy(), interpolation="nearest")
    axes[2].set_title(_(f"perturbation (grey = 0, ±{eps * 255:.0f}/255)"), fontsize=9)
    axes[2].axis("off")
    fig.tight_layout()
    return fig


def show_vanish(model, images, delta, history, shown=4):
    """Figure: detections per image before/after for a few images, and detections left per step (None,
    drawing nothing, while the grader runs the notebook: :func:`autograder.runtime.grading`)."""
    if grading():
        return None
    import matplotlib.pyplot as plt

    from .detector import detect

    shown = min(shown, len(images))
    with torch.no_grad():
        before, after = detect(model, images), detect(model, images + delta)
    fig = plt.figure(figsize=(10, 4.6))
    grid = fig.add_gridspec(2, shown + 1, width_ratios=[1] * shown + [1.6])
    for i in range(shown):
        draw_detections(fig.add_subplot(grid[0, i]), images[i], before[i], _(f"before: {len(before[i])}"))
        draw_detections(fig.add_subplot(grid[1, i]), (images + delta)[i], after[i], _(f"after: {len(after[i])}"))
    ax = fig.add_subplot(grid[:, shown])
    total = max(history)
    ax.plot(range(len(history)), history, marker="o", ms=3)
    ax.set_xlabel(_("PGD step"))
    ax.set_ylabel(_(f"detections left in {len(images)} images"))
    ax.set_ylim(0, total + 1)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
