# about: out of place, but the pieces are not cast back: float16 p gives a float32 result
# expect: auto=14
# expect: decode_matches_legacy_tests=3 decode_contract_tests=0 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    xy = (s[..., 0:2] * 2 - 0.5 + grid) * stride
    wh = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat((xy, wh, s[..., 4:]), -1)
