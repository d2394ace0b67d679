"""The engine grades one submission in a sandbox it is handed (issue 37, item 1).

* ``grade_submission(sub, box, course)`` reads top to bottom on one screen: its stages are functions
  of their own (canonical notebooks, confirmation, verdicts file, execution settings).
* The engine reaches the sandbox only through its face (``instructor.sandbox`` and its ``Sandbox``):
  no pre-started-sandbox pool, bounded folder, cgroup or kernelspec handled in the engine (a static
  check, shown failing on a planted snippet).
* The same submissions graded through ``grade_submission`` in a fresh sandbox and in the pre-started
  one get the same scores and verdicts.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from instructor import sandbox
from instructor.engine import pipeline
from instructor.layout import REPO, load_config
from instructor.sandbox import zygote
from instructor.sandbox.box import Sandbox

ENGINE = REPO / "instructor" / "engine"
ONE_SCREEN = 40
#: what the engine may not name: the sandbox's inner parts, behind Sandbox's face
INNER_MODULES = {"zygote", "workspace", "cgroups", "kernel", "isolation", "zygote_server"}
INNER_NAMES = {"Workspace", "Cgroup", "write_kernelspec", "acquire", "Zygote"}


def test_grade_submission_reads_on_one_screen():
    source = textwrap.dedent(inspect.getsource(pipeline.grade_submission))
    body = [line for line in source.splitlines() if line.strip()]
    assert len(body) <= ONE_SCREEN, f"grade_submission is {len(body)} lines: move a stage into a function of its own"
    called = {n.func.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    for stage in ("canonical_notebooks", "confirmation", "verdicts_file", "execution_settings", "autograde",
                  "judge_and_report"):
        assert stage in called, f"grade_submission no longer calls {stage}"


def reaches_inside(source: str) -> list[str]:
    """Where ``source`` names a part of the sandbox behind its face."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if "sandbox" in parts and set(parts[parts.index("sandbox") + 1:]) & INNER_MODULES:
                found.append(f"line {node.lineno}: from {node.module} import ...")
            if parts[-1] == "sandbox" and {a.name for a in node.names} & (INNER_MODULES | INNER_NAMES):
                found.append(f"line {node.lineno}: from {node.module} import "
                             f"{', '.join(sorted({a.name for a in node.names} & (INNER_MODULES | INNER_NAMES)))}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sandbox" \
                and node.attr in INNER_NAMES | INNER_MODULES:
            found.append(f"line {node.lineno}: sandbox.{node.attr}")
    return found


def test_the_engine_reaches_the_sandbox_only_through_its_face():
    bad = {p.name: reaches_inside(p.read_text(encoding="utf-8")) for p in sorted(ENGINE.glob("*.py"))}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"the engine names the sandbox's inner parts (use instructor.sandbox.box.Sandbox): {bad}"


def test_the_face_check_fails_on_each_planted_kind():
    planted = ("from ..sandbox import zygote\nfrom ..sandbox.kernel import KernelBox\n"
               "from instructor.sandbox import Workspace\nx = sandbox.Cgroup(1)\nsandbox.write_kernelspec(2)\n")
    found = reaches_inside(planted)
    assert len(found) == 5, found
    assert reaches_inside("from ..sandbox.box import Sandbox\nfrom .. import sandbox\nsandbox.Limits()\n") == []


@pytest.mark.slow
def test_a_fresh_and_the_pre_started_sandbox_grade_alike(tmp_path):
    if not sandbox.status()["bwrap"]:
        pytest.skip(f"no bubblewrap here: {sandbox.status()['why']}")
    if not zygote.enabled(sandbox.Limits()):
        pytest.skip("no pre-started sandbox here (root, privileged bubblewrap, a bounded disk)")
    from instructor.batch import course
    from test_per_submission_state import _scores, _submissions

    subs = _submissions(tmp_path)
    workdir = (tmp_path / "course").resolve()
    first = {r.student: r for r in course.grade(subs, workdir, feedback=False, progress=False, jobs=1)}
    limits = sandbox.Limits.from_config(load_config(workdir))
    api = pipeline.nbgrader_api(workdir, sandboxed=True)
    for pre_started in (False, True):
        for sub in subs:
            with Sandbox(limits, pre_started=pre_started) as box:
                assert box.pre_started is pre_started
                res = pipeline.grade_submission(sub, box, pipeline.CourseFolder(api, workdir, limits, feedback=False))
            assert res.ok, f"{sub.student} ({'pre-started' if pre_started else 'fresh'}): {res.error}"
            assert _scores(res) == _scores(first[sub.student]), (sub.student, pre_started)
            assert res.verdicts == first[sub.student].verdicts, (sub.student, pre_started)
