"""What a pre-started sandbox does before its first run (issue 37): it used to warm meta tensors at every
start (torch's symbolic shapes and sympy: 1.2-1.8 s of CPU here, a third of a start), for every batch. Now
the batch says what its runs need (:func:`instructor.engine.pipeline.sandbox_warm`, from the draws of its
assignments' hidden checks) and the server warms only that, only before its first run
(``{"op": "warm"}``; refused afterwards, so nothing a run did can reach what the server then does).
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from instructor import sandbox
from instructor.engine.pipeline import sandbox_warm
from instructor.hidden import checks_for
from instructor.sandbox import zygote

needs_zygote = pytest.mark.skipif(not zygote.enabled(sandbox.Limits()),
                                  reason="needs the pre-started sandbox (root, bubblewrap)")

PROBE = textwrap.dedent("""
    import json, sys
    json.dump({"sympy": "sympy" in sys.modules, "torch": "torch" in sys.modules}, open("out.json", "w"))
""")


def _run(z: zygote.Zygote, folder: Path, name: str) -> dict:
    scratch = folder / name
    scratch.mkdir()
    (scratch / "run.py").write_text(PROBE)
    res = z.run("run.py", [], scratch, wall_seconds=60)
    assert (scratch / "out.json").exists(), f"the run wrote nothing: {res.reason}"
    return json.loads((scratch / "out.json").read_text())


def test_a_batch_warms_meta_tensors_only_when_one_of_its_checks_draws_them():
    assert sandbox_warm(["00_orientation"]) == (), "assignment 0's checks draw no meta tensor"
    for name in ("01_version_counter", "03_yolo_head"):
        assert any("meta" in c.draws for c in checks_for(name)), f"{name}'s checks no longer draw meta: update the test"
        assert sandbox_warm([name]) == ("meta",)
        assert sandbox_warm(["00_orientation", name]) == ("meta",), "a mixed batch must warm what any of it needs"
    assert sandbox_warm(["not_a_course_assignment"]) == ("meta",), "an assignment the course does not know: everything"
    assert sandbox_warm([]) == ()


@needs_zygote
def test_the_server_warms_what_it_is_asked_before_its_first_run_and_refuses_after():
    z = zygote.Zygote(sandbox.Limits(wall_seconds=120))
    z.wanted_warm = ()
    try:
        z.start()
        assert z.warmed == [] and z.info["os_threads"] == 1
        z.warm(("meta",))
        assert z.warmed == ["meta"] and z.info["warm_threads"] == 1 and not z.info["warm_refused"]
        with z.submission() as folder:
            run = _run(z, folder, "a")
        assert run == {"sympy": True, "torch": True}, "a run forked after the warm-up must have it"
    finally:
        z.stop()

    cold = zygote.Zygote(sandbox.Limits(wall_seconds=120))
    cold.wanted_warm = ()
    try:
        cold.start()
        with cold.submission() as folder:
            run = _run(cold, folder, "a")
            assert run == {"sympy": False, "torch": True}, "unasked, the server must not warm meta tensors"
            cold.warm(("meta",))  # after a run was forked: refused, nothing done
            assert cold.info["warm_refused"] and cold.warmed == []
            assert _run(cold, folder, "b") == {"sympy": False, "torch": True}
    finally:
        cold.stop()


@needs_zygote
def test_a_sandbox_left_by_an_earlier_batch_warms_for_the_next_one_if_no_run_was_forked():
    limits = sandbox.Limits(wall_seconds=120)
    zygote.stop_all()
    zygote._IDLE.clear()
    try:
        zygote.prestart_in_background(limits).join(warm=())
        again = zygote.prestart_in_background(limits)
        kept = again.zygote
        assert kept.warmed == [] and kept.starts == 1
        again.join(warm=("meta",))
        assert kept.warmed == ["meta"] and kept.starts == 1, "the kept sandbox should have warmed, not restarted"
    finally:
        zygote.stop_all()
        zygote._IDLE.clear()
