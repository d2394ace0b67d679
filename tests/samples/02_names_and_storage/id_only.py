# about: misconception "compare only id": same object means in-place, otherwise a new tensor;
# about: and the model "fix" removed the harmless in-place ops but kept the slice writes (backward still fails)
# expect: auto=2
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=0 classify_update_no_change_tests=0 classify_update_untracked_and_version_tests=0 fixed_model_forward_tests=0 fixed_model_gradients_tests=0
# visible: fail=classify_update_new_view_tests,classify_update_no_change_tests,classify_update_untracked_and_version_tests,fixed_model_forward_tests,fixed_model_gradients_tests pass=classify_update_rebind_vs_inplace_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    x = make_x(device or DEVICE, dtype or torch.float32)
    old = x
    scope = {"torch": torch, "x": x}
    exec(statement, scope)
    return "in-place" if scope["x"] is old else "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    h = torch.relu(x @ w + 0.1)
    y = h.sigmoid()
    y[:, :2] = y[:, :2] * 2 - 0.5
    y[:, 2:] = (y[:, 2:] * 2) ** 2
    return y
