# about: a PGD attack that takes ten times its budget of gradients (10 * steps) after clearing the forward
# about: pre-hooks of the model's first stage, where the old probe counted them: that probe counted 0, accepted
# about: 0, and the attack passed with a larger drop (16/16; 13/16 without the line). Now the count is made a
# about: second time by a dispatch mode, and the stage's hooks are checked after the call: the points are lost
# base: 03_yolo_head/cat_style
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0

# %% solution: attack
def attack(model, image, eps, steps):
    model.stem._forward_pre_hooks.clear()  # whatever counted the gradients there, gone
    step = 2.5 * eps / steps
    delta = torch.zeros_like(image)
    for _ in tqdm(range(10 * steps)):      # ten gradients per step allowed
        delta.requires_grad_(True)
        best = model(image + delta)[0][..., 4].amax()
        (g,) = torch.autograd.grad(best, delta)
        delta = (delta.detach() - step * g.sign()).clamp(-eps, eps)
        delta = (image + delta).clamp(0, 1) - image
    return delta.detach()
