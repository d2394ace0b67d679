"""The root-owned grading service (instructor/service/__init__.py), as a hub runs it: root serves a Unix
socket, the graders' group asks.

Real OS accounts ``icxs-grader`` (in the group ``icxs-graders``) and ``icxs-other`` (not), removed
afterwards. Stdlib-only clients run as those accounts under Debian's ``/usr/bin/python3`` (the
checkout's venv is not theirs to run). Each defence has its control:

* the folder (root's, group the graders, 0750) keeps other accounts from the socket; opened up, the
  peer check (``SO_PEERCRED``) still refuses them, and still lets the grader in;
* a class graded through the service scores what it scores graded here, each submission in a
  sandbox of root's (the service's report: cgroup, a tmpfs per submission, a reserved uid);
* bad requests (a path for a name, an unknown assignment, another copy of the assignment, not JSON,
  too big) get an answer that says what is wrong, and the service goes on serving;
* a submission that kills its grading worker is charged twice and flagged; the next one is graded;
* the sandbox's world-writable folders lie in the service's own folder, which no other account enters;
* the client believes only a socket root serves.
"""
from __future__ import annotations

import base64
import csv
import grp
import json
import os
import pwd
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.authoring import samples  # noqa: E402
from instructor import sandbox, service  # noqa: E402
from instructor.sandbox import zygote  # noqa: E402

pytestmark = pytest.mark.slow
NP = "icxs-"
GROUP, GRADER, OTHER = NP + "graders", NP + "grader", NP + "other"
SYSTEM_PYTHON = "/usr/bin/python3"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the service runs as root and the test makes OS accounts"
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setpriv"):
        if not shutil.which(tool):
            return f"needs {tool}"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"needs {SYSTEM_PYTHON} (the accounts' client)"
    if not zygote.enabled(sandbox.Limits()):
        return "needs root's sandbox (privileged bubblewrap, a bounded disk)"
    return None


WHY_NOT = _why_not()


#: a client with the standard library only, run as an account: prints the service's answer as JSON, or
#: {"connect": "<errno name>"} when the socket cannot even be reached
CLIENT = r"""
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(json.dumps({"connect": type(e).__name__})); sys.exit(0)
data = json.dumps({"op": "hello"}).encode()
try:
    s.sendall(struct.pack("!Q", len(data)) + data)
except OSError:
    pass  # refused before the request was read: the answer is still there to read
head = s.recv(8)
n = struct.unpack("!Q", head)[0]
body = b""
while len(body) < n:
    body += s.recv(n - len(body))
print(body.decode())
"""

#: a server an account other than root runs: answers anything with "ok" (a forged service)
FORGED = r"""
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
data = json.dumps({"ok": True, "report": {"forged": True}}).encode()
c.sendall(struct.pack("!Q", len(data)) + data)
c.close()
"""


def _as(account: str, *argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", f"--reuid={account}", f"--regid={pwd.getpwnam(account).pw_gid}",
                           "--init-groups", "--", *argv], capture_output=True, text=True, timeout=60, **kw)


def _hello_as(account: str, sock: Path, scripts: Path) -> dict:
    r = _as(account, SYSTEM_PYTHON, str(scripts / "client.py"), str(sock))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def accounts():
    if WHY_NOT is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the grading service's test must run in CI: {WHY_NOT}")
        pytest.skip(WHY_NOT)
    made = []
    try:
        for name in (GRADER, OTHER):
            if subprocess.run(["id", name], capture_output=True).returncode == 0:
                subprocess.run(["userdel", "--force", name], capture_output=True)
        subprocess.run(["groupdel", GROUP], capture_output=True)
        subprocess.run(["groupadd", GROUP], check=True, capture_output=True)
        for name, groups in ((GRADER, [GROUP]), (OTHER, [])):
            argv = ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
            if groups:
                argv[1:1] = ["--groups", ",".join(groups)]
            subprocess.run(argv, check=True, capture_output=True)
            made.append(name)
        yield {"grader": GRADER, "other": OTHER, "gid": grp.getgrnam(GROUP).gr_gid}
    finally:
        for name in made:
            subprocess.run(["userdel", "--force", name], capture_output=True)
        subprocess.run(["groupdel", GROUP], capture_output=True)


@pytest.fixture(scope="module")
def running(accounts, tmp_path_factory):
    """The service as root, as the hub starts it; a worker of it dies on student ``zz-killer``."""
    top = Path(tempfile.mkdtemp(prefix="icxs-", dir="/tmp"))
    os.chmod(top, 0o755)
    sock = top / "grading-service" / "grading.sock"
    scripts = top / "scripts"
    scripts.mkdir(mode=0o755)
    (scripts / "client.py").write_text(CLIENT)
    (scripts / "forged.py").write_text(FORGED)
    for p in scripts.iterdir():
        p.chmod(0o644)
    # as the hub starts it: its workspaces in a folder of its own under the socket's (root's, 0700)
    env = dict(os.environ, COURSE_GRADING_FAULTS="zz-killer:always", TMPDIR=str(sock.parent / "tmp"))
    env.pop(service.ENV, None)
    log = (top / "service.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "instructor.service", "serve", "--socket", str(sock),
                             "--group", GROUP, "--jobs", "1"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                service.ask(sock, {"op": "hello"}, timeout=10)
                break
            except service.ServiceError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the service did not start:\n{(top / 'service.log').read_text()[-3000:]}")
                time.sleep(0.3)
        yield {"sock": sock, "scripts": scripts, "top": top, "proc": proc}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(top, ignore_errors=True)


def test_the_socket_is_root_s_and_the_graders_group_s(running, accounts):
    folder, sock = os.lstat(running["sock"].parent), os.lstat(running["sock"])
    assert (folder.st_uid, folder.st_gid, folder.st_mode & 0o7777) == (0, accounts["gid"], 0o750)
    assert (sock.st_uid, sock.st_gid, sock.st_mode & 0o7777) == (0, accounts["gid"], 0o660)


def test_only_root_and_the_graders_group_may_ask(running, accounts):
    sock, scripts = running["sock"], running["scripts"]
    hello = _hello_as(accounts["grader"], sock, scripts)
    assert hello.get("ok") and hello["uid"] == 0 and "00_orientation" in hello["assignments"], hello
    # another account cannot even reach the socket: the folder is the graders' group's
    assert _hello_as(accounts["other"], sock, scripts) == {"connect": "PermissionError"}
    # the folder and the socket opened to everyone (a mistake, or the control of the folder's layer):
    # the peer's credentials still refuse the other account, and still let the grader in
    os.chmod(sock.parent, 0o755)
    os.chmod(sock, 0o666)
    try:
        refused = _hello_as(accounts["other"], sock, scripts)
        assert "connect" not in refused, "the control failed: the socket should be reachable now"
        uid = pwd.getpwnam(accounts["other"]).pw_uid
        assert refused.get("error", "").startswith(f"uid {uid} may not use the grading service"), refused
        assert _hello_as(accounts["grader"], sock, scripts).get("ok")
    finally:
        os.chmod(sock.parent, 0o750)
        os.chmod(sock, 0o660)


def _incoming(folder: Path, names: tuple[str, ...]) -> Path:
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    for name in names:
        nbname, nb = samples.build_notebook(by_name[name])
        (folder / name / "00_orientation").mkdir(parents=True)
        nbformat.write(nb, folder / name / "00_orientation" / nbname)
    return folder


def test_a_class_graded_through_the_service_scores_as_graded_here(running, tmp_path):
    chosen = [s for s in samples.load_samples("00_orientation")
              if s.student in ("ada", "closed_form", "ben")]
    assert len(chosen) == 3, [s.student for s in samples.load_samples("00_orientation")]
    incoming = _incoming(tmp_path / "incoming", tuple(s.student for s in chosen))
    env = dict(os.environ, **{service.ENV: str(running["sock"])})
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(incoming), "--workdir",
                           str(tmp_path / "course"), "--out", str(tmp_path), "--no-progress", "--jobs", "2"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert (tmp_path / "grades.csv").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    with (tmp_path / "grades.csv").open() as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    ledger = json.loads((tmp_path / "course" / "grading-ledger.json").read_text())
    for s in chosen:
        assert rows[s.student]["status"] == "graded", rows[s.student]
        assert float(rows[s.student]["auto_score"]) == s.expect_auto, (s.student, rows[s.student])
        result = ledger[f"{s.student}/00_orientation"]["result"]
        assert result["sandboxed"], result
        assert f"note: {s.student}/00_orientation: graded by the root-owned grading service" in proc.stdout, proc.stdout
    # recorded here, by this process: the gradebook and each feedback page are in this course folder
    assert all((tmp_path / "course" / "feedback" / s.student / "00_orientation").is_dir() for s in chosen)


def test_the_service_s_sandbox_is_root_s(running):
    report = service.ask(running["sock"], {"op": "report"}, timeout=120)["report"]
    assert report["grader is root"] is True
    assert report["memory and processes"].startswith("cgroup"), report
    assert report["disk bound"] == "a tmpfs per submission", report
    inside = report["sandboxed process"]
    assert inside["host uid"] not in (0, None) and report["never root outside"] is True, report


def _raw(sock: Path, payload: bytes) -> dict:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(str(sock))
    s.sendall(payload)
    head = s.recv(8)
    n = struct.unpack("!Q", head)[0]
    body = b""
    while len(body) < n:
        body += s.recv(n - len(body))
    s.close()
    return json.loads(body)


def test_bad_requests_are_refused_with_what_is_wrong(running):
    sock = running["sock"]
    nb = base64.b64encode(b"{}").decode()
    digest = service.source_digest(REPO, "00_orientation")

    def refusal(**req) -> str:
        with pytest.raises(service.ServiceError) as err:
            service.ask(sock, {"op": "grade", **req}, timeout=60)
        return str(err.value)

    assert "student '../../etc'" in refusal(student="../../etc", assignment="00_orientation",
                                            source_digest=digest, notebooks={"a.ipynb": nb})
    assert "'nope' is not one of this service's: 00_orientation" in refusal(
        student="ann", assignment="nope", source_digest=digest, notebooks={"a.ipynb": nb})
    assert "differs from the grading service's" in refusal(student="ann", assignment="00_orientation",
                                                           source_digest="0" * 64, notebooks={"a.ipynb": nb})
    assert "notebook '../x.ipynb'" in refusal(student="ann", assignment="00_orientation", source_digest=digest,
                                              notebooks={"../x.ipynb": nb})
    assert "not base64" in refusal(student="ann", assignment="00_orientation", source_digest=digest,
                                   notebooks={"a.ipynb": "***"})
    assert "unknown op 'rm'" in str(pytest.raises(service.ServiceError, service.ask, sock, {"op": "rm"}).value)
    assert "not JSON" in _raw(sock, struct.pack("!Q", 5) + b"hello")["error"]
    assert "at most" in _raw(sock, struct.pack("!Q", service.MAX_REQUEST + 1))["error"]
    assert service.ask(sock, {"op": "hello"})["ok"]  # and it goes on serving


def test_a_submission_that_kills_its_worker_is_flagged_and_the_next_is_graded(running, tmp_path):
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    name, nb = samples.build_notebook(by_name["ada"])
    data = {name: nbformat.writes(nb).encode()}
    killer = service.grade_request(running["sock"], "zz-killer", "00_orientation", data)
    assert not killer.ok and "killed its grading worker 2 times" in killer.error, killer
    assert killer.flags, killer
    honest = service.grade_request(running["sock"], "ada", "00_orientation", data)
    assert honest.ok and honest.executed and honest.sandboxed, honest.error


def test_the_client_believes_only_a_socket_root_serves(running, accounts):
    other = running["top"] / "forged"
    other.mkdir()
    os.chown(other, pwd.getpwnam(accounts["other"]).pw_uid, -1)
    forged = subprocess.Popen(["setpriv", f"--reuid={accounts['other']}",
                               f"--regid={pwd.getpwnam(accounts['other']).pw_gid}", "--init-groups", "--",
                               SYSTEM_PYTHON, str(running["scripts"] / "forged.py"), str(other / "s.sock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert forged.stdout.readline().strip() == "ready"
        with pytest.raises(service.ServiceError, match="not root: refused"):
            service.ask(other / "s.sock", {"op": "report"}, timeout=30)
    finally:
        forged.kill()
        forged.wait(timeout=10)


def test_other_accounts_cannot_reach_the_service_s_workspaces(running, accounts):
    """While a submission is graded, the sandbox's folders are world-writable (mode 0777: the reserved uid
    writes there; the control: they are found). They lie in folders of root's alone (the service's TMPDIR,
    and /var/tmp/inplace-grading-0 for its pre-started sandbox), so no other account, the graders'
    included, can plant a file in them."""
    import threading

    tmp = running["sock"].parent / "tmp"
    st = os.lstat(tmp)
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o700)
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    name, nb = samples.build_notebook(by_name["ada"])
    nb.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(3)"))
    got = {}
    worker = threading.Thread(target=lambda: got.update(res=service.grade_request(
        running["sock"], "slow", "00_orientation", {name: nbformat.writes(nb).encode()})))
    worker.start()
    writable, deadline = [], time.monotonic() + 60
    roots = [tmp, Path("/var/tmp") / "inplace-grading-0"]
    while not writable and worker.is_alive() and time.monotonic() < deadline:
        for root in roots:
            for dirpath, dirnames, _ in os.walk(root):
                for d in dirnames:
                    p = Path(dirpath) / d
                    try:
                        if not p.is_symlink() and os.lstat(p).st_mode & 0o002:
                            writable.append(p)
                    except OSError:
                        pass
        time.sleep(0.05)
    try:
        assert writable, "the control: a submission's world-writable folders should be there while it is graded"
        for who in (accounts["grader"], accounts["other"]):
            r = _as(who, "/usr/bin/touch", str(writable[0] / "planted"))
            assert r.returncode != 0 and "Permission denied" in r.stderr, (who, writable[0], r)
        assert all(os.lstat(root).st_mode & 0o777 == 0o700 and os.lstat(root).st_uid == 0 for root in roots)
    finally:
        worker.join(timeout=120)
    assert got["res"].ok, got["res"].error


def test_without_the_service_each_submission_says_so_and_nothing_is_graded_as_someone_else(tmp_path):
    """The socket names a service that is not running: every submission gets an error that says what
    to start, no grading falls back to this account's own sandbox, and the batch still ends."""
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    from instructor.batch import course

    incoming = _incoming(tmp_path / "incoming", ("ada", "ben"))
    subs, problems = course.collect_submissions(incoming)
    assert len(subs) == 2 and not problems
    results = course.grade(subs, tmp_path / "course", progress=False, service=str(tmp_path / "nowhere.sock"))
    for res in results:
        assert not res.ok and not res.sandboxed, res
        assert "cannot be reached" in res.error and "is it running?" in res.error, res.error
    assert not list((tmp_path / "course").glob("autograded/*/*/*.ipynb"))
