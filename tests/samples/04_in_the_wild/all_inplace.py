# about: safe_inplace that puts every activation in place without measuring, and an inference fix that
# about: detaches (still an inference tensor)
# expect: auto=9
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=0 sigmoid_inplace_tests=3 to_autograd_tests=0
# visible: fail=safe_inplace_tests,to_autograd_tests pass=reproduce_gan_error_tests,train_step_tests,sigmoid_inplace_tests
# base: ada

# %% solution: safe_inplace
def safe_inplace(model):
    for m in model:
        if hasattr(m, "inplace"):
            m.inplace = True
    return model

# %% solution: to_autograd
def to_autograd(t):
    return t.detach()
