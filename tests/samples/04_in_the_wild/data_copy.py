# about: silences the GAN error with .data copies of D's weights in G's pass (their own version counter):
# about: the step writes into the shared memory unseen, G's gradient mixes old activations and new weights
# expect: auto=10
# expect: reproduce_gan_error_tests=2 train_step_tests=0 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: fail=train_step_tests pass=reproduce_gan_error_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: train_step
def train_step(G, D, opt_g, opt_d, real, z):
    fake = G(z)
    opt_d.zero_grad()
    loss_d = d_loss(D(real), D(fake.detach()))
    loss_d.backward()
    weights = {name: p.data for name, p in D.named_parameters()}
    d_fake = torch.func.functional_call(D, weights, (fake,))
    opt_d.step()
    opt_g.zero_grad()
    loss_g = g_loss(d_fake)
    loss_g.backward()
    opt_g.step()
    return loss_d.item(), loss_g.item()
