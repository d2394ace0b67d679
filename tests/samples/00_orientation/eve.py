# about: complete and correct, other styles: x * x * x, a report built key by key, the chain walked
# about: with a for loop, and h made a leaf of its own
# expect: auto=8
# visible: pass=environment_report_tests,cube_sum_grad_tests,grad_fn_chain_tests,intermediate_grad_tests

# %% solution: environment_report
def environment_report():
    report = {}
    report["torch"] = str(torch.__version__)
    report["device"] = DEVICE.type
    report["cuda"] = torch.cuda.device_count() > 0
    return report

# %% solution: cube_sum_grad
def cube_sum_grad(values):
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE, requires_grad=True)
    (x * x * x).sum().backward()
    return x.grad

# %% solution: grad_fn_chain
def grad_fn_chain(t):
    names, node = [], t.grad_fn
    for _ in range(10_000):
        if node is None:
            break
        names.append(node.__class__.__name__)
        node = node.next_functions[0][0] if len(node.next_functions) > 0 else None
    return names

# %% solution: intermediate_grad
def intermediate_grad(values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = torch.sigmoid(x).detach().requires_grad_()
    (h ** 2).sum().backward()
    return h.grad
