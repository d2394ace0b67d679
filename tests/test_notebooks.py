"""Every lesson in notebooks/ (and every notebook of the Chinese edition, zh_CN/) runs top to bottom, headless,
without an error or a stderr traceback.

(The graded notebooks in source/ run top to bottom in tests/test_pipeline.py, through nbgrader.)
Run times are written to artifacts/notebook_times.json for docs/performance.md's table.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
# ... and every notebook of the Chinese edition (zh_CN/: its lessons and its assignments' sources, answers in place)
LESSONS = sorted(p for p in (REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "zh_CN" / "notebooks").glob("*.ipynb")) \
    + sorted((REPO / "zh_CN" / "source").glob("*/*.ipynb"))
BUDGET_S = 60  # the course promises < 30 s on a quiet 2-core CPU; CI machines are shared, so allow 2x


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: str(p.relative_to(REPO)).removeprefix("notebooks/"))
def test_lesson_runs_top_to_bottom(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t0
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"{path.name} cell {i}: {out.ename}: {out.evalue}"
            if out.output_type == "stream" and out.name == "stderr":
                assert "Traceback" not in out.text, f"{path.name} cell {i} printed a traceback:\n{out.text}"
    artifacts = REPO / "artifacts"
    artifacts.mkdir(exist_ok=True)
    times_file = artifacts / "notebook_times.json"
    times = json.loads(times_file.read_text()) if times_file.exists() else {}
    times[str(path.relative_to(REPO))] = round(elapsed, 1)
    times_file.write_text(json.dumps(times, indent=1, sort_keys=True))
    assert elapsed < BUDGET_S, f"{path.name} took {elapsed:.0f} s (budget {BUDGET_S} s)"
