"""Assignment 1 (the version counter): what its notebook and lessons use.

The box decode's constants (:func:`decode_constants`) and the version program the students predict
(:data:`VERSION_PROGRAM`). Reference answers and hidden checks are not here: they live on the
instructor side (``instructor/hidden/a01_version_counter/``), never installed for students.
"""
from __future__ import annotations

import torch

from .i18n import N_

__all__ = ["VERSION_PROGRAM", "version_program_text", "measure_version_program", "wrong_steps", "decode_constants"]

# --------------------------------------------------------------------------- the version program

#: (statement, tensor whose ``_version`` is reported after it). Shown in the notebook; the visible
#: test and the hidden check run it to get the truth. It mixes the cases the notebook measures before
#: the task: a statement that runs two in-place ops (``a[1] += 1``: ``add_`` on a view, then ``copy_``),
#: a view sharing the counter, ``.data`` (own counter) against ``.detach()`` (shared), an op that
#: changes only the shape (``unsqueeze_``), one that changes only a flag (``requires_grad_``), a new
#: object, and chained methods.
VERSION_PROGRAM = [
    ("a = torch.zeros(6)", "a"),
    ("a += 1", "a"),
    ("a[0] = 7.0", "a"),
    ("a[1] += 1", "a"),
    ("v = a[2:5]", "v"),
    ("v.mul_(3)", "a"),
    ("a.data.add_(1)", "a"),
    ("a.detach().zero_()", "a"),
    ("a.unsqueeze_(0)", "a"),
    ("a.requires_grad_()", "a"),
    ("a = a * 1", "a"),
    ("a.sigmoid_().add_(1)", "a"),
]


def version_program_text() -> str:
    width = max(len(s) for s, _ in VERSION_PROGRAM)
    return "\n".join(f"{s:<{width}}   # line {i}: {w}._version ?" for i, (s, w) in enumerate(VERSION_PROGRAM, 1))


def measure_version_program() -> list[tuple[int, bool]]:
    """Run :data:`VERSION_PROGRAM` here: per line, (the watched tensor's ``_version``, whether it counts on
    from the line before: the same tensor, or a view of it or its base, sharing one counter). A line that
    watches a new object (``a = a * 1``) starts a count of its own."""
    env: dict = {"torch": torch}
    out, before = [], None
    for statement, watched in VERSION_PROGRAM:
        exec(statement, env)  # noqa: S102 - the course's own fixed program
        t = eval(watched, env)  # noqa: S307
        base = lambda x: x._base if x._base is not None else x  # noqa: E731
        out.append((int(t._version), before is not None and base(t) is base(before)))
        before = t
    return out


def wrong_steps(predicted, measured) -> list[str]:
    """Where predictions go wrong, step by step: one line per *step* that moves the counter by another
    amount than the program does, so one wrong line does not make every later line look wrong too."""
    wrong = []
    for n, (mine, (real, counts_on)) in enumerate(zip(predicted, measured), 1):
        if n > 1 and counts_on:
            step, real_step = mine - predicted[n - 2], real - measured[n - 2][0]
            if step != real_step:
                wrong.append(N_(f"line {n}: you predict {step:+d} (to {mine}); it moves the counter {real_step:+d}"))
        elif mine != real:
            wrong.append(N_(f"line {n}: you predict {mine}; it is {real}"))   # translated where it is shown
    return wrong


# --------------------------------------------------------------------------- the box decode

_ANCHORS = [(10.0, 13.0), (16.0, 30.0), (33.0, 23.0), (30.0, 61.0)]


def decode_constants(ny: int, nx: int, na: int = 3, stride: float = 8.0, device="cpu",
                     dtype=torch.float32):
    """``grid`` (1, 1, ny, nx, 2) of (column, row) offsets, ``anchor_grid`` (1, na, 1, 1, 2) in
    pixels, and the stride (a float), in ``dtype`` on ``device``."""
    rows, cols = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
    grid = torch.stack((cols, rows), -1).view(1, 1, ny, nx, 2).to(device, dtype)
    anchor_grid = torch.tensor(_ANCHORS[:na]).view(1, na, 1, 1, 2).to(device, dtype)
    return grid, anchor_grid, float(stride)
