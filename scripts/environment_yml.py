"""Rewrite environment.yml (Binder, conda users) from constraints.txt, the course's one lock file.

    python scripts/environment_yml.py            # rewrite environment.yml
    python scripts/environment_yml.py --check    # exit 1 if environment.yml is not what it would write

Every pin of constraints.txt goes into the pip section at its exact version, so the Binder image holds
the environment the test suite ran in (tests/test_environment.py fails when the two disagree). torch
is the same release as the CPU wheel from PyTorch's CPU-only index (``torch==X+cpu``): a few hundred MB
instead of several GB of CUDA libraries. Standard library only: it runs before any ``make setup``.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints.txt"
ENVIRONMENT = REPO / "environment.yml"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)==([^\s#;]+)\s*$")

HEADER = """\
# GENERATED from constraints.txt by `python scripts/environment_yml.py` (make lock runs it): do not edit.
# Binder (and conda users): a student JupyterLab in the environment the test suite runs in. The pip
# section holds EVERY pin of constraints.txt at its exact version, the test tools (pytest, playwright,
# pyyaml: the dev extra) included: constraints.txt is one `pip freeze` of `pip install -e '.[dev]'` and
# does not mark which pins only the dev extra needs. They cost about 175 MB installed (playwright's
# bundled node driver is 165 MB of it) in an image of about 2.5-3 GB; with them the image is exactly
# the tested environment (tests/test_environment.py checks every pin).
# torch is the CPU build of the same release, from PyTorch's CPU-only wheel index.
# postBuild then installs the course package itself (editable) and turns the instructor-only panels off.
"""


def read_pins(path: Path = CONSTRAINTS) -> list[tuple[str, str]]:
    """(name, version) of every line of constraints.txt, in file order; anything but ``name==version`` fails."""
    pins = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = PIN.match(line)
        if not m:
            raise SystemExit(f"{path}:{n}: not an exact pin (name==version): {line!r}")
        pins.append((m.group(1), m.group(2)))
    if not pins:
        raise SystemExit(f"{path}: no pins")
    return pins


def render(pins: list[tuple[str, str]]) -> str:
    lines = [HEADER.rstrip("\n"),
             "name: inplace-course",
             "channels:",
             "  - conda-forge",
             "dependencies:",
             "  - python=3.11",
             "  - pip",
             "  - pip:",
             f"      - --extra-index-url {TORCH_INDEX}"]
    for name, version in pins:
        if name.lower() == "torch":
            version = version.split("+")[0] + "+cpu"
        lines.append(f"      - {name}=={version}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when environment.yml is stale")
    args = parser.parse_args(argv)
    text = render(read_pins())
    if args.check:
        if ENVIRONMENT.read_text() != text:
            print(f"{ENVIRONMENT.name} is stale: run python scripts/environment_yml.py", file=sys.stderr)
            return 1
        return 0
    ENVIRONMENT.write_text(text)
    print(f"wrote {ENVIRONMENT.name}: {len(read_pins())} pins from {CONSTRAINTS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
