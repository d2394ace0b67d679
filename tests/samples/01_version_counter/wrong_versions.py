# about: predictions off: thinks .data writes are counted, that a view starts its own counter at 0,
# about: and that `a = a * 1` keeps a's count
# expect: auto=13
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=0 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# base: ada

# %% solution: predict_versions
def predict_versions():
    return [0, 1, 2, 0, 3, 4, 5, 0, 5, 7]
