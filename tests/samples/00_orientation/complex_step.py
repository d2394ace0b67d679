# about: cube_sum_grad by a complex step (fn on x + ih, one element at a time) instead of autograd: right
# about: to float64 precision for the cube and the visible sin(x) * x, but the drawn functions hold a
# about: .detach() that autograd alone honours, and one drawn op (softplus) rejects complex input; the
# about: judge says autograd did not compute it, not "not implemented"
# expect: auto=6
# expect: environment_report_tests=2 cube_sum_grad_tests=0 grad_fn_chain_tests=2 intermediate_grad_tests=2
# visible: pass=environment_report_tests,cube_sum_grad_tests,grad_fn_chain_tests,intermediate_grad_tests
# base: ada

# %% solution: cube_sum_grad
def cube_sum_grad(values, fn=lambda x: x ** 3):
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE)
    eye = torch.eye(len(values), dtype=torch.float64, device=DEVICE)
    return torch.stack([fn(x + 1e-30j * e).sum().imag / 1e-30 for e in eye])
