# about: saved_by that reads the saved tensors of the last node only: right for one op, wrong for a
# about: composed function such as t ** 2 + 1 (the add saves nothing; the square saves the input)
# expect: auto=13
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=0 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# visible: fail=saved_by_tests pass=reproduce_sigmoid_error_tests,predict_versions_tests,read_error_message_tests,fixed_sigmoid_decode_tests,judge_fix_tests
# base: ada

# %% solution: saved_by
def saved_by(op):
    x = (torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone()
    y = op(x)
    node = y.grad_fn
    found = set()
    for name in dir(node):
        if name.startswith("_saved_"):
            kept = getattr(node, name)
            if isinstance(kept, torch.Tensor):
                if kept.data_ptr() == x.data_ptr():
                    found.add("input")
                if kept.data_ptr() == y.data_ptr():
                    found.add("output")
    return found
