# about: SigmoidInPlace keeps its output as ctx.y (mark_dirty right): the first rule of section 3 broken;
# about: a write into y after apply (y.mul_(3)) gives a silently wrong gradient instead of the error
# expect: auto=11
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=0 to_autograd_tests=2
# visible: fail=sigmoid_inplace_tests pass=reproduce_gan_error_tests,train_step_tests,safe_inplace_tests,to_autograd_tests
# base: ada

# %% solution: sigmoid_inplace
class SigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.sigmoid_()
        ctx.mark_dirty(x)
        ctx.y = x
        return x

    @staticmethod
    def backward(ctx, grad):
        y = ctx.y
        return grad * y * (1 - y)
