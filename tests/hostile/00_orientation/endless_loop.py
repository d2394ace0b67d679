# about: an endless loop inside a graded function, hit by every test of it; the rest is ben's
# base: 00_orientation/ben
# expect: auto=2

# %% solution: cube_sum_grad
def cube_sum_grad(values):
    while True:
        pass
