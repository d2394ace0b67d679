# about: decode and head correct; the attack returns zeros: within the budget, and the image is
# about: not attacked at all (the visible test sees that the best objectness does not drop)
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0
# visible: fail=attack_tests pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests
# base: cat_style

# %% solution: attack
def attack(model, image, eps, steps):
    return torch.zeros_like(image)
