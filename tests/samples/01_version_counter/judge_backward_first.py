# about: judge_fix calls backward before looking at requires_grad (the steps out of order): a decode
# about: whose result needs no grad (the whole decode under no_grad) makes backward raise, and it is
# about: called "error" instead of "no_gradient"; the visible test has that case
# expect: auto=13
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=0
# visible: fail=judge_fix_tests pass=fixed_sigmoid_decode_tests
# base: ada

# %% solution: judge_fix
def judge_fix(decode):
    p = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    weights = torch.randn_like(p)
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    ref = p.clone().requires_grad_()
    fixed_sigmoid_decode(ref, *consts).backward(weights)
    leaf = p.clone().requires_grad_()
    try:
        out = decode(leaf, *consts)
        out.backward(weights)
    except Exception:
        return "error"
    if not out.requires_grad or leaf.grad is None:
        return "no_gradient"
    return "correct" if torch.allclose(leaf.grad, ref.grad) else "wrong_gradient"
