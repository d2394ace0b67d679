# about: the gradients written as formulas (3 * x**2, 2 * h), fn ignored, each after one unrelated backward pass
# about: (torch.ones(1, requires_grad=True).sum().backward()), so that any count of backward passes taken in its
# about: own process says "autograd ran". Under the old check (a count of backward passes, on the cube and h * h
# about: only) it scored 8/8; the functions drawn at grading time fail both answers, whatever ran
# base: 00_orientation/ada
# expect: auto=4
# expect: environment_report_tests=2 cube_sum_grad_tests=0 grad_fn_chain_tests=2 intermediate_grad_tests=0

# %% solution: cube_sum_grad
def cube_sum_grad(values, fn=lambda x: x ** 3):
    torch.ones(1, requires_grad=True).sum().backward()  # "a backward pass ran"
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE)
    return 3 * x ** 2

# %% solution: intermediate_grad
def intermediate_grad(values, fn=lambda h: h * h):
    torch.ones(1, requires_grad=True).sum().backward()
    return 2 * torch.tensor(values, dtype=torch.float64).sigmoid()
