"""``make gpu-check`` (instructor/authoring/gpu_check.py): skipped without CUDA, and its machinery — case
selection, the table, the comparison with the samples' ``# expect:`` lines, the exit status — run
here on the CPU cases (``--device cpu``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from instructor.authoring import gpu_check
from instructor.authoring.gpu_check import SKIP_MESSAGE, case_device, case_dtype, compare, expected_verdicts, split_cases

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("COURSE_DEVICE", None)
    return subprocess.run([sys.executable, "-m", "instructor.authoring.gpu_check", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the check runs instead")
def test_without_cuda_it_says_it_skipped_and_exits_0():
    r = _run()
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == SKIP_MESSAGE
    assert SKIP_MESSAGE == ("gpu-check: no CUDA device (torch.cuda.is_available() is False): skipped; "
                            "run it on a machine with a GPU")


def test_on_the_cpu_cases_it_prints_the_table_and_the_references_pass():
    # two samples side by side (--jobs 2: the worker pool), one that passes everything, one that fails everything
    r = _run("--device", "cpu", "--assignment", "00_orientation", "--only", "ada", "cy", "--jobs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    head = next(l for l in lines if l.startswith("check "))
    assert head.split() == ["check", "device", "dtype", "cases", "verdict", "seconds"]
    checks = {"environment_report_tests", "cube_sum_grad_tests", "grad_fn_chain_tests", "intermediate_grad_tests"}
    refs = [l.split() for l in lines if not l.startswith(" ") and l.split()[:1] and l.split()[0] in checks]
    assert len(refs) == 4, r.stdout
    for row in refs:
        assert row[1] == "cpu" and row[4] == "pass", row
        float(row[5])  # seconds
    assert "-- 00_orientation/ada" in r.stdout and "-- 00_orientation/cy" in r.stdout
    assert r.stdout.count("expect pass: ok") == 4 and r.stdout.count("expect fail: ok") == 4, r.stdout
    assert "0 surprise(s)" in r.stdout and "SURPRISE" not in r.stdout


def test_a_sample_that_contradicts_its_expect_line_makes_it_exit_1():
    r = _run("--device", "cpu", "--assignment", "00_orientation", "--only", "ada",
             "--expect-fail-for", "cube_sum_grad_tests")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "SURPRISE: 00_orientation/ada: cube_sum_grad_tests passes on cpu" in r.stdout
    assert "1 surprise(s)" in r.stdout


def test_cases_are_selected_by_their_device_and_grouped_by_dtype():
    cases = [
        {"device": "cuda", "dtype": "float16"}, {"device": "cuda:0", "p": torch.zeros(1, dtype=torch.float32)},
        {"device": "cpu", "dtype": torch.float64}, {"device": "meta", "dtype": "float32"},
        {"spec": {"device": "cuda", "dtype": "bfloat16"}, "kind": "live"},   # a nested spec
        {"label": "plain data", "values": [1, 2]},                             # no device: the CPU
        {"x": torch.zeros(2, dtype=torch.int64), "label": "an int tensor"},
        {"device": "cuda", "dtype": "float16"},
    ]
    assert [case_device(c) for c in cases] == ["cuda", "cuda", "cpu", "meta", "cuda", "cpu", "cpu", "cuda"]
    assert [case_dtype(c) for c in cases] == ["float16", "float32", "float64", "float32", "bfloat16", "-", "int64",
                                              "float16"]
    groups, others = split_cases(cases, "cuda")
    assert groups == [("float16", [0, 7]), ("float32", [1]), ("bfloat16", [4])]
    assert others == [2, 3, 5, 6]


def test_a_gpu_grader_gives_the_hidden_checks_cuda_cases(monkeypatch):
    # what a GPU grader's test_configs() offers (the cases are plain CPU data: nothing runs on CUDA here)
    from instructor.hidden import find_check

    monkeypatch.setenv("COURSE_DEVICE", "cuda")
    cases = find_check("decode_contract_tests", "03_yolo_head").cases()
    groups, others = split_cases(cases, "cuda")
    assert {d for d, _ in groups} == {"float16", "float32", "float64"}
    assert {case_device(cases[i]) for i in others} == {"cpu", "meta"}
    defaults = [c for c in find_check("classify_update_no_change_tests", "02_names_and_storage").cases()
                if c["device"] is None]
    assert defaults and {case_device(c) for c in defaults} == {"cuda"}  # None: the course device


def _sample(auto, **questions):
    return SimpleNamespace(expect_auto=auto, expect_questions=questions)


def test_expected_verdicts_follow_the_expect_line():
    points = {"a": 2.0, "b": 2.0, "c": 4.0}
    assert expected_verdicts(_sample(8), points) == {"a": True, "b": True, "c": True}
    assert expected_verdicts(_sample(0), points) == {"a": False, "b": False, "c": False}
    assert expected_verdicts(_sample(2, a=2, b=0, c=0), points) == {"a": True, "b": False, "c": False}
    assert expected_verdicts(_sample(6, a=0), points) == {"a": False, "b": True, "c": True}
    assert expected_verdicts(_sample(2, c=0), points) == {"c": False, "a": None, "b": None}  # not said


def test_a_question_is_a_surprise_only_when_its_verdict_contradicts_the_sample():
    assert compare(True, True, None) == ("ok", False)
    assert compare(True, False, None)[1] is True
    assert compare(False, False, None) == ("ok", False)
    assert compare(False, True, False) == ("ok (fails on its other cases)", False)
    assert compare(False, True, True)[1] is True
    assert compare(False, True, None)[1] is True    # no other case to fail on
    assert compare(None, False, None) == ("not stated", False)
    assert gpu_check.SampleReport("a", "s", rows=[]).surprise is False
