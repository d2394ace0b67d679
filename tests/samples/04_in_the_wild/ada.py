# about: complete and correct, in the model solution's style (DCGAN order, float64 experiment on a copy,
# about: mark_dirty, clone outside inference mode)
# expect: auto=14
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests

# %% solution: reproduce_gan_error
def reproduce_gan_error():
    G, D = make_gan(seed=0)
    opt_g, opt_d = make_optimizers(G, D)
    real, z = ring_data(64), torch.randn(64, 2)
    d_fake = D(G(z))
    loss_d = d_loss(D(real), d_fake)
    loss_g = g_loss(d_fake)
    opt_d.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_d.step()
    opt_g.zero_grad()
    try:
        loss_g.backward()
    except RuntimeError as err:
        return err

# %% solution: train_step
def train_step(G, D, opt_g, opt_d, real, z):
    fake = G(z)
    opt_d.zero_grad()
    loss_d = d_loss(D(real), D(fake.detach()))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = g_loss(D(fake))
    loss_g.backward()
    opt_g.step()
    return loss_d.item(), loss_g.item()

# %% solution: safe_inplace
def safe_inplace(model):
    def gradients(model, x, w):
        leaf = x.detach().clone().requires_grad_()
        model.zero_grad(set_to_none=True)
        (model(leaf) * w).sum().backward()
        return [p.grad.clone() for p in model.parameters()] + [leaf.grad.clone()]

    trial = copy.deepcopy(model).to("cpu", torch.float64)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = False
    x = torch.randn(4, trial[0].in_features, dtype=torch.float64)
    w = torch.randn(4, trial(x).shape[-1], dtype=torch.float64)
    ref = gradients(trial, x, w)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = True
            try:
                ok = all(torch.allclose(a, b) for a, b in zip(gradients(trial, x, w), ref))
            except RuntimeError:
                ok = False
            m.inplace = ok
    for m, decided in zip(model, trial):
        if hasattr(m, "inplace"):
            m.inplace = decided.inplace
    return model

# %% solution: sigmoid_inplace
class SigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.sigmoid_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)

# %% solution: to_autograd
def to_autograd(t):
    return t.clone()

# %% answer: reflection_gan_error
opt_d.step() wrote into D's last weight; Linear had saved its transpose [16, 1] to send the gradient back
to its input, which G's backward needs. The step bumped the version from N-1 to N.
