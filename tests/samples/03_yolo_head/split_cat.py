# about: correct: sigmoid split into (xy, wh, rest), then torch.cat (the release-7.0 way)
# expect: auto=16
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# visible: pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests,attack_tests
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    xy, wh, conf = p.sigmoid().split((2, 2, p.shape[-1] - 4), dim=-1)
    xy = (xy * 2 - 0.5 + grid) * stride
    wh = (wh * 2) ** 2 * anchor_grid
    return torch.cat((xy.to(p.dtype), wh.to(p.dtype), conf), -1)
