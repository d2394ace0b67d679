# about: a correct classifier; the model "fix" wraps leaky_model in identity saved_tensors_hooks, which
# about: disables the version check: backward runs, gradients are silently wrong
# expect: auto=7
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=1 classify_update_no_change_tests=1 classify_update_untracked_and_version_tests=2 fixed_model_forward_tests=1 fixed_model_gradients_tests=0
# visible: fail=fixed_model_gradients_tests pass=classify_update_rebind_vs_inplace_tests,classify_update_new_view_tests,classify_update_no_change_tests,classify_update_untracked_and_version_tests,fixed_model_forward_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    if device is None:
        device = DEVICE
    if dtype is None:
        dtype = torch.float32
    x = make_x(device, dtype)
    keep = x
    w0 = (x.untyped_storage().data_ptr(), x._version, x.shape, x.clone())
    ns = {"torch": torch, "x": x}
    exec(statement, ns)
    if keep._version != w0[1]:
        return "in-place"
    if keep.untyped_storage().data_ptr() != w0[0] or keep.shape != w0[2] or not torch.equal(keep, w0[3]):
        return "untracked-write"
    if ns["x"] is keep:
        return "no-change"
    if ns["x"].untyped_storage().data_ptr() == w0[0]:
        return "new-view"
    return "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return leaky_model(x, w)
