# about: correct; the attack shows the best objectness in its progress bar: one more evaluation of the
# about: model per step, with gradients on but never differentiated (the hidden test counts the gradients
# about: taken with respect to the image, one per step, not the evaluations)
# expect: auto=16
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# visible: pass=attack_tests
# base: cat_style

# %% solution: attack
def attack(model, image, eps, steps):
    step = 2.5 * eps / steps
    delta = torch.zeros_like(image)
    bar = tqdm(range(steps), desc="PGD")
    for _ in bar:
        delta.requires_grad_(True)
        decoded, _ = model(image + delta)
        (g,) = torch.autograd.grad(decoded[..., 4].amax(), delta)
        delta = (delta.detach() - step * g.sign()).clamp(-eps, eps)
        delta = (image + delta).clamp(0, 1) - image
        bar.set_postfix(objectness=f"{model(image + delta)[0][..., 4].amax().item():.3f}")
    return delta
