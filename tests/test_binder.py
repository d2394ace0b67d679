"""Binder and Colab, simulated on this machine: the README's two routes for self-learners work.

**Binder** (``test_binder_simulated``). What repo2docker does, step by step, without network:

1. the repository (its tracked and untracked, not ignored files: what a push publishes) is copied to
   a fresh folder, which is the user's ``$HOME`` as on Binder;
2. a fresh environment: a new venv whose packages are the course venv's (one ``.pth`` line: the same
   pinned versions that ``environment.yml`` lists, which tests/test_environment.py holds equal to
   constraints.txt) and whose Jupyter data files, console scripts and kernel spec are its own, as
   ``pip install`` would have written them (the course venv's student-view settings are left out);
3. ``postBuild`` runs for real, as a non-root user (as on Binder: created with ``useradd`` when the
   tests run as root), with no package index (``PIP_NO_INDEX``) and no build isolation (its editable
   install builds with the environment's setuptools instead of downloading one);
4. JupyterLab starts as that user in ``$HOME``; Chromium opens the README badge's ``urlpath``
   (``/lab/tree/notebooks/00_start_here.ipynb``), runs every cell (no error, the gradient cell's
   output present), then opens a filled-in copy of the first assignment and clicks nbgrader's
   **Validate**: success.

What it cannot prove: that mybinder.org resolves environment.yml (conda, PyPI and PyPI's CPU torch
index); the pins equal the tested ones, which is what tests/test_environment.py checks.

**Colab** (``test_colab_recipe_selfgrade``): the README's recipe, read from its generated block -- clone,
``pip install -c constraints.txt -e .``, ``python -m autograder selfgrade`` -- in a fresh venv (as root,
like Colab; packages from the course venv, ``--no-deps --no-build-isolation``), on an unanswered release
notebook: the per-question table, 0 points, exit status 0 (graded) and the sentence saying where the
student stands. Colab has no bubblewrap, so grading runs without the sandbox there
(``COURSE_SANDBOX=off``). Which Pythons the pins install on is tests/test_python_versions.py's job.

Both print their measured time; targets 90 s (Binder) and 60 s (Colab) on this 2-core machine.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from test_browser import (CHROMIUM, CHROMIUM_ARGS, IN_CI, VIEWPORT, _errors, _not_executed, _open,
                          _require_browser, _run_all, _save_failure, _solved_copy, _validate,
                          _wait_for_server, _free_port)

ROOT = Path(__file__).resolve().parents[1]
COURSE_VENV = Path(sys.prefix)
COURSE_SITE = Path(sysconfig.get_paths()["purelib"])
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
BINDER_USER = "binder-sim"
ASSIGNMENT = "00_orientation"
ARTIFACTS = ROOT / "artifacts" / "binder"


def _unavailable(why: str):
    """Cannot simulate here: skip locally, fail under CI=true (the test must run there)."""
    if IN_CI:
        pytest.fail("Binder simulation cannot run under CI=true: " + why)
    pytest.skip(why)


def _readme_urlpath() -> str:
    """The path the README's Binder badge opens (``urlpath=...``): the page this test opens. While the
    course's repository is the placeholder the README has no badge (scripts/course_links.py writes none):
    the badge the script writes for a published course is read instead."""
    readme = (ROOT / "README.md").read_text()
    if "mybinder.org/v2/gh/" not in readme:
        import importlib.util

        spec = importlib.util.spec_from_file_location("course_links", ROOT / "scripts" / "course_links.py")
        links = importlib.util.module_from_spec(spec)
        sys.modules["course_links"] = links    # its dataclass looks itself up there
        spec.loader.exec_module(links)
        readme = links.readme_blocks(links.Setting("example-teacher", "autograd-course", "main"))["badges"]
    m = re.search(r"mybinder\.org/v2/gh/[^)\s]*\?urlpath=([^)\s&]+)", readme)
    assert m, "README.md has no Binder badge with ?urlpath=..."
    return "/" + m.group(1).lstrip("/")


def _copy_repo(dest: Path) -> None:
    """The repository as a clone would hold it: tracked and untracked, not ignored files."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        for rel in dict.fromkeys(p for p in out.decode().split("\0") if p):
            src = ROOT / rel
            if src.is_file():   # a tracked file deleted in the working tree is skipped
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)
    else:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
            ".venv", ".git", "artifacts", "workspace", "__pycache__", "*.egg-info", ".pytest_cache"))


def _fresh_env(prefix: Path, base_python: str) -> None:
    """A new venv at ``prefix`` holding the course venv's packages, as if pip had installed them."""
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(prefix)], check=True)
    site = prefix / "lib" / f"python{PY}" / "site-packages"
    assert site.is_dir(), f"unexpected venv layout: no {site}"
    # sorts after __editable__*.pth, so the editable install that postBuild makes comes first
    (site / "zz_course_packages.pth").write_text(f"{COURSE_SITE}\n")
    # data files pip writes under sys.prefix; none of the student view (postBuild must make it)
    shutil.copytree(COURSE_VENV / "share" / "jupyter", prefix / "share" / "jupyter", symlinks=True)
    shutil.copytree(COURSE_VENV / "etc" / "jupyter", prefix / "etc" / "jupyter", symlinks=True,
                    ignore=shutil.ignore_patterns("labconfig", "zz-course-*"))
    kernel = prefix / "share" / "jupyter" / "kernels" / "python3" / "kernel.json"
    spec = json.loads(kernel.read_text())
    spec["argv"][0], spec["display_name"] = "python", "Python 3 (ipykernel)"   # as ipykernel's wheel ships it
    kernel.write_text(json.dumps(spec, indent=1))
    # console scripts (jupyter, alembic, ...), their shebang pointing at the new environment
    shebang = re.compile(rb"^#!" + re.escape(str(COURSE_VENV / "bin").encode()) + rb"/python[\d.]*\n")
    for script in (COURSE_VENV / "bin").iterdir():
        target = prefix / "bin" / script.name
        if script.is_symlink() or not script.is_file() or target.exists():
            continue
        data = script.read_bytes()
        if shebang.match(data):
            target.write_bytes(shebang.sub(b"#!" + str(prefix / "bin" / "python").encode() + b"\n", data, 1))
            target.chmod(0o755)
    assert (prefix / "bin" / "jupyter").exists() and (prefix / "bin" / "alembic").exists()


def _binder_user():
    """The unprivileged user of the simulation (``pwd`` entry), created when running as root;
    None when the tests already run unprivileged (they run as that user then)."""
    if os.geteuid() != 0:
        return None
    if not shutil.which("setpriv"):
        _unavailable("setpriv (util-linux) is not installed")
    try:
        return pwd.getpwnam(BINDER_USER)
    except KeyError:
        r = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
                            "/nonexistent", "--shell", "/usr/sbin/nologin", BINDER_USER],
                           capture_output=True, text=True)
        if r.returncode:
            _unavailable(f"useradd {BINDER_USER} failed: {r.stderr.strip()}")
        return pwd.getpwnam(BINDER_USER)


def _as(user, argv: list[str]) -> list[str]:
    if user is None:
        return list(argv)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--", *argv]


def _base_python(user) -> str:
    """A Python {PY} interpreter the user can run (the course venv's may sit under root's home)."""
    candidates = [os.path.realpath(sys._base_executable)]
    candidates += [p for p in (f"/usr/local/bin/python{PY}", f"/usr/bin/python{PY}") if os.path.exists(p)]
    tried = []
    for exe in dict.fromkeys(os.path.realpath(c) for c in candidates):
        r = subprocess.run(_as(user, [exe, "-I", "-c", "import sys, venv; print(sys.base_prefix);"
                                      "print('%d.%d' % sys.version_info[:2])"]),
                           capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
        lines = r.stdout.split()
        # a binary found but whose own prefix the user cannot read starts with the wrong library
        if r.returncode == 0 and len(lines) == 2 and lines[1] == PY and Path(exe).is_relative_to(lines[0]):
            return exe
        tried.append(f"{exe}: {(r.stderr or r.stdout).strip()[-200:] or 'wrong prefix'}")
    _unavailable(f"no Python {PY} that the user {BINDER_USER} can run: " + "; ".join(tried))


def _user_env(home: Path, prefix: Path, user) -> dict:
    name = user.pw_name if user else pwd.getpwuid(os.geteuid()).pw_name
    return {"HOME": str(home), "USER": name, "LOGNAME": name, "SHELL": "/bin/bash", "LANG": "C.UTF-8",
            "PATH": f"{prefix / 'bin'}:/usr/local/bin:/usr/bin:/bin", "TMPDIR": "/tmp",
            # offline: no package index, the host's pip configuration ignored, no build isolation
            # (PIP_NO_BUILD_ISOLATION=0 is pip's spelling of --no-build-isolation)
            "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, "PIP_NO_BUILD_ISOLATION": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _stop(server: subprocess.Popen, base: str, token: str) -> None:
    """Shut the server down through its API (it stops its kernels), then its process group."""
    try:
        req = urllib.request.Request(f"{base}/api/shutdown", method="POST",
                                     headers={"Authorization": f"token {token}"})
        urllib.request.urlopen(req, timeout=5).close()
        server.wait(timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if server.poll() is not None:
            break
        try:
            os.killpg(server.pid, sig)
            server.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


@pytest.mark.slow
@pytest.mark.browser
def test_binder_simulated():
    _require_browser()
    from playwright.sync_api import sync_playwright

    from autograder.lab import student_view

    started = time.monotonic()
    times = {}
    urlpath = _readme_urlpath()
    user = _binder_user()
    # not under pytest's tmp_path: that is private to the user running the tests
    sim = Path(tempfile.mkdtemp(prefix="binder-sim-"))
    server = None
    keep = False
    try:
        sim.chmod(0o755)
        home, prefix = sim / "home", sim / "env"
        _copy_repo(home)
        _fresh_env(prefix, _base_python(user))
        # the student's own work: the first assignment, filled in with the source's solutions
        work = home / "workspace" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        work.parent.mkdir(parents=True)
        _solved_copy(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                     ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", work)
        # harness, not environment: every cell stays in the DOM, so the test sees every output
        tracker = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        if user is not None:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(sim)], check=True)
        env = _user_env(home, prefix, user)
        times["fresh environment"] = time.monotonic() - started

        # postBuild, for real, as the user, in $HOME (what repo2docker does)
        t = time.monotonic()
        r = subprocess.run(_as(user, ["bash", str(home / "postBuild")]), cwd=home, env=env,
                           capture_output=True, text=True, timeout=300)
        times["postBuild"] = time.monotonic() - t
        assert r.returncode == 0, f"postBuild failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
        assert len(r.stdout.splitlines()) <= 1 and not r.stderr.strip(), \
            f"postBuild should be quiet on success:\n{r.stdout}\n{r.stderr}"
        released = sorted(p.relative_to(home / "release") for p in (home / "release").glob("*/*.ipynb"))
        copies = sorted(p.relative_to(home / "workspace") for p in (home / "workspace").glob("*/*.ipynb"))
        assert released and [c for c in copies if c.parts[0] != "lessons"] == released, \
            "postBuild makes the student's workspace/ copies, which the lessons link to"
        assert sorted(c.name for c in copies if c.parts[0] == "lessons") == sorted(
            p.name for p in (home / "notebooks").glob("*.ipynb")), "and the lessons' own copies (workspace/lessons/)"
        lab_off, server_off = student_view(home / "postBuild")
        page_config = json.loads((prefix / "etc" / "jupyter" / "labconfig" / "page_config.json").read_text())
        for plugin in lab_off:
            assert page_config["disabledExtensions"].get(plugin) and page_config["lockedExtensions"].get(plugin)
        # the notebooks import the course package from $HOME (editable), from any folder
        r = subprocess.run(_as(user, [str(prefix / "bin" / "python"), "-c",
                                      "import autograder, autograder.cli as c; print(autograder.__file__);"
                                      "print(c.instructor_available())"]),
                           cwd="/", env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        where, instructor = r.stdout.split()
        assert Path(where).is_relative_to(home) and instructor == "True", r.stdout

        # JupyterLab as the user, in $HOME; Chromium at the README badge's urlpath
        t = time.monotonic()
        port, token = _free_port(), secrets.token_hex(24)
        log = sim / "jupyterlab.log"
        server = subprocess.Popen(
            _as(user, [str(prefix / "bin" / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                       f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
                       "--ServerApp.port_retries=0",
                       "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]),
            cwd=home, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        _wait_for_server(port, token, server, log)
        server_log = log.read_text()
        for ext in server_off:
            assert f"{ext} | extension was successfully" not in server_log, f"{ext} should be off for students"
        assert "validate_assignment | extension was successfully" in server_log
        times["server start"] = time.monotonic() - t

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(30_000)
                t = time.monotonic()
                page.goto(f"{base}{urlpath}?token={token}")
                page.locator(".jp-NotebookPanel").first.wait_for(timeout=120_000)
                current = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
                assert Path(urlpath).name in current.first.inner_text()
                config = page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data')"
                                       ".textContent)")
                assert set(lab_off) <= set(config.get("disabledExtensions", [])), config.get("disabledExtensions")
                _run_all(page)
                errors = _errors(page)
                assert not errors, "00_start_here wrote errors / stderr:\n" + "\n---\n".join(errors)
                assert _not_executed(page) == 0
                assert "a gradient computed on cpu" in page.locator(".jp-NotebookPanel").first.inner_text()
                times["start here: open, run all"] = time.monotonic() - t

                t = time.monotonic()
                _open(page, base, token, "solved", f"workspace/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
                kind, text = _validate(page)
                assert kind == "validation-success", text
                assert "Success! Your notebook passes all the tests." in text
                times["Validate"] = time.monotonic() - t
            except Exception:
                _save_failure(browser)
                raise
            finally:
                browser.close()
    except BaseException:
        keep = True
        raise
    finally:
        if server is not None:
            _stop(server, base, token)
        if keep and (sim / "jupyterlab.log").exists():
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(sim / "jupyterlab.log", ARTIFACTS / "jupyterlab.log")
        shutil.rmtree(sim, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"Binder simulation: {elapsed:.0f} s (" + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()) + ")")
    assert elapsed < 180, f"Binder simulation took {elapsed:.0f} s (target 90 s, budget 180 s)"


def _readme_colab_recipe() -> list[str]:
    """The commands of the README's Colab recipe (its ``course_links:colab-recipe`` block)."""
    m = re.search(r"<!-- course_links:colab-recipe -->\n```bash\n(.*?)```\n<!-- /course_links:colab-recipe -->",
                  (ROOT / "README.md").read_text(), re.S)
    assert m, "README.md has no generated Colab recipe block (python scripts/course_links.py writes it)"
    return [line for line in m.group(1).splitlines() if line.strip()]


def test_the_readme_colab_recipe_installs_at_the_pins():
    """Clone, editable install under constraints.txt (else pip keeps Colab's newer packages), selfgrade."""
    steps = _readme_colab_recipe()
    assert len(steps) == 4, steps
    # (while unpublished, the clone line ends in a comment naming the setting that fills in OWNER/NAME)
    assert re.fullmatch(r"!git clone -b \S+ https://github\.com/[^/\s]+/[^/\s]+ course( +# .*tool\.inplace-course.*)?",
                        steps[0]), steps[0]
    assert steps[1] == "%cd course"
    assert steps[2] == "!pip install -q -c constraints.txt -e .", steps[2]
    assert re.fullmatch(r"!python -m autograder selfgrade release/(\w+)/\1\.ipynb", steps[3]), steps[3]


@pytest.mark.slow
def test_colab_recipe_selfgrade(tmp_path):
    """Clone, editable install, selfgrade: grading starts and prints the per-question table."""
    started = time.monotonic()
    steps = _readme_colab_recipe()
    pip_args = steps[2].removeprefix("!pip install").split()
    assert pip_args == ["-q", "-c", "constraints.txt", "-e", "."], steps[2]
    clone, prefix = tmp_path / "course", tmp_path / "env"
    _copy_repo(clone)
    _fresh_env(prefix, os.path.realpath(sys._base_executable))
    env = _user_env(tmp_path, prefix, None)
    env["COURSE_SANDBOX"] = "off"    # Colab has no bubblewrap
    # the README's pip line, offline: the packages are the course venv's already
    r = subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "install", "--no-deps",
                        "--no-build-isolation", *pip_args], cwd=clone, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(prefix / "bin" / "python"), "-c", "import autograder; print(autograder.__file__)"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and Path(r.stdout.strip()).is_relative_to(clone), r.stdout + r.stderr
    release = steps[3].split()[-1]
    assert (clone / release).is_file(), release
    mine = tmp_path / "mine" / f"{ASSIGNMENT}.ipynb"
    mine.parent.mkdir()
    shutil.copy(clone / release, mine)
    r = subprocess.run([str(prefix / "bin" / "python"), "-m", "autograder", "selfgrade", str(mine)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert "need the whole course repository" not in out, out
    assert f"as {ASSIGNMENT} (hidden tests included)" in out, out
    rows = re.findall(r"^\s+(\w+_tests)\s+0 / (\d+)\s*$", r.stdout, re.M)
    assert len(rows) >= 2, out
    assert re.search(r"^autograded total: 0 / \d+", r.stdout, re.M), out
    assert re.search(r"^You have 0 of \d+ autograded points so far", r.stdout, re.M), out
    assert r.returncode == 0, f"a graded notebook exits 0 whatever its score, got {r.returncode}:\n{out}"
    elapsed = time.monotonic() - started
    print(f"Colab recipe (clone, pip install -c constraints.txt -e ., selfgrade): {elapsed:.0f} s")
    assert elapsed < 180, f"Colab recipe took {elapsed:.0f} s (target 60 s, budget 180 s)"
