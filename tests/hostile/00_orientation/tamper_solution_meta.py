# about: turns its answer cells into graded test cells worth points, and its test cells into answer cells
# base: 00_orientation/ben
# expect: auto=2
# flag: metadata was edited

# %% metadata: cube_sum_grad
{"grade": true, "points": 20, "solution": false}

# %% metadata: grad_fn_chain_tests
{"solution": true}
