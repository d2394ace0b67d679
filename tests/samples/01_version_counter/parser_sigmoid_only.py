# about: a parser that only works on the seed's message: the node must be a word after 'output 0 of',
# about: so it breaks on messages without that part and on names with '::'
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=0 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# base: ada

# %% solution: read_error_message
def read_error_message(err):
    m = re.search(r"\[([\w.]+) \[([\d, ]*)\]\], which is output 0 of (\w+), "
                  r"is at version (\d+); expected version (\d+)", str(err))
    return {"tensor_type": m.group(1), "shape": tuple(int(s) for s in m.group(2).split(", ")),
            "node": m.group(3), "version_now": int(m.group(4)), "version_saved": int(m.group(5))}
