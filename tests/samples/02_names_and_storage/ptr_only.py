# about: misconception "compare only data_ptr": same memory means in-place, other memory a new tensor;
# about: the model "fix" writes through .data: no error, forward right, gradients silently wrong
# expect: auto=3
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=0 classify_update_no_change_tests=0 classify_update_untracked_and_version_tests=0 fixed_model_forward_tests=1 fixed_model_gradients_tests=0
# visible: fail=classify_update_new_view_tests,classify_update_no_change_tests,classify_update_untracked_and_version_tests,fixed_model_gradients_tests pass=classify_update_rebind_vs_inplace_tests,fixed_model_forward_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    x = make_x(device or DEVICE, dtype or torch.float32)
    before = x.untyped_storage().data_ptr()
    scope = {"torch": torch, "x": x}
    exec(statement, scope)
    return "in-place" if scope["x"].untyped_storage().data_ptr() == before else "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    h = x @ w
    h += 0.1
    h.relu_()
    y = h.sigmoid()
    y.data[:, :2] = y.data[:, :2] * 2 - 0.5
    y.data[:, 2:] = (y.data[:, 2:] * 2) ** 2
    return y
