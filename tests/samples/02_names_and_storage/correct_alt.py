# about: complete and correct, written differently: a witnesses dict for the classifier, and a
# about: clone-then-write fix (the slice writes go into a copy autograd did not save)
# expect: auto=9
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=1 classify_update_no_change_tests=1 classify_update_untracked_and_version_tests=2 fixed_model_forward_tests=1 fixed_model_gradients_tests=2
# visible: pass=classify_update_rebind_vs_inplace_tests,classify_update_new_view_tests,classify_update_no_change_tests,classify_update_untracked_and_version_tests,fixed_model_forward_tests,fixed_model_gradients_tests

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    def look(t):
        return {"ptr": t.untyped_storage().data_ptr(), "ver": t._version,
                "shape": tuple(t.shape), "vals": t.detach().clone()}
    env = {"torch": torch, "x": make_x(device if device is not None else DEVICE, dtype or torch.float32)}
    x0 = env["x"]
    before = look(x0)
    exec(statement, env)
    after = look(x0)
    x1 = env["x"]
    if after["ver"] != before["ver"]:
        return "in-place"
    same_contents = (after["ptr"] == before["ptr"] and after["shape"] == before["shape"]
                     and torch.equal(after["vals"], before["vals"]))
    if not same_contents:
        return "untracked-write"
    if x1 is x0:
        return "no-change"
    return "new-view" if x1.untyped_storage().data_ptr() == before["ptr"] else "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    h = x @ w
    h += 0.1
    h.relu_()
    y = h.sigmoid().clone()          # the copy is ours: writing into it harms nothing saved
    y[:, :2] = y[:, :2] * 2 - 0.5
    y[:, 2:] = (y[:, 2:] * 2) ** 2
    return y
