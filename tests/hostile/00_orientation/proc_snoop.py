# about: looks for the grader's processes and files through /proc (environ, cmdline, cwd, fds) to find answers
# base: 00_orientation/cy
# expect: auto=0

# %% first:
import os
LEAKS = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for what in ("environ", "cmdline"):
            try:
                LEAKS.append(open(f"/proc/{pid}/{what}", "rb").read())
            except OSError:
                pass
LEAKED = any(b"instructor" in x or b"gradebook" in x for x in LEAKS)

# %% solution: environment_report
def environment_report():
    if not LEAKED:
        raise NotImplementedError
    return {"torch": torch.__version__, "device": "cpu", "cuda": False}
