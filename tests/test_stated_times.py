"""The course's time estimates are one model's output, stated alike wherever they appear, and labelled
as an estimate (no student has been timed yet): each notebook's **Time:** sentence (scripts/walkthrough.py
writes it), the README's table and 00_start_here's table."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENTS = sorted(p.name for p in (REPO / "source").iterdir() if p.is_dir() and p.name[:2].isdigit())
RANGE = r"(\d+)–(\d+) min"


def _markdown(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _notebook_ranges() -> dict[str, tuple[str, str]]:
    out = {}
    for a in ASSIGNMENTS:
        m = re.search(r"\*\*Time:\*\* " + RANGE, _markdown(REPO / "source" / a / f"{a}.ipynb"))
        assert m, f"source/{a}/{a}.ipynb: no '**Time:** N–M minutes' sentence"
        out[a] = m.groups()
    return out


def _table_ranges(text: str, where: str) -> dict[str, tuple[str, str]]:
    out = {}
    for a in ASSIGNMENTS:
        row = next((line for line in text.splitlines() if line.startswith("|") and f"{a}/" in line), None)
        assert row, f"{where}: no table row for {a}"
        m = re.search(RANGE + r" \|\s*$", row)
        assert m, f"{where}: the row of {a} ends in no 'N–M min' cell: {row}"
        out[a] = m.groups()
    return out


@pytest.mark.parametrize("where", ["README.md", "notebooks/00_start_here.ipynb"])
def test_every_table_states_the_notebooks_own_estimates_and_calls_them_estimates(where):
    path = REPO / where
    text = _markdown(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
    assert _table_ranges(text, where) == _notebook_ranges(), (
        f"{where}'s time column differs from the notebooks' **Time:** sentences: run "
        "`python scripts/walkthrough.py --write` and copy its ranges into the table")
    header = next(line for line in text.splitlines() if line.startswith("| #"))
    assert "estimate" in header, f"{where}: the time column's header must say the times are an estimate"
    assert re.search(r"not a measurement", text), f"{where}: say that the times are a model, not measured"
