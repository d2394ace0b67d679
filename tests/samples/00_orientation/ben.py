# about: partial: gets the environment right; returns the loss instead of the gradient; uses node.name(),
# about: which spells AccumulateGrad as torch::autograd::AccumulateGrad;
# about: and reads .grad of a non-leaf (None) in the last question
# expect: auto=2
# expect: environment_report_tests=2 cube_sum_grad_tests=0 grad_fn_chain_tests=0 intermediate_grad_tests=0
# visible: pass=environment_report_tests fail=cube_sum_grad_tests,grad_fn_chain_tests,intermediate_grad_tests

# %% solution: environment_report
def environment_report():
    return {"torch": torch.__version__, "device": course_device().type, "cuda": torch.cuda.is_available()}

# %% solution: cube_sum_grad
def cube_sum_grad(values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    loss = (x ** 3).sum()
    loss.backward()
    return loss

# %% solution: grad_fn_chain
def grad_fn_chain(t):
    names, node = [], t.grad_fn
    while node is not None:
        names.append(node.name())
        node = node.next_functions[0][0] if node.next_functions else None
    return names

# %% solution: intermediate_grad
def intermediate_grad(values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = x.sigmoid()
    (h * h).sum().backward()
    return h.grad
