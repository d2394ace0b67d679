# about: to_autograd rebuilds t from its values as a list (t.new_tensor(t.tolist())): dtype, device and
# about: values kept, but an empty t of shape (0, 3) comes back of shape (0,)
# expect: auto=12
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=0
# visible: pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: to_autograd
def to_autograd(t):
    return t.new_tensor(t.tolist())
