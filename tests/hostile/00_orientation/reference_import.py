# about: answers by importing the instructor's hidden checks and references: not visible in the sandbox
# base: 00_orientation/cy
# expect: auto=0

# %% solution: cube_sum_grad
import sys
sys.path[:0] = ["/work/main", "../../..", "../../../.."]
from instructor.hidden.a00_orientation import SquareSumGrad  # the instructor side: must not exist here
def cube_sum_grad(values):
    return 3 * torch.tensor(values, dtype=torch.float64) ** 2 if SquareSumGrad else None
