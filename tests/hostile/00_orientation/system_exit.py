# about: sys.exit, raise SystemExit and KeyboardInterrupt in cells of their own: only those cells fail
# base: 00_orientation/ada
# expect: auto=8

# %% after: environment_report_tests
import sys
sys.exit(3)

# %% after: cube_sum_grad_tests
raise SystemExit("bye")

# %% after: grad_fn_chain_tests
raise KeyboardInterrupt
