# about: builds the RuntimeError by hand with the right words instead of letting backward raise it:
# about: the visible tests pass, the hidden test sees it never went through autograd
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=0 predict_versions_tests=2 read_error_message_tests=3 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# base: ada

# %% solution: reproduce_sigmoid_error
def reproduce_sigmoid_error():
    try:
        raise RuntimeError("one of the variables needed for gradient computation has been modified by an "
                           "inplace operation: [torch.FloatTensor [2, 3, 8, 8, 7]], which is output 0 of "
                           "Sigmoid, is at version 2; expected version 0 instead.")
    except RuntimeError as err:
        return err
