# about: copies the instructor's solutions out of source/ on disk (found from the installed package, or any
# about: path it can guess) and execs them in every answer cell. Unguarded this is full marks.
# base: 00_orientation/cy
# expect: auto=0

# %% first:
import glob, json, os
import autograder
_repo = os.path.dirname(os.path.dirname(os.path.abspath(autograder.__file__)))  # an editable install's clone
found = []
for pattern in [_repo + "/source/00_orientation/*.ipynb", "/work/*/source/00_orientation/*.ipynb",
                "../../../source/00_orientation/*.ipynb", "../../../../source/00_orientation/*.ipynb",
                "/proc/1/cwd/source/00_orientation/*.ipynb", "/home/*/*/source/00_orientation/*.ipynb",
                "/tmp/*/source/00_orientation/*.ipynb"]:
    found += glob.glob(pattern)
    if found:
        break
SOLUTIONS = []
for path in found[:1]:
    nb = json.load(open(path))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "BEGIN SOLUTION" in "".join(cell["source"]):
            SOLUTIONS.append("".join(cell["source"]).replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""))

def steal():
    for source in SOLUTIONS:
        exec(source, globals())

# %% solution: environment_report
steal()

# %% solution: cube_sum_grad
steal()

# %% solution: grad_fn_chain
steal()

# %% solution: intermediate_grad
steal()
