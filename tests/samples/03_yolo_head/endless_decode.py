# about: decode never returns (an endless loop); the attack is right. The loop costs once (the confirmation
# about: stops calling decode after its first cell limit, the kernel skips what hung): under 2 minutes in all
# base: cat_style
# expect: auto=3
# expect: decode_matches_legacy_tests=0 decode_contract_tests=0 decode_gradients_tests=0 decode_no_inplace_on_saved_tests=0 fixed_detect_tests=0 attack_tests=3

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    while True:  # forgot the exit condition
        pass
