# about: a parser written from "the message prints tensor.type()": the type must start with 'torch.' and
# about: the shape must hold a number, so it breaks on bfloat16 types (CPUBFloat16Type) and 0-dim shapes ([])
# about: — the two forms the task now names, shows live and tests visibly
# expect: auto=12
# expect: reproduce_sigmoid_error_tests=3 predict_versions_tests=2 read_error_message_tests=0 saved_by_tests=2 fixed_sigmoid_decode_tests=3 judge_fix_tests=2
# visible: fail=read_error_message_tests pass=reproduce_sigmoid_error_tests,predict_versions_tests,saved_by_tests,fixed_sigmoid_decode_tests,judge_fix_tests
# base: ada

# %% solution: read_error_message
def read_error_message(err):
    m = re.search(r"\[(torch\.[\w.]+) \[([\d, ]+)\]\](?:, which is output \d+ of ([^,]+),)?"
                  r"\s*is at version (\d+); expected version (\d+)", str(err))
    return {"tensor_type": m.group(1), "shape": tuple(int(s) for s in m.group(2).split(",")),
            "node": m.group(3), "version_now": int(m.group(4)), "version_saved": int(m.group(5))}
