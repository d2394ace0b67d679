# about: silences the error by writing through .data: right values, no error, silently wrong gradient
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=0 judge_fix_tests=2
# visible: fail=fixed_sigmoid_decode_tests pass=judge_fix_tests
# base: ada

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y.data[..., 0:2] = (y.data[..., 0:2] * 2 - 0.5 + grid) * stride
    y.data[..., 2:4] = (y.data[..., 2:4] * 2) ** 2 * anchor_grid
    return y
