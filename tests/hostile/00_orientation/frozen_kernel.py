# about: stops its own kernel with SIGSTOP after the first test (a frozen kernel), then the rest like ada
# base: 00_orientation/ada
# expect: auto=8

# %% after: environment_report_tests
import os, signal
os.kill(os.getpid(), signal.SIGSTOP)
