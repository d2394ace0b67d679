"""The course installs with its pins on Python 3.11, 3.12 and 3.13 (Colab runs 3.13; 3.12 in fallback runtimes).

* ``test_pip_resolves_the_pins`` (``network``): for each version, pip resolves the course's dependencies
  (pyproject.toml, extras included) under ``-c constraints.txt``, wheels only (``--only-binary=:all:``), for
  that version (``--python-version``, its lowest patch release the pins allow) and Colab's platform
  (manylinux x86_64), without installing: ``pip install --dry-run --report``. Only the wheels' metadata is
  fetched (PyPI's PEP 658 files; HTTP range requests where an index lacks them), never torch's or CUDA's
  wheels. Every package it picks must be pinned at that version, except torch's own CUDA packages on Linux.
  pip evaluates environment markers (``python_version < "3.12"``) for the interpreter it runs under: where
  this machine has that Python, pip runs under it (``pip --python``); otherwise under this one, and the
  test says so. Skipped when PyPI cannot be reached, failed then under CI=true.
* ``test_requires_python_admits_colab``: pyproject.toml admits the three versions and nothing newer.
* ``test_the_course_code_compiles_on``: where this machine has the version, every .py file of the course
  compiles under it with warnings as errors (3.12 made a bad escape a SyntaxWarning), and imports nothing
  that version's standard library dropped. (A full install there is a few GB of CUDA wheels: not in the
  suite; docs/students.md reports the one run made.)
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() == "true"
INDEX = "https://pypi.org/simple"
# Each version at the lowest patch release the pins allow: soupsieve 4.1.3 needs 3.11.5.
TARGETS = {"3.11": "3.11.5", "3.12": "3.12.0", "3.13": "3.13.0"}
# Colab's platform: x86_64 Linux, glibc 2.35 (Ubuntu 22.04); pip does not widen an explicit --platform
# to older manylinux tags, so every tag a wheel may carry there is listed.
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in range(35, 4, -1)] + \
            ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
# torch's Linux wheel requires its CUDA runtime; those packages come with torch's own pins.
TORCH_CUDA = re.compile(r"^(nvidia-.*|cuda-.*|triton)$")
RESOLVE_TIMEOUT = 300


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


#: The lock files: the course's, and the hub's (the dev and hub extras' JupyterHub, pinned apart so that
#: Binder's environment.yml, made from constraints.txt, keeps Binder's own JupyterHub).
LOCKS = (ROOT / "constraints.txt", ROOT / "hub" / "constraints-hub.txt")


def _pins() -> dict[str, str]:
    pins = {}
    for line in "\n".join(p.read_text() for p in LOCKS).splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)==([^\s#;]+)", line)
        if m:
            pins[_norm(m.group(1))] = m.group(2)
    return pins


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements() -> list[str]:
    """The course's dependencies and every extra's: what `pip install -c constraints.txt -e '.[dev,grading]'` asks for."""
    project = _project()
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return list(dict.fromkeys(r.split("#")[0].strip() for r in reqs))


def _interpreter(version: str) -> str | None:
    """A Python ``version`` (X.Y) on this machine, or None."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    candidates = [shutil.which(f"python{version}")]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python") for p in sorted(pyenv.glob(f"{version}.*"), reverse=True)]
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            r = subprocess.run([c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and r.stdout.strip() == version:
                return c
    return None


def _pypi_reachable() -> str | None:
    try:
        with urllib.request.urlopen(f"{INDEX}/pip/", timeout=15) as r:
            r.read(1)
        return None
    except OSError as e:
        return f"PyPI ({INDEX}) cannot be reached: {e}"


def _pip_env() -> dict:
    """pip as on a fresh machine: no configuration file, no PIP_* variables (a local mirror or find-links
    would answer instead of PyPI)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"})
    return env


def _resolve(version: str, tmp: Path) -> dict:
    """One pip resolution for ``version``; returns what the test needs (never raises on pip's failure)."""
    full = TARGETS[version]
    reqs = tmp / f"requirements-{version}.txt"
    reqs.write_text("\n".join(_requirements()) + "\n")
    report = tmp / f"report-{version}.json"
    interp = _interpreter(version)
    cmd = [sys.executable, "-m", "pip"]
    if interp and interp != sys.executable:
        cmd += ["--python", interp]      # markers evaluated for that interpreter
    cmd += ["install", "--dry-run", "--ignore-installed", "--quiet", "--only-binary=:all:",
            "--python-version", full, "--implementation", "cp", *[a for p in PLATFORMS for a in ("--platform", p)],
            "--target", str(tmp / f"target-{version}"), "--index-url", INDEX, "--use-feature=fast-deps",
            *[a for lock in LOCKS for a in ("-c", str(lock))], "-r", str(reqs), "--report", str(report)]
    started = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, env=_pip_env(), cwd=tmp)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = None, f"pip did not finish in {RESOLVE_TIMEOUT} s (backtracking? a pin without a wheel for " \
                        f"{full} sends pip through older releases of what depends on it)\n{e.stderr or ''}"
    return {"rc": rc, "out": out, "seconds": time.monotonic() - started, "interpreter": interp,
            "report": json.loads(report.read_text()) if rc == 0 and report.exists() else None}


_BACKGROUND: dict = {}


def _resolve_all(tmp: Path) -> dict:
    """The three resolutions, run at the same time (each waits on the network, not the CPU); or why PyPI
    cannot be reached."""
    why = _pypi_reachable()
    if why:
        return {"unreachable": why}
    with ThreadPoolExecutor(len(TARGETS)) as pool:
        futures = {v: pool.submit(_resolve, v, tmp) for v in TARGETS}
        return {v: f.result() for v, f in futures.items()}


def start_in_background() -> None:
    """Called by conftest.py once the session's tests are collected, when these are among them: the
    resolutions (about a minute of waiting on PyPI) run while the other tests do."""
    import atexit
    import tempfile

    if "future" not in _BACKGROUND:
        tmp = Path(tempfile.mkdtemp(prefix="resolve-"))
        atexit.register(shutil.rmtree, tmp, True)
        _BACKGROUND["future"] = ThreadPoolExecutor(1).submit(_resolve_all, tmp)


@pytest.fixture(scope="module")
def resolutions(tmp_path_factory):
    if "future" in _BACKGROUND:
        got = _BACKGROUND["future"].result()
    else:
        got = _resolve_all(tmp_path_factory.mktemp("resolve"))
    if "unreachable" in got:
        if IN_CI:
            pytest.fail(got["unreachable"] + " (CI must reach PyPI)")
        pytest.skip(got["unreachable"])
    return got


@pytest.mark.network
@pytest.mark.parametrize("version", list(TARGETS))
def test_pip_resolves_the_pins(resolutions, version):
    res = resolutions[version]
    where = (f"pip under Python {version} ({res['interpreter']})" if res["interpreter"] else
             f"pip under Python {sys.version.split()[0]} (no {version} here: markers read as for this one)")
    print(f"\nPython {TARGETS[version]}: resolved in {res['seconds']:.1f} s, {where}")
    assert res["rc"] == 0, f"pip cannot install the pins on Python {TARGETS[version]} ({where}):\n{res['out'][-4000:]}"
    pins = _pins()
    picked = {_norm(i["metadata"]["name"]): i["metadata"]["version"] for i in res["report"]["install"]}
    assert picked.get("torch") == "2.13.0", f"torch {picked.get('torch')}: the course is tested with 2.13.0"
    unpinned = sorted(f"{n}=={v}" for n, v in picked.items() if n not in pins and not TORCH_CUDA.match(n))
    assert not unpinned, (f"Python {version}: pip picked packages constraints.txt does not pin (a dependency "
                          f"only this version needs?): {unpinned}; pin them (make lock)")
    differ = sorted(f"{n}: picked {v}, pinned {pins[n]}" for n, v in picked.items() if n in pins and v != pins[n])
    assert not differ, differ
    for i in res["report"]["install"]:
        url = i["download_info"]["url"]
        assert url.endswith(".whl"), f"{i['metadata']['name']}: not a wheel ({url})"


@pytest.mark.network
def test_the_resolution_would_catch_a_pin_without_a_wheel_for_the_version():
    """The check can fail: the same command refuses numpy 1.26.4 on 3.13 (no cp313 wheel) -- pip's answer
    without the network is the same command shape, so this runs only where PyPI answers."""
    why = _pypi_reachable()
    if why:
        pytest.skip(why)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--only-binary=:all:", "--python-version", "3.13.0", "--implementation", "cp",
                        *[a for p in PLATFORMS for a in ("--platform", p)], "--target", "/nonexistent-target",
                        "--index-url", INDEX, "--no-deps", "--use-feature=fast-deps", "numpy==1.26.4"],
                       capture_output=True, text=True, timeout=120, env=_pip_env())
    assert r.returncode != 0 and "numpy==1.26.4" in (r.stdout + r.stderr), r.stdout + r.stderr


def test_requires_python_admits_colab():
    spec = SpecifierSet(_project()["requires-python"])
    for version in TARGETS.values():
        assert spec.contains(version), f"requires-python {spec} refuses {version}"
    for version in ("3.13.9", "3.12.12"):
        assert spec.contains(version)
    for version in ("3.10.14", "3.14.0"):
        assert not spec.contains(version), f"requires-python {spec} admits {version}, which is not checked"
    assert set(TARGETS) == {"3.11", "3.12", "3.13"}


# ---- the code on each Python this machine has -------------------------------------------------------

CHECK = r"""
import ast, sys, warnings
from pathlib import Path
removed = {"distutils", "imp", "asynchat", "asyncore", "smtpd",                          # 3.12
           "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "mailcap", "msilib", "nis",
           "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib",
           "lib2to3"}                                                                      # 3.13
problems, n = [], 0
for path in sys.argv[1:]:
    src = Path(path).read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            tree = compile(src, path, "exec", ast.PyCF_ONLY_AST)
            compile(tree, path, "exec")
        except (SyntaxError, SyntaxWarning, DeprecationWarning) as e:
            problems.append(f"{path}: {type(e).__name__}: {e}")
            continue
    n += 1
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        for name in names:
            top = name.split(".")[0]
            if top in removed and top not in sys.stdlib_module_names:
                problems.append(f"{path}:{node.lineno}: imports {top}, gone from Python {sys.version.split()[0]}")
print(n)
print("\n".join(problems))
"""


def _course_sources() -> list[str]:
    files = []
    for folder in ("autograder", "instructor", "scripts", "tests"):
        files += [str(p) for p in sorted((ROOT / folder).rglob("*.py"))
                  if not {"__pycache__", "hostile", "samples", "fixtures"} & set(p.parts)]
    return files


@pytest.mark.parametrize("version", list(TARGETS))
def test_the_course_code_compiles_on(version):
    interp = _interpreter(version)
    if interp is None:
        pytest.skip(f"no Python {version} on this machine")
    files = _course_sources()
    r = subprocess.run([interp, "-I", "-c", CHECK, *files], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    count, *problems = r.stdout.splitlines()
    problems = [p for p in problems if p]
    assert not problems, f"Python {version} ({interp}):\n" + "\n".join(problems)
    assert int(count) == len(files) > 50
