# about: drops IPython start-up files (and a sitecustomize) that would give the next student's kernel ada's answers
# base: 00_orientation/ben
# expect: auto=2

# %% first:
import os, pathlib
code = "import builtins\nbuiltins.HOSTILE = True\n"
for d in [os.path.expanduser("~/.ipython/profile_default/startup"), os.environ.get("IPYTHONDIR", "") + "/profile_default/startup",
          "/root/.ipython/profile_default/startup", "/tmp/.ipython/profile_default/startup"]:
    try:
        pathlib.Path(d).mkdir(parents=True, exist_ok=True)
        pathlib.Path(d, "00-hostile.py").write_text(code)
    except OSError:
        pass
for d in __import__("site").getsitepackages():
    try:
        pathlib.Path(d, "sitecustomize.py").write_text(code)
    except OSError:
        pass
