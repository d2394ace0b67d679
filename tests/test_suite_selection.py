"""`make test A=03_yolo_head` (pytest --assignment): one assignment's tests, chosen by what a test names."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import belongs_to

REPO = Path(__file__).resolve().parents[1]


def test_a_test_belongs_to_the_assignment_its_id_or_file_names():
    assert belongs_to("tests/test_hidden_a03.py::test_attack_budget", "03_yolo_head")
    assert belongs_to("tests/test_mutation.py::test_no_mutant_survives[03_yolo_head]", "03_yolo_head")
    assert belongs_to("tests/test_samples.py::test_sample_builds_from_the_release_notebook[03_yolo_head/ada]",
                      "03_yolo_head")
    assert not belongs_to("tests/test_hidden_a04.py::test_x", "03_yolo_head")
    assert not belongs_to("tests/test_mutation.py::test_no_mutant_survives[04_in_the_wild]", "03_yolo_head")
    assert not belongs_to("tests/test_hub.py::test_a_student_logs_in", "03_yolo_head")


def test_an_unknown_assignment_is_refused_by_name():
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "--assignment", "03_yolo", "tests/test_suite_selection.py"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--assignment 03_yolo: no such assignment" in r.stdout + r.stderr
