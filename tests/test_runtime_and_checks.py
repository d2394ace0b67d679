"""The helpers every notebook relies on: seeding, device policy, warnings, and check messages."""
from __future__ import annotations

import random
import warnings

import nbformat
import numpy as np
import pytest
import torch
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from autograder import checks, runtime


def test_seed_everything_makes_all_three_generators_repeat():
    runtime.seed_everything(123)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    runtime.seed_everything(123)
    b = (random.random(), np.random.rand(), torch.rand(1).item())
    runtime.seed_everything(124)
    c = (random.random(), np.random.rand(), torch.rand(1).item())
    assert a == b and a != c


def test_device_policy(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert runtime.course_device().type == expected
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert runtime.course_device().type == "cpu"
    configs = runtime.test_configs(torch.device("cpu"))
    assert (torch.device("cpu"), torch.float64) in configs
    cuda = runtime.test_configs(torch.device("cuda"))
    assert (torch.device("cuda"), torch.float16) in cuda, "hidden tests must cover the seed's float16 on CUDA"


def test_check_close_message_says_what_where_and_what_next():
    expected = torch.zeros(2, 3)
    got = expected.clone()
    got[1, 2] = 0.5
    with pytest.raises(checks.CheckFailed) as info:
        checks.check_close(got, expected, "decode(p)", inputs="p float32 (2, 3)", hint="check the offset")
    msg = str(info.value)
    assert "decode(p) has wrong values" in msg and "for input: p float32 (2, 3)" in msg
    assert "at index (1, 2)" in msg and "try next : check the offset" in msg
    checks.check_close(expected + 1e-7, expected, "tiny difference within float32 tolerance")


def test_check_tensor_goes_type_shape_dtype_device():
    with pytest.raises(checks.CheckFailed, match="wrong type"):
        checks.check_tensor([1, 2], "x")
    with pytest.raises(checks.CheckFailed, match="wrong shape"):
        checks.check_tensor(torch.zeros(2), "x", shape=(3,))
    with pytest.raises(checks.CheckFailed, match="wrong dtype.*\n.*\n.*\n.*try next"):
        checks.check_tensor(torch.zeros(2), "x", dtype=torch.float16)
    checks.check_tensor(torch.zeros(2), "x", shape=(2,), dtype=torch.float32, device="cpu")


def test_call_student_explains_a_stub_and_a_crash():
    def stub():
        raise NotImplementedError("Replace this line with your answer")

    with pytest.raises(checks.CheckFailed, match="stub is not implemented yet"):
        checks.call_student(stub)

    def crash(t):
        return t @ t

    with pytest.raises(checks.CheckFailed, match=r"crash\(\.\.\.\) raised RuntimeError"):
        checks.call_student(crash, torch.zeros(2, 3))


def test_call_student_prints_warnings_on_stdout(capsys):
    def noisy():
        warnings.warn("harmless", UserWarning)
        return 1

    assert checks.call_student(noisy) == 1
    out, err = capsys.readouterr()
    assert "UserWarning: harmless" in out and err == ""


def test_a_torch_warning_in_a_notebook_goes_to_stdout_after_setup():
    """What nbgrader sees: after setup_notebook(), a real PyTorch UserWarning is on stdout."""
    nb = new_notebook(cells=[
        new_code_cell("from autograder import setup_notebook\nDEVICE = setup_notebook(verbose=False)"),
        new_code_cell("import torch\nx = torch.ones(2, requires_grad=True)\nh = x * 2\nh.grad"),
    ])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[1].outputs
    streams = {o.name: o.text for o in outputs if o.output_type == "stream"}
    assert "stderr" not in streams, f"warning still on stderr: {streams}"
    assert "UserWarning" in streams.get("stdout", ""), f"PyTorch did not warn as expected: {outputs}"


def test_ignore_pattern_keeps_full_marks_for_a_cell_that_only_warned():
    """Second line of defence: nbgrader_config's IgnorePattern drops warnings on stderr."""
    from nbgrader.preprocessors import IgnorePattern
    from nbgrader.utils import determine_grade

    from instructor.layout import load_config

    cell = new_code_cell("check(...)", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "points": 2, "grade_id": "t", "schema_version": 3}})
    warn = nbformat.v4.new_output("stream", name="stderr", text=(
        "/x/torch/_tensor.py:1234: UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor "
        "is being accessed.\n  return self._grad\n"))
    real_error = nbformat.v4.new_output("stream", name="stderr", text="Traceback: something broke\n")
    cell.outputs = [warn]
    assert determine_grade(cell)[0] == 0, "nbgrader zeroes stderr: the premise of this test"
    pp = IgnorePattern(config=load_config("."))
    assert pp.enabled, "IgnorePattern must be enabled in nbgrader_config.py"
    nb = new_notebook(cells=[cell])
    nb, _ = pp.preprocess(nb, {})
    assert determine_grade(nb.cells[0])[0] == 2
    cell2 = new_code_cell("check(...)", metadata=cell.metadata)
    cell2.outputs = [real_error]
    nb2, _ = pp.preprocess(new_notebook(cells=[cell2]), {})
    assert determine_grade(nb2.cells[0])[0] == 0, "only warnings are dropped, not other stderr"


def test_expected_got_and_try_next_lead_the_detail():
    """Validate's dialog and check() show a message from the top: the next step comes before a long detail."""
    detail = "\n".join(f"line {i} of a long traceback" for i in range(20))
    with pytest.raises(checks.CheckFailed) as info:
        checks.fail("backward failed", expected="no error", got="RuntimeError", hint="use torch.cat", detail=detail)
    lines = str(info.value).splitlines()
    assert [l.split(":")[0].strip() for l in lines[1:4]] == ["expected", "got", "try next"], lines
    assert lines[4].strip() == "line 0 of a long traceback"


def test_check_lists_each_failures_next_steps_under_its_question():
    from pathlib import Path

    from autograder.check import CheckReport, QuestionResult

    msg = ("CheckFailed: decode(p) has wrong values\n  expected : tensor float64 (2, 3)\n"
           "  got      : tensor float32 (2, 3)\n  try next : cast with .to(p.dtype)\n  detail line")
    report = CheckReport(Path("a.ipynb"), [QuestionResult("decode_tests", 2, 0, message=msg),
                                           QuestionResult("other_tests", 1, 1)])
    text = str(report).splitlines()
    row = next(i for i, l in enumerate(text) if "decode_tests" in l)
    assert [t.strip() for t in text[row + 1:row + 4]] == [
        "expected : tensor float64 (2, 3)", "got      : tensor float32 (2, 3)", "try next : cast with .to(p.dtype)"]
    assert "detail line" not in str(report)
    assert text[row + 4].strip().startswith("other_tests")


def test_a_hidden_checks_crash_from_a_failed_match_says_so():
    """A student's re.search(...) that matched nothing, used as a match: the hidden check's message points at
    the pattern, not at "read the traceback" (the student never sees the grader's traceback)."""
    import re

    from instructor.hidden import Check, _error_message

    check = Check.__new__(Check)
    check.function = "read_error_message"
    case = {"label": "a bfloat16 message"}
    for err in (lambda: re.search("x", "y").group(1), lambda: re.search("x", "y")[1]):
        try:
            err()
        except (AttributeError, TypeError) as e:
            msg = _error_message(check, case, {"type": type(e).__name__, "message": str(e)})
        assert "try next" in msg and "matched nothing" in msg and "read the traceback" not in msg, msg
    msg = _error_message(check, case, {"type": "ZeroDivisionError", "message": "division by zero"})
    assert "read the traceback" in msg


def test_a_stub_is_not_implemented_yet_but_pytorchs_own_not_implemented_is_an_answer():
    """The class report counts "is not implemented yet" as a question left unanswered: only a stub may say it.
    PyTorch raises NotImplementedError too (an op with no kernel for a device or dtype): that is an answer."""
    from pathlib import Path

    from instructor.hidden import STUB_MESSAGE, Check, _error_message

    config = (Path(__file__).resolve().parents[1] / "nbgrader_config.py").read_text()
    assert STUB_MESSAGE in config, "the hidden checks must know the stub nbgrader_config.py writes"
    check = Check.__new__(Check)
    check.function = "to_autograd"
    try:
        torch.empty(2, device="meta").tolist()
    except NotImplementedError as e:
        torch_msg = str(e)
    else:
        pytest.skip("this PyTorch reads a meta tensor's values")
    answer = _error_message(check, {}, {"type": "NotImplementedError", "message": torch_msg})
    assert "not implemented yet" not in answer and "raised NotImplementedError" in answer, answer
    half = _error_message(check, {}, {"type": "NotImplementedError",
                                      "message": "\"addmm_impl_cpu_\" not implemented for 'Half'"})
    assert "raised NotImplementedError" in half, half
    for stub in (STUB_MESSAGE + ", run the cell, then run the tests below.", "", "Ellipsis", "decode", "todo"):
        msg = _error_message(check, {}, {"type": "NotImplementedError", "message": stub})
        assert msg.startswith("to_autograd is not implemented yet"), msg
