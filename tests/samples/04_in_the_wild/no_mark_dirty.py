# about: the in-place sigmoid without ctx.mark_dirty: its own gradient is right, every later use of the
# about: overwritten input gets a silently wrong one, and a leaf is overwritten without an error
# expect: auto=11
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=0 to_autograd_tests=2
# visible: fail=sigmoid_inplace_tests pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,to_autograd_tests
# base: ada

# %% solution: sigmoid_inplace
class SigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.sigmoid_()
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)
