"""JupyterHub for the course: one machine, one OS account per person, formgrader as a hub service.

Started by ``make hub`` (as root) after ``python -m instructor.classroom.hub setup`` wrote
``$HUB_PREFIX/state/hub.json`` (default prefix /srv/inplace-hub): the accounts, ports and folders
below come from there. docs/deploying.md explains the design.
"""
import json
import os
import signal
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by traitlets when JupyterHub loads this file

HERE = Path(__file__).resolve().parent
PREFIX = Path(os.environ.get("HUB_PREFIX", "/srv/inplace-hub"))
STATE = PREFIX / "state"
hub = json.loads((STATE / "hub.json").read_text())
COURSE, ENV, EXCHANGE = PREFIX / "course", PREFIX / "env", PREFIX / "exchange"
PYTHON = str(ENV / "bin" / "python")
NP = hub["names_prefix"]
GRADERS_GROUP, STUDENTS_GROUP = f"{NP}inplace-graders", f"{NP}inplace-students"
GRADING_SOCKET = PREFIX / "grading-service" / "grading.sock"
# Grading by the root-owned service (on unless HUB_GRADING_SERVICE=off: then formgrader grades as the
# grader account, with bubblewrap unprivileged: docs/deploying.md compares the two)
GRADING_SERVICE = os.environ.get("HUB_GRADING_SERVICE", "on").lower() not in ("off", "0", "no", "false")
GRADER_ACCOUNT, SERVICE = f"{NP}inplace-grader", "inplace-course"
# Servers run the environment under the prefix (readable by all), never the checkout's.
SAFE_PATH = f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin"

# Nothing the hub starts outlives it. JupyterHub starts its proxy and its services in sessions of their
# own, so a hub ended by a signal to its process group, a crash or the OOM killer left them running: the
# next hub's formgrader could not bind its port. Each is started through `setpriv --pdeathsig TERM`
# (util-linux), which has the kernel send it SIGTERM when the hub goes; the root grading service watches
# the hub itself (--exit-with-parent, below).
def _setpriv() -> str | None:
    import shutil
    import subprocess

    tool = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if tool is None:
        return None
    try:
        usage = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return tool if "--pdeathsig" in usage else None


SETPRIV = _setpriv()


def with_the_hub(argv: list[str]) -> list[str]:
    """``argv``, started so that it ends when the hub does (where setpriv can say so)."""
    return [SETPRIV, "--pdeathsig", "TERM", "--", *argv] if SETPRIV else argv


# --------------------------------------------------------------------------- the hub and its proxy
c.JupyterHub.bind_url = f"http://{hub['ip']}:{hub['port']}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{hub['hub_api_port']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{hub['proxy_api_port']}"
c.ConfigurableHTTPProxy.command = with_the_hub([str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")])
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True
# A hub started in the background (`make hub &`, a script, nohup) inherits SIGINT ignored, and so did
# every server and service it started: the hub stops each with SIGINT first and waited out its interrupt
# timeout for each (68 s for the two services). Restored here, before anything is started; the hub
# installs its own SIGINT handler when it runs.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# --------------------------------------------------------------------------- who may log in
# PAM: the machine's own accounts and passwords (what `setup --demo` and `roster` make). A class that
# prefers sign-up or its LMS sets HUB_AUTH (docs/deploying.md); the spawner needs an OS account either way.
c.JupyterHub.authenticator_class = os.environ.get("HUB_AUTH", "pam")
c.Authenticator.allowed_users = set(hub["graders"]) | set(hub["students"])
c.LocalAuthenticator.allowed_groups = {GRADERS_GROUP, STUDENTS_GROUP}  # roster imports need no restart
c.Authenticator.admin_users = set()
c.Authenticator.delete_invalid_users = True

# --------------------------------------------------------------------------- students' servers
# JupyterHub's local process spawner: each server runs as its user's own OS account, in its 0700 home.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [PYTHON, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
# Stopping: a Jupyter server ignores SIGINT without a terminal; go on to SIGTERM soon (servers and service).
c.LocalProcessSpawner.interrupt_timeout = 2
c.LocalProcessSpawner.term_timeout = 5
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "PATH": SAFE_PATH,
    # nbgrader's student view (no formgrader, no course list) and the hub's exchange
    "JUPYTER_CONFIG_PATH": str(PREFIX / "etc" / "student"),
    "PYTHONNOUSERSITE": "1",
}

# --------------------------------------------------------------------------- formgrader, a hub service
# nbgrader's "one class, several graders": a shared grader account runs formgrader on the course folder;
# every member of the grader group reaches it through the hub as /services/inplace-course/.
token_file = STATE / "service-token"
if not token_file.exists():
    import secrets

    token_file.write_text(secrets.token_hex(32))
    token_file.chmod(0o600)
c.JupyterHub.services = [{
    "name": SERVICE,
    "url": f"http://127.0.0.1:{hub['service_port']}",
    "command": with_the_hub([PYTHON, "-m", "jupyterhub.singleuser", f"--ServerApp.root_dir={COURSE}"]),
    "user": GRADER_ACCOUNT,
    "cwd": str(COURSE),
    "api_token": token_file.read_text().strip(),
    "oauth_no_confirm": True,
    "environment": {
        "PATH": SAFE_PATH,
        "JUPYTER_CONFIG_PATH": str(PREFIX / "etc" / "grader"),
        "JUPYTERHUB_DEFAULT_URL": "/formgrader",
        # grading's workspaces (with folders of mode 0777 for the sandbox) where no student can enter:
        # students have shells on this machine and /tmp is theirs too
        "TMPDIR": str(PREFIX / "grading-tmp"),
        "PYTHONNOUSERSITE": "1",
    },
}]
if GRADING_SERVICE:
    # Autograde and Generate Feedback send each submission to the root-owned grading service below
    c.JupyterHub.services[0]["environment"]["COURSE_GRADING_SERVICE"] = str(GRADING_SOCKET)
    # The root-owned grading service (instructor/service/__init__.py): runs as the hub's user (root), from
    # the checkout (root's, closed to students), and grades what the graders' group sends over a Unix
    # socket: each submission as a reserved uid, in a cgroup, on a tmpfs of its own. No URL: the hub only
    # starts and stops it.
    # the checkout's own environment (the hub may run from another: TLJH's)
    GRADING_PYTHON = os.environ.get("HUB_GRADING_PYTHON") or next(
        (str(p) for p in [Path(hub["repo"]) / ".venv" / "bin" / "python"] if p.exists()), sys.executable)
    c.JupyterHub.services.append({
        "name": f"{SERVICE}-grading",
        # --exit-with-parent: it ends with the hub however the hub ends (a kill, the OOM killer), and a new
        # one ends any it finds still serving the socket before it binds (instructor/service/__init__.py)
        "command": [GRADING_PYTHON, "-m", "instructor.service", "serve", "--socket", str(GRADING_SOCKET),
                    "--group", GRADERS_GROUP, "--jobs", os.environ.get("HUB_GRADING_JOBS", "1"),
                    "--exit-with-parent"],
        "cwd": hub["repo"],
        "environment": {
            "PATH": f"{Path(GRADING_PYTHON).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "PYTHONNOUSERSITE": "1",
            # its workspaces and pre-started sandboxes (folders of mode 0777 for the sandbox's uid) in a
            # folder of root's that no other account may enter: students have shells on this machine
            "TMPDIR": str(GRADING_SOCKET.parent / "tmp"),
        },
    })
c.JupyterHub.load_groups = {f"formgrade-{SERVICE}": {"users": sorted(hub["graders"])}}
c.JupyterHub.load_roles = [
    {"name": f"formgrade-{SERVICE}", "groups": [f"formgrade-{SERVICE}"],
     "scopes": [f"access:services!service={SERVICE}"]},
]
