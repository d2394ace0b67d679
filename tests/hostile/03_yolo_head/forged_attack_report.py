# about: a working PGD attack that also writes its result into the image it was given and nudges the model's
# about: weights, after making torch.equal always true in its own process: the old probe compared image and
# about: weights there (torch.equal) and reported both unchanged. Now the image and the weights' own tensors
# about: come back as data and the grader compares them with its own copies: the attack's points are lost
# base: 03_yolo_head/cat_style
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0

# %% solution: attack
def attack(model, image, eps, steps):
    torch.equal = lambda *a, **k: True  # whoever compares tensors in this process sees them equal
    delta = torch.zeros_like(image, requires_grad=True)
    alpha = 2 * eps / steps
    for _ in tqdm(range(steps), desc="attack"):
        objectness = model(image + delta)[0][..., 4]
        objectness.max().backward()
        with torch.no_grad():
            delta -= alpha * delta.grad.sign()
            delta.clamp_(-eps, eps)
            delta.copy_((image + delta).clamp(0, 1) - image)
        delta.grad = None
    with torch.no_grad():
        image.add_(delta)                      # the adversarial image, written into the caller's tensor
        next(iter(model.parameters())).mul_(1.001)
    return delta.detach()
