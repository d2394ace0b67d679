"""The course's JupyterHub (hub/, instructor/classroom/hub.py): a real hub on free ports, as root.

Accounts are real OS accounts named ``icxt-*`` (removed afterwards, also when a test fails): the
shared grader account, an instructor and a second grader, two students. A student logs in over HTTP
with their PAM password, their server runs as their own account, and neither through that server (a
kernel) nor with ``runuser`` can they read the course's ``source/``, ``instructor/``, the gradebook or
another student's home; before the permission step they could (the control). The instructor and the
second grader reach formgrader as the hub service; a student is refused. A bad class list is refused
with the file and line named, before any account is made.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

pytestmark = pytest.mark.slow

NP = "icxt-"
PASSWORD = "icxt-Pass-7391"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "makes OS accounts and runs JupyterHub as root"
    for tool in ("useradd", "userdel", "runuser", "chpasswd", "node", "bwrap"):
        if not shutil.which(tool):
            return f"needs {tool}"
    try:
        import jupyterhub  # noqa: F401
        import pamela  # noqa: F401
    except ImportError:
        return "needs jupyterhub (pip install -c constraints.txt -c hub/constraints-hub.txt jupyterhub)"
    return None


WHY_NOT = _why_not()
if WHY_NOT is None:
    import requests

    from instructor.classroom import hub as hubmod
    from instructor.classroom.handins import HandinError

needs_hub = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


def _proxy() -> None:
    """configurable-http-proxy from hub/package-lock.json (what `make hub` installs)."""
    chp = REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not chp.exists():
        if not shutil.which("npm"):
            pytest.skip("needs npm to install configurable-http-proxy (hub/package-lock.json)")
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=REPO / "hub", check=True, timeout=300,
                       capture_output=True)


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, cwd="/",
                          timeout=60)


def can_read(user: str, path: Path) -> bool:
    """``cat`` for a file, ``ls`` for a folder, as ``user``."""
    return subprocess.run(["runuser", "-u", user, "--", "ls" if Path(path).is_dir() else "cat", str(path)],
                          capture_output=True, cwd="/", timeout=60).returncode == 0


class Client:
    def __init__(self, base: str):
        self.base = base
        self.s = requests.Session()

    def login(self, user: str, password: str) -> int:
        self.s.get(f"{self.base}/hub/login", timeout=30).raise_for_status()
        r = self.s.post(f"{self.base}/hub/login?next=", timeout=30, allow_redirects=False,
                        data={"username": user, "password": password, "_xsrf": self.s.cookies.get("_xsrf")})
        return r.status_code

    def api(self, method: str, path: str, **kw):
        return self.s.request(method, f"{self.base}/hub/api{path}", timeout=60,
                              headers={"X-XSRFToken": self.s.cookies.get("_xsrf", path="/hub/") or ""}, **kw)


async def _execute(ws_url: str, token: str, code: str) -> str:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    ws = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}))
    mid = uuid.uuid4().hex
    await ws.write_message(json.dumps({
        "header": {"msg_id": mid, "username": "test", "session": uuid.uuid4().hex, "msg_type": "execute_request",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    out = []
    while True:
        msg = await asyncio.wait_for(ws.read_message(), 90)
        if msg is None:
            break
        m = json.loads(msg)
        if m.get("parent_header", {}).get("msg_id") != mid:
            continue
        if m["msg_type"] == "stream":
            out.append(m["content"]["text"])
        elif m["msg_type"] == "error":
            out.append(f"ERROR {m['content']['ename']}: {m['content']['evalue']}\n")
        elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    ws.close()
    return "".join(out)


def _stop(proc: subprocess.Popen, state: Path) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the hub stops its users' servers, its service and its proxy
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    pid_file = state / "jupyterhub-proxy.pid"
    if pid_file.exists():  # the proxy runs in a session of its own
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        except (ValueError, OSError):
            pass


def hub_base(prefix: str) -> Path:
    """A new folder for a test hub (mode 0755), on the venv's file system where one is writable: the hub's
    environment is a hard-link copy of this venv there (else a full copy)."""
    here = os.stat(sys.prefix).st_dev
    parent = next((d for d in ("/tmp", "/var/tmp", str(REPO.parent)) if os.path.isdir(d) and os.access(d, os.W_OK)
                   and os.stat(d).st_dev == here), "/tmp")
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(base, 0o755)
    return base


@pytest.fixture(scope="module")
def deployed():
    if WHY_NOT:
        pytest.skip(WHY_NOT)
    _proxy()
    for stale in ("student1", "student2", "instructor", "grader2", "inplace-grader", "r-ada", "ta3"):
        if hubmod.user_exists(NP + stale):
            pytest.fail(f"account {NP + stale} is left from an earlier run: userdel -r {NP + stale}")
    base = hub_base("icxt-hub-")
    prefix = base / "p"
    proc = None
    ports = {"hub_api_port": hubmod.free_port(), "proxy_api_port": hubmod.free_port(),
             "service_port": hubmod.free_port()}
    port = hubmod.free_port()
    try:
        t0 = time.monotonic()
        hub, made = hubmod.setup(prefix, names_prefix=NP, demo=True, demo_password=PASSWORD, port=port,
                                 ip="127.0.0.1", ports=ports, lock=False)
        course = hub.course
        secrets_ = {"source": next((course / "source").glob("*/*.ipynb")), "instructor": course / "instructor",
                    "hidden": course / "instructor" / "hidden", "gradebook": course / "gradebook.db"}
        # the control: before the permission step, the copied course is as readable as any checkout
        control = {k: can_read(f"{NP}student1", p) for k, p in secrets_.items()}
        hubmod.lock_down(hub)
        setup_s = time.monotonic() - t0
        log = open(base / "hub.log", "wb")
        env = dict(os.environ, HUB_PREFIX=str(prefix))
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(REPO / "hub" / "jupyterhub_config.py")],
                                cwd=hub.state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{url}/hub/api/", timeout=5).status_code == 200 and requests.get(
                        f"{url}/services/{hub.names.service}/api/status", timeout=5,
                        allow_redirects=False).status_code in (200, 302, 403):
                    break
            except requests.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the hub did not start:\n" + (base / "hub.log").read_text()[-4000:])
            time.sleep(0.5)
        yield {"hub": hub, "url": url, "made": made, "control": control, "secrets": secrets_,
               "setup_s": setup_s, "start_s": time.monotonic() - t0 - setup_s, "log": base / "hub.log"}
    finally:
        if proc is not None:
            _stop(proc, prefix / "state")
        try:
            gone = hubmod.remove(hubmod.Hub.load(prefix))
        except hubmod.HubError:
            gone = []
        for name in ("student1", "student2", "instructor", "grader2", "inplace-grader", "r-ada", "ta3"):
            if hubmod.user_exists(NP + name):  # never leave an account behind
                subprocess.run(["userdel", "--remove", "--force", NP + name], capture_output=True)
        for g in ("inplace-graders", "inplace-students"):
            subprocess.run(["groupdel", NP + g], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
        assert not any(hubmod.user_exists(NP + n) for n in ("student1", "student2", "instructor")), gone


@needs_hub
def test_a_student_logs_in_and_their_server_runs_as_them(deployed):
    """PAM login over HTTP, the server spawned as the student's OS account, in their 0700 home, on the
    hub's own environment (nothing of the checkout); through a kernel of that server the course's
    source, instructor code and gradebook and the other student's home cannot be read."""
    hub, url, sec = deployed["hub"], deployed["url"], deployed["secrets"]
    me, other = f"{NP}student1", f"{NP}student2"
    bad = Client(url)
    assert bad.login(me, "not-the-password") == 403
    c = Client(url)
    assert c.login(me, PASSWORD) == 302
    assert c.api("POST", f"/users/{me}/server").status_code in (201, 202)
    deadline = time.monotonic() + 60
    while not c.api("GET", f"/users/{me}").json().get("servers", {}).get("", {}).get("ready"):
        assert time.monotonic() < deadline, deployed["log"].read_text()[-3000:]
        time.sleep(0.5)
    token = c.api("POST", f"/users/{me}/tokens", json={"note": "test_hub"}).json()["token"]
    h = {"Authorization": f"token {token}"}
    r = requests.put(f"{url}/user/{me}/api/contents/mine.txt", headers=h, timeout=30,
                     json={"type": "file", "format": "text", "content": "my answer"})
    assert r.status_code == 201, r.text
    home = Path(f"/home/{me}")
    assert (home / "mine.txt").stat().st_uid == hubmod.pwd.getpwnam(me).pw_uid  # written by the student's server
    assert (home.stat().st_mode & 0o777) == 0o700
    as_user(other, "sh", "-c", f"echo secret-of-{other} > /home/{other}/work.txt")
    kernel = requests.post(f"{url}/user/{me}/api/kernels", headers=h, json={}, timeout=60).json()["id"]
    probe = ("import os, sys, autograder\n"
             "print('uid', os.getuid(), 'prefix', sys.prefix, 'pkg', autograder.__file__)\n"
             f"for p in {[str(sec['source']), str(sec['gradebook']), str(sec['instructor']), f'/home/{other}/work.txt']!r}:\n"
             "    try:\n"
             "        (os.listdir if os.path.isdir(p) else (lambda q: open(q, 'rb').read()))(p)\n"
             "        print('READ', p)\n"
             "    except OSError as e:\n"
             "        print('DENIED', type(e).__name__, p)\n")
    out = asyncio.run(_execute(f"ws://127.0.0.1:{url.rsplit(':', 1)[1]}/user/{me}/api/kernels/{kernel}/channels",
                               token, probe))
    assert f"uid {hubmod.pwd.getpwnam(me).pw_uid} " in out, out
    assert f"prefix {hub.env} " in out and f"pkg {hub.env}/" in out, out  # not the checkout's venv or package
    assert "READ" not in out and out.count("DENIED PermissionError") == 4, out
    # another student, signed in, is refused the first student's server (files and kernels)
    c2 = Client(url)
    assert c2.login(other, PASSWORD) == 302
    # opening the server's page runs the hub's OAuth: the owner is let in, the other student is refused
    assert c.s.get(f"{url}/user/{me}/lab", timeout=60).status_code == 200
    r = c2.s.get(f"{url}/user/{me}/lab", timeout=60)
    assert r.status_code == 403 and "/hub/api/oauth2/authorize" in r.url, (r.status_code, r.url)
    for path in ("api/contents", f"api/kernels/{kernel}"):
        assert c.s.get(f"{url}/user/{me}/{path}", timeout=30).status_code == 200  # the owner's session: yes
        r = c2.s.get(f"{url}/user/{me}/{path}", timeout=30)
        assert r.status_code == 403 and "mine.txt" not in r.text, (path, r.status_code)
    # the environment's commands (a student's terminal) run the hub's Python too, not the checkout's
    r = as_user(me, str(hub.env / "bin" / "jupyter"), "--paths")
    assert r.returncode == 0 and str(REPO) not in (hub.env / "bin" / "jupyter").read_text(), r.stderr


@needs_hub
def test_a_student_account_cannot_read_the_course(deployed):
    """As the OS account (runuser), with the control: before the permission step the same reads
    succeeded, and the instructor (grader group) can read them now."""
    sec, hub = deployed["secrets"], deployed["hub"]
    # the test can fail: before the permission step a student read the course's files (the gradebook is
    # made 0660 for the grader group from the start, so it is not part of the control)
    control = deployed["control"]
    assert control["source"] and control["instructor"] and control["hidden"], control
    for who in (f"{NP}student1", f"{NP}student2"):
        readable = {k: can_read(who, p) for k, p in sec.items()}
        assert not any(readable.values()), (who, readable)
        assert not can_read(who, hub.state / "hub.json")
        assert can_read(who, hub.env / "lib")  # their Python
    assert all(can_read(f"{NP}instructor", p) for p in sec.values())
    assert all(can_read(f"{NP}grader2", p) for p in sec.values())
    # another student's home: 0700; the control opens it for a moment
    other = Path(f"/home/{NP}student2")
    as_user(f"{NP}student2", "sh", "-c", f"echo x > {other}/notes.txt")
    assert not can_read(f"{NP}student1", other / "notes.txt")
    os.chmod(other, 0o755)
    try:
        assert can_read(f"{NP}student1", other / "notes.txt")
    finally:
        os.chmod(other, 0o700)
    assert not can_read(f"{NP}student1", other / "notes.txt")


@needs_hub
def test_lock_checkout_closes_a_checkout_to_students(deployed):
    """`make hub` runs setup --lock-checkout: the checkout (source/, instructor/) is closed to others."""
    checkout = Path(tempfile.mkdtemp(prefix="icxt-checkout-", dir="/tmp"))
    try:
        (checkout / "source").mkdir()
        (checkout / "source" / "answers.ipynb").write_text("{}")
        os.chmod(checkout, 0o755)
        assert can_read(f"{NP}student1", checkout / "source" / "answers.ipynb")  # the control
        hubmod.lock_checkout(checkout)
        assert not can_read(f"{NP}student1", checkout / "source" / "answers.ipynb")
        assert not hubmod.checkout_is_open(checkout) and os.stat(checkout).st_mode & 0o777 == 0o750
    finally:
        shutil.rmtree(checkout, ignore_errors=True)


@needs_hub
def test_graders_reach_formgrader_as_the_hub_service_and_students_do_not(deployed):
    url, hub = deployed["url"], deployed["hub"]
    svc = f"{url}/services/{hub.names.service}"
    for grader in (f"{NP}instructor", f"{NP}grader2"):
        c = Client(url)
        assert c.login(grader, PASSWORD) == 302
        r = c.s.get(f"{svc}/formgrader", timeout=60)
        assert r.status_code == 200 and "nbgrader formgrade" in r.text, (r.status_code, r.url)
        r = c.s.get(f"{svc}/api/contents/source", timeout=30)  # the service serves the course folder
        assert r.status_code == 200 and {x["name"] for x in r.json()["content"]} >= {"00_orientation"}
    c = Client(url)
    assert c.login(f"{NP}student2", PASSWORD) == 302
    assert c.s.get(f"{svc}/formgrader", timeout=60).status_code == 403
    assert c.s.get(f"{svc}/api/contents/source", timeout=30).status_code == 403
    # formgrader runs as the shared grader account, with the course's trusted Autograde buttons
    log = deployed["log"].read_text()
    assert "trusted pipeline behind Autograde" in log


def grader_sandbox_report(deployed) -> dict:
    """``python -m instructor.sandbox`` as the grader account, in the course folder (run once)."""
    if "report" not in deployed:
        hub = deployed["hub"]
        g = hub.names.grader_account
        env = ["env", "-i", f"PATH={hub.env}/bin:/usr/bin:/bin", f"HOME=/home/{g}", "LANG=C.UTF-8"]
        r = subprocess.run(["runuser", "-u", g, "--", *env, str(hub.python), "-m", "instructor.sandbox"],
                           cwd=hub.course, capture_output=True, text=True, timeout=120)
        deployed["report"] = json.loads(r.stdout)
    return deployed["report"]


def needs_user_namespaces(deployed) -> None:
    report = grader_sandbox_report(deployed)
    if not report["bubblewrap"]:
        pytest.skip("bubblewrap cannot run as a non-root account on this machine (unprivileged user namespaces "
                    f"off?): {report['why not']}; grading from the hub would run submissions unsandboxed")


@needs_hub
def test_the_sandbox_as_the_grader_account(deployed):
    """Grading from the hub runs as the grader account (not root): bubblewrap in a user namespace.
    A sandboxed process sees none of the course folder, no other home, no network."""
    hub = deployed["hub"]
    g = hub.names.grader_account
    env = ["env", "-i", f"PATH={hub.env}/bin:/usr/bin:/bin", f"HOME=/home/{g}", "LANG=C.UTF-8",
           "INPLACE_CANARY=grader-secret-7731"]   # stands for the hub token formgrader's environment held
    needs_user_namespaces(deployed)
    report = grader_sandbox_report(deployed)
    assert report["bubblewrap"] and not report["grader is root"], report
    sp = report["sandboxed process"]
    assert sp["capabilities"] == "0000000000000000" and sp["no_new_privs"], sp
    # the host uid, measured outside by the owner of a file the probe made: the grader account, not
    # the 0 that /proc/self/uid_map shows inside (the intermediate namespace's)
    import pwd

    assert sp["host uid"] == pwd.getpwnam(g).pw_uid and sp["uid_map's view"] == 0, sp
    code = ("import os, socket\n"
            f"for p in {[str(hub.course / 'gradebook.db'), str(hub.course / 'source'), str(hub.course / 'instructor' / 'hidden'), '/home/' + NP + 'student1', str(hub.state)]!r}:\n"
            "    print('SEEN' if os.path.exists(p) else 'ABSENT', p)\n"
            "s = socket.socket()\n"
            "try:\n"
            f"    s.connect(('127.0.0.1', {deployed['url'].rsplit(':', 1)[1]})); print('NET open')\n"
            "except OSError as e:\n"
            "    print('NET', type(e).__name__)\n"
            "print('uid', os.getuid())\n"
            "try:\n"
            "    seen = open('/proc/1/environ', 'rb').read()\n"
            "except OSError:\n"
            "    seen = b''\n"
            "print('PID1', 'CANARY' if b'grader-secret-7731' in seen else 'CLEAN')\n")
    script = ("import sys, tempfile, subprocess, os\n"
              "from pathlib import Path\n"
              "from instructor.sandbox import isolation\n"
              "d = Path(tempfile.mkdtemp(dir=os.environ['HOME']))\n"
              f"r = subprocess.run(isolation.bwrap_argv(d, [sys.executable, '-c', {code!r}]), capture_output=True, text=True)\n"
              "print(r.stdout, r.stderr)\n")
    r = subprocess.run(["runuser", "-u", g, "--", *env, str(hub.python), "-c", script], cwd=hub.course,
                       capture_output=True, text=True, timeout=120)
    assert "SEEN" not in r.stdout and r.stdout.count("ABSENT") == 5, r.stdout + r.stderr
    assert "NET open" not in r.stdout and "NET " in r.stdout, r.stdout + r.stderr
    assert "uid 65534" in r.stdout, r.stdout + r.stderr
    # bubblewrap is pid 1 in the sandbox and runs as the grader: it starts with an empty environment,
    # so nothing of the grader's (a hub token) is at /proc/1/environ
    assert "PID1 CLEAN" in r.stdout, r.stdout + r.stderr


@needs_hub
def test_roster_import_refuses_a_bad_class_list_by_file_and_line(deployed, tmp_path):
    hub = deployed["hub"]
    bad = tmp_path / "class.csv"
    bad.write_text("id,first_name,last_name,email\nr-ada,Ada,Lovelace,ada@example.org\n"
                   "Grace.Hopper,Grace,Hopper,grace@example.org\ninstructor,Eve,Mallory,eve@example.org\n")
    with pytest.raises(HandinError) as err:
        hubmod.import_roster(hub, bad)
    msg = str(err.value)
    assert str(bad) in msg and "line 3" in msg and "'Grace.Hopper'" in msg and "cannot be a login name" in msg, msg
    # a class list cannot make the instructor's (or any other existing) account a student's
    assert f"line 4: an account '{NP}instructor' already exists" in msg, msg
    assert not hubmod.user_exists(f"{NP}r-ada")  # nothing made from a file with a bad line
    headerless = tmp_path / "noheader.csv"
    headerless.write_text("r-ada,Ada,Lovelace\n")
    with pytest.raises(HandinError, match=rf"{headerless}: the roster's first line must name its columns"):
        hubmod.import_roster(hub, headerless)
    # set-up never takes over an account it did not make (its --demo names, its grader account)
    stranger = hubmod.Hub(prefix=str(tmp_path / "another-hub"), names_prefix=NP)
    for name in (f"{NP}instructor", "root"):
        with pytest.raises(hubmod.HubError, match="already exists on this machine and was not made by this hub"):
            hubmod.ensure_user(stranger, name, [stranger.names.graders], password="taken-over")
    assert hubmod.ensure_user(hub, f"{NP}instructor", [hub.names.graders]) is False  # its own: fine
    assert Client(deployed["url"]).login(f"{NP}instructor", PASSWORD) == 302  # password unchanged
    # another grader: the grader group (reads the course), never a student
    pw = hubmod.add_grader(hub, f"{NP}ta3")
    assert pw and hubmod.in_group(f"{NP}ta3", hub.names.graders) and f"{NP}ta3" in hubmod.Hub.load(hub.root).graders
    assert can_read(f"{NP}ta3", deployed["secrets"]["source"])
    with pytest.raises(hubmod.HubError, match="is a student of this course"):
        hubmod.add_grader(hub, f"{NP}student1")
    assert not hubmod.in_group(f"{NP}student1", hub.names.graders)
    # the command line says it too, and exits non-zero
    r = subprocess.run([sys.executable, "-m", "instructor.classroom.hub", "roster", str(bad), "--prefix", hub.prefix],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2 and f"error: {bad}: line 3" in r.stderr, r.stderr
    # a good one: the account, its initial password, the gradebook, and a login without restarting the hub
    good = tmp_path / "good.csv"
    good.write_text("id,first_name,last_name,email\nr-ada,Ada,Lovelace,ada@example.org\n")
    made = dict(hubmod.import_roster(hub, good))
    assert set(made) == {f"{NP}r-ada"} and hubmod.in_group(f"{NP}r-ada", hub.names.students)
    assert Client(deployed["url"]).login(f"{NP}r-ada", made[f"{NP}r-ada"]) == 302
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}") as gb:
        assert gb.find_student(f"{NP}r-ada").last_name == "Lovelace"
    assert f"{NP}r-ada," in (hub.state / "initial-passwords.csv").read_text()
    assert (hub.state / "initial-passwords.csv").stat().st_mode & 0o077 == 0


@needs_hub
def test_formgrader_from_the_hub_collects_and_autogrades_with_the_trusted_pipeline(deployed):
    """Released to the exchange by the grader account; fetched and submitted by a student (nbgrader's
    own commands, as the student, with the hub's student config); Collect and Autograde pressed in
    formgrader through the hub by the second grader: formgrader (the grader account, not root) hands the
    submission to the root-owned grading service the hub started (instructor/service/__init__.py), which
    grades it with the course's pipeline, the kernel in bubblewrap as a reserved uid; formgrader records it."""
    hub, url = deployed["hub"], deployed["url"]
    me = f"{NP}student1"
    needs_user_namespaces(deployed)
    hubmod.release_all(hub, ["00_orientation"])
    env = ["env", "-i", f"PATH={hub.env}/bin:/usr/bin:/bin", f"HOME=/home/{me}", "LANG=C.UTF-8",
           f"JUPYTER_CONFIG_PATH={hub.root / 'etc' / 'student'}"]
    def nbgrader(*step):
        r = subprocess.run(["runuser", "-u", me, "--", *env, str(hub.python), "-m", "nbgrader", *step],
                           cwd=f"/home/{me}", capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr

    nbgrader("fetch_assignment", "00_orientation")
    # the submission prints what it can see of the grader: the environment of the sandbox's pid 1
    # (bubblewrap's own, which a non-root grader's sandbox can read)
    probe = ("import os\ntry:\n    seen = open('/proc/1/environ').read().replace(chr(0), ' ')\n"
             "except OSError as err:\n    seen = type(err).__name__ + ' '\n"
             "print('PID1', seen)\nprint('CWD', os.getcwd())\nprint('UID', os.getuid())")
    r = as_user(me, str(hub.python), "-c",
                "import nbformat, sys; p = sys.argv[1]; nb = nbformat.read(p, as_version=4); "
                "nb.cells.insert(1, nbformat.v4.new_code_cell(sys.argv[2])); nbformat.write(nb, p)",
                f"/home/{me}/00_orientation/00_orientation.ipynb", probe)
    assert r.returncode == 0, r.stderr
    nbgrader("submit", "00_orientation")
    inbound = hub.exchange / hubmod.COURSE_ID / "inbound"
    assert not can_read(f"{NP}student2", inbound)  # submissions are not listed to other students
    assert not can_read(me, hub.course / "release")  # students get releases from the exchange only
    c = Client(url)
    assert c.login(f"{NP}grader2", PASSWORD) == 302
    svc = f"{url}/services/{hub.names.service}/formgrader"
    assert c.s.get(f"{svc}/manage_submissions/00_orientation", timeout=60).status_code == 200
    xsrf = next(k.value for k in c.s.cookies if k.name == "_xsrf" and k.path.startswith("/services/"))
    r = c.s.post(f"{svc}/api/assignment/00_orientation/collect", headers={"X-XSRFToken": xsrf}, timeout=120)
    assert r.status_code == 200 and r.json()["success"], r.text
    r = c.s.post(f"{svc}/api/submission/00_orientation/{me}/autograde", headers={"X-XSRFToken": xsrf}, timeout=600)
    reply = r.json()
    assert r.status_code == 200 and reply["success"], reply
    assert "trusted pipeline" in reply["log"] and "kernel in the bubblewrap sandbox" in reply["log"], reply["log"]
    assert "graded by the root-owned grading service" in reply["log"], reply["log"]
    assert f"{me}/00_orientation: 0/" in reply["log"], reply["log"]  # the untouched release earns nothing
    graded = hub.course / "autograded" / me / "00_orientation" / "00_orientation.ipynb"
    assert graded.stat().st_uid == hubmod.pwd.getpwnam(hub.names.grader_account).pw_uid
    assert not can_read(me, graded)
    # what the submission printed goes back to the student as feedback: the hub's token for the
    # formgrader service must not be in it. Two layers: hub.jupyter_configs takes it out of formgrader's
    # environment, and bubblewrap (pid 1 there) starts with nothing but PATH (isolation.bwrap_argv); graded
    # by root's service, pid 1 is root's bubblewrap, which the submission cannot even read
    text = graded.read_text()
    assert "PID1 PermissionError " in text or "PID1 PATH=/usr/bin:/bin " in text, text[-3000:]
    assert (hub.state / "service-token").read_text().strip() not in text
    assert "JUPYTERHUB_" not in text and "JPY_API_TOKEN=" not in text
    # the kernel ran as a reserved uid, neither root nor an account of the hub
    printed = "".join("".join(o["text"]) if isinstance(o.get("text"), list) else o.get("text", "")
                      for cell in json.loads(text)["cells"] for o in cell.get("outputs", []))
    uid = int(printed.split("UID ", 1)[1].split()[0])
    assert uid not in (0, hubmod.pwd.getpwnam(hub.names.grader_account).pw_uid), printed
    # Generate Feedback and Release Feedback; the student fetches their own, the other student sees none
    for action in ("generate_feedback", "release_feedback"):
        r = c.s.post(f"{svc}/api/assignment/00_orientation/{me}/{action}", headers={"X-XSRFToken": xsrf}, timeout=600)
        assert r.status_code == 200 and r.json()["success"], (action, r.text)
    nbgrader("fetch_feedback", "00_orientation")
    mine = list(Path(f"/home/{me}/00_orientation/feedback").glob("*/00_orientation.html"))
    assert len(mine) == 1 and mine[0].stat().st_uid == hubmod.pwd.getpwnam(me).pw_uid, mine
    assert "PID1 " in mine[0].read_text()  # their own notebook, as graded
    released = hub.exchange / hubmod.COURSE_ID / "feedback"
    assert not can_read(f"{NP}student2", released)  # feedback files are not listed to anyone else


@needs_hub
@pytest.mark.browser
def test_a_browser_signs_in_as_a_student_and_as_the_instructor(deployed):
    """Chromium (Debian's, driven by Playwright) at the hub's login page: the demo student gets
    JupyterLab with nbgrader's student menu only; the demo instructor gets formgrader."""
    chromium = os.environ.get("COURSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(chromium, os.X_OK):
        pytest.skip(f"no chromium at {chromium}")
    sync_api = pytest.importorskip("playwright.sync_api")
    url, hub = deployed["url"], deployed["hub"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            def sign_in(user):
                page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                page.goto(f"{url}/hub/login")
                page.fill("input[name=username]", user)
                page.fill("input[name=password]", PASSWORD)
                page.click("[type=submit]")
                return page

            page = sign_in(f"{NP}student2")
            page.wait_for_url(f"**/user/{NP}student2/lab**", timeout=120_000)
            page.wait_for_selector(".jp-Launcher", timeout=120_000)
            page.click("text=Nbgrader")
            items = [t for t in page.locator(".lm-Menu-itemLabel").all_inner_texts() if t.strip()]
            assert items == ["Assignment List"], items  # no formgrader, course list or create assignment
            page = sign_in(f"{NP}instructor")
            page.wait_for_load_state("networkidle")
            page.goto(f"{url}/services/{hub.names.service}/formgrader")
            page.wait_for_selector("text=Manage Assignments", timeout=60_000)
            assert "formgrade" in page.title()
        finally:
            browser.close()
