"""The pre-started sandbox (:mod:`instructor.grading.zygote`): every run a fork of one server, and
nothing of one submission reaches the next.

Each defence is shown next to its control: with the clean-up between submissions switched off, a
daemon and planted files of the first submission are still there for the second.
"""
from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest

from instructor.grading import sandbox, zygote

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not zygote.enabled(sandbox.Limits()),
                                 reason="the pre-started sandbox needs root, privileged bubblewrap and a bounded disk")]


@pytest.fixture()
def server():
    z = zygote.Zygote(sandbox.Limits(wall_seconds=120))
    yield z
    z.stop()


def _run(z: zygote.Zygote, folder: Path, name: str, code: str) -> dict:
    scratch = folder / name
    scratch.mkdir()
    (scratch / "run.py").write_text(textwrap.dedent(code))
    res = z.run("run.py", [], scratch, wall_seconds=60)
    out = scratch / "out.json"
    assert out.exists(), f"{name}: the run wrote nothing ({res.reason})"
    return json.loads(out.read_text())


IDENTITY = """
import json, os, sys
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
json.dump({"uid": os.getuid(), "cap": int(st["CapEff"], 16) | int(st["CapPrm"], 16), "ppid": os.getppid(),
           "torch_preloaded": "torch" in sys.modules, "pid": os.getpid(),
           "also_preloaded": [m for m in ("matplotlib.pyplot", "autograder.inplace", "sympy") if m in sys.modules],
           "backend": sys.modules["matplotlib"].get_backend() if "matplotlib" in sys.modules else None},
          open("out.json", "w"))
"""


def test_every_run_is_a_fork_of_one_server_with_torch_imported_and_no_privilege(server):
    with server.submission() as folder:
        first = _run(server, folder, "a", IDENTITY)
        second = _run(server, folder, "b", IDENTITY)
    assert server.starts == 1
    assert server.info["os_threads"] == 1, "the server started threads while preloading: forking it is unsafe"
    for run in (first, second):
        assert run["torch_preloaded"], "the run imported torch itself: nothing was gained"
        # what the course's notebooks import first, and the meta-tensor machinery (sympy), come with the fork
        assert run["also_preloaded"] == ["matplotlib.pyplot", "autograder.inplace", "sympy"], run
        assert run["backend"].lower() == "agg", "the sandbox's plots must use Agg, as a run importing it would"
        assert run["uid"] == sandbox.sandbox_uid(server.limits) != sandbox.server_uid(server.limits)
        assert run["cap"] == 0, "a run kept a capability of the server"
        assert run["ppid"] == server.info["pid"]


def test_a_run_can_neither_signal_nor_read_the_server(server):
    with server.submission() as folder:
        attack = _run(server, folder, "attack", """
            import json, os, signal
            out = {}
            server = os.getppid()
            for name, act in (("SIGSTOP", lambda: os.kill(server, signal.SIGSTOP)),
                              ("SIGKILL", lambda: os.kill(server, signal.SIGKILL)),
                              ("mem", lambda: open(f"/proc/{server}/mem", "rb").read(1)),
                              ("environ", lambda: open(f"/proc/{server}/environ", "rb").read(1))):
                try:
                    act()
                    out[name] = "done"
                except OSError as err:
                    out[name] = type(err).__name__
            json.dump(out, open("out.json", "w"))
        """)
        after = _run(server, folder, "after", IDENTITY)
    assert attack == {"SIGSTOP": "PermissionError", "SIGKILL": "PermissionError", "mem": "PermissionError",
                      "environ": "PermissionError"}
    assert server.starts == 1 and after["torch_preloaded"]


LEAVE_BEHIND = """
import json, os, subprocess, sys
daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
planted = []
for d in ("/tmp", "/dev/shm"):  # /dev/shm only where the sandbox has one that a run may write
    try:
        open(os.path.join(d, "planted.txt"), "w").write("from the first submission")
        planted.append(d)
    except OSError:
        pass
json.dump({"daemon": daemon.pid, "planted": planted}, open("out.json", "w"))
"""

LOOK_AROUND = """
import json, os
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]
json.dump({"others": others, "planted": [d for d in ("/tmp", "/dev/shm") if os.path.exists(os.path.join(d, "planted.txt"))]},
          open("out.json", "w"))
"""


def test_nothing_of_a_submission_reaches_the_next(server):
    with server.submission() as folder:
        left = _run(server, folder, "first", LEAVE_BEHIND)
    with server.submission() as folder:
        seen = _run(server, folder, "second", LOOK_AROUND)
    assert left["daemon"] > 0 and "/tmp" in left["planted"]
    assert seen == {"others": [], "planted": []}


def test_without_the_clean_up_the_first_submission_reaches_the_next(server, monkeypatch):
    """The control: the same two submissions with the clean-up between them switched off."""
    server.start()
    monkeypatch.setattr(server, "clean", lambda: None)
    monkeypatch.setattr(server, "_fresh_tmp", lambda: None)
    with server.submission() as folder:
        left = _run(server, folder, "first", LEAVE_BEHIND)
    with server.submission() as folder:
        seen = _run(server, folder, "second", LOOK_AROUND)
    assert left["daemon"] in seen["others"]
    assert seen["planted"] == left["planted"] and "/tmp" in seen["planted"]


def test_a_run_past_its_time_is_ended_and_the_server_goes_on(server):
    with server.submission() as folder:
        scratch = folder / "loop"
        scratch.mkdir()
        (scratch / "run.py").write_text("while True:\n    pass\n")
        res = server.run("run.py", [], scratch, wall_seconds=2)
        after = _run(server, folder, "after", IDENTITY)
    assert res.timed_out and res.returncode is None
    assert "wall-clock" in res.reason
    assert server.starts == 1 and after["torch_preloaded"]


def test_a_dead_server_is_started_again(server):
    with server.submission() as folder:
        _run(server, folder, "a", IDENTITY)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=10)
        again = _run(server, folder, "b", IDENTITY)
    assert server.starts == 2 and again["torch_preloaded"]
