"""instructor.hidden.a03_yolo_head: every check, in process, on right and wrong answers (no nbgrader).

Each answer is code exec'd into a namespace, like a student's cells; ``run_in_process`` runs the
check's probe on that namespace and judges the results in this process.
"""
from __future__ import annotations

import textwrap

import pytest
import torch

from instructor.hidden import checks_for, probe_source, run_in_process

PRELUDE = """
import torch
from tqdm.auto import tqdm
from autograder.yolo import LegacyDetect, legacy_decode
"""

DECODES = {
    "cat_style": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            xy = (s[..., 0:2] * 2 - 0.5 + grid) * stride
            wh = (s[..., 2:4] * 2) ** 2 * anchor_grid
            return torch.cat((xy.to(p.dtype), wh.to(p.dtype), s[..., 4:]), dim=-1)
    """,
    "split_cat": """
        def decode(p, grid, anchor_grid, stride):
            xy, wh, conf = p.sigmoid().split((2, 2, p.shape[-1] - 4), dim=-1)
            return torch.cat((((xy * 2 - 0.5 + grid) * stride).to(p.dtype),
                              ((wh * 2) ** 2 * anchor_grid).to(p.dtype), conf), -1)
    """,
    "clone_write": """
        def decode(p, grid, anchor_grid, stride):
            y = p.sigmoid()
            out = y.clone()
            out[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
            out[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
            return out
    """,
    "torch_where": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            col = torch.arange(p.shape[-1], device=p.device)
            xy = torch.cat(((s[..., 0:2] * 2 - 0.5 + grid) * stride, s[..., 2:]), -1).to(p.dtype)
            wh = torch.cat((s[..., 0:2], (s[..., 2:4] * 2) ** 2 * anchor_grid, s[..., 4:]), -1).to(p.dtype)
            return torch.where(col < 2, xy, torch.where(col < 4, wh, s))
    """,
    "still_inplace": """
        def decode(p, grid, anchor_grid, stride):
            y = p.sigmoid()
            y[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + grid) * stride
            y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
            return y
    """,
    "no_grad": """
        def decode(p, grid, anchor_grid, stride):
            with torch.no_grad():
                return legacy_decode(p, grid, anchor_grid, stride)
    """,
    "detach": """
        def decode(p, grid, anchor_grid, stride):
            return legacy_decode(p.detach(), grid, anchor_grid, stride)
    """,
    "data": """
        def decode(p, grid, anchor_grid, stride):
            y = p.sigmoid()
            y.data[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + grid) * stride
            y.data[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
            return y
    """,
    "hooks": """
        def decode(p, grid, anchor_grid, stride):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                return legacy_decode(p, grid, anchor_grid, stride)
    """,
    "missing_half": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            return torch.cat((((s[..., 0:2] * 2 + grid) * stride).to(p.dtype),
                              ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype), s[..., 4:]), -1)
    """,
    "no_square": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            return torch.cat((((s[..., 0:2] * 2 - 0.5 + grid) * stride).to(p.dtype),
                              (s[..., 2:4] * 2 * anchor_grid).to(p.dtype), s[..., 4:]), -1)
    """,
    "dropped_classes": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            return torch.cat((((s[..., 0:2] * 2 - 0.5 + grid) * stride).to(p.dtype),
                              ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype), s[..., 4:5]), -1)
    """,
    "no_cast": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            return torch.cat(((s[..., 0:2] * 2 - 0.5 + grid) * stride,
                              (s[..., 2:4] * 2) ** 2 * anchor_grid, s[..., 4:]), -1)
    """,
    "modifies_p": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid_() if not p.requires_grad else p.sigmoid()
            return torch.cat((((s[..., 0:2] * 2 - 0.5 + grid) * stride).to(p.dtype),
                              ((s[..., 2:4] * 2) ** 2 * anchor_grid).to(p.dtype), s[..., 4:]), -1)
    """,
    "not_implemented": """
        def decode(p, grid, anchor_grid, stride):
            raise NotImplementedError("decode")
    """,
    # tensors made on the CPU: fine on a CPU-only machine, a device mismatch on a GPU (the meta cases)
    "cpu_offset": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            xy = (s[..., 0:2] * 2 - torch.full((1,), 0.5) + grid) * stride
            wh = (s[..., 2:4] * 2) ** 2 * anchor_grid
            return torch.cat((xy.to(p.dtype), wh.to(p.dtype), s[..., 4:]), dim=-1)
    """,
    "cpu_grid": """
        from autograder.yolo import make_grid
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            xy = (s[..., 0:2] * 2 - 0.5 + make_grid(p.shape[3], p.shape[2])) * stride
            wh = (s[..., 2:4] * 2) ** 2 * anchor_grid
            return torch.cat((xy.to(p.dtype), wh.to(p.dtype), s[..., 4:]), dim=-1)
    """,
    # correct: Python numbers, 0-dim CPU tensors and tensors made on p's device mix with any device
    "device_aware": """
        def decode(p, grid, anchor_grid, stride):
            s = p.sigmoid()
            out = torch.empty_like(p)
            two = p.new_tensor([2.0, 2.0])
            out[..., 0:2] = (s[..., 0:2] * two - torch.tensor(0.5) + grid) * float(stride)
            out[..., 2:4] = (s[..., 2:4] * two) ** 2 * anchor_grid * torch.as_tensor(1.0)
            out[..., 4:] = s[..., 4:]
            return out
    """,
}

FIXED_DETECT = """
class FixedDetect(LegacyDetect):
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
                z.append(decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i]).view(bs, -1, self.no))
        return x if raw_only else (torch.cat(z, 1), x)
"""

ATTACK = """
def attack(model, image, eps, steps):
    step = 2.5 * eps / steps
    delta = torch.zeros_like(image)
    for _ in tqdm(range(steps), leave=False):
        delta.requires_grad_(True)
        best = model(image + delta)[0][..., 4].amax()
        (grad,) = torch.autograd.grad(best, delta)
        delta = (delta.detach() - step * grad.sign()).clamp(-eps, eps)
        delta = (image + delta).clamp(0, 1) - image
    return delta.detach()
"""

DECODE_CHECKS = ("decode_matches_legacy_tests", "decode_contract_tests", "decode_gradients_tests",
                 "decode_no_inplace_on_saved_tests")
CORRECT = ("cat_style", "split_cat", "clone_write", "torch_where", "device_aware")
# wrong decodes: the decode checks each must fail (it must pass the others)
WRONG = {
    "still_inplace": {"decode_gradients_tests", "decode_no_inplace_on_saved_tests"},
    "no_grad": {"decode_gradients_tests"},
    "detach": {"decode_gradients_tests"},
    # writes autograd cannot see: the gradient is wrong, and the no-write test matches writes to saves by memory
    "data": {"decode_gradients_tests", "decode_no_inplace_on_saved_tests"},
    "hooks": {"decode_gradients_tests", "decode_no_inplace_on_saved_tests"},
    "missing_half": {"decode_matches_legacy_tests"},
    "no_square": {"decode_matches_legacy_tests", "decode_gradients_tests"},
    "dropped_classes": {"decode_matches_legacy_tests", "decode_contract_tests", "decode_gradients_tests"},
    "no_cast": {"decode_contract_tests"},
    "modifies_p": {"decode_contract_tests"},
    "not_implemented": set(DECODE_CHECKS),
    "cpu_offset": {"decode_contract_tests"},
    "cpu_grid": {"decode_contract_tests"},
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one thread is the fastest (and what the grader's sandbox uses)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def namespace(*parts: str) -> dict:
    ns: dict = {"__name__": "__main__"}
    for src in (PRELUDE, *parts):
        exec(compile(textwrap.dedent(src), "<cell>", "exec"), ns)
    return ns


def verdict(grade_id: str, ns: dict):
    return run_in_process(grade_id, ns, "03_yolo_head")


def test_one_check_per_graded_cell_and_probes_are_self_contained():
    checks = checks_for("03_yolo_head")
    assert [c.grade_id for c in checks] == [*DECODE_CHECKS, "fixed_detect_tests", "attack_tests"]
    for check in checks:
        src = probe_source(check)
        assert "instructor" not in src and "reference" not in src.lower().replace("references", "")
        compile(src, check.grade_id, "exec")
        assert "Input space" in check.__doc__
        assert "float16" in check.__doc__ or check.grade_id == "attack_tests"


def test_cases_are_deterministic_plain_data():
    for check in checks_for("03_yolo_head"):
        a, b = check.cases(), check.cases()
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            assert x.keys() == y.keys()
            for k in x:
                if isinstance(x[k], torch.Tensor):
                    assert torch.equal(x[k], y[k]) and x[k].device.type == "cpu"


@pytest.mark.parametrize("style", CORRECT)
def test_correct_decodes_pass_every_decode_check(style):
    ns = namespace(DECODES[style])
    for gid in DECODE_CHECKS:
        v = verdict(gid, ns)
        assert v.passed, f"{style} / {gid}: {v.message}"


@pytest.mark.parametrize("style", sorted(WRONG))
def test_each_wrong_decode_fails_exactly_its_checks(style):
    ns = namespace(DECODES[style])
    failed = {gid for gid in DECODE_CHECKS if not verdict(gid, ns).passed}
    assert failed == WRONG[style], f"{style}: failed {sorted(failed)}, expected {sorted(WRONG[style])}"


@pytest.mark.parametrize("style, gid, words", [
    ("missing_half", "decode_matches_legacy_tests", "- 0.5"),
    ("no_square", "decode_matches_legacy_tests", "squares"),
    ("dropped_classes", "decode_contract_tests", "every class score"),
    ("no_cast", "decode_contract_tests", ".to(p.dtype)"),
    ("hooks", "decode_gradients_tests", "hidden from autograd"),
    ("data", "decode_gradients_tests", "hidden from autograd"),
    ("no_grad", "decode_gradients_tests", "no torch.no_grad()"),
    ("still_inplace", "decode_gradients_tests", "written in place"),
    ("still_inplace", "decode_no_inplace_on_saved_tests", "copy_"),
    ("data", "decode_no_inplace_on_saved_tests", "where autograd cannot see it"),
    ("hooks", "decode_no_inplace_on_saved_tests", "where autograd cannot see it"),
    ("not_implemented", "decode_contract_tests", "not implemented yet"),
    ("cpu_offset", "decode_contract_tests", "creates a tensor on the CPU while its input is on another device"),
    ("cpu_grid", "decode_contract_tests", "on a GPU this fails"),
    ("cpu_grid", "decode_contract_tests", "meta"),
])
def test_failure_messages_name_the_mistake(style, gid, words):
    assert words in verdict(gid, namespace(DECODES[style])).message


def test_a_patched_locator_does_not_pass_an_inplace_decode():
    cheat = """
        import autograder.inplace as _inplace
        _inplace.assert_no_inplace_on_saved = lambda fn, *a, **k: fn(*a, **k)
        _inplace.assert_no_write_on_saved = lambda fn, *a, **k: fn(*a, **k)
    """
    import autograder.inplace

    originals = autograder.inplace.assert_no_inplace_on_saved, autograder.inplace.assert_no_write_on_saved
    ns = namespace(DECODES["still_inplace"], cheat)  # patches the module, in this process too
    try:
        v = verdict("decode_no_inplace_on_saved_tests", ns)
    finally:
        autograder.inplace.assert_no_inplace_on_saved, autograder.inplace.assert_no_write_on_saved = originals
    assert not v.passed and "in-place" in v.message


@pytest.mark.parametrize("style, line", [("data", "<cell>, line 4"), ("hooks", "yolo.py:105")])
def test_a_write_hidden_from_autograd_fails_the_no_write_test_and_passed_the_version_check(style, line, monkeypatch):
    """Issue 38: the section says the test fails any write into memory autograd saved; it used to ask PyTorch's
    version check only, which a write through .data (or into a tensor identity saved-tensor hooks hand back)
    never moves. Now the locator matches each write to the saves by storage bytes. The control: with the
    version-only assertion in its place, the same decode passes this test."""
    import autograder.inplace

    ns = namespace(DECODES[style])
    v = verdict("decode_no_inplace_on_saved_tests", ns)
    assert not v.passed and "where autograd cannot see it" in v.message and line in v.message, v.message
    monkeypatch.setattr(autograder.inplace, "assert_no_write_on_saved", autograder.inplace.assert_no_inplace_on_saved)
    assert verdict("decode_no_inplace_on_saved_tests", ns).passed


def test_tensor_made_on_the_cpu_is_named_when_p_is_elsewhere():
    from autograder.checks import CheckFailed
    from instructor.hidden import a03_yolo_head as H

    with pytest.raises(CheckFailed, match="decode mixes devices(.|\n)*device=p.device"):
        H._raised({"type": "RuntimeError", "message": "Expected all tensors to be on the same device, but "
                                                        "found at least two devices, cuda:0 and cpu!"}, "decode", "x")


HEADS = {
    "hooks": """
        class FixedDetect(LegacyDetect):
            def forward(self, x):
                with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    return LegacyDetect.forward(self, x)
    """,
    "extra_param": FIXED_DETECT + """
class FixedDetect(FixedDetect):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scale = torch.nn.Parameter(torch.ones(1))
    """,
    "not_legacy": "class FixedDetect(torch.nn.Module):\n    pass\n",
    "legacy": "FixedDetect = LegacyDetect\n",
    "stale_grid": FIXED_DETECT.replace(
        "if self.grid[i].shape[2:4] != x[i].shape[2:4] or self.grid[i].device != x[i].device:",
        "if self.grid[i].dim() == 1:"),
    "no_export": FIXED_DETECT.replace("self.training or self.export", "self.training"),
    "height_only": FIXED_DETECT.replace("self.grid[i].shape[2:4] != x[i].shape[2:4]",
                                        "self.grid[i].shape[2:3] != x[i].shape[2:3]"),
    "grid_on_cpu": FIXED_DETECT.replace("self._make_grid(nx, ny).to(x[i].device)", "self._make_grid(nx, ny)"),
    "no_device_check": FIXED_DETECT.replace(" or self.grid[i].device != x[i].device", ""),
    "objectness_head": "from autograder.attack import ObjectnessHead as FixedDetect\n",
}


def test_fixed_detect_accepts_a_correct_head():
    for style in ("cat_style", "no_cast", "clone_write"):
        v = verdict("fixed_detect_tests", namespace(DECODES[style], FIXED_DETECT))
        assert v.passed, f"{style}: {v.message}"


@pytest.mark.parametrize("head, words", [("hooks", "gradient"), ("extra_param", "state dict"),
                                         ("not_legacy", "LegacyDetect"), ("legacy", "backward"),
                                         ("stale_grid", "other sizes"), ("no_export", "export mode"),
                                         ("objectness_head", "gradient"), ("height_only", "sizes 4x3, 2x5"),
                                         ("grid_on_cpu", "creates a tensor on the CPU"),
                                         ("no_device_check", "moved with head.to(device)")])
def test_fixed_detect_rejects_wrong_heads(head, words):
    v = verdict("fixed_detect_tests", namespace(DECODES["cat_style"], HEADS[head]))
    assert not v.passed and words in v.message, v.message


def test_fixed_detect_on_meta_accepts_scalars_and_fails_a_cpu_made_decode():
    assert verdict("fixed_detect_tests", namespace(DECODES["device_aware"], FIXED_DETECT)).passed
    v = verdict("fixed_detect_tests", namespace(DECODES["cpu_offset"], FIXED_DETECT))
    assert not v.passed and "creates a tensor on the CPU" in v.message, v.message


def test_meta_cases_judge_only_device_mixing():
    """What meta cannot run (reading values) is left to the CPU cases; a device mismatch fails."""
    from autograder.checks import CheckFailed
    from instructor.hidden import a03_yolo_head as H

    check = H.DecodeContract()
    meta = [c for c in check.cases() if c["device"] == "meta"]
    assert meta and all(isinstance(c["stride"], (int, float)) or c["stride"].device.type == "cpu" for c in meta)
    check.judge(meta[0], {"meta_error": {"type": "NotImplementedError",
                                         "message": "Cannot copy out of meta tensor; no data!"}})
    with pytest.raises(CheckFailed, match="creates a tensor on the CPU"):
        check.judge(meta[0], {"meta_error": {"type": "RuntimeError",
                                             "message": "Tensor on device cpu is not on the expected device meta!"}})


def test_fixed_detect_with_a_wrong_decode_fails():
    for style in ("missing_half", "data", "still_inplace", "no_grad"):
        assert not verdict("fixed_detect_tests", namespace(DECODES[style], FIXED_DETECT)).passed, style


def test_attack_check_accepts_pgd():
    v = verdict("attack_tests", namespace(ATTACK))
    assert v.passed, v.message


@pytest.mark.parametrize("bad, words", [
    ("def attack(model, image, eps, steps):\n    return torch.zeros_like(image)\n", "does not lower"),
    ("def attack(model, image, eps, steps):\n    return torch.full_like(image, eps)\n", "leaves [0, 1]"),
    (ATTACK.replace("def attack(", "def _pgd(") + "def attack(m, x, eps, steps):\n    return _pgd(m, x, 4 * eps, steps)\n",
     "budget"),
    (ATTACK.replace("def attack(", "def _pgd(") + "def attack(m, x, eps, steps):\n    return x + _pgd(m, x, eps, steps)\n",
     "budget"),
    (ATTACK.replace("return delta.detach()", "image.add_(delta); return delta.detach()"), "changed the image"),
    (ATTACK.replace("range(steps)", "range(10)"), "gradient(s) with respect to the image"),
    (ATTACK.replace("(grad,) = torch.autograd.grad(best, delta)",
                    "(grad,) = torch.autograd.grad(best, delta, retain_graph=True)\n"
                    "        torch.autograd.grad(best, delta)"), "took 20 gradient(s) with respect to the image"),
    (ATTACK.replace("step = 2.5 * eps / steps", "step = 2.5 * eps / 10"), "does not reach the budget"),
    (ATTACK.replace(".clamp(-eps, eps)", ".clamp(-16 / 255, 16 / 255)"), "exceeds the budget"),
    ("def attack(model, image, eps, steps):\n    raise NotImplementedError\n", "not implemented yet"),
])
def test_attack_check_rejects_bad_attacks(bad, words):
    v = verdict("attack_tests", namespace(bad))
    assert not v.passed and words in v.message, v.message


def test_attack_with_a_last_look_and_no_grad_updates_passes():
    looks = ATTACK.replace("    return delta.detach()",
                           "    with torch.no_grad():\n        model(image + delta)\n"
                           "    model(image + delta)\n    return delta.detach()")
    v = verdict("attack_tests", namespace(looks))
    assert v.passed, v.message


PROGRESS_BAR_ATTACKS = {
    # the objectness shown in the bar, read by another evaluation with gradients on (not differentiated)
    "postfix after each step": ATTACK.replace(
        "    for _ in tqdm(range(steps), leave=False):\n",
        "    bar = tqdm(range(steps), leave=False)\n    for _ in bar:\n").replace(
        "        delta = (image + delta).clamp(0, 1) - image\n",
        "        delta = (image + delta).clamp(0, 1) - image\n"
        "        bar.set_postfix(objectness=float(model(image + delta)[0][..., 4].amax()))\n"),
    # read before the step, while delta requires grad: an evaluation of a graph nobody differentiates
    "a second look with delta requiring grad": ATTACK.replace(
        "        (grad,) = torch.autograd.grad(best, delta)\n",
        "        shown = model(image + delta)[0][..., 4].amax()\n"
        "        (grad,) = torch.autograd.grad(best, delta)\n"),
    # through the notebook's best_objectness (raw outputs: no head forward at all)
    "best_objectness for the loss and the bar": ATTACK.replace(
        "        best = model(image + delta)[0][..., 4].amax()\n",
        "        best = best_objectness(model, image + delta).sum()\n"
        "        shown = best_objectness(model, (image + delta).detach())\n"),
}


@pytest.mark.parametrize("name", list(PROGRESS_BAR_ATTACKS))
def test_attack_that_reads_the_objectness_for_a_progress_bar_passes(name):
    v = verdict("attack_tests", namespace("from autograder.detector import best_objectness\n"
                                          + PROGRESS_BAR_ATTACKS[name]))
    assert v.passed, v.message


def test_attack_that_poisons_the_sandbox_model_is_judged_on_the_graders_model():
    cheat = """
def attack(model, image, eps, steps):
    with torch.no_grad():
        for conv in model.head.m:
            conv.bias[4::conv.bias.numel() // model.head.na] -= 50  # objectness down, in the sandbox only
    return torch.zeros_like(image)
"""
    v = verdict("attack_tests", namespace(cheat))
    assert not v.passed and ("weights" in v.message or "does not lower" in v.message)


def test_a_forged_image_and_weights_report_passed_the_old_probe_and_fails_now():
    """tests/hostile/03_yolo_head/forged_attack_report.py: a working attack that writes into the image and the
    weights after making torch.equal always true in its own process. The old probe compared there (its
    report: image unchanged, no weight moved); now the tensors come back as data and the grader, in its own
    process, compares them with its copies."""
    from autograder.attack import attack_model
    from instructor.authoring.samples import parse_sample
    from instructor.hidden import judge_results
    from instructor.hidden.probe_driver import compile_probe, run_case
    from instructor.layout import REPO

    hostile = REPO / "tests" / "hostile" / "03_yolo_head" / "forged_attack_report.py"
    code = next(t for k, g, t in parse_sample(hostile).blocks if g == "attack")
    check = next(c for c in checks_for("03_yolo_head") if c.grade_id == "attack_tests")
    case = check.cases()[0]
    real_equal = torch.equal
    try:  # the student's process
        ns = namespace(code)
        model = attack_model("cpu")
        state = {k: v.clone() for k, v in model.state_dict().items()}
        given = case["images"].clone()
        ns["attack"](model, given, case["eps"], case["steps"])
        # the old probe's measurements, made here: forged
        old_report = {"image_changed": not torch.equal(given, case["images"]),
                      "weights_changed": [k for k, v in model.state_dict().items() if not torch.equal(v, state[k])]}
        probe = compile_probe(probe_source(check), check.grade_id)
        result = run_case(probe, ns, dict(case), 0)
    finally:
        torch.equal = real_equal  # the grader's process
    assert old_report == {"image_changed": False, "weights_changed": []}
    assert not torch.equal(given, case["images"])  # the truth
    v = judge_results(check, [case], [result])
    assert not v.passed and "changed the image" in v.message, v.message
    result["images_after"] = [case["images"].clone()]  # the image restored: the weights still moved
    v = judge_results(check, [case], [result])
    assert not v.passed and "changed the model's weights" in v.message, v.message


def _hostile_attack(name: str) -> str:
    from instructor.authoring.samples import parse_sample
    from instructor.layout import REPO

    sample = parse_sample(REPO / "tests" / "hostile" / "03_yolo_head" / f"{name}.py")
    return next(t for k, g, t in sample.blocks if g == "attack")


PRIVATE_COPY = ATTACK.replace("def attack(model, image, eps, steps):\n",
                              "def attack(model, image, eps, steps):\n"
                              "    from autograder.attack import attack_model\n"
                              "    model = attack_model(image.device)  # a copy nobody hooked\n").replace(
    "range(steps)", "range(10 * steps)")


@pytest.mark.parametrize("name, words", [
    ("cleared_hooks_attack", "switched off the grader's count"),
    ("count_switched_off_attack", "no gradient with respect to the image was counted"),
    ("private_copy", "took 100 gradient(s) with respect to the image"),
])
def test_an_attack_past_its_gradient_budget_that_hides_from_the_count_fails_and_passed_before(
        name, words, monkeypatch):
    """Issue 36: the gradients were counted by a forward pre-hook on model.stem, in the student's process, and
    a count of 0 passed. tests/hostile/03_yolo_head/cleared_hooks_attack.py clears the stage's hooks and takes
    10 * steps gradients; count_switched_off_attack.py also takes every dispatch mode off the stack and puts
    both back before returning; the private copy attacks a detector of its own. Now: a second count by a
    dispatch mode (any 3-channel convolution's input gradient), the instruments checked after each call, and
    "moved, none counted" failed. The control: judged as before (the stem hook's count alone, 0 accepted),
    each passes, and without hiding, the same attack fails its budget."""
    from instructor.hidden.a03_yolo_head import AttackCheck

    code = PRIVATE_COPY if name == "private_copy" else _hostile_attack(name)
    ns = namespace(code)
    v = verdict("attack_tests", ns)
    assert not v.passed and words in v.message, v.message
    monkeypatch.setattr(AttackCheck, "guard_count", False)  # the defence off: the old judging of the count
    v = verdict("attack_tests", ns)
    assert v.passed, v.message
    monkeypatch.undo()
    if name == "cleared_hooks_attack":  # what the hiding buys: without it, the same attack is over budget
        v = verdict("attack_tests", namespace(code.replace("model.stem._forward_pre_hooks.clear()", "pass")))
        assert not v.passed and "took 100 gradient(s) with respect to the image" in v.message, v.message


def test_an_attack_that_moves_the_image_without_any_gradient_is_named():
    """No gradient counted and a delta that is not zero: fixed noise (no_gradient_attack's darkening), or a count
    switched off. The case says so, before the drop does."""
    v = verdict("attack_tests", namespace("def attack(model, image, eps, steps):\n"
                                          "    return (image - eps).clamp(0, 1) - image\n"))
    assert not v.passed and "no gradient with respect to the image was counted" in v.message, v.message


@pytest.mark.parametrize("context", ["locate_inplace()", "torch.autograd.graph.allow_mutation_on_saved_tensors()"])
def test_an_attack_inside_a_dispatch_mode_of_its_own_passes(context):
    """Honest code may push its own dispatch mode (the course's locator, PyTorch's context) and pop it again:
    the grader's mode is still on the stack after the call, and both counts see one gradient per step."""
    wrapped = ATTACK.replace("def attack(", "def _pgd(") + (
        "from autograder.inplace import locate_inplace\n"
        "def attack(model, image, eps, steps):\n"
        f"    with {context}:\n"
        "        return _pgd(model, image, eps, steps)\n")
    v = verdict("attack_tests", namespace(wrapped))
    assert v.passed, v.message
