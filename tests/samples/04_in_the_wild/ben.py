# about: complete and correct, other styles: recomputes G(z) and freezes D during G's step, decides on
# about: a float64 copy with its own loop and a model rebuilt from a list, Function saves the output
# about: under another name, clone made under no_grad
# expect: auto=14
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests

# %% solution: reproduce_gan_error
def reproduce_gan_error():
    torch.manual_seed(4)
    G, D = make_gan(seed=0)
    opt_g, opt_d = make_optimizers(G, D, lr=0.3)
    out = D(G(torch.randn(10, 2)))
    ld = d_loss(D(ring_data(10, seed=3)), out)
    lg = g_loss(out)
    ld.backward(retain_graph=True)
    opt_d.step()
    caught = None
    try:
        lg.backward()
    except RuntimeError as e:
        caught = e
    return caught

# %% solution: train_step
def train_step(G, D, opt_g, opt_d, real, z):
    for p in D.parameters():
        p.grad = None
    with torch.no_grad():
        fake = G(z)
    ld = d_loss(D(real), D(fake))
    ld.backward()
    opt_d.step()
    for p in D.parameters():
        p.requires_grad_(False)
    opt_g.zero_grad(set_to_none=True)
    lg = g_loss(D(G(z)))
    lg.backward()
    opt_g.step()
    for p in D.parameters():
        p.requires_grad_(True)
    return ld.detach().item(), lg.detach().item()

# %% solution: safe_inplace
def safe_inplace(model):
    probe = copy.deepcopy(model).double().cpu()
    acts = [i for i, m in enumerate(probe) if hasattr(m, "inplace")]
    for i in acts:
        probe[i].inplace = False
    x0 = torch.rand(3, probe[0].in_features, dtype=torch.float64) * 4 - 2
    up = torch.rand(3, probe(x0).shape[-1], dtype=torch.float64)

    def grads():
        x = x0.clone().requires_grad_()
        return torch.autograd.grad((probe(x) * up).sum(), [x] + list(probe.parameters()))

    want = grads()
    for i in acts:
        probe[i].inplace = True
        try:
            got = grads()
            probe[i].inplace = all(torch.allclose(a, b) for a, b in zip(got, want))
        except RuntimeError:
            probe[i].inplace = False
    for i in acts:
        model[i].inplace = probe[i].inplace
    return model

# %% solution: sigmoid_inplace
class SigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        out = inp.sigmoid_()
        ctx.mark_dirty(inp)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * (out - out * out)

# %% solution: to_autograd
def to_autograd(t):
    with torch.no_grad():
        return t.clone()
