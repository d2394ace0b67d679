# about: decode and head correct; the attack takes steps of eps and never projects:
# about: |delta| grows past the budget and the image leaves [0, 1]
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0
# visible: fail=attack_tests pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests
# base: cat_style

# %% solution: attack
def attack(model, image, eps, steps):
    delta = torch.zeros_like(image)
    for _ in tqdm(range(steps)):
        delta.requires_grad_(True)
        best = model(image + delta)[0][..., 4].max()
        (g,) = torch.autograd.grad(best, delta)
        delta = delta.detach() - eps * g.sign()   # a step of eps each time, never projected back
    return delta
