# about: 300 cells of its own, each printing almost 1 MiB (under the per-cell cap): 300 MB of outputs for the autograded notebook and the feedback
# base: 00_orientation/ada
# expect: auto=8
# flag: per notebook

# %% extra-cells: 300
print("z" * 1_000_000)
