# about: measures id, data_ptr and _version but never compares values, so x.data writes look like nothing
# about: happened; the model "fix" detaches the sigmoid output (backward has nothing to reach)
# expect: auto=4
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=1 classify_update_no_change_tests=1 classify_update_untracked_and_version_tests=0 fixed_model_forward_tests=0 fixed_model_gradients_tests=0
# visible: fail=classify_update_untracked_and_version_tests,fixed_model_forward_tests,fixed_model_gradients_tests pass=classify_update_rebind_vs_inplace_tests,classify_update_new_view_tests,classify_update_no_change_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    x = make_x(device or DEVICE, dtype or torch.float32)
    old, ptr, ver = x, x.untyped_storage().data_ptr(), x._version
    scope = {"torch": torch, "x": x}
    exec(statement, scope)
    new = scope["x"]
    if old._version != ver:
        return "in-place"
    if new is old:
        return "no-change"
    return "new-view" if new.untyped_storage().data_ptr() == ptr else "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    h = torch.relu(x @ w + 0.1)
    y = h.sigmoid().detach()
    y[:, :2] = y[:, :2] * 2 - 0.5
    y[:, 2:] = (y[:, 2:] * 2) ** 2
    return y
