# about: an endless loop inside a graded function, hit by every test of it; the rest is ben's
# base: 00_orientation/ben
# expect: auto=2

# %% solution: square_sum_grad
def square_sum_grad(values):
    while True:
        pass
