# about: copies the instructor's solution out of source/ on disk (any path it can guess) and execs it
# base: 00_orientation/cy
# expect: auto=0

# %% first:
import glob, json, os
found = []
for pattern in ["/work/*/source/00_orientation/*.ipynb", "/work/main/source/*/*.ipynb", "../../../source/*/*.ipynb",
                "../../../../source/*/*.ipynb", "/**/source/00_orientation/00_orientation.ipynb", "/proc/1/cwd/source/*/*.ipynb"]:
    found += glob.glob(pattern, recursive=True)
for path in found:
    nb = json.load(open(path))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "BEGIN SOLUTION" in "".join(cell["source"]):
            exec("".join(cell["source"]).replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""))
SOLUTIONS_FOUND = len(found)

# %% solution: environment_report
def environment_report():
    raise NotImplementedError if not SOLUTIONS_FOUND else None
