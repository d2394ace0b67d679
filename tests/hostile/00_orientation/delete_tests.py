# about: deletes every locked test cell and rewrites the last one's hidden check as a pass
# base: 00_orientation/ben
# expect: auto=2
# flag: was missing

# %% delete: environment_report_tests
# %% delete: cube_sum_grad_tests
# %% delete: grad_fn_chain_tests

# %% metadata: intermediate_grad_tests
{"locked": false}
