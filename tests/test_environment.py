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
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps, "Binder must use Python 3.11 like the course venv"
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert any("download.pytorch.org/whl/cpu" in item for item in pip_section), \
        "torch must come from PyTorch's CPU-only index (keeps the Binder image small)"
    pins = _pins((REPO / "constraints.txt").read_text().splitlines())
    env_pins = _pins(pip_section)
    assert env_pins.get("torch", "").startswith("2.13.0"), env_pins
    assert env_pins["torch"].endswith("+cpu"), "pin the CPU-only build: torch==2.13.0+cpu"
    for name, ver in env_pins.items():
        if name == "torch":
            continue
        assert pins.get(name) == ver, f"environment.yml pins {name}=={ver}, constraints.txt has {pins.get(name)}"
    for needed in ("nbgrader", "jupyterlab", "ipywidgets", "matplotlib", "tqdm", "numpy"):
        assert needed in env_pins, f"environment.yml does not pin {needed}"


def test_makefile_and_ci_use_the_lock_and_the_readme_command():
    makefile = (REPO / "Makefile").read_text()
    assert "-c constraints.txt" in makefile, "the Makefile must install with the constraints file"
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M), ".ci/run must run exactly the README's test command"
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make demo" in readme
