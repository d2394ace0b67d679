# about: os._exit(0) in a cell of its own after answering the first two questions; the last two come after it
# base: 00_orientation/ada
# expect: auto=8
# flag: ended the python process

# %% after: cube_sum_grad_tests
import os
os._exit(0)
