"""One submission's sandbox as one object (:class:`instructor.sandbox.box.Sandbox`, issue 37 item 1): the
pre-started sandbox and a fresh one behind the same face -- ``run``, ``launch``, ``kernel_env``,
``kernel_running``, ``status`` -- and what the face refuses (use outside its block, a second kernel box)."""
from __future__ import annotations

from pathlib import Path

import pytest

from instructor import sandbox
from instructor.sandbox import zygote
from instructor.sandbox.box import Sandbox

SCRIPT = """import os, sys
open("out.txt", "w").write("ran as uid %d in %s" % (os.getuid(), os.path.basename(os.getcwd())))
sys.exit(int(sys.argv[1]))
"""


def _modes() -> list[bool]:
    """The sandboxes this machine gives: fresh always, pre-started where grading uses it (root,
    privileged bubblewrap, a bounded disk: what make test and CI have)."""
    return [False, True] if zygote.enabled(sandbox.Limits()) else [False]


@pytest.fixture(params=_modes(), ids=lambda pre: "pre-started" if pre else "fresh")
def box(request):
    if not sandbox.status()["bwrap"]:
        pytest.skip(f"no bubblewrap here: {sandbox.status()['why']}")
    with Sandbox(sandbox.Limits(), pre_started=request.param) as b:
        assert b.pre_started is request.param
        yield b


def _scratch(box: Sandbox, name: str) -> Path:
    scratch = box.folder / name
    scratch.mkdir()
    (scratch / "job.py").write_text(SCRIPT)
    return scratch


def test_a_run_reads_the_same_in_either_sandbox(box):
    ok = box.run("job.py", ["0"], _scratch(box, "a"), wall_seconds=60)
    assert (ok.returncode, ok.timed_out, ok.reason) == (0, False, ""), ok
    assert ok.sandboxed
    text = (box.folder / "a" / "out.txt").read_text()
    assert text.startswith("ran as uid ") and text.endswith(" in a"), text
    assert not text.startswith("ran as uid 0 "), "the run kept root's uid"
    failed = box.run("job.py", ["3"], _scratch(box, "b"), wall_seconds=60)
    assert failed.returncode == 3 and "3" in failed.reason, failed


def test_a_run_past_its_time_is_ended_in_either_sandbox(box):
    scratch = box.folder / "slow"
    scratch.mkdir()
    (scratch / "job.py").write_text("import time\ntime.sleep(60)\n")
    got = box.run("job.py", [], scratch, wall_seconds=2)
    assert got.timed_out and got.returncode != 0 and got.seconds < 30, got


def test_the_kernel_box_holds_its_folders_and_what_its_process_is_told(box):
    verdicts = box.folder / "verdicts.json"
    verdicts.write_text("{}")
    kernel = box.launch(verdicts=verdicts)
    assert kernel.scratch.is_dir() and kernel.rundir.is_dir() and kernel.specs.is_dir()
    assert list(kernel.specs.rglob("kernel.json")), "no kernelspec written"
    assert (kernel.launch is not None) is box.pre_started   # pre-started: the kernel is a fork of it
    env = box.kernel_env("zh_CN")
    assert env["COURSE_VERDICTS"] == str(verdicts) and env["COURSE_SANDBOX_SCRATCH"] == str(kernel.scratch)
    assert env.get("COURSE_LANG") == "zh_CN"
    with box.kernel_running():
        pass
    assert box.status()["pre_started"] is box.pre_started and "bwrap" in box.status()
    with pytest.raises(RuntimeError, match="made already"):
        box.launch(verdicts=verdicts)


def test_two_sandboxes_at_once_share_nothing():
    if not sandbox.status()["bwrap"]:
        pytest.skip(f"no bubblewrap here: {sandbox.status()['why']}")
    with Sandbox(sandbox.Limits()) as one, Sandbox(sandbox.Limits()) as two:
        assert one.folder != two.folder
        assert not (one.pre_started and two.pre_started and one._zygote is two._zygote)


def test_the_face_refuses_use_outside_its_block_and_a_second_submission():
    box = Sandbox(sandbox.Limits(), pre_started=False)
    with pytest.raises(RuntimeError, match="outside its block"):
        box.run("job.py", [], Path("/nonexistent"), wall_seconds=1)
    with pytest.raises(RuntimeError, match="launch\\(\\) first"):
        box.kernel_env()
    if not sandbox.status()["bwrap"]:
        return
    with box:
        with pytest.raises(RuntimeError, match="one submission"):
            box.__enter__()
    with pytest.raises(RuntimeError, match="outside its block"):
        box.launch()
