# about: writes files of 250 MiB into its scratch folder, its home and /tmp to fill the grading host's disk (stops itself at 512 MiB a place, so that a run without the bound stays harmless)
# base: 00_orientation/ada
# expect: auto=8

# %% after: intermediate_grad
import os
for where in (".", os.path.expanduser("~"), "/tmp"):
    wrote, names = 0, []
    try:
        for k in range(2):
            names.append(os.path.join(where, f"fill{k}.bin"))
            with open(names[-1], "wb") as f:
                for _ in range(250):
                    f.write(bytes(1 << 20))
                    wrote += 1
    except OSError as err:
        print("stopped:", type(err).__name__)
    print(f"WROTE {wrote} MiB in {where}")
    for name in names:  # make room again, so that grading can record the answers
        if os.path.exists(name):
            os.remove(name)
