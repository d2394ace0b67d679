"""autograder.attack: every correct decode style passes every check; each wrong style fails the
check that names its mistake (and only the ones it should); the attack check enforces budget,
range and effect."""
from __future__ import annotations

import pytest
import torch

from autograder import attack as A
from autograder.checks import CheckFailed
from autograder.yolo import LegacyDetect, legacy_decode

CPU = [(torch.device("cpu"), torch.float64), (torch.device("cpu"), torch.float32)]


# ----------------------------------------------------------------------------- decode styles

def cat_style(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    xy = ((s[..., 0:2] * 2 - 0.5 + grid) * stride).to(p.dtype)
    wh = ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype)
    return torch.cat((xy, wh, s[..., 4:]), -1)


def split_cat(p, grid, anchor_grid, stride):
    xy, wh, rest = p.sigmoid().split((2, 2, p.shape[-1] - 4), -1)
    return torch.cat((((xy * 2 - 0.5 + grid) * stride).to(p.dtype),
                      ((wh * 2) ** 2 * anchor_grid).to(p.dtype), rest), -1)


def clone_write(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    z = y.clone()
    z[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    z[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return z


def where_style(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    col = torch.arange(p.shape[-1], device=p.device)
    xy = torch.cat(((s[..., 0:2] * 2 - 0.5 + grid) * stride, s[..., 2:]), -1).to(p.dtype)
    wh = torch.cat((s[..., 0:2], (s[..., 2:4] * 2) ** 2 * anchor_grid, s[..., 4:]), -1).to(p.dtype)
    return torch.where(col < 2, xy, torch.where(col < 4, wh, s))


def still_inplace(p, grid, anchor_grid, stride):
    return legacy_decode(p, grid, anchor_grid, stride)


def missing_half(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat((((s[..., 0:2] * 2 + grid) * stride).to(p.dtype),
                      ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype), s[..., 4:]), -1)


def no_square(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat((((s[..., 0:2] * 2 - 0.5 + grid) * stride).to(p.dtype),
                      (s[..., 2:4] * 2 * anchor_grid).to(p.dtype), s[..., 4:]), -1)


def dropped_classes(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat((((s[..., 0:2] * 2 - 0.5 + grid) * stride).to(p.dtype),
                      ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype), s[..., 4:5]), -1)


def no_cast(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat(((s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid, s[..., 4:]), -1)


CORRECT = [cat_style, split_cat, clone_write, where_style]
CHECKS = {
    "matches": lambda d: A.check_decode_matches_legacy(d, CPU),
    "contract": lambda d: A.check_decode_contract(d, "cpu"),
    "gradients": lambda d: A.check_decode_gradients(d, CPU),
    "no_inplace": lambda d: A.check_decode_no_inplace(d, CPU),
}
# which checks each wrong style must fail (the others must pass)
WRONG = {
    "still_inplace": (still_inplace, {"gradients", "no_inplace"}),
    "no_grad": (A.SILENT_FIXES["torch.no_grad()"], {"gradients"}),
    "detach": (A.SILENT_FIXES[".detach()"], {"gradients"}),
    "data": (A.SILENT_FIXES[".data writes"], {"gradients"}),
    "hooks": (A.SILENT_FIXES["identity saved-tensor hooks"], {"gradients"}),
    "missing_half": (missing_half, {"matches"}),
    "no_square": (no_square, {"matches", "gradients"}),
    "dropped_classes": (dropped_classes, {"matches", "contract", "gradients"}),
    "no_cast": (no_cast, {"contract"}),
}


def _outcome(check, decode):
    try:
        check(decode)
        return None
    except CheckFailed as err:
        return str(err)


@pytest.mark.parametrize("decode", CORRECT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_correct_styles_pass_every_decode_check(decode, check):
    assert _outcome(CHECKS[check], decode) is None


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_style_fails_exactly_its_checks(name):
    decode, must_fail = WRONG[name]
    failed = {c for c in CHECKS if _outcome(CHECKS[c], decode) is not None}
    assert failed == must_fail, f"{name}: failed {sorted(failed)}, expected {sorted(must_fail)}"


@pytest.mark.parametrize("name, words", [
    ("missing_half", "- 0.5"), ("no_square", "squares"), ("dropped_classes", "every class score"),
    ("no_cast", ".to(p.dtype)"), ("hooks", "hidden from autograd"), ("data", "hidden from autograd"),
    ("no_grad", "no torch.no_grad()"), ("still_inplace", "written in place")])
def test_failure_messages_name_the_mistake(name, words):
    decode, must_fail = WRONG[name]
    messages = " ".join(_outcome(CHECKS[c], decode) or "" for c in must_fail)
    assert words in messages


def test_inplace_report_names_the_writing_lines():
    msg = _outcome(CHECKS["no_inplace"], still_inplace)
    assert "yolo.py" in msg and "copy_" in msg and "0 → 1" in msg and "1 → 2" in msg


def test_decode_contract_float16_result_stays_float16():
    p, grid, ag, stride = A.decode_case(1, 3, 2, 3, 1, 8.0, dtype=torch.float16)
    assert cat_style(p, grid, ag, stride).dtype == torch.float16
    assert no_cast(p, grid, ag, stride).dtype == torch.float32  # the promotion the contract catches


def test_tensor_made_on_the_cpu_is_named_when_p_is_elsewhere():
    """A GPU is not needed to see the hint: meta tensors mix with CPU ones just as badly."""
    def cpu_half(p, grid, anchor_grid, stride):
        s = p.sigmoid()
        half = torch.full(s[..., 0:2].shape, 0.5)  # made on the CPU whatever p's device
        xy = (s[..., 0:2] * 2 - half + grid) * stride
        return torch.cat((xy.to(p.dtype), ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype), s[..., 4:]), -1)
    p, grid, ag, stride = A.decode_case(1, 3, 2, 3, 1, 8.0, device="meta")
    with pytest.raises(CheckFailed, match="decode mixes devices(.|\n)*device=p.device"):
        A._call_decode(cpu_half, p, grid, ag, stride)
    assert A.check_decode_matches_legacy(cpu_half, CPU) is None  # on the CPU alone it cannot be seen


def test_silent_fix_table_matches_the_notebook_story():
    rows = {r["fix"]: r for r in A.compare_silent_fixes()}
    assert rows["torch.no_grad()"]["obj_grad"] == "none" and rows[".detach()"]["box_grad"] == "none"
    for name in (".data writes", "identity saved-tensor hooks"):
        assert rows[name]["obj_grad"] == "right" and rows[name]["box_grad"] == "WRONG" and not rows[name]["error"]


# ----------------------------------------------------------------------------- heads

class FixedCat(LegacyDetect):
    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not (self.training or self.export):
                if self.grid[i].shape[2:4] != x[i].shape[2:4] or self.grid[i].device != x[i].device:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                z.append(cat_style(x[i], self.grid[i], self.anchor_grid[i], self.stride[i]).view(bs, -1, self.no))
        return x if (self.training or self.export) else (torch.cat(z, 1), x)


class FixedHooks(FixedCat):
    def forward(self, x):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return LegacyDetect.forward(self, x)


class FixedExtraParam(FixedCat):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scale = torch.nn.Parameter(torch.ones(1))


def test_fixed_detect_check_accepts_a_correct_head():
    A.check_fixed_detect(FixedCat, CPU)
    A.check_fixed_detect(A.ReferenceFixedDetect, CPU)


@pytest.mark.parametrize("head, words", [(LegacyDetect, "backward"), (FixedHooks, "gradient"),
                                         (FixedExtraParam, "state dict"), (torch.nn.Module, "LegacyDetect")])
def test_fixed_detect_check_rejects_wrong_heads(head, words):
    with pytest.raises(CheckFailed, match=words):
        A.check_fixed_detect(head, CPU)


# ----------------------------------------------------------------------------- attack

def good_attack(model, image, eps, steps):
    return A.pgd_attack(model, image, eps, steps)


def test_attack_check_accepts_pgd_and_reports_a_drop():
    before, after = A.check_attack(good_attack, "cpu")
    assert float((before - after).mean()) >= A.ATTACK_MARGIN


@pytest.mark.parametrize("bad, words", [
    (lambda m, x, eps, steps: torch.zeros_like(x), "does not lower"),
    (lambda m, x, eps, steps: A.pgd_attack(m, x, 4 * eps, steps), "budget"),
    (lambda m, x, eps, steps: torch.full_like(x, eps), "leaves [0, 1]"),
    (lambda m, x, eps, steps: x + A.pgd_attack(m, x, eps, steps), "budget"),
])
def test_attack_check_rejects_bad_attacks(bad, words):
    with pytest.raises(CheckFailed, match=words.replace("[", r"\[").replace("]", r"\]")):
        A.check_attack(bad, "cpu")


def test_show_attack_draws_three_panels():
    import matplotlib
    matplotlib.use("Agg")
    from autograder.detector import synthetic_batch
    model = A.attack_model()
    x, _ = synthetic_batch(1, seed=3)
    fig = A.show_attack(model, x, A.pgd_attack(model, x, A.ATTACK_EPS, 2), eps=A.ATTACK_EPS)
    assert len(fig.axes) == 3


def test_vanish_attack_removes_most_detections_within_budget():
    from autograder.attack import attack_model, vanish_attack
    from autograder.detector import synthetic_batch

    torch.set_num_threads(1)
    model = attack_model("cpu")
    images, _ = synthetic_batch(6, seed=4242)  # images no notebook uses
    eps = 32 / 255
    delta, history = vanish_attack(model, images, eps=eps, steps=40, progress=False)
    assert float(delta.abs().max()) <= eps + 1e-6
    adv = images + delta
    assert float(adv.min()) >= -1e-6 and float(adv.max()) <= 1 + 1e-6
    assert len(history) == 41 and history[0] >= 6
    assert history[-1] <= history[0] // 2, f"detections {history[0]} -> {history[-1]}: the attack should remove most"
