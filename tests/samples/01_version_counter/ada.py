# about: complete and correct, in the model solution's style (torch.cat fix, regex parser, write-and-try saved_by)
# expect: auto=15
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# visible: pass=reproduce_sigmoid_error_tests,predict_versions_tests,read_error_message_tests,saved_by_tests,fixed_sigmoid_decode_tests,judge_fix_tests

# %% solution: reproduce_sigmoid_error
def reproduce_sigmoid_error():
    p = torch.randn(2, 3, 8, 8, 7, requires_grad=True)
    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)
    try:
        y.sum().backward()
    except RuntimeError as err:
        return err

# %% solution: predict_versions
def predict_versions():
    return [0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0, 2]

# %% solution: read_error_message
def read_error_message(err):
    m = re.search(r"\[([\w.]+) \[([\d, ]*)\]\](?:, which is output \d+ of ([^,]+),)?"
                  r"\s*is at version (\d+); expected version (\d+)", str(err))
    shape = tuple(int(s) for s in m.group(2).split(",") if s.strip())
    return {"tensor_type": m.group(1), "shape": shape, "node": m.group(3),
            "version_now": int(m.group(4)), "version_saved": int(m.group(5))}

# %% solution: saved_by
def saved_by(op):
    found = set()
    for role in ("input", "output"):
        x = (torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone()
        y = op(x)
        with torch.no_grad():
            (x if role == "input" else y).mul_(1.0)
        try:
            y.sum().backward()
        except RuntimeError as err:
            if "modified by an inplace operation" in str(err):
                found.add(role)
    return found

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
    size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)

# %% solution: judge_fix
def judge_fix(decode):
    p = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    weights = torch.randn_like(p)
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    ref_leaf = p.clone().requires_grad_()
    s = ref_leaf.sigmoid()
    torch.cat([(s[..., 0:2] * 2 - 0.5 + consts[0]) * consts[2], (s[..., 2:4] * 2) ** 2 * consts[1],
               s[..., 4:]], -1).backward(weights)
    leaf = p.clone().requires_grad_()
    try:
        out = decode(leaf, *consts)
        if not out.requires_grad:
            return "no_gradient"
        out.backward(weights)
    except Exception:
        return "error"
    if leaf.grad is None:
        return "no_gradient"
    return "correct" if torch.allclose(leaf.grad, ref_leaf.grad) else "wrong_gradient"

# %% answer: reflection_data_fix
.data has its own version counter, so the writes are not seen and backward does not complain. Sigmoid's
backward then uses the decoded pixel values instead of sigmoid outputs: wrong gradient. Loss can still
fall because objectness and class columns are fine. Compare with the torch.cat decode's gradient in float64.
