"""Assignment 3's checks: one :class:`~instructor.hidden.Check` per graded test cell (probe, judge,
cases), with the helpers their probes ship into the sandbox and the helpers their judges use."""
from __future__ import annotations

import torch

from autograder.checks import check_tensor, check_true, describe, fail, tolerances
from autograder.runtime import test_configs
from autograder.yolo import LegacyDetect, legacy_decode

from .. import Check
from .cases import (ATTACK_EPS, ATTACK_MARGIN, ATTACK_N, ATTACK_SEED, ATTACK_STEPS, DECODE_CASES, HEAD_CASES,
                    META_NOTE, case_configs, decode_cases, decode_data_case, dtype_name, head_case, meta_head_case,
                    random_heads, random_shapes)
from .references import ReferenceFixedDetect, decode_reference

ASSIGNMENT = "03_yolo_head"

_DT = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16}


def _inputs(case):
    """The case's decode inputs on its device (grader side; the probes have their own copy)."""
    dev = torch.device(case["device"])
    return case["p"].to(dev), case["grid"].to(dev), case["anchor_grid"].to(dev), case["stride"]


# =========================================================================== probe helpers
# (their source is shipped into the sandbox: self-contained, torch / math / autograder only)

def _probe_inputs(case):
    dev = torch.device(case["device"])
    return case["p"].to(dev), case["grid"].to(dev), case["anchor_grid"].to(dev), case["stride"]


def _probe_call(fn, *args):
    """(True, result) or (False, {"type", "message"}); 'not implemented yet' is raised as such."""
    try:
        return True, fn(*args)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - the judge turns it into a message
        return False, {"type": type(err).__name__, "message": str(err)[:1500]}


# =========================================================================== judge helpers

def fail_raised(err: dict, what: str, where: str, fn: str = "decode"):
    text = err.get("message", "")
    if "same device" in text or "Expected all tensors to be on" in text or "not on the expected device" in text:
        line = next((l for l in text.splitlines() if "device" in l and "try next" not in l), "")
        fail(f"{fn} mixes devices", inputs=where, detail=line.strip()[:300],
             hint="a tensor made inside decode lives on the CPU while p is on the GPU: create it with "
                  "device=p.device (or derive it from p: torch.zeros_like, p.new_tensor), or avoid new "
                  "tensors: plain numbers broadcast on any device.")
    fail(f"{what} raised {err.get('type', 'an error')}", inputs=where, detail=text[:800],
         hint="run it yourself on an input like the one above and read the traceback.")


_DEVICE_MIX = ("is not on the expected device", "Expected all tensors to be on the same device",
               "to be on the same device", "found at least two devices")


def _is_device_mix(text: str) -> bool:
    return any(m in text for m in _DEVICE_MIX)


def _fail_cpu_tensor(fn: str, where: str, text: str, hint: str):
    """The message of a meta-device case that met a tensor on the CPU."""
    line = next((l for l in text.splitlines() if "device" in l and "try next" not in l), text)
    fail(f"{fn}: your code creates a tensor on the CPU while its input is on another device; on a GPU "
         f"this fails — {hint}", inputs=where, detail=line.strip()[:300],
         hint="make new tensors on the input's device (device=p.device, torch.zeros_like, p.new_tensor, "
              ".to(x.device)), or use plain Python numbers: they (and 0-dim tensors) mix with any device.")


def _check_shape(y, p, where, what):
    check_tensor(y, what, hint="decode must return the decoded tensor.")
    if tuple(y.shape) != tuple(p.shape):
        hint = "keep every dimension of p."
        if y.dim() == p.dim() and y.shape[:-1] == p.shape[:-1] and y.shape[-1] < p.shape[-1]:
            hint = (f"the last dimension must stay no = nc + 5 = {p.shape[-1]}: x, y, w, h, objectness and "
                    f"every class score. Join the rest too: torch.cat((xy, wh, s[..., 4:]), -1).")
        fail(f"{what} has the wrong shape (dropped columns?)", inputs=where,
             expected=str(tuple(p.shape)), got=str(tuple(y.shape)), hint=hint)


def _diagnose_values(got, expected, p, anchor_grid, stride, where, what):
    """Name the first column group that is wrong, with the most likely mistake."""
    tol = tolerances(p.dtype)
    g, e = got.detach().to(expected.device, torch.float64), expected.detach().double()
    s = p.detach().double().sigmoid()
    st = float(stride)
    ag = anchor_grid.double()
    for cols, name in ((slice(0, 2), "x, y (columns 0:2)"), (slice(2, 4), "w, h (columns 2:4)"),
                       (slice(4, None), "objectness and classes (columns 4:)")):
        if torch.allclose(g[..., cols], e[..., cols], **tol):
            continue
        if cols.start == 0:
            if torch.allclose(g[..., cols] - 0.5 * st, e[..., cols], **tol):
                hint = "every centre is off by +0.5 * stride: the formula is (2*s - 0.5 + grid) * stride (the - 0.5)."
            elif torch.allclose(g[..., cols] * st, e[..., cols], **tol):
                hint = "centres are in grid cells, not pixels: multiply by stride."
            else:
                hint = "centre: (2 * sigmoid(p[..., 0:2]) - 0.5 + grid) * stride."
        elif cols.start == 2:
            if torch.allclose(g[..., cols], 2 * s[..., 2:4] * ag, **tol):
                hint = "sizes are 2*s*anchor: the formula squares it, (2*s)**2 * anchor_grid."
            elif torch.allclose(g[..., cols], (2 * s[..., 2:4]) ** 2, **tol):
                hint = "sizes miss the anchor factor: (2*s)**2 * anchor_grid."
            else:
                hint = "size: (2 * sigmoid(p[..., 2:4])) ** 2 * anchor_grid."
        else:
            hint = "columns 4 onwards are sigmoid(p[..., 4:]) unchanged: objectness, then one score per class."
        diff = (g[..., cols] - e[..., cols]).abs().nan_to_num(float("inf"))
        k = int(diff.argmax())
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(k), diff.shape))
        fail(f"{what}: wrong values in {name}", inputs=where,
             expected=f"{float(e[..., cols].flatten()[k]):.6g} at index {idx} of those columns",
             got=f"{float(g[..., cols].flatten()[k]):.6g}", hint=hint)


def _grad_reference(case):
    """d(sum(w * decode(p)))/dp by autograd of the out-of-place formula, float64, on the CPU."""
    p, grid, ag, stride = case["p"], case["grid"], case["anchor_grid"], case["stride"]
    p64 = p.double().requires_grad_(True)
    (g,) = torch.autograd.grad((decode_reference(p64, grid, ag, stride) * case["w"]).sum(), p64)
    return g


def describe_grad(r: dict) -> str:
    return f"requires_grad={r.get('requires_grad')}, grad_fn={r.get('grad_fn')}"


# =========================================================================== checks: decode

class DecodeMatchesLegacy(Check):
    """``decode(p, grid, anchor_grid, stride)`` values, under ``no_grad``, against ``legacy_decode``.

    Input space: ``p`` of shape (bs, na, ny, nx, nc + 5) with bs 1-4, na 1-4, ny and nx 1-8 (square
    or not), nc 1-80; dtype float64, float32 or float16 on the CPU, and float32 / float16 on CUDA on
    a GPU grader; ``grid`` (1, 1, ny, nx, 2) float32 (whatever p's dtype, as in release 5.0);
    ``anchor_grid`` (1, na, 1, 1, 2) in pixels, float32 or p's dtype; ``stride`` a float, an int, or
    a 0-dim float32 CPU tensor (like ``head.stride[i]``, even when p is on the GPU). Only the values
    are judged here (dtype and device belong to the contract check).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_matches_legacy_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call)

    def cases(self):
        visible = dict(shape=DECODE_CASES[0], dtype=torch.float32, device=test_configs()[-1][0],
                       anchor_dtype=torch.float32, seed=0)
        return decode_cases(0, DECODE_CASES, 8, False, visible)

    @staticmethod
    def probe(ns, case):
        decode = student(ns, "decode")
        p, grid, ag, stride = _probe_inputs(case)
        with torch.no_grad():
            ok, y = _probe_call(decode, p.clone(), grid, ag, stride)
        return {"y": y} if ok else {"raised": y}

    def judge(self, case, r):
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        if "raised" in r:
            fail_raised(r["raised"], "decode(p, ...)", where)
        with torch.no_grad():
            expected = legacy_decode(p.clone(), grid, ag, stride)
        _check_shape(r["y"], p, where, "decode(p, ...)")
        _diagnose_values(r["y"], expected, p, ag, stride, where, "decode(p, ...) differs from the legacy decode")


class DecodeContract(Check):
    """``decode``'s contract: a new tensor of ``p``'s shape, dtype and device; ``p`` unchanged.

    Input space: as for the values (bs 1-4, na 1-4, maps 1-8, nc 1-80, stride number or 0-dim
    tensor), with p float16, float32 or float64 and anchor_grid float32 or p's dtype (the float16 +
    float32 mix is the one that promotes); on the CPU, and on CUDA on a GPU grader (where a tensor
    made on the CPU inside decode shows). A CPU-only grader also runs decode on the ``meta`` device
    (p, grid and anchor_grid there; stride a number, or a 0-dim float32 CPU tensor, which any device
    accepts, as CUDA does): a tensor made on the CPU inside decode (``torch.zeros(...)``,
    ``torch.tensor([...])``, ``make_grid(...)`` without ``device=``) meets p there and raises the
    device mismatch a GPU would raise. Only that mismatch fails a meta case; what meta cannot run
    (reading values: ``.item()``, ``.cpu()``, ``.tolist()``, copying into a tensor made on the CPU)
    is not judged there. Still GPU-only: a result left on the CPU by copying into a CPU tensor, a
    round trip through the CPU, and anything that only CUDA kernels do (float16 arithmetic on the
    device itself).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_contract_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "meta", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call)
    PAIRS = ((torch.float16, torch.float32), (torch.float16, torch.float16),
             (torch.float64, torch.float32), (torch.float32, torch.float32))

    def cases(self):
        devices = sorted({torch.device("cpu"), test_configs()[-1][0]}, key=str)
        shape = dict(bs=2, na=3, ny=3, nx=4, nc=2, stride=8.0)
        cases = []
        for device in devices:
            for dtype, adt in self.PAIRS:
                cases.append(decode_data_case(shape, dtype, device, adt, seed=11))
            for j, s in enumerate(random_shapes(77 + len(cases), 3)):
                dtype, adt = self.PAIRS[j % len(self.PAIRS)]
                cases.append(decode_data_case(s, dtype, device, adt, seed=60 + j))
        for k, (shape, (dtype, adt)) in enumerate(zip(DECODE_CASES[:3], self.PAIRS)):
            case = decode_data_case(shape, dtype, "cpu", adt, seed=90 + k)
            case["device"] = "meta"
            case["label"] = case["label"].replace(" on cpu", " on " + META_NOTE)
            cases.append(case)
        return cases

    @staticmethod
    def probe(ns, case):
        decode = student(ns, "decode")
        p, grid, ag, stride = _probe_inputs(case)
        if case["device"] == "meta":  # no values: report what ran, where the result lives
            try:
                y = decode(p, grid, ag, stride)
            except Exception as err:  # noqa: BLE001 - meta raises NotImplementedError for data reads
                return {"meta_error": {"type": type(err).__name__, "message": str(err)[:1500]}}
            if not isinstance(y, torch.Tensor):
                return {"meta": {"type": type(y).__name__}}
            return {"meta": {"type": "Tensor", "device": str(y.device), "shape": list(y.shape),
                             "dtype": str(y.dtype)}}
        ok, y = _probe_call(decode, p, grid, ag, stride)
        if not ok:
            return {"raised": y}
        out = {"y": y, "same_object": y is p, "p_after": p}
        if isinstance(y, torch.Tensor):
            out["device"] = str(y.device)
            out["dtype"] = str(y.dtype)
        return out

    def _judge_meta(self, case, r):
        p, ag, where = case["p"], case["anchor_grid"], case["label"]
        what = f"decode(p {dtype_name(p.dtype)} on meta, grid float32, anchor_grid {dtype_name(ag.dtype)})"
        if "meta_error" in r:
            if _is_device_mix(r["meta_error"].get("message", "")):
                _fail_cpu_tensor("decode", where, r["meta_error"]["message"],
                                 "a tensor made inside decode without device=p.device meets p.")
            return  # what meta cannot run (reading values) is judged on the CPU cases
        m = r["meta"]
        check_true(m.get("type") == "Tensor", f"{what} did not return a tensor", inputs=where, got=m.get("type"))
        check_true(m["shape"] == list(p.shape), f"{what} has the wrong shape", inputs=where,
                   expected=str(tuple(p.shape)), got=str(tuple(m["shape"])))
        if torch.device(m["device"]).type != "meta":
            fail(f"{what} returned its result on {m['device']}, not on p's device", inputs=where,
                 expected="meta (p's device)", got=m["device"],
                 hint="build the result from p and tensors on p.device; a tensor made with torch.zeros(...) "
                      "without device= lives on the CPU.")
        check_true(m["dtype"] == str(p.dtype), f"{what} has the wrong dtype", inputs=where,
                   expected=str(p.dtype), got=m["dtype"], hint="cast each piece with .to(p.dtype) before cat.")

    def judge(self, case, r):
        if case["device"] == "meta":
            return self._judge_meta(case, r)
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        what = f"decode(p {dtype_name(p.dtype)}, grid float32, anchor_grid {dtype_name(ag.dtype)})"
        if "raised" in r:
            fail_raised(r["raised"], what, where)
        y = r["y"]
        _check_shape(y, p, where, what)
        if r.get("dtype") != str(p.dtype) or y.dtype != p.dtype:
            fail(f"{what} has the wrong dtype", inputs=where, expected=str(p.dtype), got=str(r.get("dtype")),
                 hint="the result must have p's dtype. In float16 the grid is float32, and torch.cat of a "
                      "float16 piece with a float32 piece promotes to float32: cast each piece with "
                      ".to(p.dtype) before cat.")
        if torch.device(r.get("device", "?")).type != p.device.type:
            fail(f"{what} is on the wrong device", inputs=where, expected=str(p.device), got=r.get("device"),
                 hint="build the result from p and tensors on p.device (device=p.device).")
        p_after = r["p_after"]
        check_true(not r["same_object"] and isinstance(p_after, torch.Tensor)
                   and torch.equal(p_after.to(case["p"].dtype), case["p"]),
                   f"{what} changed its input p", inputs=where,
                   hint="decode must leave p alone: start from s = p.sigmoid() (a new tensor), never p.sigmoid_().")


def _probe_grad(decode, p, grid, ag, stride, w):
    """decode(p) and d(sum(w * y))/dp; the in-place report when backward fails (shipped helper)."""
    p = p.detach().clone().requires_grad_(True)
    ok, y = _probe_call(decode, p, grid, ag, stride)
    if not ok:
        return {"raised": y}
    out = {"y": y}
    if not isinstance(y, torch.Tensor):
        return out
    out["requires_grad"] = bool(y.requires_grad)
    out["grad_fn"] = type(y.grad_fn).__name__ if y.grad_fn is not None else None
    if not y.requires_grad:
        return out
    loss = (y.double() * w.to(y.device)).sum() if tuple(y.shape) == tuple(w.shape) else y.double().sum()
    try:
        (g,) = torch.autograd.grad(loss, p)
        out["grad"] = g
    except RuntimeError as err:
        out["backward_error"] = str(err).split(" Hint:")[0][:1500]
        try:
            from autograder.inplace import explain, why_backward_fails

            out["report"] = why_backward_fails(lambda q: decode(q, grid, ag, stride), p) or explain(err) or ""
        except Exception:  # noqa: BLE001 - feedback only
            out["report"] = ""
    return out


class DecodeGradients(Check):
    """Backward through ``decode`` works and d(sum(w * decode(p)))/dp equals autograd of the
    out-of-place formula in float64 (w: fixed random weights per case).

    Input space: as for the values (bs 1-4, na 1-4, maps 1-8, nc 1-80, stride float / int / 0-dim
    tensor; float64, float32, float16 on the CPU, float32 / float16 on CUDA on a GPU grader), with
    ``p`` a leaf that requires grad. Tolerances follow p's dtype. Catches ``no_grad``, ``.detach()``
    (no graph), ``.data`` writes and identity saved-tensor hooks (wrong box gradients, no error),
    and writes left in place (backward raises).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_gradients_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call, _probe_grad)

    def cases(self):
        visible = dict(shape=DECODE_CASES[0], dtype=torch.float64, device=test_configs()[-1][0],
                       anchor_dtype=torch.float64, seed=20)
        return decode_cases(20, DECODE_CASES[:3], 6, True, visible)

    @staticmethod
    def probe(ns, case):
        p, grid, ag, stride = _probe_inputs(case)
        return _probe_grad(student(ns, "decode"), p, grid, ag, stride, case["w"])

    def judge(self, case, r):
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        if "raised" in r:
            fail_raised(r["raised"], "decode(p, ...)", where)
        y = r["y"]
        _check_shape(y, p, where, "decode(p, ...)")
        if not r.get("requires_grad"):
            fail("decode(p, ...) is cut off from p: no gradient can reach p", inputs=where,
                 expected="a result with a grad_fn (requires_grad=True)", got=describe_grad(r),
                 hint="no torch.no_grad() and no .detach() in decode: they silence the error by throwing "
                      "the graph away, so an attack gets no gradient. Build the result out of place "
                      "instead (torch.cat of the pieces).")
        if "backward_error" in r or "grad" not in r:
            fail("backward through decode(p, ...) failed", inputs=where,
                 detail=(r.get("report") or r.get("backward_error") or "no gradient came back")[:1500],
                 hint="a tensor autograd saved (sigmoid's output) was written in place. Compute the "
                      "xy and wh parts as new tensors and join them with torch.cat.")
        g = r["grad"]
        check_tensor(g, "the gradient of decode's output with respect to p", shape=tuple(p.shape))
        g = g.double()
        g_ref = _grad_reference(case)
        tol = tolerances(p.dtype)
        if not torch.allclose(g, g_ref, **tol):
            diff = (g - g_ref).abs().nan_to_num(float("inf"))
            cols = [name for c, name in ((slice(0, 2), "x, y"), (slice(2, 4), "w, h"),
                                         (slice(4, None), "objectness/classes"))
                    if not torch.allclose(g[..., c], g_ref[..., c], **tol)]
            values_ok = torch.allclose(y.double(), decode_reference(p.cpu(), grid.cpu(), ag.cpu(), stride), **tol)
            hint = ("the values are right but the gradient is not: a write hidden from autograd "
                    "(.data, or saved-tensor hooks that return the same tensor) lets backward use the "
                    "decoded numbers instead of sigmoid's output. Don't hide the write: build new "
                    "tensors (torch.cat), or write into a clone." if values_ok else
                    "the gradient follows your formula; fix the values first (see the "
                    "decode_matches_legacy test), e.g. the square in (2*s)**2 * anchor_grid.")
            k = int(diff.argmax())
            fail("decode's gradient with respect to p is wrong", inputs=where,
                 expected=f"{float(g_ref.flatten()[k]):.6g} (autograd of the out-of-place formula, float64)",
                 got=f"{float(g.flatten()[k]):.6g}", detail=f"wrong for the columns: {', '.join(cols)}",
                 hint=hint)


class DecodeNoInplace(Check):
    """No write into the memory of a tensor autograd saved for the backward of ``decode``'s result.

    Input space: as for the gradients: ``p`` a leaf that requires grad, bs 1-4, na 1-4, maps 1-8,
    nc 1-80, float64 / float32 / float16 on the CPU and float32 / float16 on CUDA on a GPU grader,
    stride a number or a 0-dim tensor. The probe runs ``decode`` under
    :func:`autograder.inplace.assert_no_write_on_saved` (dispatch level: every write, whoever makes
    it, matched to the saves by the bytes of storage each covers) and returns its report as data.
    So a write autograd cannot see fails too: through ``.data`` (a tensor with a version counter of
    its own) or into a tensor that identity saved-tensor hooks hand back to backward; neither breaks
    a save or raises, and both make the gradient silently wrong. The probe also runs ``decode`` and a
    backward *outside* the locator and returns what that backward said (error or gradient). The
    judge does not trust a clean report alone: a backward that fails with autograd's in-place error
    fails the case too (a submission may patch the locator in its own process).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_no_inplace_on_saved_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call, _probe_grad)

    def cases(self):
        visible = dict(shape=DECODE_CASES[0], dtype=torch.float32, device=test_configs()[-1][0],
                       anchor_dtype=torch.float32, seed=40)
        return decode_cases(40, DECODE_CASES[:2], 3, True, visible)

    @staticmethod
    def probe(ns, case):
        from autograder.inplace import InplaceOnSavedError, assert_no_write_on_saved

        decode = student(ns, "decode")
        p, grid, ag, stride = _probe_inputs(case)
        q = p.detach().clone().requires_grad_(True)
        out = {"located": True, "report": "", "broken": 0, "unseen": 0}
        try:
            ok, y = assert_no_write_on_saved(_probe_call, decode, q, grid, ag, stride)
        except InplaceOnSavedError as err:
            out.update(report=str(err.report)[:3000], broken=len(err.saved),
                       unseen=sum(1 for s in err.saved if s.message is None))  # written where autograd cannot see
            ok, y = True, None
        if not ok:
            return {"raised": y}
        out["plain"] = _probe_grad(decode, p, grid, ag, stride, case["w"])
        return out

    def judge(self, case, r):
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        if "raised" in r:
            fail_raised(r["raised"], "decode(p, ...)", where)
        hint = ("the lines named above write into sigmoid's output, which backward needs. "
                "Compute new tensors and torch.cat them, or write into y.clone().")
        if r["broken"] and r.get("unseen", 0) == r["broken"]:
            fail("decode writes into the memory of a tensor autograd saved for backward, where autograd "
                 "cannot see it", inputs=where, detail=r["report"] or f"{r['broken']} saved tensor(s) written",
                 hint="hiding a write from autograd (.data, saved-tensor hooks that hand back the same tensor) "
                      "does not make it safe: backward then uses the decoded numbers instead of sigmoid's "
                      "output, and the gradient is silently wrong. Compute new tensors and torch.cat them, or "
                      "write into y.clone().")
        if r["broken"] or r["report"]:
            fail("decode writes in place into a tensor autograd saved for backward", inputs=where,
                 detail=r["report"] or f"{r['broken']} saved tensor(s) written", hint=hint)
        plain = r["plain"]
        if "raised" in plain:
            fail_raised(plain["raised"], "decode(p, ...)", where)
        err = plain.get("backward_error") or ""
        if "modified by an inplace operation" in err or "inplace" in err.lower() and "version" in err:
            fail("decode writes in place into a tensor autograd saved for backward", inputs=where,
                 detail=(plain.get("report") or err)[:1500],
                 hint="backward through your decode fails with autograd's in-place error. " + hint)


# =========================================================================== check: FixedDetect

def _probe_head(ns, case):
    """Build the student's head from the case; (head, None) or (None, the reason as data)."""
    from autograder.yolo import LegacyDetect

    cls = student(ns, "FixedDetect")
    if not isinstance(cls, type):
        return None, {"not_class": repr(cls)[:100]}
    if not issubclass(cls, LegacyDetect):
        return None, {"not_legacy": str(cls.__mro__[1:])[:300]}
    ok, head = _probe_call(lambda: cls(nc=case["nc"], anchors=case["anchors"], ch=case["ch"]))
    if not ok:
        return None, {"construct_error": head}
    ok, res = _probe_call(lambda: head.load_state_dict(case["state"], strict=True))
    if not ok:
        return None, {"load_error": res}
    return cls, head


def _probe_meta_head(head, case, dt):
    """Shapes and devices of a head's outputs on the meta device (shipped helper)."""
    def run(feats, dev):
        try:
            with torch.no_grad():
                res = head([f.to(dev, dt) for f in feats])
        except Exception as err:  # noqa: BLE001 - meta raises NotImplementedError for data reads
            return {"error": {"type": type(err).__name__, "message": str(err)[:1500]}}

        def info(t):
            if isinstance(t, torch.Tensor):
                return {"device": str(t.device), "shape": list(t.shape)}
            if isinstance(t, (list, tuple)):
                return {"seq": type(t).__name__, "items": [info(u) for u in t]}
            return {"type": type(t).__name__}
        return info(res)

    out = {"calls": []}
    head.eval()
    if case["cpu_first"]:
        head.to("cpu", dt)
        first = run(case["calls"][0], "cpu")
        if "error" in first:
            out["cpu_error"] = first["error"]
            return out
    head.to("meta", dt)
    for feats in case["calls"][:2]:
        out["calls"].append(run(feats, "meta"))
        if "error" in out["calls"][-1]:
            return out
    head.train()
    out["train"] = run(case["calls"][0], "meta")
    head.eval()
    head.export = True
    out["export"] = run(case["calls"][0], "meta")
    head.export = False
    return out


class FixedDetectCheck(Check):
    """``class FixedDetect(LegacyDetect)``: a drop-in head whose decoded output is differentiable.

    Input space: any ``LegacyDetect`` configuration — nl 1-3 levels, na 1-4 anchors per level, nc
    1-80, ch 1-8 channels per level, feature maps 1-8 cells a side, strides 4-64 (a float tensor set
    by the owner); batch 1-3; float64, float32, float16 on the CPU, float32 / float16 on CUDA on a
    GPU grader. The head is built with LegacyDetect's constructor, loads a LegacyDetect state dict
    with ``strict=True``, and is called repeatedly: eval mode (``(decoded, raw list)``), at other
    sizes and batch sizes (the grid must follow), back at the first size, in training mode and with
    ``export = True`` (the raw list only), then with features that require grad (gradients must
    equal the reference head's); the second call changes only the width, or only the height, in
    some cases. One more case swaps it into the pretrained detector (``model.with_head(FixedDetect)``)
    and takes d(objectness, boxes)/d(image) in float64.

    The CPU blind spot: two cases run the head on the ``meta`` device (shapes and devices, no
    values), one after a first call on the CPU at the same size (then ``head.to(device)``, as a
    model moved to the GPU after use). A grid made without ``.to(x[i].device)``, a grid kept because
    only its size is compared, or a tensor made on the CPU in decode meets the input there and
    raises the mismatch a GPU would raise; only that mismatch (and outputs not on the input's
    device) fails a meta case. ``self.stride[i]`` (a 0-dim CPU tensor) and Python numbers mix with
    any device, as on CUDA. Still GPU-only: values computed by CUDA kernels (float16 on the device)
    and code that reads values on the device (``.item()``, ``.cpu()``), which meta cannot run.
    """
    assignment, grade_id, function = ASSIGNMENT, "fixed_detect_tests", "FixedDetect"
    draws = ("float64", "float32", "float16", "GPU", "meta", "repeated calls", "training", "export")
    probe_helpers = (_probe_call, _probe_head, _probe_meta_head)

    def cases(self):
        cases = []
        configs = case_configs()
        # the visible test's head first: nc=3, one level of 4 channels, 3x5 cells, batch 2
        dev, _ = test_configs()[-1]
        cases.append(head_case(HEAD_CASES[0], torch.float32, dev, seed=100, bs=2))
        for device, dtype in configs:
            for k, shape in enumerate(HEAD_CASES[1:]):
                cases.append(head_case(shape, dtype, device, seed=101 + k, bs=1 + k))
        for j, shape in enumerate(random_heads(4242, 4)):
            device, dtype = configs[j % len(configs)]
            cases.append(head_case(shape, dtype, device, seed=150 + j, bs=1 + j % 3, bs2=1 + (j + 1) % 3))
        # only the width changes (a grid compared on its height alone goes stale), and only the height
        cases.append(head_case(HEAD_CASES[2], torch.float32, "cpu", seed=160, bs=2, sizes2=((4, 3), (2, 5))))
        cases.append(head_case(HEAD_CASES[0], torch.float64, "cpu", seed=161, bs=1, sizes2=((6, 5),)))
        # the CPU blind spot: on the meta device a grid (or any tensor) made on the CPU meets the input
        cases.append(meta_head_case(HEAD_CASES[2], torch.float32, seed=170, bs=2, cpu_first=True))
        cases.append(meta_head_case(HEAD_CASES[3], torch.float16, seed=171, bs=1, cpu_first=False))
        from autograder.detector import synthetic_batch

        images, _ = synthetic_batch(2, seed=ATTACK_SEED + 1)
        cases.append({"kind": "detector", "images": images, "device": str(dev), "dtype": "float64",
                      "label": "the pretrained detector with FixedDetect as its head, float64, "
                               "2 images 64x64, d(max objectness + mean box)/d(image)"})
        return cases

    @staticmethod
    def probe(ns, case):
        dev, dt = torch.device(case["device"]), getattr(torch, case["dtype"])
        if case["kind"] == "detector":
            from autograder.detector import load_pretrained

            cls = student(ns, "FixedDetect")
            out = {}
            ok, model = _probe_call(lambda: load_pretrained(dev).to(dt).with_head(cls).eval())
            if not ok:
                return {"stage": "with_head", "error": model}
            x = case["images"].to(dev, dt).requires_grad_(True)
            ok, res = _probe_call(lambda: model(x))
            if not ok:
                return {"stage": "forward", "error": res}
            dec = res[0] if isinstance(res, (tuple, list)) and len(res) == 2 else res
            if not isinstance(dec, torch.Tensor) or not dec.requires_grad:
                return {"stage": "graph", "out": dec}
            try:
                (g,) = torch.autograd.grad(dec[..., 4].amax(1).sum() + dec[..., :4].mean(), x)
                out["grad"] = g
            except RuntimeError as err:
                out["backward_error"] = str(err).split(" Hint:")[0][:1500]
                try:
                    from autograder.inplace import why_backward_fails

                    out["report"] = why_backward_fails(lambda im: model(im)[0], x) or ""
                except Exception:  # noqa: BLE001
                    out["report"] = ""
            return out

        cls, head = _probe_head(ns, case)
        if cls is None:
            return head
        head.stride = torch.tensor(case["strides"])
        if case["kind"] == "meta_head":
            return _probe_meta_head(head, case, dt)
        head.to(dev, dt)
        out = {"eval": []}
        head.eval()
        for feats in case["calls"]:
            with torch.no_grad():
                ok, res = _probe_call(head, [f.to(dev, dt) for f in feats])
            out["eval"].append(res if ok else {"error": res})
            if not ok:
                return out
        for flag in ("train", "export"):
            if flag == "train":
                head.train()
            else:
                head.eval()
                head.export = True
            with torch.no_grad():
                ok, res = _probe_call(head, [f.to(dev, dt) for f in case["calls"][0]])
            out[flag] = res if ok else {"error": res}
            head.export = False
        head.eval()
        feats = [f.to(dev, dt).requires_grad_(True) for f in case["grad_feats"]]
        ok, res = _probe_call(head, list(feats))
        if not ok:
            out["grad_error"] = res
            return out
        dec = res[0] if isinstance(res, (tuple, list)) and len(res) == 2 else res
        if not isinstance(dec, torch.Tensor) or not dec.requires_grad:
            out["grad_out"] = {"requires_grad": False, "grad_fn": None}
            return out
        w = case["w"].to(dev)
        loss = (dec.double() * w).sum() if tuple(dec.shape) == tuple(w.shape) else dec.double().sum()
        try:
            grads = torch.autograd.grad(loss, feats, allow_unused=True)
            out["grads"] = list(grads)
        except RuntimeError as err:
            out["backward_error"] = str(err).split(" Hint:")[0][:1500]
            try:
                from autograder.inplace import why_backward_fails

                out["report"] = why_backward_fails(lambda *f: head(list(f))[0], *feats) or ""
            except Exception:  # noqa: BLE001
                out["report"] = ""
        return out

    # ------------------------------------------------------------------ judge

    def _class_problems(self, r):
        if "not_class" in r:
            fail("FixedDetect is not a class", got=r["not_class"],
                 hint="write `class FixedDetect(LegacyDetect):` and run the cell.")
        if "not_legacy" in r:
            fail("FixedDetect is not a LegacyDetect", expected="a subclass of LegacyDetect", got=r["not_legacy"],
                 hint="class FixedDetect(LegacyDetect): keeps the constructor, the buffers and _make_grid.")
        if "construct_error" in r:
            e = r["construct_error"]
            fail(f"FixedDetect(nc=..., anchors=..., ch=...) raised {e['type']}", detail=e["message"][:400],
                 hint="keep LegacyDetect's constructor: don't define __init__, or call super().__init__(nc, anchors, ch).")
        if "load_error" in r:
            fail("FixedDetect does not load LegacyDetect's state dict (strict=True)",
                 detail=r["load_error"]["message"][:600],
                 hint="add no parameter or buffer and rename none: a drop-in head has the same state dict.")

    def _heads(self, case):
        dev, dt = torch.device(case["device"]), _DT[case["dtype"]]
        args = dict(nc=case["nc"], anchors=case["anchors"], ch=case["ch"])
        legacy, ref = LegacyDetect(**args), ReferenceFixedDetect(**args)
        for h in (legacy, ref):
            h.load_state_dict(case["state"], strict=True)
            h.stride = torch.tensor(case["strides"])
            h.to(dev, dt)
        return legacy, ref, dev, dt

    def judge(self, case, r):
        if case["kind"] == "detector":
            return self._judge_detector(case, r)
        if case["kind"] == "meta_head":
            return self._judge_meta(case, r)
        where = case["label"]
        self._class_problems(r)
        legacy, ref, dev, dt = self._heads(case)
        tol = tolerances(dt)
        legacy.eval()
        for n, (feats, got) in enumerate(zip(case["calls"], r["eval"])):
            call = ("first call" if n == 0 else "second call, other sizes" if n == 1
                    else "third call, back at the first sizes")
            if isinstance(got, dict) and "error" in got:
                fail(f"FixedDetect.forward raised {got['error']['type']} in eval mode ({call})", inputs=where,
                     detail=got["error"]["message"][:800],
                     hint="rebuild self.grid[i] when its shape differs from the level's (ny, nx), as "
                          "LegacyDetect does; then call decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i]).")
            with torch.no_grad():
                exp_dec, exp_raw = legacy([f.to(dev, dt) for f in feats])
            check_true(isinstance(got, tuple) and len(got) == 2,
                       "FixedDetect in eval mode must return (decoded, raw list)", inputs=where,
                       got=type(got).__name__, hint="return (torch.cat(z, 1), x), like LegacyDetect.")
            dec, raw = got
            check_tensor(dec, f"FixedDetect(...)[0] (the decoded boxes, {call})", shape=tuple(exp_dec.shape),
                         hint="view each level's decode as (bs, -1, no) and torch.cat them on dim 1.")
            if not torch.allclose(dec.double(), exp_dec.cpu().double(), **tol):
                fail(f"FixedDetect's decoded output differs from LegacyDetect's ({call})", inputs=where,
                     hint="same convs, same permute, then decode(x[i], self.grid[i], self.anchor_grid[i], "
                          "self.stride[i]) for each level, with the grid rebuilt when the size changes; if "
                          "decode's own tests fail, fix decode first.")
            self._check_raw(raw, exp_raw, tol, where, f"eval mode, {call}")
        with torch.no_grad():
            legacy.train()
            exp_raw = legacy([f.to(dev, dt) for f in case["calls"][0]])
        for flag in ("train", "export"):
            got = r[flag]
            mode = "training mode" if flag == "train" else "export mode (head.export = True, eval)"
            if isinstance(got, dict) and "error" in got:
                fail(f"FixedDetect.forward raised {got['error']['type']} in {mode}", inputs=where,
                     detail=got["error"]["message"][:800],
                     hint="keep `raw_only = self.training or self.export` and its early return.")
            # described only when it fails: describe() of a list of tensors formats their contents
            if not (isinstance(got, list) and len(got) == len(exp_raw)):
                fail(f"FixedDetect in {mode} must return the list of raw level outputs", inputs=where,
                     got=describe(got), hint="keep `raw_only = self.training or self.export` and its early return.")
            self._check_raw(got, exp_raw, tol, where, mode)
        self._judge_grads(case, r, ref, dev, dt, tol, where)

    def _judge_meta(self, case, r):
        where = case["label"]
        self._class_problems(r)
        if "cpu_error" in r:
            e = r["cpu_error"]
            fail(f"FixedDetect.forward raised {e['type']} in eval mode on the CPU", inputs=where,
                 detail=e["message"][:800], hint="run it yourself on a head like the one above.")
        no = case["nc"] + 5
        na = len(case["anchors"][0]) // 2
        hint = ("rebuild self.grid[i] on the level's device when its size *or device* differs, as "
                "LegacyDetect does: self._make_grid(nx, ny).to(x[i].device); and make no tensor in "
                "decode without device=p.device.")
        steps = [(f"eval mode, call {n + 1} on meta", got) for n, got in enumerate(r["calls"])]
        steps += [(mode, r[key]) for key, mode in (("train", "training mode"), ("export", "export mode"))
                  if key in r]
        for n, (mode, got) in enumerate(steps):
            if "error" in got:
                if _is_device_mix(got["error"].get("message", "")):
                    _fail_cpu_tensor(f"FixedDetect ({mode})", where, got["error"]["message"], hint)
                return  # what meta cannot run (reading values) is judged on the CPU cases
            feats = case["calls"][min(n, 1)] if n < len(r["calls"]) else case["calls"][0]
            tensors = [got] if "device" in got else []
            if got.get("seq") == "tuple" and len(got["items"]) == 2:  # (decoded, raw list)
                dec, raw = got["items"]
                tensors = [dec] + raw.get("items", [])
                if "shape" in dec:
                    n_cells = sum(na * f.shape[2] * f.shape[3] for f in feats)
                    check_true(dec["shape"] == [len(feats[0]), n_cells, no],
                               f"FixedDetect's decoded output has the wrong shape ({mode})", inputs=where,
                               got=str(tuple(dec["shape"])))
            elif got.get("seq") == "list":
                tensors = got["items"]
            for t in tensors:
                if "device" in t and torch.device(t["device"]).type != "meta":
                    fail(f"FixedDetect returned a tensor on {t['device']}, not on its input's device ({mode})",
                         inputs=where, expected="meta (the input's device)", got=t["device"], hint=hint)

    @staticmethod
    def _check_raw(raw, exp_raw, tol, where, mode):
        if not (isinstance(raw, (list, tuple)) and len(raw) == len(exp_raw)):  # describe() only on failure
            fail(f"FixedDetect's raw outputs ({mode}) are not one tensor per level", inputs=where,
                 got=describe(raw), hint="return x, the list whose entries you replaced by the permuted conv outputs.")
        for i, (g, e) in enumerate(zip(raw, exp_raw)):
            check_true(isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(e.shape)
                       and torch.allclose(g.double(), e.cpu().double(), **tol),
                       f"FixedDetect's raw level output {i} differs ({mode})", inputs=where,
                       hint="x[i] must be the permuted conv output (bs, na, ny, nx, no), as in LegacyDetect.")

    def _judge_grads(self, case, r, ref, dev, dt, tol, where):
        if "grad_error" in r:
            e = r["grad_error"]
            fail(f"FixedDetect.forward raised {e['type']} on features that require grad", inputs=where,
                 detail=e["message"][:800], hint="the eval-mode forward must work with autograd on.")
        if "grad_out" in r:
            fail("no gradient can flow back through FixedDetect", inputs=where, got=describe_grad(r["grad_out"]),
                 hint="the decode inside the head must keep the graph: no torch.no_grad(), no .detach().")
        if "backward_error" in r:
            fail("backward through FixedDetect failed", inputs=where,
                 detail=(r.get("report") or r["backward_error"])[:1500],
                 hint="FixedDetect must decode with your out-of-place decode, not LegacyDetect's in-place lines.")
        ref.eval()
        f_ref = [f.to(dev, dt).requires_grad_(True) for f in case["grad_feats"]]
        refs = torch.autograd.grad((ref(list(f_ref))[0].double() * case["w"].to(dev)).sum(), f_ref)
        grads = r["grads"]
        check_true(isinstance(grads, list) and len(grads) == len(refs), "FixedDetect's gradients are missing",
                   inputs=where, hint="every level must go through decode and into the torch.cat.")
        for i, (g, gr) in enumerate(zip(grads, refs)):
            check_true(g is not None, f"no gradient reaches level {i}'s input", inputs=where,
                       hint="every level must go through decode and into the torch.cat.")
            check_true(isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(gr.shape)
                       and torch.allclose(g.double(), gr.cpu().double(), **tol),
                       f"wrong gradient at level {i}'s input features", inputs=where,
                       hint="the decode's gradient is wrong (see decode_gradients tests): a write hidden "
                            "from autograd (.data, saved-tensor hooks) gives wrong box gradients.")

    def _judge_detector(self, case, r):
        where = case["label"]
        self._class_problems(r)
        if "stage" in r:
            if r["stage"] == "graph":
                fail("no gradient can flow back through FixedDetect in the detector", inputs=where,
                     got=describe(r.get("out")),
                     hint="the decode inside the head must keep the graph: no torch.no_grad(), no .detach().")
            e = r["error"]
            fail(f"the detector with FixedDetect raised {e['type']} ({r['stage']})", inputs=where,
                 detail=e["message"][:800],
                 hint="model.with_head(FixedDetect) builds FixedDetect(nc, anchors, ch) and loads the old "
                      "head's state dict; the eval-mode forward returns (decoded, raw list).")
        if "backward_error" in r:
            fail("d(max objectness)/d(image) fails with FixedDetect in the detector", inputs=where,
                 detail=(r.get("report") or r["backward_error"])[:1500],
                 hint="model.with_head(FixedDetect) must be differentiable end to end in eval mode.")
        from autograder.detector import load_pretrained

        dev, dt = torch.device(case["device"]), _DT[case["dtype"]]
        model = load_pretrained(dev).to(dt).with_head(ReferenceFixedDetect).eval()
        x = case["images"].to(dev, dt).requires_grad_(True)
        dec = model(x)[0]
        (g_ref,) = torch.autograd.grad(dec[..., 4].amax(1).sum() + dec[..., :4].mean(), x)
        g = r["grad"]
        check_true(isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(g_ref.shape)
                   and torch.allclose(g.double(), g_ref.cpu().double(), rtol=1e-6, atol=1e-9),
                   "d(output)/d(image) through the detector with your FixedDetect is wrong", inputs=where,
                   hint="compare your decode's gradient with the out-of-place formula's (decode_gradients tests).")


# =========================================================================== check: attack

def _probe_image_gradients(model):
    """Count the gradients taken with respect to an image during one ``attack`` call (shipped helper).

    Two counters, kept where one line of the student's code does not reach both: (1) a forward
    pre-hook on ``model.stem`` that hooks the stage's input when it requires grad (one count per
    backward pass that reaches it); (2) a dispatch mode, pushed here, that counts every
    ``convolution_backward`` asked for the gradient of a 3-channel input: the first convolution of
    this detector, or of any copy of it. Returns ``stop``: call it after ``attack`` returns (also
    when it raised); it removes both and returns ``(hook count, convolution count, what was
    tampered with: "" when nothing)``. The dispatch stack is put back as it was before, whatever
    the call left on it.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    conv_backward = torch.ops.aten.convolution_backward.default
    stack_len, stack_at = torch._C._len_torch_dispatch_stack, torch._C._get_dispatch_stack_at
    pop, push = torch._C._pop_torch_dispatch_stack, torch._C._push_on_torch_dispatch_stack
    hooked, convs = [], []

    def watch(module, args):  # every way into the model (forward, features, raw_outputs) runs the stem
        x = args[0] if args else None
        if isinstance(x, torch.Tensor) and x.requires_grad:
            x.register_hook(lambda g: hooked.append(1))

    class ImageGradients(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):
            return False  # no torch._dynamo import (seconds): nothing here is compiled

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is conv_backward:
                mask = args[10] if len(args) > 10 else kwargs.get("output_mask")
                x = args[1] if len(args) > 1 else kwargs.get("input")
                if mask and mask[0] and isinstance(x, torch.Tensor) and x.dim() == 4 and x.shape[1] == 3:
                    convs.append(1)
            return func(*args, **kwargs)

    stem = model.stem
    hook = stem.register_forward_pre_hook(watch)
    base = stack_len()
    mode = ImageGradients()
    mode.__enter__()

    def stop():
        changed = []
        n = stack_len()
        if not (n == base + 1 and stack_at(n - 1) is mode):
            changed.append("the grader's dispatch mode was taken off (or others left on top of it)")
        if changed:  # back to the stack as it was before the call, then the mode's own exit
            while stack_len() > base:
                pop(None)
            push(mode)
        mode.__exit__(None, None, None)
        if model._modules.get("stem") is not stem:
            changed.append("model.stem was replaced")
        if stem._forward_pre_hooks.get(hook.id) is not watch:
            changed.append("model.stem's forward pre-hooks were changed")
        hook.remove()
        return len(hooked), len(convs), "; ".join(changed)

    return stop


class AttackCheck(Check):
    """``attack(model, image, eps, steps)`` -> delta, judged here with the grader's own model.

    Input space: ``model`` the pretrained detector with a head whose decoded objectness is
    differentiable (the probe builds it with :func:`autograder.attack.attack_model`, course code),
    frozen, in eval mode, on the course device; ``image`` a (1, 3, 64, 64) float32 image in [0, 1];
    ``eps`` in (0, 16/255], ``steps`` 1-10. The first case is the visible test's image (budget,
    range, shape); the second attacks 4 held-out images one at a time (eps 16/255, 10 steps) and
    also wants the mean best objectness, recomputed here from the returned deltas, to drop by at
    least ``ATTACK_MARGIN``; two small cases use another budget and step count (4/255 and 3 steps;
    16/255 and a single step, which with a step of about 2.5 * eps / steps must reach the budget).
    Every case counts what the task limits: the gradients taken with respect to the image, i.e. the
    backward passes that reach the model's input. ``steps`` of them, one per step (one more is
    tolerated). Evaluations that are not differentiated — the objectness read for a progress bar, a
    last look, with or without ``no_grad`` — are not counted.

    The count is made in the student's process, so it is made twice, in two places that one line of
    ``attack`` cannot both reach, and checked after each call (:func:`_probe_image_gradients`): a
    hook on the input of the model's first stage (which every way into the model passes), and a
    dispatch mode around the call that counts every ``convolution_backward`` computing the gradient
    of a 3-channel image (any model's first convolution, a private copy of the detector's too). The
    larger count is judged. A call after which either instrument is gone (the stage's hooks cleared,
    the stage replaced, the mode popped) fails, and so does a call that moved the image with no
    gradient counted at all (the count switched off, or an attack that differentiates nothing).
    What stays open in-process: code that takes its extra gradients with both instruments off and
    puts both back, then takes ``steps`` counted ones (docs/security.md).
    """
    assignment, grade_id, function = ASSIGNMENT, "attack_tests", "attack"
    draws = ("float32",)
    probe_helpers = (_probe_image_gradients,)
    #: judge the count as made where the student cannot switch it off unseen (both counters, the
    #: instruments checked, "moved with none counted" failed); False judges the stem hook's count
    #: alone and accepts 0, as before issue 36: the control of the hostile tests, never in grading
    guard_count = True

    def cases(self):
        from autograder.detector import synthetic_batch

        dev = str(test_configs()[-1][0])
        shown, _ = synthetic_batch(4, seed=3)
        held, _ = synthetic_batch(ATTACK_N, seed=ATTACK_SEED)
        return [{"images": shown[1:2].clone(), "eps": 16 / 255, "steps": 10, "device": dev, "drop": False,
                 "label": "the notebook's image 1, eps=16/255, steps=10"},
                {"images": held, "eps": ATTACK_EPS, "steps": ATTACK_STEPS, "device": dev, "drop": True,
                 "label": f"{ATTACK_N} held-out images, one at a time, eps={ATTACK_EPS:.4f}, steps={ATTACK_STEPS}"},
                {"images": held[2:3].clone(), "eps": 4 / 255, "steps": 3, "device": dev, "drop": False,
                 "label": "a held-out image, a smaller budget eps=4/255, steps=3"},
                {"images": held[3:4].clone(), "eps": 16 / 255, "steps": 1, "device": dev, "drop": False,
                 "full_step": True, "label": "a held-out image, eps=16/255, a single step (steps=1)"}]

    @staticmethod
    def probe(ns, case):
        import contextlib
        import io

        from autograder.attack import attack_model

        attack = student(ns, "attack")
        model = attack_model(case["device"])
        state = dict(model.state_dict(keep_vars=True))  # references, not copies
        images = case["images"].to(case["device"])
        deltas, given, grad_calls, grad_convs, tampered = [], [], [], [], []
        for i in range(images.shape[0]):
            image = images[i:i + 1].clone()
            counter = _probe_image_gradients(model)
            try:
                with contextlib.redirect_stderr(io.StringIO()):  # a text progress bar
                    deltas.append(attack(model, image, case["eps"], case["steps"]))
            finally:
                hooked, convs, changed = counter()
            grad_calls.append(hooked)
            grad_convs.append(convs)
            tampered.append(changed)
            given.append(image)  # the tensor it was handed, as it is now: the judge compares it with its own copy
        # the weights' own tensors, held since before the first call (whatever the model's attributes say now):
        # compared in the grader with its own model's, not here
        return {"deltas": deltas, "images_after": given, "weights_after": state, "grad_calls": grad_calls,
                "grad_convs": grad_convs, "tampered": tampered}

    def judge(self, case, r):
        from autograder.detector import best_objectness, load_pretrained

        eps, steps = case["eps"], case["steps"]
        images = case["images"]
        deltas = r["deltas"]
        check_true(isinstance(deltas, list) and len(deltas) == len(images), "attack did not return one delta per call")
        for i, delta in enumerate(deltas):
            image = images[i:i + 1]
            what = f"attack(model, image {i}, eps={eps:.4f}, steps={steps})"
            check_tensor(delta, what, shape=tuple(image.shape),
                         hint="return the perturbation delta itself (same shape as image), not image + delta.")
            delta = delta.to(image.dtype)
            check_true(bool(torch.isfinite(delta).all()), f"{what} has NaN or inf", inputs=case["label"],
                       hint="clamp, don't divide.")
            after = r["images_after"][i]
            check_true(isinstance(after, torch.Tensor) and after.shape == image.shape
                       and torch.equal(after.to(image.dtype), image), f"{what} changed the image it was given",
                       inputs=case["label"], hint="work on a delta tensor; never write into image.")
            worst = float(delta.abs().max())
            check_true(worst <= eps * (1 + 1e-5) + 1e-7, f"{what} exceeds the budget", inputs=case["label"],
                       expected=f"|delta| <= eps = {eps:.6f} everywhere (L-inf)", got=f"max |delta| = {worst:.6f}",
                       hint="after each step: delta = delta.clamp(-eps, eps).")
            adv = image + delta
            lo, hi = float(adv.min()), float(adv.max())
            check_true(lo >= -1e-6 and hi <= 1 + 1e-6, f"{what}: image + delta leaves [0, 1]", inputs=case["label"],
                       expected="0 <= image + delta <= 1", got=f"min {lo:.4f}, max {hi:.4f}",
                       hint="after the budget clamp: delta = (image + delta).clamp(0, 1) - image.")
            tampered = r["tampered"][i] if self.guard_count else ""
            check_true(not tampered, f"{what} switched off the grader's count of its gradients",
                       inputs=case["label"], detail=str(tampered)[:300],
                       hint="leave the model's hooks and PyTorch's dispatch modes alone: the test counts the "
                            "gradients your attack takes with respect to the image, one per step.")
            calls = max(int(r["grad_calls"][i]), int(r["grad_convs"][i])) if self.guard_count else \
                int(r["grad_calls"][i])
            check_true(calls > 0 or not bool((delta != 0).any()) or not self.guard_count,
                       f"{what} moved the image, but no gradient with respect to the image was counted",
                       inputs=case["label"], expected=f"{steps} gradient(s) of the model's best objectness "
                                                      "with respect to the image, one per step",
                       got=f"max |delta| = {worst:.5f} with 0 gradients counted",
                       hint="the attack must differentiate the model it is given: per step, one "
                            "torch.autograd.grad(best, delta) through model(image + delta). A delta found "
                            "without that gradient (fixed noise, another model, a count switched off) fails.")
            # (none at all and no move: nothing was attacked, which the drop below reports)
            check_true(calls == 0 or steps <= calls <= steps + 1,
                       f"{what} took {calls} gradient(s) with respect to the image",
                       inputs=case["label"],
                       expected=f"{steps} (one per step; {steps + 1} is tolerated): backward passes that reach "
                                "the image",
                       got=f"{calls} backward pass(es) through the model to the image",
                       hint="loop `for _ in tqdm(range(steps))` and take one gradient of the best objectness per "
                            "step; reading the objectness without differentiating it is free.")
            if case.get("full_step"):
                moved = delta != 0
                at_edge = (delta.abs() >= eps * (1 - 1e-3)) | (adv <= 1e-6) | (adv >= 1 - 1e-6)
                share = float((moved & at_edge).sum()) / max(1, int(moved.sum()))
                check_true(bool(moved.any()) and share >= 0.9, f"{what}: a single step does not reach the budget",
                           inputs=case["label"],
                           expected="|delta| = eps on the pixels it moves (a step of about 2.5 * eps / steps, "
                                    "then the clamp to eps)",
                           got=f"{100 * share:.0f} % of the moved pixels at the budget, max |delta| = {worst:.5f}",
                           hint="the step size follows eps and steps: step = 2.5 * eps / steps; step with "
                                "grad.sign(), not the raw gradient.")
        from autograder.attack import attack_model

        truth, after = attack_model("cpu").state_dict(), r["weights_after"]
        moved = [k for k, v in truth.items() if not (isinstance(after, dict) and isinstance(after.get(k), torch.Tensor)
                                                     and after[k].shape == v.shape and torch.equal(after[k], v))]
        check_true(not moved, "attack changed the model's weights", inputs=case["label"],
                   got=", ".join(moved[:5]) if moved else None,
                   hint="only delta moves; take gradients with torch.autograd.grad(loss, delta).")
        if not case["drop"]:
            return
        dev = torch.device(case["device"])
        model = load_pretrained(dev)
        x = images.to(dev)
        delta = torch.cat([d.to(x.dtype) for d in deltas]).to(dev)
        with torch.no_grad():
            before = best_objectness(model, x)
            after = best_objectness(model, x + delta)
        drop = float((before - after).mean())
        check_true(drop >= ATTACK_MARGIN, "the attack does not lower the best objectness enough",
                   inputs=case["label"], expected=f"mean drop >= {ATTACK_MARGIN}",
                   got=f"mean drop {drop:.4f} (before {float(before.mean()):.3f}, after {float(after.mean()):.3f})",
                   hint="step *against* the gradient: delta = delta - step * grad.sign(), with a step of about "
                        "2.5 * eps / steps; the loss is the best objectness (max over cells and anchors).")
