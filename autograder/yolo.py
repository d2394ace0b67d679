"""A from-scratch re-implementation of the YOLOv5 (release 5.0) detection head, ``LegacyDetect``.

The course studies one specific bug: the release-5.0 ``Detect`` head decodes its
predictions by writing *in place* into the output of ``torch.sigmoid``.  Sigmoid
saves its output for the backward pass, so once the two in-place writes have
bumped that tensor's version counter from 0 to 2, any attempt to
back-propagate through the decoded output fails with::

    RuntimeError: one of the variables needed for gradient computation has been
    modified by an inplace operation: [...], which is output 0 of Sigmoid,
    is at version 2; expected version 0 instead. ...

(Depending on the PyTorch version the node is spelled ``Sigmoid`` or, as in the
course's seed error, ``SigmoidBackward0``.)

How :class:`LegacyDetect` relates to release 5.0's ``Detect`` (``models/yolo.py``)
-------------------------------------------------------------------------------
It is written from scratch for the course (no code is copied). What is the same:

* class attributes ``stride = None`` and ``export = False``; the constructor's arguments
  ``(nc=80, anchors=(), ch=())``; attributes ``nc``, ``no = nc + 5``, ``nl``, ``na`` and ``grid``
  (a list of ``nl`` one-element placeholders); buffers ``anchors`` ``(nl, na, 2)`` and
  ``anchor_grid`` ``(nl, 1, na, 1, 1, 2)``; one 1x1 ``Conv2d`` per level in ``m``.  So the
  state-dict keys and shapes are 5.0's, and state dicts load either way with ``strict=True``.
* in ``forward``, every step that computes something, in 5.0's order: the conv, the
  ``view``/``permute``/``contiguous`` to ``(bs, na, ny, nx, no)``, ``y = x[i].sigmoid()``, the xy
  slice write ``(y*2 - 0.5 + grid) * stride`` and then the wh slice write ``(y*2)**2 * anchor_grid``
  (the same constants), ``z.append(y.view(bs, -1, no))``, and the return value: the list ``x`` in
  training mode, ``(torch.cat(z, 1), x)`` in eval mode.  Hence the same decoded values and the same
  version-counter error at backward (``output 0 of Sigmoid``, version 2, expected 0).
* no dtype casts, as in 5.0: in a float16 head the grid is float32, so the xy expression is computed
  in float32 and the slice write casts it back into ``y``'s dtype.
* no ``inplace`` switch: 5.0 has none (a later release added ``Detect(..., inplace=True)``).

What differs (none of it touches the decode):

1. ``export``.  5.0 runs ``self.training |= self.export``, so one forward with ``export = True``
   leaves the module in training mode for good.  Here a local ``raw_only = self.training or
   self.export`` decides what to return; ``self.training`` is never changed.
2. Grid rebuild.  5.0 rebuilds ``grid[i]`` when its ``(ny, nx)`` differs from the level's.  Here it
   is also rebuilt when it lives on another device than the level's output (5.0 checks the size
   only), so a head moved to another device after a forward keeps working.
3. Grid construction.  5.0's ``_make_grid`` uses ``torch.meshgrid`` then ``.float()``; here
   :func:`make_grid` uses ``arange``/``expand``/``stack``.  The result is the same: float32, on
   the CPU, shape ``(1, 1, ny, nx, 2)``, last dimension ``(x, y)``.
4. Spelling only: ``super().__init__()``, docstrings and comments; and the module-level
   :func:`legacy_decode` (one level's decode with the same two writes, for the course's tests),
   which 5.0 does not have.

Module-level helpers
--------------------
``make_grid(nx, ny, device=None, dtype=None)``
    The (1, 1, ny, nx, 2) cell-offset grid, last dimension ordered (x, y),
    i.e. ``grid[0, 0, row, col] == (col, row)``.
``legacy_decode(p, grid, anchor_grid_level, stride_level)``
    The head's decode on one level, *with* the two in-place writes (the
    reference behaviour the course's tests compare student decodes against;
    its values are right, call it under ``torch.no_grad()`` to read them).

Anchor conventions
------------------
``anchor_grid`` is always in **pixels** (it is what the decode multiplies by).
In release 5.0 the model builder afterwards divides the ``anchors`` buffer by
the per-level stride (so ``anchors`` ends up in grid-cell units) and leaves
``anchor_grid`` alone.  :class:`LegacyDetect` itself never rescales anything;
whoever owns the head (e.g. :class:`autograder.detector.TinyDetector`) sets
``stride`` and chooses the convention for ``anchors`` (the tiny detector follows
release 5.0: ``anchors`` in grid units, ``anchor_grid`` in pixels).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["LegacyDetect", "make_grid", "legacy_decode"]


def make_grid(nx: int = 20, ny: int = 20, device=None, dtype=None) -> torch.Tensor:
    """Return the cell-offset grid of shape ``(1, 1, ny, nx, 2)``.

    The last dimension is ``(x, y)`` = ``(column index, row index)``.  The
    default dtype is float32 (as in release 5.0), whatever the input dtype.
    """
    if dtype is None:
        dtype = torch.float32
    rows = torch.arange(ny, device=device, dtype=dtype)
    cols = torch.arange(nx, device=device, dtype=dtype)
    # row index varies along dim 0, column index along dim 1
    yy = rows.view(ny, 1).expand(ny, nx)
    xx = cols.view(1, nx).expand(ny, nx)
    return torch.stack((xx, yy), dim=-1).view(1, 1, ny, nx, 2).contiguous()


def legacy_decode(p: torch.Tensor, grid: torch.Tensor, anchor_grid_level: torch.Tensor,
                  stride_level) -> torch.Tensor:
    """Decode one level exactly like the release-5.0 head (in place on a sigmoid).

    ``p``: raw level output ``(bs, na, ny, nx, no)``; ``grid``: ``(1, 1, ny, nx, 2)``;
    ``anchor_grid_level``: ``(1, na, 1, 1, 2)`` in pixels; ``stride_level``: number
    or 0-dim tensor.  Returns ``y`` (same shape as ``p``).  If ``p`` requires
    grad, back-propagating through ``y`` raises the in-place RuntimeError.
    """
    y = p.sigmoid()
    y[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + grid) * stride_level  # in-place write #1: xy
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid_level  # in-place write #2: wh
    return y


class LegacyDetect(nn.Module):
    """YOLOv5 release-5.0 ``Detect`` head, with its in-place decode.

    Parameters
    ----------
    nc : number of classes; each anchor predicts ``no = nc + 5`` numbers
        ``(x, y, w, h, objectness, class scores...)``.
    anchors : one sequence per level, ``(w0, h0, w1, h1, ...)`` in pixels.
    ch : input channels of each level's feature map.

    Attributes / buffers: ``nc``, ``no``, ``nl``, ``na``, ``grid`` (list of
    per-level grids, rebuilt lazily), buffer ``anchors`` ``(nl, na, 2)``, buffer
    ``anchor_grid`` ``(nl, 1, na, 1, 1, 2)`` (pixels), ``m`` (one 1x1 conv per
    level) and ``stride`` (``None`` until the owner sets a tensor of per-level
    strides).
    """

    stride = None  # set by the owning model: tensor of per-level strides
    export = False  # release-5.0 switch: when True the head returns raw maps only

    def __init__(self, nc=80, anchors=(), ch=()):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        self.grid = [torch.zeros(1)] * self.nl
        a = torch.tensor(anchors).float().view(self.nl, -1, 2)
        self.register_buffer("anchors", a)  # (nl, na, 2)
        self.register_buffer("anchor_grid", a.clone().view(self.nl, 1, -1, 1, 1, 2))  # (nl,1,na,1,1,2)
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in ch)

    def forward(self, x):
        """Run the head on ``x``, a list of ``nl`` feature maps ``(bs, ch[i], ny, nx)``.

        Like the original, this **overwrites the entries of the list it is
        given**: afterwards ``x[i]`` is the level-``i`` raw prediction of shape
        ``(bs, na, ny, nx, no)`` (pass ``list(feats)`` to keep your own list).

        Training mode (or ``export``): returns that list.  Eval mode: returns
        ``(decoded, x)`` with ``decoded`` of shape ``(bs, sum(na*ny*nx), no)``
        holding ``(cx, cy, w, h)`` in pixels, then sigmoid objectness and class
        scores.  The eval-mode decode writes in place into a sigmoid output,
        so back-propagating through ``decoded`` raises the version-counter
        RuntimeError (this is the behaviour the course is about).
        """
        z = []
        raw_only = self.training or self.export
        for i in range(self.nl):
            x[i] = self.m[i](x[i])  # 1x1 conv
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not raw_only:
                g = self.grid[i]
                if g.shape[2:4] != x[i].shape[2:4] or g.device != x[i].device:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                y = x[i].sigmoid()
                # IN-PLACE #1 (xy): overwrites part of sigmoid's saved output -> version 1
                y[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + self.grid[i]) * self.stride[i]
                # IN-PLACE #2 (wh): second write into the same tensor -> version 2
                y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
                z.append(y.view(bs, -1, self.no))
        return x if raw_only else (torch.cat(z, 1), x)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        """Release-5.0 spelling of :func:`make_grid` (float32, CPU)."""
        return make_grid(nx, ny)
