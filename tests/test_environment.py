"""One pinned environment: constraints.txt is the truth; environment.yml, the Makefile and CI agree."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)==([^\s#;]+)", line)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def test_constraints_pin_everything_exactly():
    lines = [l for l in (REPO / "constraints.txt").read_text().splitlines() if l and not l.startswith("#")]
    assert lines, "constraints.txt is empty"
    loose = [l for l in lines if "==" not in l]
    assert not loose, f"constraints.txt must pin exact versions, found: {loose}"
    pins = _pins(lines)
    assert pins["torch"] == "2.13.0", "torch must stay 2.13.0 (the CPU build on this machine's disk)"
    assert pins["nbgrader"].startswith("0.9."), pins["nbgrader"]
    assert pins["jupyterlab"].startswith("4."), pins["jupyterlab"]
    assert pins["ipywidgets"].startswith("8."), pins["ipywidgets"]


def test_installed_versions_match_constraints():
    from importlib.metadata import version

    pins = _pins((REPO / "constraints.txt").read_text().splitlines())
    for name in ("torch", "nbgrader", "jupyterlab", "ipywidgets", "matplotlib", "tqdm", "numpy"):
        installed = version(name).split("+")[0]
        assert installed == pins[name], f"{name} {installed} installed, constraints.txt pins {pins[name]}: run 'make setup'"


def test_environment_yml_is_binder_ready_and_agrees_with_constraints():
    """Binder is the tested environment: environment.yml's pip section pins every package of
    constraints.txt at the same version (torch as the CPU build of the same release), nothing more."""
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps, "Binder must use Python 3.11 like the course venv"
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert any("download.pytorch.org/whl/cpu" in item for item in pip_section), \
        "torch must come from PyTorch's CPU-only index (keeps the Binder image small)"
    regenerate = "; regenerate it: python scripts/environment_yml.py"
    loose = [i for i in pip_section if not i.startswith("--") and "==" not in i]
    assert not loose, f"environment.yml has unpinned packages {loose}" + regenerate
    pins = _pins((REPO / "constraints.txt").read_text().splitlines())
    env_pins = _pins(pip_section)
    assert len(env_pins) == len([i for i in pip_section if not i.startswith("--")]), \
        "environment.yml names a package twice" + regenerate
    assert env_pins.get("torch") == pins["torch"] + "+cpu", \
        f"pin the CPU build of constraints.txt's torch: torch=={pins['torch']}+cpu, not {env_pins.get('torch')}"
    missing = sorted(set(pins) - set(env_pins))
    extra = sorted(set(env_pins) - set(pins))
    differ = sorted(f"{n}: environment.yml {env_pins[n]}, constraints.txt {pins[n]}"
                    for n in set(pins) & set(env_pins) if n != "torch" and env_pins[n] != pins[n])
    problems = ([f"missing (pinned in constraints.txt only): {missing}"] if missing else []) + \
               ([f"extra (not in constraints.txt): {extra}"] if extra else []) + differ
    assert not problems, "environment.yml and constraints.txt disagree:\n" + "\n".join(problems) + regenerate


def test_environment_yml_is_what_the_generator_writes():
    """environment.yml is generated (scripts/environment_yml.py, run by make lock): byte for byte."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(REPO / "scripts" / "environment_yml.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout


def test_makefile_and_ci_use_the_lock_and_the_readme_command():
    makefile = (REPO / "Makefile").read_text()
    assert "-c constraints.txt" in makefile, "the Makefile must install with the constraints file"
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M), ".ci/run must run exactly the README's test command"
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make demo" in readme


def test_the_lock_is_closed_every_pinned_package_s_requirements_are_pinned():
    """Every requirement of a pinned package (markers read for this Python) is pinned too: pip freeze
    leaves setuptools out unless asked (``--all``), and torch requires it; importlib_metadata requires
    lazy-importer. Without the pin, an install elsewhere (Colab) picks whatever release is newest."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    pins = _pins((REPO / "constraints.txt").read_text().splitlines())
    missing = []
    for name in sorted(pins):
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue    # not installed here: tests/test_python_versions.py resolves it with pip
        for spec in requires:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            dep = req.name.lower().replace("_", "-").replace(".", "-")
            if dep not in {p.replace(".", "-") for p in pins}:
                missing.append(f"{name} requires {spec}")
    assert not missing, "constraints.txt does not pin:\n" + "\n".join(missing) + "\n(make lock keeps them)"


def test_make_lock_keeps_setuptools_and_the_comment_header():
    makefile = (REPO / "Makefile").read_text()
    lock = makefile[makefile.index("\nlock:"):].split("\n\n")[0]
    assert "pip freeze --all" in lock, "pip freeze without --all drops setuptools, which torch requires"
    assert "sed '/^[^#]/,$$d' constraints.txt" in lock, "make lock must keep constraints.txt's whole comment header"
    assert "setuptools" in _pins((REPO / "constraints.txt").read_text().splitlines())
