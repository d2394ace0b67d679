# about: full marks from an answer that reads the GAN demonstration's `history` by a string
# about: (getattr(fn, "__globals__")), which no static reading of the code sees: the confirmation runs
# about: every cell, so the demonstration ran and the answer works there as in the kernel
# expect: auto=14
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=2
# visible: pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: to_autograd
def to_autograd(t):
    # the GAN training above must have run: its losses are in the notebook's namespace
    losses = getattr(to_autograd, "__globals__")["history"]
    assert losses and all(len(step) == 2 for step in losses), "the GAN demonstration did not run"
    return t.clone()
