# about: silences the GAN error by detaching the wrong tensor: G's loss on D(fake.detach()), so no
# about: gradient ever reaches G and it never learns
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
    opt_d.step()
    opt_g.zero_grad()
    loss_g = g_loss(D(fake.detach()))
    loss_g.backward()
    opt_g.step()
    return loss_d.item(), loss_g.item()
