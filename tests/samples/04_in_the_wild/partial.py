# about: partial: the error reproduced and the inference-mode fix; the rest left as handed out
# expect: auto=4
# expect: reproduce_gan_error_tests=2 train_step_tests=0 safe_inplace_tests=0 sigmoid_inplace_tests=0 to_autograd_tests=2

# %% solution: reproduce_gan_error
def reproduce_gan_error():
    G, D = make_gan(seed=0)
    opt_g, opt_d = make_optimizers(G, D)
    d_fake = D(G(torch.randn(64, 2)))
    loss_d, loss_g = d_loss(D(ring_data(64)), d_fake), g_loss(d_fake)
    loss_d.backward(retain_graph=True)
    opt_d.step()
    try:
        loss_g.backward()
    except RuntimeError as err:
        return err

# %% solution: to_autograd
def to_autograd(t):
    return t.clone()
