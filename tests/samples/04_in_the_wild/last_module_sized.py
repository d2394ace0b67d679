# about: safe_inplace sizes its upstream weights from model[-1].out_features: right only for models that
# about: end in a Linear; the text says a model may end in an activation (the visible test's does)
# expect: auto=11
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=0 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: fail=safe_inplace_tests pass=reproduce_gan_error_tests,train_step_tests,sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: safe_inplace
def safe_inplace(model):
    trial = copy.deepcopy(model).to("cpu", torch.float64)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = False
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, trial[0].in_features, generator=g, dtype=torch.float64)
    w = torch.randn(4, trial[-1].out_features, generator=g, dtype=torch.float64)

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
