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
* The record, ``tests/pip_resolutions.json`` (``make resolutions`` writes it; ``make lock`` calls that): each
  version's picks, the file each comes from and where pip ran, with the sha256 of everything pip's answer
  depends on -- pyproject.toml, constraints.txt, hub/constraints-hub.txt, the command's shape (every flag,
  the targets and platforms; paths as placeholders) -- and pip's version. While those match, the test
  checks the recorded answer exactly as it checks a live one, without the network, and nothing starts in
  the background (conftest.py). When one moves, the resolutions run live as before and
  ``test_the_record_answers_for_the_inputs`` (no network) fails once, naming the input that moved and the
  command that rewrites the record. Since pip itself is not pinned (the Makefile upgrades it), a new pip
  release makes the record stale too. What the key cannot hold is PyPI itself (a pinned release yanked
  or deleted after the record was made): ``make resolutions`` asks PyPI again.
* ``test_the_resolution_would_catch_a_pin_without_a_wheel_for_the_version``: proves the command's flags
  make pip refuse a pin with no wheel for the version (numpy 1.26.4 on 3.13). The question is pip's
  answer to that command, and the command's shape and pip's version are in the record's key: the record
  keeps pip's answer (exit status, message) and the test reads it while the key matches, else asks live.
  It still fails if that answer was an acceptance. (The one thing the key cannot hold is PyPI itself: a
  cp313 wheel uploaded for numpy 1.26.4 later would go unseen until the next rewrite; the live check
  would then fail on it, not catch more.)
* Without the network, in milliseconds: an edited pin (a temporary copy of the inputs) makes the record
  stale; a recorded pick off its pin, an unpinned pick, a non-wheel download, or an accepted probe fails
  the check by name.
* ``test_requires_python_admits_colab``: pyproject.toml admits the three versions and nothing newer.
* ``test_the_course_code_compiles_on``: where this machine has the version, every .py file of the course
  compiles under it with warnings as errors (3.12 made a bad escape a SyntaxWarning), and imports nothing
  that version's standard library dropped. (A full install there is a few GB of CUDA wheels: not in the
  suite; docs/students.md reports the one run made.)
"""
from __future__ import annotations

import ast
import hashlib
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


def _command(version: str, tmp: str = "{tmp}", python: str = "{python}", root: str = "{root}",
             interp: str | None = None) -> list[str]:
    """pip's command for ``version``: the live run's, and (with the placeholders) the shape the record is keyed on."""
    cmd = [python, "-m", "pip"]
    if interp and interp != python:
        cmd += ["--python", interp]      # markers evaluated for that interpreter
    return cmd + ["install", "--dry-run", "--ignore-installed", "--quiet", "--only-binary=:all:",
                  "--python-version", TARGETS[version], "--implementation", "cp",
                  *[a for p in PLATFORMS for a in ("--platform", p)],
                  "--target", f"{tmp}/target-{version}", "--index-url", INDEX, "--use-feature=fast-deps",
                  *[a for lock in LOCKS for a in ("-c", f"{root}/{lock.relative_to(ROOT).as_posix()}")],
                  "-r", f"{tmp}/requirements-{version}.txt", "--report", f"{tmp}/report-{version}.json"]


#: The pin the probe asks for: numpy 1.26.4 has no cp313 wheel.
PROBE_PIN, PROBE_VERSION = "numpy==1.26.4", "3.13"


def _probe_command(python: str = "{python}") -> list[str]:
    """The main command's flags (wheels only, 3.13.0, Colab's platform) for one pin without a wheel for it."""
    return [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--only-binary=:all:",
            "--python-version", TARGETS[PROBE_VERSION], "--implementation", "cp",
            *[a for p in PLATFORMS for a in ("--platform", p)], "--target", "/nonexistent-target",
            "--index-url", INDEX, "--no-deps", "--use-feature=fast-deps", PROBE_PIN]


def _resolve(version: str, tmp: Path) -> dict:
    """One pip resolution for ``version``; returns what the test needs (never raises on pip's failure)."""
    full = TARGETS[version]
    (tmp / f"requirements-{version}.txt").write_text("\n".join(_requirements()) + "\n")
    report = tmp / f"report-{version}.json"
    interp = _interpreter(version)
    cmd = _command(version, tmp=str(tmp), python=sys.executable, root=str(ROOT), interp=interp)
    started = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, env=_pip_env(), cwd=tmp)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = None, f"pip did not finish in {RESOLVE_TIMEOUT} s (backtracking? a pin without a wheel for " \
                        f"{full} sends pip through older releases of what depends on it)\n{e.stderr or ''}"
    where = (f"pip under Python {version} ({interp})" if interp else
             f"pip under Python {sys.version.split()[0]} (no {version} here: markers read as for this one)")
    return {"rc": rc, "out": out, "seconds": time.monotonic() - started, "where": where,
            "answer": _answer(json.loads(report.read_text())) if rc == 0 and report.exists() else None}


def _answer(report: dict) -> dict:
    """What the checks read from pip's --report: each pick's version and its download's file name."""
    install = sorted(report["install"], key=lambda i: _norm(i["metadata"]["name"]))
    return {"picked": {_norm(i["metadata"]["name"]): i["metadata"]["version"] for i in install},
            "files": {_norm(i["metadata"]["name"]): i["download_info"]["url"].rsplit("/", 1)[-1] for i in install}}


def _probe() -> dict:
    r = subprocess.run(_probe_command(sys.executable), capture_output=True, text=True, timeout=120, env=_pip_env())
    return {"rc": r.returncode, "out": (r.stdout + r.stderr)[-2000:]}


# ---- the record: pip's answers, keyed on what they depend on ---------------------------------------

RECORD = ROOT / "tests" / "pip_resolutions.json"
RECORD_COMMAND = "make resolutions  (or: .venv/bin/python tests/test_python_versions.py --record)"
#: The files pip's answer reads (the requirements file is made from pyproject.toml).
INPUTS = ("pyproject.toml", "constraints.txt", "hub/constraints-hub.txt")


def _pip_version() -> str:
    from importlib.metadata import version
    return version("pip")      # the pip that `sys.executable -m pip` runs


def _inputs(root: Path = ROOT) -> dict:
    """The sha256 of everything pip's answers depend on (each named, so that a stale record says which moved)."""
    shape = json.dumps({"resolve": {v: _command(v) for v in TARGETS}, "probe": _probe_command()}, sort_keys=True)
    digests = {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in INPUTS}
    digests["command"] = hashlib.sha256(shape.encode()).hexdigest()
    digests["pip"] = _pip_version()
    return digests


def _load_record(path: Path = RECORD) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AssertionError(f"{path.relative_to(ROOT)} is not valid JSON ({e}); rewrite it: {RECORD_COMMAND}")


def _stale(record: dict | None, root: Path = ROOT) -> list[str]:
    """Why ``record`` does not answer for the inputs under ``root`` (empty: it does)."""
    if record is None:
        return [f"{RECORD.relative_to(ROOT)} does not exist"]
    if not isinstance(record, dict) or not isinstance(record.get("inputs"), dict) or \
            not isinstance(record.get("resolutions"), dict):
        return [f"{RECORD.relative_to(ROOT)} lacks its 'inputs' or 'resolutions' object"]
    now, then = _inputs(root), record["inputs"]
    why = [f"{name} changed" if name != "pip" else f"pip is {now[name]}, the record's {then.get(name)}"
           for name in now if then.get(name) != now[name]]
    if not why and set(record["resolutions"]) != set(TARGETS):
        why.append(f"the record's versions {sorted(record['resolutions'])} are not {sorted(TARGETS)}")
    shapes = [isinstance(a, dict) and isinstance(a.get("picked"), dict) and isinstance(a.get("files"), dict)
              and isinstance(a.get("where"), str) for a in record["resolutions"].values()]
    probe = record.get("probe")
    if not why and not (all(shapes) and isinstance(probe, dict) and isinstance(probe.get("rc"), int)
                        and isinstance(probe.get("out"), str)):
        why.append("the record lacks a version's picked/files/where or the probe's rc/out")
    return why


def _check(version: str, answer: dict, pins: dict) -> None:
    """What pip's answer for ``version`` must be, live or recorded: torch 2.13.0, nothing unpinned but
    torch's CUDA packages, every pick at its pin, every download a wheel."""
    picked, files = answer["picked"], answer["files"]
    assert picked.get("torch") == "2.13.0", f"torch {picked.get('torch')}: the course is tested with 2.13.0"
    unpinned = sorted(f"{n}=={v}" for n, v in picked.items() if n not in pins and not TORCH_CUDA.match(n))
    assert not unpinned, (f"Python {version}: pip picked packages constraints.txt does not pin (a dependency "
                          f"only this version needs?): {unpinned}; pin them (make lock)")
    differ = sorted(f"{n}: picked {v}, pinned {pins[n]}" for n, v in picked.items() if n in pins and v != pins[n])
    assert not differ, f"Python {version}: {differ}"
    assert set(files) == set(picked), f"Python {version}: picks without a file: {sorted(set(picked) ^ set(files))}"
    not_wheels = sorted(f"{n} ({f})" for n, f in files.items() if not f.endswith(".whl"))
    assert not not_wheels, f"Python {version}: not a wheel: {not_wheels}"


def _check_probe(probe: dict) -> None:
    assert probe["rc"] != 0 and PROBE_PIN in probe["out"], \
        f"pip accepted {PROBE_PIN} on Python {TARGETS[PROBE_VERSION]} (no wheel for it):\n{probe['out']}"


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
    resolutions (about a minute of waiting on PyPI) run while the other tests do -- only when the record
    does not answer for the inputs (otherwise nothing starts)."""
    import atexit
    import tempfile

    try:
        stale = _stale(_load_record())
    except AssertionError:
        stale = ["unreadable"]
    if stale and "future" not in _BACKGROUND:
        tmp = Path(tempfile.mkdtemp(prefix="resolve-"))
        atexit.register(shutil.rmtree, tmp, True)
        _BACKGROUND["future"] = ThreadPoolExecutor(1).submit(_resolve_all, tmp)


@pytest.fixture(scope="module")
def resolutions(tmp_path_factory):
    """pip's answers: the record's when it answers for today's inputs (no network), else live ones."""
    record = _load_record()
    if not _stale(record):
        return {"source": f"recorded in {RECORD.relative_to(ROOT)}", "probe": record["probe"],
                **{v: {"rc": 0, "out": "", "where": record["resolutions"][v]["where"],
                       "answer": record["resolutions"][v]} for v in TARGETS}}
    if "future" in _BACKGROUND:
        got = _BACKGROUND["future"].result()
    else:
        got = _resolve_all(tmp_path_factory.mktemp("resolve"))
    if "unreachable" in got:
        if IN_CI:
            pytest.fail(got["unreachable"] + " (CI must reach PyPI)")
        pytest.skip(got["unreachable"])
    return {"source": "live (the record does not answer for today's inputs)", **got}


@pytest.mark.network
@pytest.mark.parametrize("version", list(TARGETS))
def test_pip_resolves_the_pins(resolutions, version):
    res = resolutions[version]
    print(f"\nPython {TARGETS[version]}: {resolutions['source']}, {res['where']}"
          + (f", resolved in {res['seconds']:.1f} s" if "seconds" in res else ""))
    assert res["rc"] == 0, f"pip cannot install the pins on Python {TARGETS[version]} ({res['where']}):\n" \
                           f"{res['out'][-4000:]}"
    _check(version, res["answer"], _pins())


@pytest.mark.network
def test_the_resolution_would_catch_a_pin_without_a_wheel_for_the_version(resolutions):
    """The check can fail: the same command shape refuses numpy 1.26.4 on 3.13 (no cp313 wheel). From the
    record when it answers for today's command shape and pip (pip's answer then was to this same question),
    else asked live."""
    _check_probe(resolutions["probe"] if "probe" in resolutions else _probe())


def test_the_record_answers_for_the_inputs():
    """No network: a record that no longer answers for the pins or the command fails here once, by name,
    while the resolutions above run live. A newer pip alone (``make setup`` installs the latest, ``pip>=24``)
    is no change of this repository's: the resolutions ran live with it, and this test says so as a skip
    rather than turning CI red the day pip is released."""
    why = _stale(_load_record())
    ours = [w for w in why if not w.startswith("pip is ")]
    assert not ours, (f"{RECORD.relative_to(ROOT)} does not answer for today's inputs ({'; '.join(why)}): "
                      f"pip's answers were checked live; rewrite the record with {RECORD_COMMAND} and commit it")
    if why:
        pytest.skip(f"{'; '.join(why)}: pip's answers were checked live with this pip; {RECORD_COMMAND} "
                    "records them for it")


def test_editing_a_pin_makes_the_record_stale(tmp_path):
    for name in INPUTS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    record = {**_load_record(), "inputs": _inputs(ROOT)}
    assert _inputs(tmp_path) == _inputs(ROOT) and _stale(record, tmp_path) == []
    lock = tmp_path / "constraints.txt"
    lock.write_text(lock.read_text().replace("torch==2.13.0", "torch==2.12.0", 1))
    assert "torch==2.12.0" in lock.read_text()
    assert _stale(record, tmp_path) == ["constraints.txt changed"]
    assert _inputs(tmp_path)["constraints.txt"] != record["inputs"]["constraints.txt"]
    for name in ("pyproject.toml", "hub/constraints-hub.txt"):
        with open(tmp_path / name, "a") as f:
            f.write("\n# edited\n")
    assert _stale(record, tmp_path) == [f"{n} changed" for n in INPUTS]
    assert _stale({**record, "inputs": {**record["inputs"], "pip": "0.1"}}) == \
        [f"pip is {_pip_version()}, the record's 0.1"]
    assert _stale(None) and _stale([]) and _stale({**record, "resolutions": {"3.11": {}}})
    assert _stale({**record, "resolutions": {**record["resolutions"], "3.12": {"picked": {}}}}) == \
        ["the record lacks a version's picked/files/where or the probe's rc/out"]


def test_nothing_starts_in_the_background_when_the_record_answers(monkeypatch):
    started = []
    monkeypatch.setattr(sys.modules[__name__], "_BACKGROUND", {})
    monkeypatch.setattr(sys.modules[__name__], "_resolve_all", lambda tmp: started.append(tmp) or {})
    current = {**_load_record(), "inputs": _inputs()}
    monkeypatch.setattr(sys.modules[__name__], "_load_record", lambda: current)
    start_in_background()
    assert "future" not in _BACKGROUND and not started
    monkeypatch.setattr(sys.modules[__name__], "_load_record", lambda: None)
    start_in_background()
    assert _BACKGROUND["future"].result() == {} and len(started) == 1


def _recorded(version: str = "3.12") -> dict:
    record = _load_record()
    assert record is not None, f"{RECORD.relative_to(ROOT)} missing: {RECORD_COMMAND}"
    answer = record["resolutions"][version]
    return {"picked": dict(answer["picked"]), "files": dict(answer["files"])}


def test_a_recorded_pick_off_its_pin_fails():
    answer, pins = _recorded(), _pins()
    _check("3.12", answer, pins)     # the committed answer passes
    answer["picked"]["numpy"] = "1.26.4"
    assert pins["numpy"] != "1.26.4"
    with pytest.raises(AssertionError, match=r"numpy: picked 1\.26\.4, pinned"):
        _check("3.12", answer, pins)
    answer = _recorded()
    answer["picked"]["left-pad"] = "1.0"
    answer["files"]["left-pad"] = "left_pad-1.0-py3-none-any.whl"
    with pytest.raises(AssertionError, match=r"does not pin .*left-pad==1\.0"):
        _check("3.12", answer, pins)
    answer = _recorded()
    answer["picked"]["torch"] = answer["files"]["torch"] = "2.12.0"
    with pytest.raises(AssertionError, match="torch 2.12.0"):
        _check("3.12", answer, {**pins, "torch": "2.12.0"})


def test_a_recorded_download_that_is_not_a_wheel_fails():
    answer = _recorded()
    answer["files"]["numpy"] = f"numpy-{answer['picked']['numpy']}.tar.gz"
    with pytest.raises(AssertionError, match=r"not a wheel: \['numpy \(numpy-.*\.tar\.gz\)'\]"):
        _check("3.12", answer, _pins())


def test_a_recorded_probe_that_pip_accepted_fails():
    with pytest.raises(AssertionError, match="pip accepted numpy==1.26.4"):
        _check_probe({"rc": 0, "out": ""})
    _check_probe(_load_record()["probe"])


def record() -> int:
    """Resolve live, check each answer as the tests do, and write the record (nothing written on a failure)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="resolve-") as tmp:
        got = _resolve_all(Path(tmp))
    if "unreachable" in got:
        print(got["unreachable"], file=sys.stderr)
        return 1
    out = {"about": "pip's answers for the course's pins, written by tests/test_python_versions.py --record "
                    "(make resolutions); tests/test_python_versions.py trusts them while 'inputs' match",
           "inputs": _inputs(), "resolutions": {}, "probe": _probe()}
    try:
        for v, res in got.items():
            assert res["rc"] == 0, f"pip cannot install the pins on Python {TARGETS[v]} ({res['where']}):\n" \
                                   f"{res['out'][-4000:]}"
            _check(v, res["answer"], _pins())
            out["resolutions"][v] = {"python": TARGETS[v], "where": res["where"], **res["answer"]}
            print(f"Python {TARGETS[v]}: {len(res['answer']['picked'])} packages, {res['seconds']:.1f} s, "
                  f"{res['where']}")
        _check_probe(out["probe"])
    except AssertionError as e:
        print(f"{RECORD.relative_to(ROOT)} not written: {e}", file=sys.stderr)
        return 1
    RECORD.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD.relative_to(ROOT)}")
    return 0


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


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(f"usage: {sys.argv[0]} --record   (rewrites {RECORD.relative_to(ROOT)} from a live resolution)")
    sys.exit(record())


def test_a_newer_pip_alone_is_checked_live_and_not_a_failure(monkeypatch):
    """The record's pip differs from this one: the record is not trusted (stale, named), yet the record
    test does not fail for it (a skip saying so); an edited pin still fails it."""
    record = _load_record()
    monkeypatch.setitem(record["inputs"], "pip", "0.1")
    monkeypatch.setattr(sys.modules[__name__], "_load_record", lambda path=RECORD: record)
    assert _stale(record) == [f"pip is {_pip_version()}, the record's 0.1"]
    with pytest.raises(pytest.skip.Exception, match="checked live with this pip"):
        test_the_record_answers_for_the_inputs()
    monkeypatch.setitem(record["inputs"], "constraints.txt", "0" * 64)
    with pytest.raises(AssertionError, match="constraints.txt changed"):
        test_the_record_answers_for_the_inputs()
