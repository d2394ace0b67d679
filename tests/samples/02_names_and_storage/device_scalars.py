# about: complete and correct, with constants a GPU accepts: the classifier keeps its witnesses in a tuple;
# about: the fix uses a Python number, a 0-dim CPU tensor of x's dtype and a mask made with device=x.device
# expect: auto=9
# expect: classify_update_rebind_vs_inplace_tests=2 classify_update_new_view_tests=1 classify_update_no_change_tests=1 classify_update_untracked_and_version_tests=2 fixed_model_forward_tests=1 fixed_model_gradients_tests=2

# %% solution: classify_update
def classify_update(statement, device=None, dtype=None):
    if device is None:
        device = DEVICE
    if dtype is None:
        dtype = torch.float32
    x0 = make_x(device, dtype)
    before = (x0._version, x0.untyped_storage().data_ptr(), tuple(x0.shape), x0.detach().clone())
    scope = {"torch": torch, "x": x0}
    exec(statement, scope)
    x1 = scope["x"]
    version, ptr, shape, values = before
    if x0._version != version:
        return "in-place"
    if x0.untyped_storage().data_ptr() != ptr or tuple(x0.shape) != shape or not torch.equal(x0.detach(), values):
        return "untracked-write"
    if x1 is x0:
        return "no-change"
    if x1.untyped_storage().data_ptr() == ptr:
        return "new-view"
    return "new-tensor"

# %% solution: fixed_model
def fixed_model(x, w):
    bias = torch.tensor(0.1, dtype=x.dtype)            # 0-dim: fine next to a tensor on any device
    y = torch.sigmoid(torch.relu(x @ w + bias))
    first = torch.arange(4, device=x.device) < 2       # made on x's device
    return torch.where(first, 2 * y - 0.5, 4 * y * y)
