# about: prints 100 MB in one cell (one long line and many short ones)
# base: 00_orientation/ada
# expect: auto=8
# flag: output

# %% after: intermediate_grad
import sys
sys.stdout.write("x" * (60 << 20))
for _ in range(200_000):
    print("y" * 200)
