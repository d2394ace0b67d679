"""autograder.attack (the course's detector to attack, and the figures) and the references of
assignment 3 that live on the instructor's side (instructor.hidden.a03_yolo_head).

The hidden checks themselves (every decode style, heads, attacks) are tested in test_hidden_a03.py.
"""
from __future__ import annotations

import pytest
import torch

from autograder import attack as A
from autograder.yolo import LegacyDetect, legacy_decode
from instructor.hidden import a03_yolo_head as H


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_student_package_holds_no_answer():
    for name in ("reference_decode", "ReferenceFixedDetect", "pgd_attack", "vanish_attack", "SILENT_FIXES",
                 "decode_reference", "check_attack", "check_decode_gradients", "check_fixed_detect"):
        assert not hasattr(A, name), name
    import autograder.yolo
    assert not hasattr(autograder.yolo, "reference_decode")


def test_decode_case_float16_result_stays_float16():
    p, grid, ag, stride = H.decode_case(1, 3, 2, 3, 1, 8.0, dtype=torch.float16)
    assert H.reference_decode(p, grid, ag, stride).dtype == torch.float16
    s = p.sigmoid()
    no_cast = torch.cat(((s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * ag, s[..., 4:]), -1)
    assert no_cast.dtype == torch.float32  # the promotion the contract check catches


def test_silent_fix_table_matches_the_notebook_story():
    rows = {r["fix"]: r for r in H.compare_silent_fixes()}
    assert rows["torch.no_grad()"]["obj_grad"] == "none" and rows[".detach()"]["box_grad"] == "none"
    for name in (".data writes", "identity saved-tensor hooks"):
        assert rows[name]["obj_grad"] == "right" and rows[name]["box_grad"] == "WRONG" and not rows[name]["error"]


def test_allow_mutation_gives_the_true_gradient_of_the_legacy_decode():
    """The notebook's visible gradient test and its silent-fix table use this as the truth."""
    p, grid, ag, stride = H.decode_case(2, 3, 3, 4, 2, 8.0, dtype=torch.float64, anchor_dtype=torch.float64)
    w = torch.randn(p.shape, dtype=torch.float64)
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        q = p.clone().requires_grad_(True)
        (g,) = torch.autograd.grad((legacy_decode(q, grid, ag, stride) * w).sum(), q)
    q = p.clone().requires_grad_(True)
    (g_ref,) = torch.autograd.grad((H.decode_reference(q, grid, ag, stride) * w).sum(), q)
    torch.testing.assert_close(g, g_ref)


# ----------------------------------------------------------------------------- the attacked model

def test_objectness_head_keeps_values_and_objectness_gradient_but_no_box_gradient():
    model = A.attack_model()
    ref = H.reference_attack_model()
    from autograder.detector import synthetic_batch

    x, _ = synthetic_batch(2, seed=3)
    with torch.no_grad():
        torch.testing.assert_close(model(x)[0], ref(x)[0])
    assert isinstance(model.head, LegacyDetect) and not any(p.requires_grad for p in model.parameters())
    xs = [x.clone().requires_grad_(True) for _ in range(2)]
    g_obj = [torch.autograd.grad(m(xi)[0][..., 4:].amax(1).sum(), xi)[0] for m, xi in zip((model, ref), xs)]
    torch.testing.assert_close(g_obj[0], g_obj[1])
    out = model(x.clone().requires_grad_(True))[0]
    assert out[..., 4:].requires_grad
    # the boxes are cut from the graph: not a fix of the head
    with pytest.raises(RuntimeError):
        torch.autograd.grad(out[..., :4].sum(), model.head.m[0].weight)  # no parameter needs grad either


def test_objectness_head_is_not_a_fixed_detect():
    head = A.ObjectnessHead(nc=3, anchors=((9, 9, 12, 12, 15, 15),), ch=(4,))
    head.stride = torch.tensor([8.0])
    head.eval()
    f = torch.randn(1, 4, 3, 5, requires_grad=True)
    out = head([f])[0]
    (g,) = torch.autograd.grad(out[..., :4].sum(), f, allow_unused=True)
    assert g is None or not bool(g.any())  # the boxes carry no gradient


def test_pgd_attack_lowers_the_best_objectness_within_budget():
    from autograder.detector import best_objectness, synthetic_batch

    model = A.attack_model()
    x, _ = synthetic_batch(H.ATTACK_N, seed=H.ATTACK_SEED)
    delta = torch.cat([H.pgd_attack(model, x[i:i + 1], H.ATTACK_EPS, H.ATTACK_STEPS) for i in range(len(x))])
    assert float(delta.abs().max()) <= H.ATTACK_EPS + 1e-6
    with torch.no_grad():
        drop = float((best_objectness(model, x) - best_objectness(model, x + delta)).mean())
    assert drop >= H.ATTACK_MARGIN


def test_show_attack_draws_three_panels():
    import matplotlib
    matplotlib.use("Agg")
    from autograder.detector import synthetic_batch
    model = A.attack_model()
    x, _ = synthetic_batch(1, seed=3)
    fig = A.show_attack(model, x, H.pgd_attack(model, x, H.ATTACK_EPS, 2), eps=H.ATTACK_EPS)
    assert len(fig.axes) == 3
    before, after, n_before, n_after = A.attack_effect(model, x, torch.zeros_like(x))
    assert torch.equal(before, after) and n_before == n_after


def test_vanish_attack_removes_most_detections_within_budget():
    from autograder.detector import synthetic_batch

    model = A.attack_model("cpu")
    images, _ = synthetic_batch(6, seed=4242)  # images no notebook uses
    eps = 32 / 255
    delta, history = H.vanish_attack(model, images, eps=eps, steps=40, progress=False)
    assert float(delta.abs().max()) <= eps + 1e-6
    adv = images + delta
    assert float(adv.min()) >= -1e-6 and float(adv.max()) <= 1 + 1e-6
    assert len(history) == 41 and history[0] >= 6
    assert history[-1] <= history[0] // 2, f"detections {history[0]} -> {history[-1]}: the attack should remove most"


def test_every_box_objective_turns_a_best_objectness_attack_into_the_vanish_attack():
    """The notebook's last demonstration: the student's own attack on EveryBoxObjective."""
    import matplotlib
    matplotlib.use("Agg")
    from autograder.detector import synthetic_batch

    def attack(model, image, eps, steps):  # a plain PGD on "the best objectness", as students write it
        step, delta = 2.5 * eps / steps, torch.zeros_like(image)
        for _ in range(steps):
            delta.requires_grad_(True)
            (g,) = torch.autograd.grad(model(image + delta)[0][..., 4].amax(), delta)
            delta = (delta.detach() - step * g.sign()).clamp(-eps, eps)
            delta = (image + delta).clamp(0, 1) - image
        return delta.detach()

    images, _ = synthetic_batch(6, seed=4242)
    objective = A.EveryBoxObjective(A.attack_model(), threshold=0.25)
    out, raw = objective(images)
    assert out.shape == (1, 1, 8) and len(raw) == 2
    objective.history.clear()
    delta = attack(objective, images, 32 / 255, 40)
    history = objective.history + [objective.detections(images + delta)]
    _, ref_history = H.vanish_attack(A.attack_model(), images, eps=32 / 255, steps=40)
    assert history == ref_history
    fig = A.show_vanish(A.attack_model(), images, delta, history)
    assert len(fig.axes) == 9


# ----------------------------------------------------------------------------- meta device, mutants

def test_references_run_on_meta_with_a_cpu_stride_and_after_a_device_move():
    """The meta cases' premise: the references mix only Python numbers and 0-dim CPU tensors."""
    p, grid, ag, stride = H.decode_case(2, 3, 3, 4, 2, "tensor32", dtype=torch.float16)
    y = H.reference_decode(p.to("meta"), grid.to("meta"), ag.to("meta"), stride)
    assert y.device.type == "meta" and y.dtype == torch.float16 and y.shape == p.shape
    head = H.ReferenceFixedDetect(nc=3, anchors=((9, 9, 12, 12, 15, 15),), ch=(4,))
    head.stride = torch.tensor([8.0])
    head.eval()
    f = torch.randn(1, 4, 3, 5)
    with torch.no_grad():
        head([f])
        head.to("meta")
        dec, raw = head([f.to("meta")])
    assert dec.device.type == "meta" and head.grid[0].device.type == "meta"


def test_mutants_apply_to_the_reference_solutions():
    from instructor.hidden.mutation import reference_solution

    for function, target in H.MUTANTS.items():
        ref = reference_solution(H.ASSIGNMENT, function)
        live = [m for m in target.mutants if not m.equivalent]
        assert len(live) >= 20, function
        for m in target.mutants:
            assert m.old in ref and m.new != m.old, (function, m.name)


def test_the_numbers_assignment_3_states_for_the_attack_are_measured():
    """Section 5 says: this PGD lowers image 1's best objectness by about 0.1 (eps = 16/255, 10 steps);
    darkening by eps or random noise, by 0.01 or less (measured here: 0.0055 darkening, -0.0001 to 0.0099
    for 12 seeded draws of noise; issue 38's review measured 0.002–0.006 and read "about 0.01" as typical)."""
    import json
    import re
    from pathlib import Path

    from autograder.detector import best_objectness, synthetic_batch

    text = (Path(__file__).resolve().parents[1] / "release/03_yolo_head/03_yolo_head.ipynb").read_text()
    stated = re.search(r"lowers it by about ([\d.]+); darkening by `eps` or random noise, by ([\d.]+) or less\)",
                       "".join("".join(c["source"]) for c in json.loads(text)["cells"]))
    assert stated, "the sentence about the attack's drop changed: update this test with a new measurement"
    pgd_about, under = (float(x) for x in stated.groups())
    model = A.attack_model("cpu")
    images, _ = synthetic_batch(4, seed=3)
    image, eps = images[1:2].clone(), 16 / 255

    def drop(delta):
        with torch.no_grad():
            return float(best_objectness(model, image) - best_objectness(model, (image + delta).clamp(0, 1)))

    assert abs(drop(H.pgd_attack(model, image, eps, 10)) - pgd_about) < 0.03
    g = torch.Generator().manual_seed(0)
    others = [drop(-eps * torch.ones_like(image))]
    for _ in range(6):
        others.append(drop((torch.rand(image.shape, generator=g) * 2 - 1) * eps))
        others.append(drop((torch.randint(0, 2, image.shape, generator=g).float() * 2 - 1) * eps))
    assert max(others) <= under and pgd_about >= 5 * under, others
