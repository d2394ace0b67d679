# about: the trap of section 2: compares x.data_ptr() (the first element's address) instead of the storage's,
# about: so the view x[1:] looks like new memory; the model fix is right (torch.stack of the four columns)
# expect: auto=8
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=0 classify_update_no_change_tests=1 classify_update_untracked_and_version_tests=2 fixed_model_forward_tests=1 fixed_model_gradients_tests=2
# visible: fail=classify_update_new_view_tests pass=classify_update_rebind_vs_inplace_tests,classify_update_no_change_tests,classify_update_untracked_and_version_tests,fixed_model_forward_tests,fixed_model_gradients_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    x0 = make_x(DEVICE if device is None else device, torch.float32 if dtype is None else dtype)
    version, ptr, values = x0._version, x0.data_ptr(), x0.detach().clone()
    scope = {"torch": torch, "x": x0}
    exec(statement, scope)
    x1 = scope["x"]
    if x0._version > version:
        return "in-place"
    if x0.data_ptr() != ptr or not torch.equal(x0.detach(), values):
        return "untracked-write"
    if x1 is x0:
        return "no-change"
    return "new-view" if x1.data_ptr() == ptr else "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    y = (x @ w + 0.1).relu().sigmoid()
    a, b, c, d = y.unbind(dim=1)
    return torch.stack([a * 2 - 0.5, b * 2 - 0.5, (c * 2) ** 2, (d * 2) ** 2], dim=1)
