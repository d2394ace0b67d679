# about: decode and head correct; the attack takes no gradient: it darkens every pixel by eps (within
# about: the budget and the image range), which barely moves the detector's confidence. The hidden test
# about: says so first: the image moved and no gradient with respect to it was counted
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0
# visible: fail=attack_tests pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests
# base: cat_style

# %% solution: attack
def attack(model, image, eps, steps):
    for _ in tqdm(range(steps)):
        pass
    return (image - eps).clamp(0, 1) - image
