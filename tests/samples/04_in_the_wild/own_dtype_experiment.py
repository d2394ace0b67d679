# about: safe_inplace experiments on a CPU copy but in the model's own dtype: in float16/bfloat16 rounding
# about: alone makes an in-place ELU/CELU/SELU's gradients differ (torch.allclose), so those stay out of
# about: place where float64 says they are safe; the visible test (a float64 model) cannot see it
# expect: auto=11
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=0 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: safe_inplace
def safe_inplace(model):
    trial = copy.deepcopy(model).to("cpu")
    dt = next(trial.parameters()).dtype
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = False
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, trial[0].in_features, generator=g, dtype=torch.float64).to(dt)
    w = torch.randn(4, trial(x).shape[-1], generator=g, dtype=torch.float64).to(dt)

    def grads():
        leaf = x.clone().requires_grad_()
        return torch.autograd.grad((trial(leaf) * w).sum(), list(trial.parameters()) + [leaf])

    ref = grads()
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = True
            try:
                m.inplace = all(torch.allclose(a, b) for a, b in zip(grads(), ref))
            except RuntimeError:
                m.inplace = False
    for m, decided in zip(model, trial):
        if hasattr(m, "inplace"):
            m.inplace = decided.inplace
    return model
