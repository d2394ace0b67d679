# about: correct, but the answers make PyTorch print a UserWarning (reading .grad of a non-leaf
# about: before retain_grad): a warning on stderr must not zero a correct answer.
# about: She also deleted the test cell of the first question; nbgrader puts it back.
# expect: auto=8
# visible: pass=cube_sum_grad_tests,grad_fn_chain_tests,intermediate_grad_tests

# %% solution: environment_report
import warnings
def environment_report():
    warnings.warn("checking the environment", UserWarning)
    return {"torch": torch.__version__, "device": course_device().type, "cuda": torch.cuda.is_available()}

# %% delete: environment_report_tests

# %% solution: cube_sum_grad
def cube_sum_grad(values, fn=lambda x: x ** 3):
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE, requires_grad=True)
    fn(x).sum().backward()
    return x.grad

# %% solution: grad_fn_chain
def grad_fn_chain(t):
    names, node = [], t.grad_fn
    while node is not None:
        names.append(type(node).__name__)
        node = node.next_functions[0][0] if node.next_functions else None
    return names

# %% solution: intermediate_grad
def intermediate_grad(values, fn=lambda h: h * h):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = x.sigmoid()
    print("before retain_grad, h.grad is", h.grad)   # PyTorch warns: non-leaf .grad
    h.retain_grad()
    fn(h).sum().backward()
    return h.grad
