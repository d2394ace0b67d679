# about: complete and correct, device-careful decode: writes into a buffer made with new_zeros (p's device
# about: and dtype) and uses 0-dim CPU tensors as constants, which mix with any device as on a GPU
# expect: auto=15
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# base: ada

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    two, half = torch.tensor(2.0), torch.tensor(0.5, dtype=torch.float64)
    out = p.new_zeros(p.shape)
    out[..., :2] = (s[..., :2] * two - half + grid) * stride
    out[..., 2:4] = (s[..., 2:4] * two) ** 2 * anchor_grid
    out[..., 4:] = s[..., 4:]
    return out
