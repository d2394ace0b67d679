# about: reproduce_sigmoid_error keeps the first call's error in a global and returns it again: right
# about: once, but the text says each call returns its own error
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=0 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# visible: fail=reproduce_sigmoid_error_tests pass=predict_versions_tests,read_error_message_tests,saved_by_tests,fixed_sigmoid_decode_tests,judge_fix_tests
# base: ada

# %% solution: reproduce_sigmoid_error
KEPT = []


def reproduce_sigmoid_error():
    if KEPT:
        return KEPT[0]
    p = torch.randn(2, 3, 8, 8, 7, requires_grad=True)
    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)
    try:
        y.sum().backward()
    except RuntimeError as err:
        KEPT.append(err)
        return err
