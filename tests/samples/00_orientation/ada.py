# about: complete and correct, written differently from the model solution
# expect: auto=8
# visible: pass=environment_report_tests,cube_sum_grad_tests,grad_fn_chain_tests,intermediate_grad_tests

# %% solution: environment_report
def environment_report():
    has_gpu = torch.cuda.is_available()
    return dict(torch=str(torch.__version__), device="cuda" if has_gpu else "cpu", cuda=has_gpu)

# %% solution: cube_sum_grad
def cube_sum_grad(values, fn=lambda x: x ** 3):
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE).requires_grad_()
    loss = fn(x).sum()
    (grad,) = torch.autograd.grad(loss, x)
    return grad

# %% solution: grad_fn_chain
def grad_fn_chain(t):
    if t.grad_fn is None:
        return []
    node, rest = t.grad_fn, []
    if node.next_functions and node.next_functions[0][0] is not None:
        class _T: grad_fn = node.next_functions[0][0]
        rest = grad_fn_chain(_T)
    return [type(node).__name__] + rest

# %% solution: intermediate_grad
def intermediate_grad(values, fn=lambda h: h * h):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = x.sigmoid()
    (dh,) = torch.autograd.grad(fn(h).sum(), h)
    return dh
