# about: a right fix in an unusual style: the in-place decode under saved_tensors_hooks whose pack hook
# about: clones what is saved (backward reads the old values, at the cost of a copy); unlike the identity
# about: hooks of hooks.py, its gradient is right, and the visible and hidden tests both accept it
# expect: auto=15
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# visible: pass=fixed_sigmoid_decode_tests,judge_fix_tests
# base: ada

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = p.sigmoid()
        y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
        y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
