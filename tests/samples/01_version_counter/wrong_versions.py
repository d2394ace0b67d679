# about: predictions off: one per statement (a[1] += 1 as one write), .data writes counted, a view
# about: starting its own counter at 0, unsqueeze_ as no write, and `a = a * 1` keeping a's count.
# about: The visible test runs VERSION_PROGRAM itself and names the wrong lines (never the values), and
# about: the cell after it prints the measured versions only once all predictions match: the answer
# about: cannot be copied from the notebook's output.
# expect: auto=13
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=0 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# visible: fail=predict_versions_tests pass=fixed_sigmoid_decode_tests
# base: ada

# %% solution: predict_versions
def predict_versions():
    return [0, 1, 2, 3, 0, 4, 5, 6, 6, 7, 7, 9]
