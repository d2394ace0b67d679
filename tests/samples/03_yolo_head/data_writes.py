# about: slice writes through y.data: no error, silently wrong box gradients; the no-write test matches writes
# about: to saved tensors by memory, so it fails them too (it kept its 2 points while it asked the version
# about: counter only, which a .data write never moves: issue 38)
# expect: auto=8
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=0 decode_no_inplace_on_saved_tests=0 fixed_detect_tests=0 attack_tests=3
# visible: fail=decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests pass=decode_matches_legacy_tests,decode_contract_tests,attack_tests
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y.data[..., 0:2] = (y[..., 0:2] * 2. - 0.5 + grid) * stride
    y.data[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
