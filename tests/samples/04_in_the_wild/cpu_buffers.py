# about: right on the CPU, wrong on a GPU: SigmoidInPlace's backward makes its ones on the CPU, and
# about: to_autograd copies t into a tensor allocated on the CPU; the hidden tests' meta-device cases
# about: catch both on a grader without a GPU (the visible tests, on the CPU, cannot)
# expect: auto=9
# expect: reproduce_gan_error_tests=2 train_step_tests=4 safe_inplace_tests=3 sigmoid_inplace_tests=0 to_autograd_tests=0
# visible: pass=sigmoid_inplace_tests,to_autograd_tests
# base: ada

# %% solution: sigmoid_inplace
class SigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.sigmoid_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (torch.ones(y.shape, dtype=y.dtype) - y)

# %% solution: to_autograd
def to_autograd(t):
    return torch.empty(t.shape, dtype=t.dtype).copy_(t)
