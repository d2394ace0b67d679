# about: misconception "one write, one step": in-place only when the version went up by exactly one, so
# about: x[0] += 1 (two in-place operations, 0 -> 2) reads as an untracked write; the model fix is right
# expect: auto=5
# expect: classify_update_rebind_vs_inplace_tests=0 classify_update_new_view_tests=1 classify_update_no_change_tests=1 classify_update_untracked_and_version_tests=0 fixed_model_forward_tests=1 fixed_model_gradients_tests=2
# visible: fail=classify_update_rebind_vs_inplace_tests pass=classify_update_new_view_tests,classify_update_no_change_tests,fixed_model_forward_tests,fixed_model_gradients_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    x0 = make_x(DEVICE if device is None else device, torch.float32 if dtype is None else dtype)
    version, ptr, values = x0._version, x0.untyped_storage().data_ptr(), x0.detach().clone()
    scope = {"torch": torch, "x": x0}
    exec(statement, scope)
    x1 = scope["x"]
    if x0._version == version + 1:          # "each write adds one"
        return "in-place"
    if x0.untyped_storage().data_ptr() != ptr or not torch.equal(x0.detach(), values):
        return "untracked-write"
    if x1 is x0:
        return "no-change"
    return "new-view" if x1.untyped_storage().data_ptr() == ptr else "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    y = torch.sigmoid(torch.relu(x @ w + 0.1))
    return torch.cat([2 * y[:, :2] - 0.5, (2 * y[:, 2:]) ** 2], dim=1)
