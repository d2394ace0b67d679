# about: freezes and kills its parent and its whole process group (the grader, once), then answers correctly
# base: 00_orientation/ada
# expect: auto=8

# %% first:
import os, signal
for target in (os.getppid(), 1):
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(target, sig)
        except OSError:
            pass
try:
    os.killpg(os.getpgid(0), signal.SIGCONT)
except OSError:
    pass
