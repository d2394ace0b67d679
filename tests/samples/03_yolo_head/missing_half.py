# about: out of place, but the centre forgets the - 0.5 (gradients are still right)
# expect: auto=10
# expect: decode_matches_legacy_tests=0 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=0 attack_tests=3
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    xy = (s[..., 0:2] * 2 + grid) * stride
    wh = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat((xy.to(p.dtype), wh.to(p.dtype), s[..., 4:]), -1)
