# about: edits the nbgrader metadata of test cells: 100 points, another grade id, not graded, not locked; ben's answers
# base: 00_orientation/ben
# expect: auto=2
# flag: metadata was edited

# %% metadata: environment_report_tests
{"points": 100}

# %% metadata: cube_sum_grad_tests
{"grade": false, "locked": false}

# %% metadata: intermediate_grad_tests
{"grade_id": "my_own_id", "points": 50}
