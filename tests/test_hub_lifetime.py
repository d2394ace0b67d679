"""Nothing the hub starts outlives it (issue 36, item 8).

The hub starts the root-owned grading service (instructor/service/__init__.py) in a session of its own, as
JupyterHub starts every service (``start_new_session=True``): a signal to the hub's process group, a
crash or the OOM killer ends the hub and never reaches the service. Before the defence, each such end
left a root service running, with its grading workers and their pre-started sandboxes; the next hub's
service took over the socket path while the first kept running.

Here the service is started with the command, working folder and environment that
``hub/jupyterhub_config.py`` gives it, by a stand-in for the hub that starts it the way JupyterHub's
service spawner does (a new session). Each defence has its control:

* the stand-in's process group killed with SIGKILL: the service and every process under it (the fork
  server, the worker, the sandbox) end within seconds; control: without ``--exit-with-parent`` they live on;
* the next service on the same socket ends an orphaned one before it binds; control: binding without
  that step leaves the orphan running beside it;
* SIGINT, a hub's first stop signal, ends the service within seconds even where it came ignored from
  the hub (a hub started in the background); control: with the service's own handlers taken out it
  ignores SIGINT, and the hub waited out its interrupt timeout.
"""
from __future__ import annotations

import grp
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor import service  # noqa: E402
from instructor.classroom.hub import Hub  # noqa: E402

pytestmark = pytest.mark.slow
NP = "icxl-"
GROUP = NP + "inplace-graders"

#: the hub, as far as its service is concerned: starts the service in a session of its own (as
#: JupyterHub's _ServiceSpawner does), prints its pid, and waits
STANDIN = r"""
import json, os, subprocess, sys, time
svc = json.loads(sys.argv[1])
env = dict(svc["environment"], JUPYTERHUB_SERVICE_NAME=svc["name"])
p = subprocess.Popen(svc["command"], env=env, cwd=svc["cwd"], start_new_session=True,
                     stdout=open(sys.argv[2], "ab"), stderr=subprocess.STDOUT)
print(p.pid, flush=True)
while True:
    time.sleep(60)
"""


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the hub runs the grading service as root"
    for tool in ("groupadd", "groupdel", "bwrap"):
        if not shutil.which(tool):
            return f"needs {tool}"
    return None


@pytest.fixture(scope="module")
def hub_service():
    """The grading service's definition from hub/jupyterhub_config.py, for a prefix of its own."""
    why = _why_not()
    if why:
        pytest.skip(why)
    from traitlets.config import Config

    top = Path(tempfile.mkdtemp(prefix="icxl-", dir="/tmp"))
    os.chmod(top, 0o755)
    prefix = top / "p"
    Hub(prefix=str(prefix), names_prefix=NP, service_port=9912, graders=["g"], students=["s"]).save()
    made = subprocess.run(["groupadd", GROUP], capture_output=True).returncode == 0
    saved = os.environ.get("HUB_PREFIX")
    os.environ["HUB_PREFIX"] = str(prefix)
    try:
        c = Config()
        path = REPO / "hub" / "jupyterhub_config.py"
        config = {"get_config": lambda: c, "__file__": str(path), "__name__": "hub_config_under_test"}
        exec(compile(path.read_text(), str(path), "exec"), config)
        [grading] = [s for s in c.JupyterHub.services if s["name"].endswith("-grading")]
        yield {"service": grading, "top": top, "sock": prefix / "grading-service" / "grading.sock",
               "formgrader": c.JupyterHub.services[0], "proxy": list(c.ConfigurableHTTPProxy.command),
               "config": config}
    finally:
        if saved is None:
            os.environ.pop("HUB_PREFIX", None)
        else:
            os.environ["HUB_PREFIX"] = saved
        for pid in service.stale_services(prefix / "grading-service" / "grading.sock"):
            os.kill(pid, signal.SIGKILL)
        if made:
            subprocess.run(["groupdel", GROUP], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree(pid: int) -> list[int]:
    """``pid`` and every process under it."""
    kids, out, todo = _children(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def alive(pids: list[int]) -> list[int]:
    left = []
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.append(p)
    return left


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


def standin(svc: dict, log: Path, *, ignore_sigint: bool = False) -> tuple[subprocess.Popen, int]:
    """The stand-in hub, in a process group of its own, with ``svc`` started: (hub, the service's pid)."""
    hub = subprocess.Popen([sys.executable, "-c", STANDIN, json.dumps(svc), str(log)], stdout=subprocess.PIPE,
                           text=True, start_new_session=True,
                           preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None)
    return hub, int(hub.stdout.readline())


def start_hub(hub_service, *, command: list[str] | None = None, ignore_sigint: bool = False):
    """The stand-in hub (a process group of its own) with the service started; (hub, service pid, every
    process of the service once its pre-started sandbox runs)."""
    svc = dict(hub_service["service"])
    if command is not None:
        svc["command"] = command
    log = hub_service["top"] / "service.log"
    hub, pid = standin(svc, log, ignore_sigint=ignore_sigint)
    deadline = time.monotonic() + 120
    while True:  # serving, and its worker's sandbox (bubblewrap) started, and the tree settled
        procs = tree(pid)
        try:
            service.ask(hub_service["sock"], {"op": "hello"}, timeout=10)
            if any(_cmd(p).startswith("bwrap ") for p in procs):
                # the same processes half a second later: a passing one (the sandbox probe's
                # `bwrap ... /bin/true`, which also starts with "bwrap ") is not taken for the service's
                time.sleep(0.5)
                if set(tree(pid)) == set(procs):
                    return hub, pid, procs
        except service.ServiceError:
            pass
        if not alive([pid]) or time.monotonic() > deadline:
            pytest.fail("the service did not start:\n" + log.read_text()[-3000:])
        time.sleep(0.3)


def wait_gone(pids: list[int], seconds: float) -> tuple[list[int], float]:
    t0 = time.monotonic()
    while alive(pids) and time.monotonic() - t0 < seconds:
        time.sleep(0.05)
    return alive(pids), time.monotonic() - t0


def test_the_service_and_its_sandboxes_end_with_a_hub_killed_hard(hub_service):
    """Attack: the hub's process group gets SIGKILL (as a crash or the OOM killer ends it): nothing of the
    service is left, and its socket and pidfile are gone."""
    assert "--exit-with-parent" in hub_service["service"]["command"]
    hub, pid, procs = start_hub(hub_service)
    assert len(procs) >= 4, [_cmd(p) for p in procs]      # service, fork server, worker, sandbox
    os.killpg(hub.pid, signal.SIGKILL)
    hub.wait()
    left, took = wait_gone(procs, 10)
    assert not left, [(p, _cmd(p)) for p in left]
    print(f"the service and {len(procs) - 1} processes under it ended {took:.1f} s after the hub was killed")
    assert not hub_service["sock"].exists() and not service.pidfile_for(hub_service["sock"]).exists()


def test_control_without_the_watch_the_service_outlives_the_hub_and_the_next_one_ends_it(hub_service):
    """Control: the service as the hub started it before (no --exit-with-parent) outlives the killed hub,
    still serving as root with its sandbox. Then the defence that catches such an orphan: the next
    hub's service ends it (and everything under it) before binding the socket."""
    old = [a for a in hub_service["service"]["command"] if a != "--exit-with-parent"]
    hub, pid, procs = start_hub(hub_service, command=old)
    try:
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait()
        time.sleep(3)
        assert set(alive(procs)) == set(procs), "the orphan did not outlive the hub: this control shows nothing"
        assert service.ask(hub_service["sock"], {"op": "hello"}, timeout=10)["uid"] == 0
        assert service.stale_services(hub_service["sock"]) == [pid]

        hub2, pid2, procs2 = start_hub(hub_service)
        try:
            left, _ = wait_gone(procs, 10)
            assert not left, [(p, _cmd(p)) for p in left]
            assert service.stale_services(hub_service["sock"]) == [pid2]
            assert int(service.pidfile_for(hub_service["sock"]).read_text()) == pid2
            assert "ending an earlier service" in (hub_service["top"] / "service.log").read_text()
        finally:
            os.killpg(hub2.pid, signal.SIGKILL)
            hub2.wait()
            left, _ = wait_gone(procs2, 10)
            assert not left
    finally:
        for p in alive(procs):
            os.kill(p, signal.SIGKILL)


def test_control_binding_without_ending_the_stale_service_leaves_both(hub_service, monkeypatch):
    """Control of the stale-service step: a service that binds without it takes over the socket path
    while the orphan keeps running (what two crashed `make hub` runs left)."""
    old = [a for a in hub_service["service"]["command"] if a != "--exit-with-parent"]
    hub, pid, procs = start_hub(hub_service, command=old)
    server = None
    try:
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait()
        before = os.stat(hub_service["sock"]).st_ino
        monkeypatch.setattr(service, "stop_stale", lambda path: [])
        server = service.Server(hub_service["sock"], group=GROUP)
        server.bind()
        time.sleep(1)
        orphan = alive(procs)   # the orphan runs on, as root: the service and its sandbox (a short-lived
        assert pid in orphan and any(_cmd(p).startswith("bwrap ") for p in orphan), orphan   # helper may end)
        assert os.stat(hub_service["sock"]).st_ino != before          # its socket path taken over
        assert service.stale_services(hub_service["sock"]) == [pid]   # what the defence would end
    finally:
        if server is not None:
            server.stop()
        for p in alive(procs):
            os.kill(p, signal.SIGKILL)


def test_sigint_ends_the_service_at_once_even_ignored_by_the_hub(hub_service):
    """A hub's stop: SIGINT first (then, after its interrupt timeout, SIGTERM). A hub started in the
    background hands SIGINT down ignored; the service still ends on it within seconds, sandbox and all.
    Control: the same service with its own signal handlers taken out ignores the SIGINT."""
    hub, pid, procs = start_hub(hub_service, ignore_sigint=True)
    try:
        os.kill(pid, signal.SIGINT)
        left, took = wait_gone(procs, 5)
        assert not left, [(p, _cmd(p)) for p in left]
        print(f"SIGINT: the service ended in {took:.1f} s")
    finally:
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait()
    cmd = hub_service["service"]["command"]
    no_handlers = [cmd[0], "-c", "import runpy, signal, sys; signal.signal = lambda *a: None; sys.argv[0] = 'x'; "
                   "runpy.run_module('instructor.service', run_name='__main__')", *cmd[3:]]
    hub, pid, procs = start_hub(hub_service, command=no_handlers, ignore_sigint=True)
    try:
        os.kill(pid, signal.SIGINT)
        time.sleep(3)
        assert pid in alive(procs), "SIGINT ended the service without its handlers: the control shows nothing"
    finally:
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait()
        wait_gone(procs, 10)
        for p in alive(procs):
            os.kill(p, signal.SIGKILL)


def test_the_formgrader_and_the_proxy_end_with_a_hub_killed_hard(hub_service):
    """The hub's other children (the formgrader service, as the grader account, and the proxy) are
    started through ``setpriv --pdeathsig TERM``: a process started that way by a stand-in hub ends when
    the hub's process group is killed. Control: started as before, it lives on (an orphan formgrader kept
    its port, and the next hub's formgrader could not bind it)."""
    with_the_hub = hub_service["config"]["with_the_hub"]
    if hub_service["config"]["SETPRIV"] is None:
        pytest.skip("no setpriv with --pdeathsig (util-linux 2.33 or later)")
    for argv in (hub_service["formgrader"]["command"], hub_service["proxy"]):
        assert argv[1:4] == ["--pdeathsig", "TERM", "--"] and Path(argv[0]).name == "setpriv", argv
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    seen = {}
    for name, argv in (("defended", with_the_hub(sleeper)), ("control", sleeper)):
        hub, pid = standin({"name": name, "command": argv, "environment": {}, "cwd": "/"},
                           hub_service["top"] / f"{name}.log")
        try:
            deadline = time.monotonic() + 10
            while not _cmd(pid).startswith(sys.executable) and time.monotonic() < deadline:  # setpriv exec'd it
                time.sleep(0.05)
            os.killpg(hub.pid, signal.SIGKILL)
            hub.wait()
            left, _ = wait_gone([pid], 3)
            seen[name] = bool(left)
        finally:
            for p in alive([pid]):
                os.kill(p, signal.SIGKILL)
    assert seen == {"defended": False, "control": True}, seen
