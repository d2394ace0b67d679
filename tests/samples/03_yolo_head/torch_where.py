# about: correct: full-width candidates picked per column with torch.where
# expect: auto=16
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# visible: pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests,attack_tests
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    col = torch.arange(p.shape[-1], device=p.device)
    xy = torch.cat(((s[..., 0:2] * 2 - 0.5 + grid) * stride, s[..., 2:]), -1).to(p.dtype)
    wh = torch.cat((s[..., 0:2], (s[..., 2:4] * 2) ** 2 * anchor_grid, s[..., 4:]), -1).to(p.dtype)
    return torch.where(col < 2, xy, torch.where(col < 4, wh, s))
