# about: judge_fix catches only RuntimeError and calls backward without checking requires_grad:
# about: the allow_mutation decode (AssertionError at backward) crashes it and a no_grad decode is called an error
# expect: auto=13
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=0
# visible: fail=judge_fix_tests
# base: ada

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
        out.backward(weights)
    except RuntimeError:
        return "error"
    if leaf.grad is None:
        return "no_gradient"
    return "correct" if torch.allclose(leaf.grad, ref_leaf.grad) else "wrong_gradient"
