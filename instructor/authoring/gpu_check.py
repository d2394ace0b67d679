"""``make gpu-check``: every hidden check's CUDA cases, on the reference answers and on each sample.

On a machine with CUDA, ``python -m instructor.authoring.gpu_check`` runs

* the **reference answers** — the source notebook's non-test cells (solution markers removed, as
  :func:`instructor.hidden.mutation.notebook_namespace` runs them), probed and judged in this process —
  on the cases of every hidden check whose device is ``cuda``, one row per (check, device, dtype);
* every **sample submission** (``tests/samples/``) through the confirmation run of grading itself
  (:func:`instructor.engine.confirm.run_probes`: the probe driver in the sandbox, which binds ``/dev/nvidia*``), on the
  same cases only; each question's verdict is compared with the sample's ``# expect:`` line;

prints a table and exits 1 on any surprise: a reference that fails a CUDA case (or whose check cannot
make its cases), a sample whose verdict differs from what it expects, or no CUDA case at all. Without
CUDA it prints why it skipped and exits 0.

Which cases: a case's device is its ``"device"`` key (or that of a dict it holds, e.g. a ``"spec"``):
``"cuda"``/``"cuda:0"``, ``"cpu"``, ``"meta"``; ``None`` means the course device
(:func:`autograder.runtime.course_device`); a case without one runs on the CPU (plain data, no
tensor moved). Its dtype is its ``"dtype"`` key, else the dtype of its first floating-point tensor.
The CUDA cases exist only where ``test_configs()`` offers CUDA, i.e. on a GPU (``COURSE_DEVICE=cpu``
removes them). ``--device cpu`` (or ``meta``) runs the same machinery on that device's cases: it is
how the table and the exit status are tested on a machine without a GPU.

A sample expected to *fail* a question may pass its CUDA cases (its mistake shows on a CPU-only
input, e.g. bfloat16 or an integer dtype): its other cases then run too, and the question is a
surprise only when they all pass.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["case_device", "case_dtype", "split_cases", "expected_verdicts", "compare", "GroupRow",
           "QuestionRow", "run_references", "run_sample", "main", "SKIP_MESSAGE"]

SKIP_MESSAGE = ("gpu-check: no CUDA device (torch.cuda.is_available() is False): skipped; "
                "run it on a machine with a GPU")

_MISSING = object()


# --------------------------------------------------------------------------- which cases

def case_device(case: dict) -> str:
    """The device type a case runs on: "cuda", "cpu", "meta" (see the module's docstring)."""
    dev = case.get("device", _MISSING) if isinstance(case, dict) else _MISSING
    if dev is _MISSING:
        dev = next((v["device"] for v in case.values() if isinstance(v, dict) and "device" in v), _MISSING)
    if dev is _MISSING:
        return "cpu"
    if dev is None:
        from autograder.runtime import course_device

        return course_device().type
    import torch

    return torch.device(str(dev)).type


def case_dtype(case: dict) -> str:
    """The dtype of a case's input, as a name ("float16"); "default" when it leaves it to the function."""
    import torch

    def name(dt) -> str:
        return str(dt).replace("torch.", "")

    if "dtype" in case:
        return "default" if case["dtype"] is None else name(case["dtype"])
    for v in case.values():
        if isinstance(v, dict) and "dtype" in v and v["dtype"] is not None:
            return name(v["dtype"])
    tensors = [v for v in case.values() if isinstance(v, torch.Tensor)]
    for t in tensors:
        if t.is_floating_point() or t.is_complex():
            return name(t.dtype)
    return name(tensors[0].dtype) if tensors else "-"


def split_cases(cases: list[dict], device: str) -> tuple[list[tuple[str, list[int]]], list[int]]:
    """([(dtype, indices of the cases on ``device`` with that dtype)], indices of all other cases),
    dtypes in the order they first appear."""
    groups: dict[str, list[int]] = {}
    others = []
    for i, case in enumerate(cases):
        if case_device(case) == device:
            groups.setdefault(case_dtype(case), []).append(i)
        else:
            others.append(i)
    return list(groups.items()), others


# --------------------------------------------------------------------------- expectations

def expected_verdicts(sample, points: dict[str, float]) -> dict[str, bool | None]:
    """Per autograded question (``points``: grade id -> points): True (must pass), False (must fail) or
    None (the sample does not say). Questions its ``# expect:`` line leaves out follow from ``auto=``
    when it fixes them: nothing left (all fail) or every remaining point (all pass)."""
    want: dict[str, bool | None] = {g: sample.expect_questions[g] > 0 for g in points if g in sample.expect_questions}
    rest = [g for g in points if g not in want]
    if rest:
        left = (sample.expect_auto or 0) - sum(sample.expect_questions[g] for g in want)
        outcome = False if left == 0 else True if left == sum(points[g] for g in rest) else None
        want.update({g: outcome for g in rest})
    return want


def compare(want: bool | None, selected_passed: bool, others_passed: bool | None) -> tuple[str, bool]:
    """(what the row says, surprise?) for one question of a sample.

    ``selected_passed``: its cases on the checked device all passed; ``others_passed``: its other cases
    (None: it has none, or they were not run)."""
    if want is None:
        return "not stated", False
    if want:
        return ("ok", False) if selected_passed else ("SURPRISE: expected pass", True)
    if not selected_passed:
        return "ok", False
    if others_passed is False:
        return "ok (fails on its other cases)", False
    return "SURPRISE: expected fail", True


# --------------------------------------------------------------------------- rows

@dataclass
class GroupRow:
    """One (check, device, dtype) group of the reference answers."""
    assignment: str
    check: str
    device: str
    dtype: str
    cases: int
    passed: bool
    seconds: float
    message: str = ""

    @property
    def surprise(self) -> bool:
        return not self.passed


@dataclass
class QuestionRow:
    """One question of one sample: its cases on the device, its verdict there and the comparison."""
    check: str
    device: str
    dtypes: list[str]
    cases: int
    passed: bool
    failed_dtypes: list[str]
    want: bool | None
    result: str
    surprise: bool
    message: str = ""


@dataclass
class SampleReport:
    assignment: str
    student: str
    seconds: float = 0.0
    sandboxed: bool = False
    flags: list[str] = field(default_factory=list)
    rows: list[QuestionRow] = field(default_factory=list)
    error: str = ""

    @property
    def surprise(self) -> bool:
        return bool(self.error) or any(r.surprise for r in self.rows)


# --------------------------------------------------------------------------- running

_CASES: dict[str, list] = {}


def _selected(assignment: str, device: str) -> list[tuple]:
    """[(check, cases, groups, others, error)] of the checks of ``assignment`` (cached per process)."""
    key = f"{assignment}@{device}"
    if key not in _CASES:
        from ..hidden import checks_for

        out = []
        for check in checks_for(assignment):
            try:
                cases = check.cases()
                groups, others = split_cases(cases, device)
                out.append((check, cases, groups, others, ""))
            except Exception as err:  # noqa: BLE001 - reported as a surprise
                out.append((check, [], [], [], f"{check.grade_id}.cases() raised {type(err).__name__}: {err}"[:600]))
        _CASES[key] = out
    return _CASES[key]


def run_references(assignment: str, device: str) -> tuple[list[GroupRow], list[str], list[str]]:
    """(rows, checks without a case on ``device``, errors): the source notebook's answers, in process."""
    from ..hidden import judge_results, probe_source
    from ..hidden.mutation import notebook_namespace
    from ..hidden.probe_driver import compile_probe, run_case

    rows, without, errors = [], [], []
    selected = _selected(assignment, device)
    if not any(groups for _, _, groups, _, _ in selected) and not any(e for *_, e in selected):
        return rows, [c.grade_id for c, *_ in selected], errors
    ns = notebook_namespace(assignment)
    for check, cases, groups, _, error in selected:
        if error:
            errors.append(error)
            continue
        if not groups:
            without.append(check.grade_id)
            continue
        probe = compile_probe(probe_source(check), check.grade_id)
        for dtype, idx in groups:
            mine = [cases[i] for i in idx]
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                results = [run_case(probe, ns, copy.deepcopy(c), check.case_timeout) for c in mine]
                verdict = judge_results(check, copy.deepcopy(mine), results)  # a judge may write into its case
            if device == "cuda":
                import torch

                torch.cuda.synchronize()
            rows.append(GroupRow(assignment, check.grade_id, device, dtype, len(mine), verdict.passed,
                                 time.perf_counter() - t0, verdict.message))
    return rows, without, errors


def _order(groups) -> list[int]:
    """The indices of the cases of ``groups`` in the check's own order (the order grading probes them)."""
    return sorted(i for _, ids in groups for i in ids)


def _judge_groups(check, cases, groups, got):
    """(passed, failed dtypes, first message) of the cases in ``groups`` from the probe's results."""
    from ..hidden import Verdict, judge_results

    idx = _order(groups)
    if got is None or not isinstance(got, list) or len(got) != len(idx):
        try:
            v = judge_results(check, copy.deepcopy([cases[i] for i in idx]),
                              got if isinstance(got, list) or got is None else None)
        except Exception as err:  # noqa: BLE001 - a result of a form the driver never writes
            v = Verdict(check.grade_id, False, f"unreadable result ({type(err).__name__})")
        return v.passed, ([d for d, _ in groups] if not v.passed else []), v.message
    pos = {i: k for k, i in enumerate(idx)}
    failed, message = [], ""
    for dtype, ids in groups:
        try:
            v = judge_results(check, copy.deepcopy([cases[i] for i in ids]), [got[pos[i]] for i in ids])
        except Exception as err:  # noqa: BLE001
            v = Verdict(check.grade_id, False, f"unreadable result ({type(err).__name__})")
        if not v.passed:
            failed.append(dtype)
            message = message or v.message
    return not failed, failed, message


def run_sample(path: str, device: str, use_sandbox: bool = True, flip: tuple[str, ...] = ()) -> SampleReport:
    """One sample's questions on ``device``'s cases, through the confirmation run (sandbox).

    ``flip``: grade ids whose expectation is inverted (only to test that a surprise is reported)."""
    from ..layout import gradebook_layout
    from ..engine.confirm import confirmation_cells, run_probes
    from .samples import build_notebook, parse_sample

    t0 = time.perf_counter()
    sample = parse_sample(Path(path))
    rep = SampleReport(sample.assignment, sample.student)
    try:
        selected = [s for s in _selected(sample.assignment, device) if s[2] and not s[4]]
        points = {c["grade_id"]: c["points"] for c in gradebook_layout(sample.assignment) if c["kind"] == "auto"}
        want = expected_verdicts(sample, points)
        for gid in flip:
            if want.get(gid) is not None:
                want[gid] = not want[gid]
        if not selected:
            return rep
        cells = confirmation_cells(build_notebook(sample)[1])
        checks = [s[0] for s in selected]
        case_lists = [[s[1][i] for i in _order(s[2])] for s in selected]
        results, flags, sandboxed, _ = run_probes(cells, checks, case_lists, use_sandbox=use_sandbox)
        rep.flags += flags
        rep.sandboxed = sandboxed
        pending = []  # (row index, selected item): expected to fail, passed here: run its other cases
        for check, cases, groups, others, _ in selected:
            passed, failed, message = _judge_groups(check, cases, groups, results.get(check.grade_id))
            w = want.get(check.grade_id)
            row = QuestionRow(check.grade_id, device, [d for d, _ in groups], sum(len(i) for _, i in groups),
                              passed, failed, w, "", False, message)
            row.result, row.surprise = compare(w, passed, None)
            if w is False and passed and others:
                pending.append((len(rep.rows), (check, cases, others)))
            rep.rows.append(row)
        if pending:
            more, flags, _, _ = run_probes(cells, [c for _, (c, _, _) in pending],
                                           [[cases[i] for i in others] for _, (_, cases, others) in pending],
                                           use_sandbox=use_sandbox)
            rep.flags += flags
            for k, (check, cases, others) in pending:
                got = more.get(check.grade_id)
                others_passed, _, _ = _judge_groups(check, cases, [("other", others)], got)
                row = rep.rows[k]
                row.result, row.surprise = compare(row.want, row.passed, others_passed)
    except Exception as err:  # noqa: BLE001 - reported as a surprise, the other samples still run
        rep.error = f"{type(err).__name__}: {str(err)[:500]}"
    finally:
        rep.seconds = time.perf_counter() - t0
    return rep


def _run_sample_job(args: tuple) -> SampleReport:
    """A worker's job (``--jobs N``): one sample, in a process of its own."""
    with contextlib.redirect_stdout(io.StringIO()):
        return run_sample(*args)


# --------------------------------------------------------------------------- the table

_HEAD = f"{'check':<46} {'device':<6} {'dtype':<17} {'cases':>5}  {'verdict':<17} {'seconds':>7}"
_SHORT = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "complex64": "c64",
          "int64": "i64", "int32": "i32", "uint8": "u8"}


def _short(dtypes: list[str]) -> str:
    """float16, float32 -> "f16,f32": a sample's question spans several dtypes in one column."""
    return ",".join(_SHORT.get(d, d) for d in dtypes)


def _indent(text: str, width: int = 1000) -> str:
    return "      " + text[:width].replace("\n", "\n      ")


def _print_references(assignment, rows, without, errors, device, out) -> None:
    print(f"\n== {assignment}: reference answers (the source notebook's solution cells, in this process)", file=out)
    if rows:
        print(_HEAD, file=out)
    for r in rows:
        print(f"{r.check:<46} {r.device:<6} {r.dtype:<17} {r.cases:>5}  {'pass' if r.passed else 'FAIL':<17} "
              f"{r.seconds:>7.2f}" + ("   <-- SURPRISE: the reference fails" if r.surprise else ""), file=out)
        if r.surprise:
            print(_indent(r.message), file=out)
    for e in errors:
        print(f"   SURPRISE: {e}", file=out)
    if without:
        print(f"   no case on {device}: {', '.join(without)}", file=out)


def _print_sample(rep: SampleReport, out) -> None:
    how = "sandboxed" if rep.sandboxed else "NOT sandboxed"
    print(f"-- {rep.assignment}/{rep.student}  ({rep.seconds:.1f} s, {how})", file=out)
    for f in rep.flags:
        print(f"   flag: {f}", file=out)
    if rep.error:
        print(f"   SURPRISE: the check itself failed: {rep.error}", file=out)
    for r in rep.rows:
        verdict = "pass" if r.passed else ("FAIL " + _short([d for d in r.failed_dtypes if d != "-"])).strip()
        want = {True: "pass", False: "fail", None: "?"}[r.want]
        print(f"   {r.check:<43} {r.device:<6} {_short(r.dtypes):<17} {r.cases:>5}  {verdict:<17} "
              f"{'':>7}   expect {want}: {r.result}", file=out)
        if r.surprise and r.message:
            print(_indent(r.message), file=out)


def _parse(argv):
    from ..hidden import ASSIGNMENT_MODULES

    p = argparse.ArgumentParser(
        prog="python -m instructor.authoring.gpu_check",
        description="Run every hidden check's CUDA cases on the reference answers and on each sample "
                    "submission; exit 1 on any surprise. Skipped (exit 0) without CUDA.")
    p.add_argument("--assignment", action="append", choices=sorted(ASSIGNMENT_MODULES),
                   help="only this assignment (repeatable; default: all)")
    p.add_argument("--samples", action=argparse.BooleanOptionalAction, default=True,
                   help="also run the sample submissions (default: yes)")
    p.add_argument("--only", nargs="*", metavar="STUDENT", help="only these samples (by file name)")
    p.add_argument("--device", default="cuda",
                   help="the device whose cases run: cuda (default), or cpu / meta to test this check itself")
    p.add_argument("--jobs", type=int, default=0,
                   help="samples run side by side (default: up to 4, one per 4 cores)")
    p.add_argument("--no-sandbox", action="store_true", help="run the samples' confirmation without bubblewrap")
    p.add_argument("--expect-fail-for", action="append", default=[], metavar="GRADE_ID",
                   help=argparse.SUPPRESS)  # tests only: invert the samples' expectation for a question
    return p.parse_args(argv)


def main(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    args = _parse(sys.argv[1:] if argv is None else argv)
    import torch

    device = torch.device(args.device).type
    if device == "cuda" and not torch.cuda.is_available():
        print(SKIP_MESSAGE, file=out)
        return 0
    from ..hidden import ASSIGNMENT_MODULES
    from .samples import load_samples

    t_start = time.perf_counter()
    assignments = args.assignment or list(ASSIGNMENT_MODULES)
    name = f" ({torch.cuda.get_device_name()})" if device == "cuda" else ""
    jobs = args.jobs or max(1, min(4, (os.cpu_count() or 1) // 4))
    how = (f"confirmation runs {'without the sandbox' if args.no_sandbox else 'in the sandbox'}, {jobs} at a time"
           if args.samples else "not run")
    print(f"gpu-check: the cases on {device}{name}, torch {torch.__version__}; samples: {how}", file=out, flush=True)
    surprises: list[str] = []
    n_groups = 0
    for a in assignments:
        try:
            rows, without, errors = run_references(a, device)
        except Exception as err:  # noqa: BLE001 - e.g. a cell of the source notebook fails on this device
            rows, without, errors = [], [], [f"the reference run failed: {type(err).__name__}: {str(err)[:500]}"]
        n_groups += len(rows)
        _print_references(a, rows, without, errors, device, out)
        out.flush()
        surprises += [f"{a}: reference fails {r.check} on {r.device} {r.dtype}" for r in rows if r.surprise]
        surprises += [f"{a}: {e}" for e in errors]
    if n_groups == 0:
        from autograder.runtime import test_configs

        surprises.append(f"no case runs on {device}: test_configs() offers "
                         f"{sorted({str(d) for d, _ in test_configs()})} (is COURSE_DEVICE set?)")
    n_questions = 0
    if args.samples:
        samples = [s for a in assignments for s in load_samples(a) if not args.only or s.student in args.only]
        jobs_args = [(str(s.path), device, not args.no_sandbox, tuple(args.expect_fail_for)) for s in samples]
        print(f"\n== samples: their questions on the {device} cases, against their '# expect:' lines", file=out)
        print(f"{_HEAD}   expect: result", file=out)
        if jobs > 1 and len(samples) > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                reports = pool.map(_run_sample_job, jobs_args)
                for rep in reports:
                    _print_sample(rep, out)
                    out.flush()
                    n_questions += len(rep.rows)
                    surprises += _sample_surprises(rep)
        else:
            for ja in jobs_args:
                rep = _run_sample_job(ja)
                _print_sample(rep, out)
                out.flush()
                n_questions += len(rep.rows)
                surprises += _sample_surprises(rep)
    seconds = time.perf_counter() - t_start
    print(f"\ngpu-check: {n_groups} reference group(s), {n_questions} sample question(s) on {device}, "
          f"{len(surprises)} surprise(s), {seconds:.0f} s", file=out)
    for s in surprises:
        print(f"   SURPRISE: {s}", file=out)
    return 1 if surprises else 0


def _sample_surprises(rep: SampleReport) -> list[str]:
    who = f"{rep.assignment}/{rep.student}"
    found = [f"{who}: {rep.error}"] if rep.error else []
    return found + [f"{who}: {r.check} {'passes' if r.passed else 'fails'} on {r.device} ({r.result})"
                    for r in rep.rows if r.surprise]


if __name__ == "__main__":
    sys.exit(main())
