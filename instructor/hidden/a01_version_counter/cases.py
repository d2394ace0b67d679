"""Assignment 1's inputs: messages written in the installed PyTorch's wording (for
``read_error_message``), and the decodes ``judge_fix`` is tested on — right in several styles, wrong in
every silent way, failing in several loud ones, and a family of the decode's own mutants."""
from __future__ import annotations

import torch

from ..mutation import apply
from .mutants import DECODE_MUTANTS, DECODE_SOURCE
from .references import match_version_error, provoke


def _template() -> tuple[str, str, str]:
    """(text before the type, text after "instead.", the "which is output" part's wording) of the
    installed PyTorch's message, measured on a live error."""
    err, _ = provoke({"saved": "output", "op": "sigmoid", "shape": [2], "dtype": "float32",
                      "device": "cpu", "writes": 1})
    text = str(err)
    head = text[: text.index("[")]
    tail = text[text.index(" instead.") + len(" instead."):]
    return head, tail, ", which is output 0 of {node},"


def synth_message(tensor_type: str, shape, node: str | None, now: int, saved: int, hint: bool = True) -> str:
    """The message PyTorch prints, with other fields (types and devices this machine cannot make)."""
    head, tail, which = _template()
    dims = ", ".join(str(int(d)) for d in shape)
    text = (f"{head}[{tensor_type} [{dims}]]{which.format(node=node) if node else ''} is at version {now}; "
            f"expected version {saved} instead.")
    return text + (tail if hint else "")


def second_output_error() -> RuntimeError:
    """A live version-counter error whose saved tensor is output 1 of its node (eigh's eigenvectors)."""
    x = (torch.rand(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) + 0.5).requires_grad_()
    values, vectors = torch.linalg.eigh(x @ x.T)
    with torch.no_grad():
        vectors.mul_(1.0)
    try:
        (values.sum() + vectors.sum()).backward()
    except RuntimeError as err:
        assert (match_version_error(err) or {}).get("node"), str(err)
        return err
    raise AssertionError("backward did not fail: the experiment is broken")


# The decodes the fix-judging question is tested on: (name, what it does, source). Right in several
# styles, wrong in every silent way, and failing in several loud ones. Each outcome holds for any
# random input and upstream gradient (tests/test_hidden_a01.py checks that over seeds).
_BROKEN_ON = '''
def broken_decode_on(y, grid, anchor_grid, stride):
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
'''
_BROKEN = '''
def broken_decode(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
'''
_CAT = '''
def fix_cat(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], dim=-1)
'''
DECODES: list[tuple[str, str, str]] = [
    # --- the notebook's broken_decode and fake_fix_hooks (both in the visible test), and a clone fix
    ("broken_decode", "the notebook's broken_decode (writes into the sigmoid's output)", _BROKEN),
    ("fix_clone", "writes into a clone of the sigmoid's output", _BROKEN_ON + '''
def fix_clone(p, grid, anchor_grid, stride):
    return broken_decode_on(p.sigmoid().clone(), grid, anchor_grid, stride)
'''),
    ("fake_fix_hooks", "the notebook's fake_fix_hooks", _BROKEN + '''
def fake_fix_hooks(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    # --- right, in several styles
    ("fix_cat", "pieces joined with torch.cat", _CAT),
    ("fix_where", "columns chosen with torch.where", '''
def fix_where(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    col = torch.arange(s.shape[-1], device=s.device)
    pad = s.shape[-1] - 2
    g = torch.nn.functional.pad(grid, (0, pad))
    a = torch.nn.functional.pad(anchor_grid, (2, pad - 2))
    centre = (s * 2 - 0.5 + g) * stride
    size = (s * 2) ** 2 * a
    return torch.where(col < 2, centre, torch.where(col < 4, size, s))
'''),
    ("fix_split", "torch.split, then torch.cat", '''
def fix_split(p, grid, anchor_grid, stride):
    xy, wh, rest = p.sigmoid().split([2, 2, p.shape[-1] - 4], dim=-1)
    return torch.cat(((xy * 2 - 0.5 + grid) * stride, (wh * 2) ** 2 * anchor_grid, rest), -1)
'''),
    ("fix_sigmoid_per_piece", "a sigmoid per piece, joined with torch.cat", '''
def fix_sigmoid_per_piece(p, grid, anchor_grid, stride):
    centre = (torch.sigmoid(p[..., :2]) * 2 - 0.5 + grid) * stride
    size = (torch.sigmoid(p[..., 2:4]) * 2).pow(2) * anchor_grid
    return torch.cat([centre, size, torch.sigmoid(p[..., 4:])], -1)
'''),
    ("fix_fresh_tensor", "writes into a new empty tensor", '''
def fix_fresh_tensor(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    y = torch.empty_like(s)
    y[..., :2] = (s[..., :2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (s[..., 2:4] * 2) ** 2 * anchor_grid
    y[..., 4:] = s[..., 4:]
    return y
'''),
    ("fix_times_one", "writes into sigmoid(p) * 1.0 (a new tensor nobody saved)", _BROKEN_ON + '''
def fix_times_one(p, grid, anchor_grid, stride):
    return broken_decode_on(p.sigmoid() * 1.0, grid, anchor_grid, stride)
'''),
    ("fix_masks", "arithmetic with column masks", '''
def fix_masks(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    n = s.shape[-1]
    col = torch.arange(n, device=s.device, dtype=s.dtype)
    is_c, is_s = (col < 2).to(s.dtype), ((col >= 2) & (col < 4)).to(s.dtype)
    g = torch.cat([grid, torch.zeros(grid.shape[:-1] + (n - 2,), dtype=s.dtype)], -1)
    a = torch.cat([torch.zeros(anchor_grid.shape[:-1] + (2,), dtype=s.dtype), anchor_grid,
                   torch.zeros(anchor_grid.shape[:-1] + (n - 4,), dtype=s.dtype)], -1)
    return is_c * (s * 2 - 0.5 + g) * stride + is_s * (s * 2) ** 2 * a + (1 - is_c - is_s) * s
'''),
    ("fix_cloning_hooks", "saved_tensors_hooks whose pack hook clones", _BROKEN + '''
def fix_cloning_hooks(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    # --- loud: an exception, in forward or in backward
    ("inplace_sigmoid_", "sigmoid_ on a clone, then the writes", _BROKEN_ON + '''
def inplace_sigmoid_(p, grid, anchor_grid, stride):
    return broken_decode_on(p.clone().sigmoid_(), grid, anchor_grid, stride)
'''),
    ("no_grad_writes", "the writes under torch.no_grad()", _BROKEN_ON + '''
def no_grad_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    with torch.no_grad():
        broken_decode_on(y, grid, anchor_grid, stride)
    return y
'''),
    ("detach_writes", "writes into y.detach()", '''
def detach_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    d = y.detach()
    d[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    d[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
'''),
    ("clone_at_the_end", "the in-place decode, cloned before returning", _BROKEN + '''
def clone_at_the_end(p, grid, anchor_grid, stride):
    return broken_decode(p, grid, anchor_grid, stride).clone()
'''),
    ("allow_mutation_forward_only", "allow_mutation_on_saved_tensors around the forward only", _BROKEN + '''
def allow_mutation_forward_only(p, grid, anchor_grid, stride):
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    ("sigmoid_on_the_leaf", "p.sigmoid_() on the leaf itself", _BROKEN_ON + '''
def sigmoid_on_the_leaf(p, grid, anchor_grid, stride):
    return broken_decode_on(p.sigmoid_(), grid, anchor_grid, stride)
'''),
    ("drops_columns", "returns only the four box columns", '''
def drops_columns(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid], -1)
'''),
    ("raises_value_error", "raises ValueError", '''
def raises_value_error(p, grid, anchor_grid, stride):
    raise ValueError("this decode does not support that shape")
'''),
    # --- no gradient
    ("no_grad_everything", "the whole decode under torch.no_grad()", _BROKEN + '''
def no_grad_everything(p, grid, anchor_grid, stride):
    with torch.no_grad():
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    ("detached_result", "a right decode, detached", _CAT + '''
def detached_result(p, grid, anchor_grid, stride):
    return fix_cat(p, grid, anchor_grid, stride).detach()
'''),
    ("from_p_data", "decodes p.data", _CAT + '''
def from_p_data(p, grid, anchor_grid, stride):
    return fix_cat(p.data, grid, anchor_grid, stride)
'''),
    ("new_leaf", "a right decode of p.detach(), made a new leaf with requires_grad_()", _CAT + '''
def new_leaf(p, grid, anchor_grid, stride):
    return fix_cat(p.detach(), grid, anchor_grid, stride).requires_grad_()
'''),
    # --- silently wrong gradient
    ("data_writes", "writes through .data", _BROKEN_ON + '''
def data_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    broken_decode_on(y.data, grid, anchor_grid, stride)
    return y
'''),
    ("data_writes_into_clone", "a clone, written through .data", _BROKEN_ON + '''
def data_writes_into_clone(p, grid, anchor_grid, stride):
    y = p.sigmoid().clone()
    broken_decode_on(y.data, grid, anchor_grid, stride)
    return y
'''),
    ("detach_before_maths", "centre and size from a detached sigmoid", '''
def detach_before_maths(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    d = s.detach()
    return torch.cat([(d[..., 0:2] * 2 - 0.5 + grid) * stride, (d[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
'''),
    ("no_grad_pieces", "centre and size under torch.no_grad()", '''
def no_grad_pieces(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    with torch.no_grad():
        centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
        size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], -1)
'''),
    ("detached_scores", "right boxes, objectness and classes detached", '''
def detached_scores(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:].detach()], -1)
'''),
    ("grad_hook", "a gradient hook on the sigmoid that halves its gradient", _CAT + '''
def grad_hook(p, grid, anchor_grid, stride):
    q = p * 1.0
    q.register_hook(lambda g: g * 0.5)
    return fix_cat(q, grid, anchor_grid, stride)
'''),
    ("stride_twice", "the centre multiplied by the stride twice", '''
def stride_twice(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
'''),
    ("custom_function_wrong_backward", "a custom autograd.Function whose backward forgets the sigmoid", '''
class _Decode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, grid, anchor_grid, stride):
        s = p.sigmoid()
        ctx.save_for_backward(s, anchor_grid)
        ctx.stride = stride
        return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                          s[..., 4:]], -1)

    @staticmethod
    def backward(ctx, g):
        s, a = ctx.saved_tensors
        dp = torch.cat([g[..., 0:2] * 2 * ctx.stride, g[..., 2:4] * 8 * s[..., 2:4] * a, g[..., 4:]], -1)
        return dp, None, None, None

def custom_function_wrong_backward(p, grid, anchor_grid, stride):
    return _Decode.apply(p, grid, anchor_grid, stride)
'''),
]

#: The decode mutants judge_fix is also tested on: each outcome holds whatever the random input,
#: upstream weights and style of reference (no value-only mistakes: their gradient is right).
DECODE_FAMILY = (
    "the centre not doubled", "no stride", "the stride squared", "the size cubed", "squared before doubling",
    "no anchors", "off by one: the classes from column 5", "the objectness column only",
    "raw logits for the scores", "the whole sigmoid detached", "the sigmoid of p.data", "the scores detached",
    "the scores through .data", "the centre from a detached sigmoid", "the size under torch.no_grad()",
    "the centre's x and y swapped", "size before centre", "the sigmoid in half precision",
    "writes into the sigmoid after all", "the sigmoid in place on p",
    "the sigmoid by its formula", "4 s^2", ".square()", "2 (s - 0.25)", "the scores cloned",
)


def decode_family() -> list[tuple[str, str, str]]:
    by_name = {m.name: m for m in DECODE_MUTANTS}
    return [("fixed_sigmoid_decode", f"a classmate's fixed_sigmoid_decode: {name}",
             apply(DECODE_SOURCE, by_name[name])) for name in DECODE_FAMILY]


DECODES += decode_family()
