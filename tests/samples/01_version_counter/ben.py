# about: complete and correct, other styles: writes the scenario himself, clone fix, a parser built with
# about: str.partition/split, saved_by by comparing every node's _saved_* tensors with input and output memory
# expect: auto=15
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2

# %% solution: reproduce_sigmoid_error
def reproduce_sigmoid_error():
    logits = torch.randn(1, 3, 6, 5, 9).requires_grad_()
    y = logits.sigmoid()
    y[..., 0:2] = y[..., 0:2] * 2 - 0.5
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2
    try:
        (y * y).mean().backward()
    except RuntimeError as e:
        error = e
    return error

# %% solution: predict_versions
def predict_versions():
    versions = [0, 1, 2]      # zeros, +=, slice assignment
    versions += [4]           # a[1] += 1: add_ into the view, then copy_ back
    versions += [4, 5]        # the view shares a's counter
    versions += [5, 6]        # .data: own counter; detach: shared counter
    versions += [7, 7]        # unsqueeze_ changes the shape in place; requires_grad_ only a flag
    versions += [0, 2]        # a new object, then two in-place methods
    return versions

# %% solution: read_error_message
def read_error_message(err):
    text = str(err)
    inside = text.split("inplace operation: [", 1)[1]
    tensor_type, rest = inside.split(" [", 1)
    dims, rest = rest.split("]]", 1)
    node = None
    if rest.startswith(", which is output"):
        node = rest.split(" of ", 1)[1].split(",", 1)[0]
    now = rest.split("is at version ", 1)[1].split(";", 1)[0]
    saved = rest.split("expected version ", 1)[1].split(" ", 1)[0]
    return dict(tensor_type=tensor_type, shape=tuple(int(d) for d in dims.split(", ") if d),
                node=node, version_now=int(now), version_saved=int(saved))

# %% solution: saved_by
def saved_by(op):
    x = (torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone()
    y = op(x)
    found, todo, seen = set(), [y.grad_fn], set()
    while todo:                                   # every node of op's graph, not only the last one
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        todo += [n for n, _ in node.next_functions]
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            value = getattr(node, name)
            for t in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(t, torch.Tensor):
                    if t.data_ptr() == x.data_ptr():
                        found.add("input")
                    if t.data_ptr() == y.data_ptr():
                        found.add("output")
    return found

# %% solution: fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    y = p.sigmoid().clone()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y

# %% solution: judge_fix
def judge_fix(decode):
    torch.manual_seed(3)
    p = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    up = torch.rand_like(p)
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    good = p.clone().requires_grad_()
    y = good.sigmoid().clone()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + consts[0]) * consts[2]
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * consts[1]
    (want,) = torch.autograd.grad(y, good, up)
    test = p.clone().requires_grad_()
    try:
        out = decode(test, *consts)
        if out.grad_fn is None:
            return "no_gradient"
        (out * up).sum().backward()
    except BaseException:
        return "error"
    if test.grad is None:
        return "no_gradient"
    if torch.allclose(test.grad, want, rtol=1e-6, atol=1e-9):
        return "correct"
    return "wrong_gradient"
