# about: a 10,000-cell notebook (ada's answers first)
# base: 00_orientation/ada
# expect: auto=8
# flag: cells (limit

# %% extra-cells: 10000
x = 1
