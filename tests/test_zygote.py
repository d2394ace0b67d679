"""The pre-started sandbox (:mod:`instructor.sandbox.zygote`): every run a fork of one server, and
nothing of one submission reaches the next.

Each defence is shown next to its control: with the clean-up between submissions switched off, a
daemon and planted files of the first submission are still there for the second.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from instructor import sandbox
from instructor.sandbox.workspace import Workspace
from instructor.sandbox import isolation, workspace, zygote

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not zygote.enabled(sandbox.Limits()),
                                 reason="the pre-started sandbox needs root, privileged bubblewrap and a bounded disk")]


@pytest.fixture()
def server():
    z = zygote.Zygote(sandbox.Limits(wall_seconds=120))
    z.wanted_warm = ()  # these tests need no meta tensor (1.2-1.8 s of CPU a start); the first one warms them itself
    yield z
    z.stop()


def _run(z: zygote.Zygote, folder: Path, name: str, code: str) -> dict:
    scratch = folder / name
    scratch.mkdir()
    (scratch / "run.py").write_text(textwrap.dedent(code))
    res = z.run("run.py", [], scratch, wall_seconds=60)
    out = scratch / "out.json"
    err = scratch / ".sandbox-stderr"
    assert out.exists(), f"{name}: the run wrote nothing ({res.reason}): {err.read_text()[-2000:] if err.exists() else ''}"
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
    server.start()
    server.warm(("meta",))   # what a batch whose checks draw meta tensors asks for (tests/test_sandbox_warm.py)
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
        assert run["uid"] == isolation.sandbox_uid(server.limits) != isolation.server_uid(server.limits)
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
    monkeypatch.setattr(server, "reset", lambda: None)
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


# --------------------------------------------------------------------------- every channel, one attacker

FILL_EVERY_CHANNEL = r"""
import ctypes, json, os, socket, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL, ADD_KEY = {"x86_64": (250, 248), "aarch64": (219, 217)}[os.uname().machine]
def add_key(desc, ring):
    return libc.syscall(ADD_KEY, b"user", desc, b"from the first submission", 25, ctypes.c_long(ring))
done = {}
os.makedirs("/tmp/dir/inner", exist_ok=True)
open("/tmp/dir/inner/kept.txt", "w").write("from the first submission")
os.chmod("/tmp/dir/inner", 0o500)   # read-only folders: still their owner's to remove
os.chmod("/tmp/dir", 0o500)
open("/tmp/planted.txt", "w").write("from the first submission")
os.symlink("/etc", "/tmp/link")
open("/dev/shm/planted", "w").write("from the first submission")   # POSIX shared memory (a tmpfs of the sandbox)
done["dev_shm"] = os.path.exists("/dev/shm/planted")
done["mqueue"] = libc.mq_open(b"/course-leak", os.O_CREAT | os.O_RDWR, 0o666, None) >= 0
done["sysv_shm"] = libc.shmget(0x6C65616B, 4096, 0o1000 | 0o666) >= 0
done["sysv_msg"] = libc.msgget(0x6C65616C, 0o1000 | 0o666) >= 0
done["sysv_sem"] = libc.semget(0x6C65616D, 1, 0o1000 | 0o666) >= 0
done["user_key"] = add_key(b"course-leak-user", -4) > 0
done["user_session_key"] = add_key(b"course-leak-user-session", -5) > 0
done["session_key"] = add_key(b"course-leak-session", -3) > 0
persistent = libc.syscall(KEYCTL, ctypes.c_long(22), ctypes.c_long(-1), ctypes.c_long(-3))
done["persistent_key"] = persistent > 0 and add_key(b"course-leak-persistent", persistent) > 0
# a daemon holding an abstract socket: another way to talk to the next submission
daemon = subprocess.Popen([sys.executable, "-c", "import socket,time\ns=socket.socket(socket.AF_UNIX)\n"
                           "s.bind('\\0course-leak'); s.listen(); time.sleep(600)"], start_new_session=True)
import time; time.sleep(0.5)
done["daemon"] = daemon.poll() is None
json.dump(done, open("out.json", "w"))
"""

DETECT_EVERY_CHANNEL = r"""
import ctypes, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
me = os.getuid()
found = {}
found["tmp"] = sorted(n for n in os.listdir("/tmp") if os.lstat(os.path.join("/tmp", n)).st_uid == me)
found["dev_shm"] = sorted(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else []
found["mqueue"] = libc.mq_open(b"/course-leak", os.O_RDONLY, 0, None) >= 0
found["sysv"] = [kind for kind in ("shm", "msg", "sem")
                 if any("6c65616" in hex(int(l.split()[0])) for l in open(f"/proc/sysvipc/{kind}").read().splitlines()[1:])]
found["keys"] = sorted(l.split(None, 8)[8].split(":")[0] for l in open("/proc/keys").read().splitlines()
                       if "course-leak" in l)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0course-leak")
    found["abstract_socket"] = True
except OSError:
    found["abstract_socket"] = False
found["processes"] = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]
json.dump(found, open("out.json", "w"))
"""

NOTHING = {"tmp": [], "dev_shm": [], "mqueue": False, "sysv": [], "keys": [], "abstract_socket": False, "processes": []}


def test_one_attacker_fills_every_channel_and_the_next_submission_finds_each_empty(server):
    with server.submission() as folder:
        filled = _run(server, folder, "attacker", FILL_EVERY_CHANNEL)
    with server.submission() as folder:
        seen = _run(server, folder, "next", DETECT_EVERY_CHANNEL)
    assert all(filled.values()), f"the attacker could not fill a channel, so the test proves nothing: {filled}"
    assert seen == NOTHING
    assert server.left == [], server.left
    # and nothing of it is left on the host after the batch: the runs' uid has no key of the attacker
    uid = isolation.sandbox_uid(server.limits)
    check = subprocess.run(isolation.drop_to(uid, [sys.executable, "-I", "-c",
                                                  "print(open('/proc/keys').read())"]),
                           capture_output=True, text=True, preexec_fn=workspace.new_session_keyring)
    assert "course-leak" not in check.stdout


def test_without_the_reset_every_channel_reaches_the_next_submission(server, monkeypatch):
    """The control: the same attacker and detector with the clean-up between submissions switched off."""
    server.start()
    monkeypatch.setattr(server, "clean", lambda: None)
    monkeypatch.setattr(server, "reset", lambda: None)
    with server.submission() as folder:
        filled = _run(server, folder, "attacker", FILL_EVERY_CHANNEL)
    with server.submission() as folder:
        seen = _run(server, folder, "next", DETECT_EVERY_CHANNEL)
    assert all(filled.values())
    assert seen["tmp"] == ["dir", "link", "planted.txt"]
    assert seen["dev_shm"] == ["planted"]
    assert seen["mqueue"] and seen["sysv"] == ["shm", "msg", "sem"]
    assert {"course-leak-user", "course-leak-user-session", "course-leak-persistent"} <= set(seen["keys"])
    assert seen["abstract_socket"] and seen["processes"]
    server.stop()
    monkeypatch.undo()
    workspace.clear_keyrings(isolation.sandbox_uid(server.limits))


def test_a_run_without_the_pre_started_sandbox_leaves_no_key_either(tmp_path):
    """One sandbox per run: its namespaces end with it, but keyrings are per uid; each workspace clears them."""
    limits = sandbox.Limits(wall_seconds=60)
    results = {}
    for name, code in (("attacker", FILL_EVERY_CHANNEL), ("next", DETECT_EVERY_CHANNEL)):
        with Workspace(limits) as space:
            scratch = space / name
            scratch.mkdir()
            (scratch / "run.py").write_text(code)
            sandbox.run([sandbox.python(), "run.py"], scratch, limits=limits, wall_seconds=60)
            results[name] = json.loads((scratch / "out.json").read_text())
    assert results["attacker"]["user_key"] and results["attacker"]["persistent_key"]
    assert results["next"] == NOTHING


def test_without_the_keyring_clear_one_sandbox_per_run_leaks_keys(tmp_path):
    limits = sandbox.Limits(wall_seconds=60)
    results = {}
    try:
        for name, code in (("attacker", FILL_EVERY_CHANNEL), ("next", DETECT_EVERY_CHANNEL)):
            with Workspace(limits, clear_keys=False) as space:
                scratch = space / name
                scratch.mkdir()
                (scratch / "run.py").write_text(code)
                sandbox.run([sandbox.python(), "run.py"], scratch, limits=limits, wall_seconds=60)
                results[name] = json.loads((scratch / "out.json").read_text())
        assert {"course-leak-user", "course-leak-persistent"} <= set(results["next"]["keys"])
    finally:
        workspace.clear_keyrings(isolation.sandbox_uid(limits))


def test_the_keyring_sweep_works_where_python_refuses_a_preexec_fn(monkeypatch):
    """Python 3.12+ refuses ``preexec_fn`` at interpreter shutdown, when selfgrade's last workspace is
    swept (two tracebacks after a correct grade). The sweep must clear the keys without one."""
    limits = sandbox.Limits(wall_seconds=60)
    try:
        with Workspace(limits, clear_keys=False) as space:
            (space / "run.py").write_text(FILL_EVERY_CHANNEL)
            sandbox.run([sandbox.python(), "run.py"], space, limits=limits, wall_seconds=60)
            filled = json.loads((space / "out.json").read_text())
        assert filled["user_key"] and filled["persistent_key"], "no key planted: the test would prove nothing"
        real = subprocess.Popen.__init__

        def as_at_shutdown(self, *args, **kw):
            if kw.get("preexec_fn") is not None:
                raise RuntimeError("preexec_fn not supported at interpreter shutdown")
            real(self, *args, **kw)

        monkeypatch.setattr(subprocess.Popen, "__init__", as_at_shutdown)
        assert workspace.clear_keyrings(isolation.sandbox_uid(limits)) is True
        monkeypatch.undo()
        with Workspace(limits, clear_keys=False) as space:
            (space / "run.py").write_text(DETECT_EVERY_CHANNEL)
            sandbox.run([sandbox.python(), "run.py"], space, limits=limits, wall_seconds=60)
            seen = json.loads((space / "out.json").read_text())
        assert not [k for k in seen["keys"] if k.startswith("course-leak")], seen["keys"]
    finally:
        monkeypatch.undo()
        workspace.clear_keyrings(isolation.sandbox_uid(limits))


# --------------------------------------------------------------------------- root never follows a run's link

SWAPPER = r"""
import os, sys, time
target = sys.argv[1]
if os.fork():
    os._exit(0)          # the daemon lives on after its run, in a session of its own
os.setsid()
os.makedirs("tree/sub", exist_ok=True)
for i in range(300):
    open(f"tree/sub/f{i}", "w").close()
open("ready", "w").close()
end = time.monotonic() + 120
while time.monotonic() < end:   # swap the folder for a link to the host's, and back, as fast as it can
    try:
        os.rename("tree/sub", "tree/real")
        os.symlink(target, "tree/sub")
        os.unlink("tree/sub")
        os.rename("tree/real", "tree/sub")
    except OSError:
        pass
"""


def _walk_and_chown_by_path(folder: Path, uid: int) -> None:
    """What the grader did before (the control): os.walk and lchown by path."""
    import os

    for root, dirs, files in os.walk(folder):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            try:
                os.lchown(name, uid, uid)
            except OSError:
                pass


@pytest.fixture()
def host_secret(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    for i in range(5):
        (secret / f"key{i}").write_text("root only")
        (secret / f"key{i}").chmod(0o600)
    return secret


def _owners(folder: Path) -> set[int]:
    return {folder.stat().st_uid} | {p.lstat().st_uid for p in folder.iterdir()}


def _start_swapper(server, folder: Path, secret: Path) -> Path:
    scratch = folder / "kernel"
    scratch.mkdir()
    (scratch / "swap.py").write_text(SWAPPER)
    res = server.run("swap.py", [str(secret)], scratch, wall_seconds=60)
    assert res.returncode == 0, res.reason
    return scratch


def test_a_restart_never_hands_a_host_folder_to_the_sandbox(server, host_secret, monkeypatch):
    """The restart race: a daemon of the old kernel swaps a folder of its scratch for a link to a host
    folder while root hands the scratch to the new kernel. Its processes are killed first, and the walk
    goes by file descriptor; the host folder stays root's."""
    monkeypatch.setattr(server, "clean", lambda: None)   # the daemon outlives its run, as a kernel's would ...
    with server.submission() as folder:
        scratch = _start_swapper(server, folder, host_secret)
        monkeypatch.undo()                              # ... until the restart's own clean-up
        rundir = folder / "run"
        rundir.mkdir()
        monkeypatch.setenv("COURSE_SANDBOX_SCRATCH", str(scratch))
        monkeypatch.setenv("COURSE_SANDBOX_RUN", str(rundir))
        for _ in range(50):
            server.clean()
            for path in (scratch, rundir):
                workspace.give_to(path, server.uid)
        # and the walk alone, by file descriptor, with the daemon alive: never follows the link either
        monkeypatch.setattr(server, "clean", lambda: None)
        again = folder / "again"
        again.mkdir()
        scratch2 = _start_swapper(server, again, host_secret)
        for _ in range(200):
            workspace.give_to(scratch2, server.uid)
    assert _owners(host_secret) == {0}


def test_without_the_fix_the_restart_walk_chowns_a_host_folder(server, host_secret, monkeypatch):
    """The control: the walk by path, with the daemon alive, hands the host folder to the sandbox's uid."""
    monkeypatch.setattr(server, "clean", lambda: None)
    with server.submission() as folder:
        scratch = _start_swapper(server, folder, host_secret)
        deadline = time.monotonic() + 90   # a race: on a busy machine it takes more walks to win
        while time.monotonic() < deadline and _owners(host_secret) == {0}:
            _walk_and_chown_by_path(scratch, server.uid)
        monkeypatch.undo()
    assert server.uid in _owners(host_secret), "the race was not won in 90 s of walks: the control proves nothing"


def test_root_appends_to_a_log_of_a_run_folder_without_following_what_a_run_left_there(tmp_path):
    """kernel.log (in a folder the old kernel could write) and .sandbox-stderr are opened by root: a link
    to a host file, a FIFO or a hard link left in their place is replaced, never written through."""
    import os

    host = tmp_path / "host.conf"
    host.write_text("root's\n")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "kernel.log").symlink_to(host)
    os.mkfifo(folder / "fifo.log")
    os.link(host, folder / "hard.log")
    for name in ("kernel.log", "fifo.log", "hard.log"):
        fd = workspace.open_log(folder / name)
        os.write(fd, b"kernel banner\n")
        os.close(fd)
        assert (folder / name).is_file() and not (folder / name).is_symlink()
        assert (folder / name).read_text() == "kernel banner\n"
    assert host.read_text() == "root's\n"
    # the control: the plain open root used before writes through the link into the host's file
    (folder / "old.log").symlink_to(host)
    fd = os.open(str(folder / "old.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"kernel banner\n")
    os.close(fd)
    assert host.read_text() == "root's\nkernel banner\n"
