# about: computes the centre and size under torch.no_grad() and joins them with torch.cat: no error,
# about: right values, but no gradient through the box columns
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=0 judge_fix_tests=2
# visible: fail=fixed_sigmoid_decode_tests pass=judge_fix_tests
# base: ada

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    with torch.no_grad():
        centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
        size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)
