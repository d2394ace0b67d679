# about: the scenario raises nothing: she clones the sigmoid output before writing, so backward
# about: succeeds and the function returns None; everything else is right
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=0 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# base: ada

# %% solution: reproduce_sigmoid_error
def reproduce_sigmoid_error():
    p = torch.randn(2, 3, 8, 8, 7, requires_grad=True)
    y = p.sigmoid().clone()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + GRID) * STRIDE
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * ANCHOR_GRID
    try:
        y.sum().backward()
    except RuntimeError as err:
        return err
