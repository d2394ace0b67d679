# about: a fork storm (children that fork and sleep forever), after answering like ada
# base: 00_orientation/ada
# expect: auto=8

# %% after: intermediate_grad
import os, time
for _ in range(5000):
    try:
        if os.fork() == 0:
            try:
                os.fork()
            except OSError:
                pass
            time.sleep(600)
            os._exit(0)
    except OSError:
        break
