# about: SigmoidInPlace writes through x.data under ctx.mark_dirty (right: the text says either is fine);
# about: to_autograd returns t * 1, a normal tensor, but a bool t becomes int64 (the visible test has a
# about: bool t)
# expect: auto=12
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=3 to_autograd_tests=0
# visible: fail=to_autograd_tests pass=sigmoid_inplace_tests
# base: ada

# %% solution: sigmoid_inplace
class SigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.data.copy_(x.data.sigmoid())
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)

# %% solution: to_autograd
def to_autograd(t):
    return t * 1
