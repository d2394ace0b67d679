# about: complete and correct, third style: reproduces with torch.autograd.grad, torch.where fix,
# about: a parser with named groups, predictions as a tuple
# expect: auto=15
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2

# %% solution: reproduce_sigmoid_error
def reproduce_sigmoid_error():
    p = torch.rand(4, 3, 2, 2, 6, requires_grad=True)
    s = torch.sigmoid(p)
    s[..., :2] = 2 * s[..., :2] - 0.5
    s[..., 2:4] = (2 * s[..., 2:4]) ** 2 * 10
    try:
        torch.autograd.grad(s.sum(), p)
    except RuntimeError as problem:
        return problem
    raise AssertionError("expected an error")

# %% solution: predict_versions
def predict_versions():
    return (0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0, 2)

# %% solution: read_error_message
PATTERN = re.compile(r"\[(?P<kind>\S+) \[(?P<dims>[^\]]*)\]\]"
                     r"(?:, which is output \d+ of (?P<node>[^,]+))?,? is at version (?P<now>\d+); "
                     r"expected version (?P<then>\d+)")

def read_error_message(err):
    m = PATTERN.search(str(err))
    return {"tensor_type": m["kind"],
            "shape": tuple(map(int, filter(None, m["dims"].replace(" ", "").split(",")))),
            "node": m["node"], "version_now": int(m["now"]), "version_saved": int(m["then"])}

# %% solution: saved_by
def saved_by(op):
    def breaks(which):
        x = (torch.rand(3, 4, dtype=torch.float64) + 1).requires_grad_() * 1.0
        y = op(x)
        target = x if which == "input" else y
        with torch.no_grad():
            target.add_(0.0)
        try:
            torch.autograd.grad(y.sum(), x)
            return False
        except RuntimeError:
            return True
    return {which for which in ("input", "output") if breaks(which)}

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    n = s.shape[-1]
    col = torch.arange(n, device=s.device)
    grid_full = torch.nn.functional.pad(grid, (0, n - 2))
    anchor_full = torch.nn.functional.pad(anchor_grid, (2, n - 4))
    centre = (s * 2 - 0.5 + grid_full) * stride
    size = (s * 2) ** 2 * anchor_full
    return torch.where(col < 2, centre, torch.where(col < 4, size, s))

# %% solution: judge_fix
def judge_fix(decode):
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    base = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    w = torch.randn_like(base)
    outcome = {}
    for name, fn in (("ref", fixed_sigmoid_decode), ("cand", decode)):
        leaf = base.clone().requires_grad_()
        try:
            out = fn(leaf, *consts)
            if not out.requires_grad:
                return "no_gradient"
            out.backward(w)
        except Exception:
            return "error"
        outcome[name] = leaf.grad
    if outcome["cand"] is None:
        return "no_gradient"
    return "correct" if torch.allclose(outcome["cand"], outcome["ref"]) else "wrong_gradient"
