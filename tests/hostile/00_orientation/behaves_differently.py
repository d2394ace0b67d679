# about: correct only when it finds nbgrader's kernel (a test cell in its history), wrong in any other process
# base: 00_orientation/ada
# expect: auto=6

# %% solution: cube_sum_grad
def cube_sum_grad(values, fn=lambda x: x ** 3):
    import sys
    ip = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    in_kernel = ip is not None and type(ip).__name__ == "ZMQInteractiveShell"
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    fn(x).sum().backward()
    return x.grad if in_kernel else x.grad * 0
