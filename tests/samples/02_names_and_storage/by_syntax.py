# about: misconception "+= always rebinds": classifies by reading the statement instead of measuring
# about: (x += 1 taken for x = x + 1); the model fix itself is right (written with torch.stack/split)
# expect: auto=3
# expect: classify_update_rebind_vs_inplace_tests=0 classify_update_new_view_tests=0 classify_update_no_change_tests=0 classify_update_untracked_and_version_tests=0 fixed_model_forward_tests=1 fixed_model_gradients_tests=2
# visible: fail=classify_update_rebind_vs_inplace_tests,classify_update_new_view_tests,classify_update_no_change_tests,classify_update_untracked_and_version_tests pass=fixed_model_forward_tests,fixed_model_gradients_tests

# %% solution: classify_update
import re
def classify_update(statement, device=None, dtype=None):
    # "x += 1 is short for x = x + 1", so any assignment to x makes a new tensor
    if re.match(r"\s*x\s*(=|\+=|-=|\*=|/=)", statement) and not re.match(r"\s*x\s*==", statement):
        return "new-tensor"
    if re.search(r"\w_\(", statement) or re.match(r"\s*x\[", statement) or "out=x" in statement:
        return "in-place"
    return "no-change"

# %% solution: fixed_model
def fixed_model(x, w):
    y = torch.sigmoid(torch.clamp(torch.addmm(torch.full((1, 4), 0.1, dtype=x.dtype, device=x.device), x, w), min=0))
    xy, wh = y.split(2, dim=1)
    return torch.cat((xy * 2 - 0.5, (2 * wh).pow(2)), dim=1)
