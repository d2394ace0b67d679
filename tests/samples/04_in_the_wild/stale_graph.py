# about: silences the GAN error with retain_graph=True on the stale graph: both backward passes before
# about: both steps, so D steps with loss_d's + loss_g's gradient and G's goes through the old D
# expect: auto=10
# expect: reproduce_gan_error_tests=2 train_step_tests=0 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: fail=train_step_tests pass=reproduce_gan_error_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: train_step
def train_step(G, D, opt_g, opt_d, real, z):
    d_fake = D(G(z))
    loss_d, loss_g = d_loss(D(real), d_fake), g_loss(d_fake)
    opt_d.zero_grad()
    opt_g.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_g.zero_grad()
    loss_g.backward()
    opt_d.step()
    opt_g.step()
    return loss_d.item(), loss_g.item()
