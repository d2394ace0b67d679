# about: complete and correct, other styles: fn(x) summed with torch.sum, a report built
# about: key by key, the chain walked with a for loop, and h made a leaf of its own
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
def cube_sum_grad(values, fn=lambda x: x ** 3):
    x = torch.tensor(values, dtype=torch.float64, device=DEVICE, requires_grad=True)
    torch.sum(fn(x)).backward()
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
def intermediate_grad(values, fn=lambda h: h * h):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = torch.sigmoid(x).detach().requires_grad_()
    torch.sum(fn(h)).backward()
    return h.grad
