"""The confirmation run's driver: executed *inside* the sandbox, in a fresh Python process.

It imports nothing from ``instructor`` (that folder is not visible in the sandbox): the grader copies
this one file into the submission's scratch folder and runs it as a script::

    python probe_driver.py JOB.pt OUTDIR

``JOB.pt`` (written by the grader, loaded with ``weights_only=True``) holds

* ``cells``  — the code cells to run: the student's answer cells and the notebook's own set-up and
  lesson cells, with every test cell left out (no hidden check exists in this process);
* ``checks`` — for each graded test cell: its ``grade_id``, the *source* of its probe (what to call,
  no expected value anywhere) and its cases (data the grader chose).

For each check the driver writes ``OUTDIR/<grade_id>.pt``: one plain-data result per case (tensors,
numbers, strings, lists, dicts — :func:`sanitize` drops everything else). ``OUTDIR/progress.txt``
says what was running, so that the grader can tell which cell or which check ended the process when
a submission kills it (``os._exit``, a crash, the memory limit) and run again without it.
"""
from __future__ import annotations

import math
import os
import signal
import sys

MAX_TEXT = 4000        # characters kept of any string a probe returns
MAX_ITEMS = 10_000     # items kept of any list / dict a probe returns
MAX_ELEMENTS = 1 << 24  # elements of one tensor (64 MiB of float32)


HUNG_CASE_SECONDS = 10.0  # a case's time limit once some graded function was seen never to return
HUNG_CELL_SECONDS = 10.0  # a cell's time limit once an earlier cell ran into its own


def timed_out(result) -> bool:
    """Is this case's result the record of a call that never returned?"""
    return isinstance(result, dict) and isinstance(result.get("__error__"), dict) and \
        result["__error__"].get("type") == "Timeout"


class ProbeTimeout(BaseException):
    """A case ran past its time limit (a loop in the student's code)."""


def _exact_str(s) -> str:
    return str.encode(s, "utf-8", "surrogatepass").decode("utf-8", "surrogatepass")[:MAX_TEXT]


def sanitize(value, depth: int = 0):
    """Plain data only, of exact built-in types, whatever the student's objects pretend to be.

    A ``str`` subclass whose ``__eq__`` is always true becomes a real ``str`` of the same characters;
    a tensor subclass becomes a plain tensor copy on the CPU; an object of any other type becomes
    ``{"__object__": "<its type name>"}``: the judge sees what it is, never how it compares.
    """
    import torch

    if depth > 12:
        return {"__object__": "too deeply nested"}
    if value is None or value is True or value is False:
        return value
    if isinstance(value, bool):  # a bool subclass
        return bool.__index__(value) == 1
    if isinstance(value, int):
        return int(int.__repr__(value))
    if isinstance(value, float):
        return float(float.__repr__(value))
    if isinstance(value, str):
        return _exact_str(value)
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            t = torch.Tensor.detach(value)
            if t.layout != torch.strided or t.device.type == "meta":
                return {"__object__": f"tensor with layout {t.layout} on {t.device}"}
            if t.numel() > MAX_ELEMENTS:
                return {"__object__": f"tensor of {t.numel()} elements (too large to return)"}
            plain = torch.empty(t.shape, dtype=t.dtype)
            plain.copy_(t.cpu())
        return plain
    if isinstance(value, torch.dtype):
        return {"__dtype__": _exact_str(str(value)).replace("torch.", "")}
    if isinstance(value, torch.device):
        return {"__device__": _exact_str(str(value))}
    if isinstance(value, (list, tuple)):
        items = [sanitize(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, (set, frozenset)):
        return {"__set__": sorted((sanitize(v, depth + 1) for v in list(value)[:MAX_ITEMS]), key=repr)}
    if isinstance(value, dict):
        out = {}
        for k, v in list(dict.items(value))[:MAX_ITEMS]:
            key = sanitize(k, depth + 1)
            out[key if isinstance(key, str) else "__key__" + repr(key)[:200]] = sanitize(v, depth + 1)
        return out
    return {"__object__": _exact_str(type.__getattribute__(type(value), "__name__"))}


def unwrap(value):
    """Undo :func:`sanitize`'s markers: tuples and sets come back as tuples and sets."""
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(unwrap(v) for v in value["__tuple__"])
        if set(value) == {"__set__"}:
            return set(unwrap(v) for v in value["__set__"] if not isinstance(v, (list, dict)))
        if set(value) == {"__dtype__"} and isinstance(value["__dtype__"], str):
            import torch

            dtype = getattr(torch, value["__dtype__"], None)
            return dtype if isinstance(dtype, torch.dtype) else value
        if set(value) == {"__device__"} and isinstance(value["__device__"], str):
            import torch

            try:
                return torch.device(value["__device__"])
            except (RuntimeError, ValueError):
                return value
        return {k: unwrap(v) for k, v in value.items()}
    return value


def error_record(err: BaseException) -> dict:
    return {"__error__": {"type": type(err).__name__, "message": _exact_str(str(err))[:1500]}}


def student(ns: dict, name: str):
    """The student's object ``name``; a clear NameError when the cell defining it did not run."""
    if name not in ns:
        raise NameError(f"{name} is not defined: its cell did not run, or raised an error, in your notebook")
    return ns[name]


def probe_globals() -> dict:
    import torch

    return {"torch": torch, "math": math, "student": student, "__name__": "probe"}


def compile_probe(source: str, name: str = "probe"):
    g = probe_globals()
    exec(compile(source, f"<probe {name}>", "exec"), g)
    return g["probe"]


class NeverReturned(ProbeTimeout):
    """Raised in place of a notebook function that was seen never to return (see :func:`_stop_calling`)."""


def _hung_name(frame, ns: dict) -> str | None:
    """The notebook's own function (or class, for a method of it) innermost in ``frame``'s stack: the
    one that was running when a time limit fired."""
    if not ns:
        return None
    codes = {}
    for name, obj in list(ns.items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != "__main__":
            continue
        if isinstance(obj, type):
            for member in vars(obj).values():
                code = getattr(getattr(member, "__func__", member), "__code__", None)
                if code is not None:
                    codes.setdefault(code, name)
        elif getattr(obj, "__code__", None) is not None:
            codes[obj.__code__] = name
    while frame is not None:
        if frame.f_code in codes:
            return codes[frame.f_code]
        frame = frame.f_back
    return None


def _stop_calling(frame, ns: dict) -> None:
    """A notebook function never returned: later calls of it — by a later cell, a check, or another
    function of the notebook — fail at once instead of waiting for their own time limit."""
    name = _hung_name(frame, ns)
    if name is None:
        return

    def never_returned(*args, **kwargs):
        raise NeverReturned(f"not run: {name} never returned when it ran before (an endless loop?), so it is "
                            "not called again")

    ns[name] = never_returned


def run_case(probe, ns: dict, case: dict, timeout: float):
    """One probe call, bounded in time; the result as plain data (or an error record)."""
    def on_alarm(signum, frame):
        _stop_calling(frame, ns)
        raise ProbeTimeout(f"still running after {timeout:g} s (an endless loop?)")

    previous = signal.signal(signal.SIGALRM, on_alarm) if timeout else None
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = probe(ns, case)
    except ProbeTimeout as err:
        return {"__error__": {"type": "Timeout", "message": str(err)}}
    except BaseException as err:  # noqa: BLE001 - SystemExit / KeyboardInterrupt from student code too
        return error_record(err)
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    try:
        return sanitize(result)
    except BaseException as err:  # noqa: BLE001
        return error_record(err)


_ALARMS = []  # cells whose time limit fired
_CURRENT = [-1]  # the cell running now
_NS: dict = {}  # the notebook's namespace, once its cells run


def _cell_alarm(signum, frame):
    _ALARMS.append(_CURRENT[0])
    _stop_calling(frame, _NS)
    raise KeyboardInterrupt("the cell ran past its time limit")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()


def main(job_path: str, outdir: str) -> int:
    import torch

    job = torch.load(job_path, weights_only=True)
    os.makedirs(outdir, exist_ok=True)
    progress = os.path.join(outdir, "progress.txt")
    # Student code must not be able to replace this process's view of the job afterwards.
    cells, checks, timeout = list(job["cells"]), list(job["checks"]), float(job.get("case_timeout", 60))
    cell_timeout = float(job.get("cell_timeout", 180))
    cell_limits = [float(x) for x in job.get("cell_limits") or []]
    # the course's demonstration cells do less while the grader runs them (autograder.runtime.grading)
    os.environ["COURSE_GRADING"] = "1"

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="NoColor")
    shell.display_formatter.active_types = ["text/plain"]
    global _NS
    _NS = shell.user_ns
    errors = []
    for i, src in enumerate(cells):
        _write(progress, f"cell {i}\n")
        signal.signal(signal.SIGALRM, _cell_alarm)
        # after one cell ran into its limit (an endless loop), the cells that call the same code would too
        limit = cell_limits[i] if i < len(cell_limits) else cell_timeout
        limit = min(limit, HUNG_CELL_SECONDS) if _ALARMS else limit
        _CURRENT[0] = i
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            res = shell.run_cell(src, store_history=False, silent=False)
        except BaseException:  # noqa: BLE001 - the alarm landing outside the cell's own code
            res = None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        stopped = res is not None and isinstance(res.error_in_exec, NeverReturned)  # it would have hung too
        if res is None or (_ALARMS and _ALARMS[-1] == i) or stopped:
            errors.append({"cell": i, "error": "CellTimeout"})
            continue
        if not res.success:
            err = res.error_in_exec or res.error_before_exec
            errors.append({"cell": i, "error": type(err).__name__ if err is not None else "error"})
    ns = shell.user_ns
    if _ALARMS:  # an answer never returned while the cells ran: the checks will meet it again
        timeout = min(timeout, HUNG_CASE_SECONDS) if timeout else HUNG_CASE_SECONDS
    hung: dict[str, dict] = {}  # function -> the timeout record of the case where it never returned
    for check in checks:
        gid, function = check["grade_id"], check.get("function") or ""
        _write(progress, f"check {gid}\n")
        try:
            if function in hung:  # known to hang: not called again, by this check or any other
                results = [hung[function]] * max(1, len(check["cases"]))
            else:
                probe = compile_probe(check["source"], gid)
                results = []
                for case in check["cases"]:
                    if results and timed_out(results[-1]):
                        results.append(results[-1])  # one endless loop is enough: do not wait for it again
                        continue
                    results.append(run_case(probe, ns, case, timeout))
                if results and timed_out(results[-1]):
                    hung[function] = results[-1]
                    # a function that calls it hangs too: after one endless loop, wait less for the rest
                    timeout = min(timeout, HUNG_CASE_SECONDS) if timeout else HUNG_CASE_SECONDS
        except BaseException as err:  # noqa: BLE001
            results = [error_record(err)]
        tmp = os.path.join(outdir, f".{gid}.tmp")
        torch.save(results, tmp)
        os.replace(tmp, os.path.join(outdir, f"{gid}.pt"))
    torch.save({"cell_errors": sanitize(errors)}, os.path.join(outdir, ".summary.tmp"))
    os.replace(os.path.join(outdir, ".summary.tmp"), os.path.join(outdir, "summary.pt"))
    _write(progress, "done\n")
    return 0


if __name__ == "__main__":
    # Nothing the notebook prints matters here; keep the real streams for the grader's own lines.
    devnull = open(os.devnull, "w")
    sys.stdout = sys.stderr = devnull
    try:
        code = main(sys.argv[1], sys.argv[2])
    except BaseException:  # noqa: BLE001 - the driver itself failed: the grader shows why (the file descriptor
        import traceback   # 2 the grader reads, not the silenced sys.stderr)

        os.write(2, traceback.format_exc()[-4000:].encode("utf-8", "replace"))
        code = 1
    os._exit(code)  # no atexit handlers a submission may have registered
