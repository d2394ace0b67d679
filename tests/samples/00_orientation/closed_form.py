# about: correct values written as formulas (3 * x**2, 2 * h) where the tasks ask autograd to compute
# about: them: no backward pass runs, and both the visible and the hidden tests say so
# expect: auto=4
# expect: environment_report_tests=2 cube_sum_grad_tests=0 grad_fn_chain_tests=2 intermediate_grad_tests=0
# visible: pass=environment_report_tests,grad_fn_chain_tests fail=cube_sum_grad_tests,intermediate_grad_tests
# base: ada

# %% solution: cube_sum_grad
def cube_sum_grad(values):
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE)
    return 3 * x ** 2

# %% solution: intermediate_grad
def intermediate_grad(values):
    h = torch.tensor(values, dtype=torch.float64).sigmoid()
    return 2 * h
