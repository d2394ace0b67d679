# about: correct: slice writes into y.clone(); sigmoid saved y, not the clone
# expect: auto=16
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# visible: pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests,attack_tests
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    out = y.clone()
    out[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    out[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return out
