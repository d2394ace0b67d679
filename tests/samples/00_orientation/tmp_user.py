# about: correct, and every answer goes through the disk: mkdtemp, torch.save to a path, NamedTemporaryFile, savefig to /tmp, TemporaryDirectory and a cache under $HOME (a score must not depend on where in the batch it is graded)
# base: ada
# expect: auto=8

# %% after: environment_report
import os, pathlib, tempfile
import matplotlib.pyplot as plt

_plots = [0]

def through_the_disk(t):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "answer.pt")
    torch.save(t, path)
    with tempfile.NamedTemporaryFile(suffix=".png") as f:
        f.write(b"png")
        f.flush()
        if _plots[0] < 2:  # the plots on the first calls of each run only: the tests call this many times
            plt.figure(); plt.plot([0, 1]); plt.savefig(f.name); plt.close("all")
    if _plots[0] < 2:
        plt.figure(); plt.plot([1, 0]); plt.savefig("/tmp/course-plot.png"); plt.close("all")
        _plots[0] += 1
    cache = pathlib.Path.home() / ".cache" / "course"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "note.txt").write_text("cached")
    with tempfile.TemporaryDirectory() as scratch:
        (pathlib.Path(scratch) / "x.txt").write_text("x")
    return torch.load(path)

# %% after: cube_sum_grad
_cube_sum_grad = cube_sum_grad

def cube_sum_grad(*args, **kwargs):
    return through_the_disk(_cube_sum_grad(*args, **kwargs))

# %% after: intermediate_grad
_intermediate_grad = intermediate_grad

def intermediate_grad(*args, **kwargs):
    return through_the_disk(_intermediate_grad(*args, **kwargs))
