"""What a grading process does before its first submission, and what each notebook's kernel start waits
for (issue 37: a grading of one notebook took 9 s here, 3.6 s of it before the first submission).

* The grading command imports no torch before it has started its pre-started sandbox: the sandbox imports
  torch and IPython in its own process while the grader imports its own (``--jobs 1``).
* :func:`instructor.sandbox.zygote.prestart_in_background` returns at once; ``join`` hands the started
  sandbox to the pool, and the first submission gets that one (one start, not two). The server is started
  by the thread that keeps living (bubblewrap's ``--die-with-parent`` follows the starting *thread*): a
  server started in a short-lived thread is shown dying with it.
* The grader's sockets to a kernel retry their connection every few milliseconds, not ZeroMQ's 100 (to a
  restarted kernel at ZeroMQ's pace: it binds the paths its dead predecessor left).
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from instructor import sandbox
from instructor.sandbox import zygote

REPO = Path(__file__).resolve().parents[1]
needs_zygote = pytest.mark.skipif(not zygote.enabled(sandbox.Limits()),
                                  reason="needs the pre-started sandbox (root, bubblewrap)")


def test_the_grading_command_imports_no_torch_before_it_starts_grading():
    code = ("import sys; sys.path.insert(0, %r); import autograder.cli, instructor.classroom.cli, "
            "instructor.batch.course, instructor.engine.execute; "
            "print('torch' in sys.modules)" % str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.stdout.strip() == "False", (
        "importing the grading command now imports torch (2 s here) before the pre-started sandbox is started: "
        "import it inside the function that needs it" + out.stderr[-2000:])


@needs_zygote
def test_a_sandbox_started_in_the_background_is_the_one_the_first_submission_gets():
    limits = sandbox.Limits(wall_seconds=60)
    zygote.stop_all()
    zygote._IDLE.clear()
    t0 = time.monotonic()
    pending = zygote.prestart_in_background(limits)
    returned = time.monotonic() - t0
    try:
        assert pending is not None
        assert returned < 1.0, f"prestart_in_background waited {returned:.1f} s: it should return at once"
        started = pending.zygote
        deadline = time.monotonic() + 60
        while not started._ready.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)   # ready before join (the usual case now): join still makes the start's checks
        pending.join()
        assert started.alive and started.starts == 1
        assert len(started.start_seconds) == 1, "join skipped finish_start (its thread-count check) for a ready sandbox"
        time.sleep(0.3)   # a server tied to a thread that ended would be gone by now
        assert started.alive, "the pre-started sandbox died after join (started by a thread that ended?)"
        with zygote.acquire(limits) as z:
            assert z is started, "the first submission got a second sandbox instead of the pre-started one"
            assert z.starts == 1
    finally:
        zygote.stop_all()
        zygote._IDLE.clear()


@needs_zygote
def test_a_server_started_by_a_thread_that_ends_dies_with_it():
    """Why :meth:`~instructor.sandbox.zygote.Zygote.begin_start` runs in the caller's thread: the control."""
    z = zygote.Zygote(sandbox.Limits(wall_seconds=60))
    thread = threading.Thread(target=z.start)
    try:
        thread.start()
        thread.join()
        deadline = time.monotonic() + 5
        while z.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not z.alive, "a server started in a thread outlived it: --die-with-parent no longer follows threads"
    finally:
        z.stop()


def test_the_kernel_client_retries_its_connection_within_milliseconds():
    import zmq

    from instructor.sandbox import kernel

    client = kernel._ready_client_class()()
    try:
        assert client.context.getsockopt(zmq.RECONNECT_IVL) == kernel.RECONNECT_MS <= 10
        sock = client.context.socket(zmq.DEALER)
        assert sock.getsockopt(zmq.RECONNECT_IVL) == kernel.RECONNECT_MS
        sock.close(0)
    finally:
        client.context.destroy(0)


def test_a_restarted_kernel_s_client_keeps_zeromq_s_default():
    """A restarted kernel binds the socket paths its dead predecessor left: its client retries at ZeroMQ's
    default pace (with 5 ms, what was replayed into it was lost about once in ten restarts)."""
    import zmq

    from instructor.sandbox import kernel

    km = kernel.kernel_manager_class()()
    km.client_factory = kernel._ready_client_class()
    for launches, expected in ((1, kernel.RECONNECT_MS), (2, 100)):
        km.course_launches = launches
        client = km.client()
        try:
            sock = client.context.socket(zmq.DEALER)
            assert sock.getsockopt(zmq.RECONNECT_IVL) == expected, (launches, expected)
            sock.close(0)
        finally:
            client.context.destroy(0)

