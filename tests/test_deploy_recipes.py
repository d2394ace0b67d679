"""The deployment recipes beyond one machine (deploy/, docs/deploying.md "Beyond one machine") load and
say what the course's own settings say. Nothing here starts TLJH, Kubernetes, ngshare or Dask: every
file is parsed or executed against a fake traitlets config, and cross-checked with the course's
constants (instructor.classroom.hub, hub/jupyterhub_config.py, constraints.txt, pyproject.toml)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import types
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from traitlets.config import Config

from instructor.classroom.hub import COURSE_ID, Hub, Names

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
TLJH, Z2JH = DEPLOY / "tljh", DEPLOY / "z2jh"
NAMES = Names()
SERVICE = NAMES.service                      # "inplace-course"
ROLE = f"formgrade-{SERVICE}"
NGSHARE_STEPS = {"exchange", "fetch_assignment", "fetch_feedback", "release_assignment", "release_feedback",
                 "list", "submit", "collect"}


def pin(name: str, path: Path = REPO / "constraints.txt") -> str:
    m = re.search(rf"(?m)^{re.escape(name)}==(\S+)", path.read_text())
    assert m, f"{path}: no {name}== pin"
    return m.group(1)


def course_version() -> str:
    return re.search(r'(?m)^version = "([^"]+)"', (REPO / "pyproject.toml").read_text()).group(1)


IMAGE_TAG = f"{pin('distributed')}-{course_version()}"


def pinned_tag_problem(tag: object) -> str | None:
    """Why an image tag does not pin an image (None: it does). Floating names are refused."""
    tag = str(tag or "")
    if not tag:
        return "no tag"
    if tag.lower() in {"latest", "stable", "main", "master", "edge", "nightly"}:
        return f"floating tag {tag!r}"
    if re.fullmatch(r"(python-)?\d+(\.\d+)?", tag):
        return f"tag {tag!r} names a series, not a release"
    return None


def secret_keys(tree: object, where: str = "") -> list[str]:
    """Keys holding a token or secret with a value, anywhere in a values tree."""
    found = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            here = f"{where}.{k}" if where else str(k)
            if re.search(r"(?i)token|secret|password", str(k)) and v not in ("", None, {}):
                found.append(here)
            found += secret_keys(v, here)
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            found += secret_keys(v, f"{where}[{i}]")
    return found


def load_yaml(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path}: not a mapping"
    return data


def run_config(path: Path, *, c: Config | None = None, **globs) -> Config:
    c = Config() if c is None else c
    exec(compile(path.read_text(), str(path), "exec"),
         {"c": c, "get_config": lambda: c, "__file__": str(path), "__name__": "config_under_test", **globs})
    return c


def hub_prefix(tmp_path: Path) -> Path:
    """A prefix as `hub setup` leaves it, for the configs that read its hub.json (no accounts made)."""
    prefix = tmp_path / "prefix"
    hub = Hub(prefix=str(prefix), service_port=9911, graders=["osgrader"], students=["s1"])
    hub.save()
    (prefix / "graders.txt").write_text("# graders\ninstructor\ngrader2\n\n")
    return prefix


# --------------------------------------------------------------------------- the checker itself

def test_the_tag_checker_refuses_floating_tags():
    for bad in ("latest", "", None, "python-3.12", "3", "stable"):
        assert pinned_tag_problem(bad), bad
    for good in (IMAGE_TAG, "2026-08-31", "v0.6.0"):
        assert pinned_tag_problem(good) is None, good
    bad_values = {"singleuser": {"image": {"name": "x/student", "tag": "latest"}}}
    assert pinned_tag_problem(bad_values["singleuser"]["image"]["tag"]) == "floating tag 'latest'"


# --------------------------------------------------------------------------- TLJH

def test_tljh_config_yaml():
    cfg = load_yaml(TLJH / "config.yaml")
    assert cfg["auth"]["type"] == "firstuseauthenticator.FirstUseAuthenticator"
    assert cfg["auth"]["FirstUseAuthenticator"]["create_users"] is False
    assert cfg["users"]["admin"] == []
    assert cfg["limits"]["memory"] and cfg["limits"]["cpu"]
    # install.sh writes the same settings with tljh-config
    script = (TLJH / "install.sh").read_text()
    for key, value in (("auth.type", cfg["auth"]["type"]), ("limits.memory", cfg["limits"]["memory"]),
                       ("limits.cpu", cfg["limits"]["cpu"]),
                       ("user_environment.default_app", cfg["user_environment"]["default_app"])):
        assert f"tljh-config set {key} {value}" in script, key
    assert re.search(r"pip install .*-c \"\$CHECKOUT/constraints.txt\"", script)
    assert "set -euo pipefail" in script


def test_tljh_extra_config_is_the_hubs_formgrader_service(tmp_path, monkeypatch):
    prefix = hub_prefix(tmp_path)
    monkeypatch.setenv("INPLACE_HUB_PREFIX", str(prefix))
    monkeypatch.setenv("INPLACE_CHECKOUT", str(REPO))
    monkeypatch.delenv("HUB_PREFIX", raising=False)
    c = Config()
    c.JupyterHub.services = [{"name": "cull", "command": ["cull"]}]   # TLJH's own service stays
    c = run_config(TLJH / "jupyterhub_config.d" / "inplace_course.py", c=c)
    names = [s["name"] for s in c.JupyterHub.services]
    assert names == ["cull", SERVICE, f"{SERVICE}-grading"]
    grading = c.JupyterHub.services[2]
    assert "user" not in grading and "url" not in grading  # root's, and no route through the proxy
    assert grading["command"][1:5] == ["-m", "instructor.service", "serve", "--socket"]
    assert grading["command"][5] == str(prefix / "grading-service" / "grading.sock")
    svc = c.JupyterHub.services[1]
    # the one-machine hub's own definition, computed for the same prefix
    monkeypatch.setenv("HUB_PREFIX", str(prefix))
    one = run_config(REPO / "hub" / "jupyterhub_config.py").JupyterHub.services[0]
    assert svc == one
    assert svc["user"] == NAMES.grader_account
    assert svc["url"] == "http://127.0.0.1:9911"
    # started through `setpriv --pdeathsig TERM --` where setpriv can: it ends when the hub does
    run = svc["command"][4:] if svc["command"][1:4] == ["--pdeathsig", "TERM", "--"] else svc["command"]
    assert run[:3] == [str(prefix / "env" / "bin" / "python"), "-m", "jupyterhub.singleuser"]
    assert svc["environment"]["JUPYTER_CONFIG_PATH"] == str(prefix / "etc" / "grader")
    assert svc["environment"]["TMPDIR"] == str(prefix / "grading-tmp")
    assert svc["api_token"] == (prefix / "state" / "service-token").read_text().strip()
    roles = c.JupyterHub.load_roles.get_value([]) if hasattr(c.JupyterHub.load_roles, "get_value") \
        else c.JupyterHub.load_roles
    assert roles == [{"name": ROLE, "groups": [ROLE], "scopes": [f"access:services!service={SERVICE}"]}]
    assert c.JupyterHub.load_groups == {ROLE: {"users": ["grader2", "instructor"]}}
    env = c.Spawner.environment.get_value({"X": "1"})
    assert env["JUPYTER_CONFIG_PATH"] == str(prefix / "etc" / "student") and env["X"] == "1"
    # the scratch run of hub/jupyterhub_config.py leaves no HUB_PREFIX behind
    monkeypatch.delenv("HUB_PREFIX")
    run_config(TLJH / "jupyterhub_config.d" / "inplace_course.py")
    import os
    assert "HUB_PREFIX" not in os.environ


# --------------------------------------------------------------------------- Z2JH

def test_z2jh_values():
    v = load_yaml(Z2JH / "values.yaml")
    svc = v["hub"]["services"][SERVICE]
    assert svc["url"] == "http://inplace-course-formgrader:9999"
    assert svc.get("oauth_no_confirm") is True
    assert "ngshare" in v["hub"]["services"]
    assert not secret_keys(v), "a token in the repository"
    assert secret_keys({"hub": {"services": {"x": {"apiToken": "abc"}}}}) == ["hub.services.x.apiToken"]
    role = v["hub"]["loadRoles"][ROLE]
    assert role["groups"] == [ROLE] and role["scopes"] == [f"access:services!service={SERVICE}"]
    assert ROLE in v["hub"]["config"]["JupyterHub"]["load_groups"]
    assert v["hub"]["config"]["Authenticator"]["admin_users"] == []
    image = v["singleuser"]["image"]
    assert pinned_tag_problem(image["tag"]) is None
    assert image["tag"] == IMAGE_TAG and image["name"].endswith("/student")
    # the same service, port and role as formgrader.yaml's pod and Service
    docs = list(yaml.safe_load_all((Z2JH / "formgrader.yaml").read_text()))
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"PersistentVolumeClaim", "Deployment", "Service", "NetworkPolicy"}
    assert kinds["Service"]["metadata"]["name"] == "inplace-course-formgrader"
    assert kinds["Service"]["spec"]["ports"][0]["port"] == 9999
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    main = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["JUPYTERHUB_SERVICE_NAME"] == SERVICE
    assert env["JUPYTERHUB_SERVICE_PREFIX"] == f"/services/{SERVICE}/"
    assert json.loads(env["JUPYTERHUB_OAUTH_ACCESS_SCOPES"]) == role["scopes"]
    assert main["command"][:3] == ["python", "-m", "jupyterhub.singleuser"]
    for ctr in pod["containers"] + pod["initContainers"]:
        name, tag = ctr["image"].rsplit(":", 1)
        assert name.endswith("/grader") and tag == IMAGE_TAG
    secret = [e for e in main["env"] if e["name"] == "JUPYTERHUB_API_TOKEN"][0]
    assert "secretKeyRef" in secret["valueFrom"]
    shared = load_yaml(Z2JH / "values-shared-exchange.yaml")
    mounts = shared["singleuser"]["storage"]["extraVolumeMounts"]
    assert mounts[0]["mountPath"] == "/srv/nbgrader/exchange"


def test_ngshare_values_and_pins():
    v = load_yaml(Z2JH / "ngshare-values.yaml")
    assert pinned_tag_problem(v["image"]["tag"]) is None
    assert v["ngshare"]["hub_api_url"] == "http://hub:8081/hub/api"
    assert v["ngshare"]["hub_api_token"] == ""            # set at install, never committed
    assert not secret_keys(v)
    assert v["deployment"]["replicaCount"] == 1
    script = (Z2JH / "install.sh").read_text()
    assert re.search(r"(?m)^NGSHARE_CHART_VERSION=\d+\.\d+\.\d+$", script)
    assert re.search(r"(?m)^DASK_CHART_VERSION=" + re.escape(pin("distributed")) + "$", script)
    for chart in ("ngshare/ngshare", "jupyterhub/jupyterhub", "dask/dask"):
        line = next(l for l in script.splitlines() if f"helm upgrade --install" in l and chart in l)
        assert "--version" in line, chart
    assert pin("ngshare_exchange", Z2JH / "constraints-ngshare.txt")


def test_dask_values_match_constraints():
    v = load_yaml(Z2JH / "dask-values.yaml")
    distributed = pin("distributed")
    assert pin("dask") == distributed
    for part in ("scheduler", "worker"):
        image = v[part]["image"]
        assert pinned_tag_problem(image["tag"]) is None
        assert str(image["tag"]).split("-")[0] == distributed, part
        assert image["repository"].endswith("/grader")
        assert {"name": "PYTHONPATH", "value": "/opt/inplace-course"} in v[part]["env"]
    assert v["scheduler"]["serviceType"] == "ClusterIP"
    assert v["worker"]["threads_per_worker"] == 1
    assert v["jupyter"]["enabled"] is False
    # the exact command documented for grading on this cluster uses the real option
    cmd = "python -m autograder grade submitted --workdir /srv/inplace/course --scheduler tcp://inplace-dask-scheduler:8786"
    assert cmd in (Z2JH / "dask-values.yaml").read_text()
    assert cmd in (REPO / "docs" / "deploying.md").read_text()
    from instructor.classroom.cli import build_parser  # noqa: PLC0415
    args = build_parser().parse_args(cmd.split()[3:])
    assert args.scheduler == "tcp://inplace-dask-scheduler:8786"


def test_dockerfile_pins_its_base_and_installs_with_constraints():
    text = (Z2JH / "Dockerfile").read_text()
    base = re.search(r"(?m)^ARG BASE=(\S+)$", text).group(1)
    assert base.startswith("quay.io/jupyter/")
    assert pinned_tag_problem(base.rsplit(":", 1)[1]) is None
    froms = re.findall(r"(?m)^FROM (\S+)", text)
    assert froms[0] == "${BASE}" and all(f in ("${BASE}", "base") for f in froms)
    assert {"student", "grader"} <= set(re.findall(r"(?m)^FROM \S+ AS (\w+)", text))
    install = re.search(r"pip install [^\n]*\\\n[^\n]*", text).group(0)
    assert "-c constraints.txt" in install and "-c constraints-hub.txt" in install
    # the student image gets no instructor/: only the grader stage copies the whole course
    student = text.split("AS student")[1].split("AS grader")[0]
    assert "/opt/inplace-course" not in student
    ignore = (Z2JH / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", "gradebook.db", "submitted"} <= set(ignore)


def test_z2jh_nbgrader_configs_select_ngshare():
    c = run_config(Z2JH / "nbgrader_config_student.py")
    assert c.CourseDirectory.course_id == COURSE_ID
    assert set(c.ExchangeFactory) == NGSHARE_STEPS
    assert all(v.startswith("ngshare_exchange.") for v in c.ExchangeFactory.values())
    assert c.Exchange._ngshare_url == "http://proxy-public/services/ngshare"
    # the grader's block, appended after the course's own nbgrader_config.py, replaces its collect
    course = run_config(REPO / "nbgrader_config.py")
    assert course.ExchangeFactory.collect == "instructor.classroom.exchange.CourseExchangeCollect"
    g = run_config(Z2JH / "nbgrader_config_grader.py", c=course)
    assert set(g.ExchangeFactory) == NGSHARE_STEPS
    assert g.ExchangeFactory.collect == "inplace_ngshare.ExchangeCollect"
    assert g.CourseDirectory.course_id == COURSE_ID
    assert "# --- Zero to JupyterHub (deploy/z2jh/nbgrader_config_grader.py)" in \
        (Z2JH / "nbgrader_config_grader.py").read_text().splitlines()[0]
    assert "# --- Zero to JupyterHub (deploy/z2jh/nbgrader_config_grader.py)" in (Z2JH / "course-init.sh").read_text()


def test_ngshare_classes_send_the_token_kept_in_the_process(monkeypatch):
    """inplace_ngshare against a stand-in for ngshare_exchange (not installed here)."""
    sent = []

    class FakeBase:
        ngshare_url = "http://ngshare.test/services/ngshare"
        log = types.SimpleNamespace(exception=lambda *a, **k: None)

        def encode_url(self, url):
            return url

        def _ngshare_api_check_error(self, response, url):
            return {"ok": response, "url": url}

        def ngshare_api_request(self, *a, **k):   # ngshare_exchange's: reads the environment
            raise AssertionError("the environment's token was used")

    pkg = types.ModuleType("ngshare_exchange")
    monkeypatch.setitem(sys.modules, "ngshare_exchange", pkg)
    for module, name in {"exchange": "Exchange", "fetch_assignment": "ExchangeFetchAssignment",
                         "fetch_feedback": "ExchangeFetchFeedback", "release_assignment": "ExchangeReleaseAssignment",
                         "release_feedback": "ExchangeReleaseFeedback", "list": "ExchangeList",
                         "submit": "ExchangeSubmit", "collect": "ExchangeCollect"}.items():
        mod = types.ModuleType(f"ngshare_exchange.{module}")
        setattr(mod, name, type(name, (FakeBase,), {}))
        monkeypatch.setitem(sys.modules, f"ngshare_exchange.{module}", mod)
    import requests
    monkeypatch.setattr(requests, "request", lambda method, url, **kw: sent.append((method, url, kw)) or "resp")
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    monkeypatch.setattr(sys, "_inplace_hub_token", "tok-from-process", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)   # no __pycache__ in deploy/
    monkeypatch.syspath_prepend(str(Z2JH))
    monkeypatch.delitem(sys.modules, "inplace_ngshare", raising=False)
    import inplace_ngshare
    assert inplace_ngshare.ExchangeCollect.__name__ == "ExchangeCollect"
    out = inplace_ngshare.ExchangeCollect().ngshare_api_request("GET", "/submissions/c/a")
    assert out == {"ok": "resp", "url": "/submissions/c/a"}
    method, url, kw = sent[0]
    assert (method, url) == ("GET", "http://ngshare.test/services/ngshare/submissions/c/a")
    assert kw["headers"] == {"Authorization": "token tok-from-process"}
    monkeypatch.delitem(sys.modules, "inplace_ngshare")


# --------------------------------------------------------------------------- shell scripts

SCRIPTS = sorted(DEPLOY.rglob("*.sh"))


def test_every_recipe_file_is_checked():
    checked = {"tljh/config.yaml", "tljh/install.sh", "tljh/jupyterhub_config.d/inplace_course.py",
               "z2jh/Dockerfile", "z2jh/Dockerfile.dockerignore", "z2jh/values.yaml", "z2jh/ngshare-values.yaml",
               "z2jh/dask-values.yaml", "z2jh/formgrader.yaml", "z2jh/values-shared-exchange.yaml",
               "z2jh/nbgrader_config_student.py", "z2jh/nbgrader_config_grader.py", "z2jh/inplace_ngshare.py",
               "z2jh/course-init.sh", "z2jh/install.sh", "z2jh/constraints-ngshare.txt"}
    present = {p.relative_to(DEPLOY).as_posix() for p in DEPLOY.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert present == checked
    assert len(SCRIPTS) == 3


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(DEPLOY).as_posix())
def test_shell_scripts_parse(script):
    assert shutil.which("bash")
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text


def test_bash_n_catches_a_broken_script(tmp_path):
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/usr/bin/env bash\nif true; then\n")
    assert subprocess.run(["bash", "-n", str(bad)], capture_output=True).returncode != 0


def test_every_recipe_switches_nbgrader_s_formgrader_off_in_its_environments():
    """nbgrader's own formgrader (its submission page runs a student's script as the grader) is switched
    off by each recipe in the environments it installs nbgrader into (issue 36, item 2): TLJH's user
    environment after the course is installed there, and the images' shared base stage. The control: the
    checks find nothing in a recipe without the line."""
    def switched_off(text: str, after: str) -> bool:
        at = text.find(after)
        return at >= 0 and "-m autograder.course_formgrader install" in text[at:]

    tljh = (TLJH / "install.sh").read_text()
    assert switched_off(tljh, '/opt/tljh/user/bin/python -m pip install')
    assert "/opt/tljh/user/bin/python -m autograder.course_formgrader install" in tljh
    docker = (Z2JH / "Dockerfile").read_text()
    base = docker.split(" AS base")[1].split(" AS configs")[0]
    assert switched_off(base, "pip install")
    # the control: the same check on the recipes with the line taken out
    assert not switched_off(tljh.replace("-m autograder.course_formgrader install", ""), "/opt/tljh/user/bin/python -m pip")
    assert not switched_off(base.replace("-m autograder.course_formgrader install", ""), "pip install")
