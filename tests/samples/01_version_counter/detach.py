# about: silences the error with .detach(): decodes centre and size from a detached sigmoid and joins
# about: with torch.cat; no error, but the centre and size columns get no gradient
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=0 judge_fix_tests=2
# visible: fail=fixed_sigmoid_decode_tests pass=judge_fix_tests
# base: ada

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    d = s.detach()
    centre = (d[..., 0:2] * 2 - 0.5 + grid) * stride
    size = (d[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)
