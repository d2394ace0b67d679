"""A submitted notebook rebuilt on the released notebook's skeleton, with every tampering undone.

What a student may change: the *source* of answer cells (solution cells) and of ungraded cells, and
add cells of their own. Everything else comes from the released notebook: the nbgrader metadata of
every graded, locked or answer cell (points, grade flags, ids), the locked and test cells' sources
(nbgrader also restores them from the gradebook), the kernelspec. What was undone is returned as
flags, one line each, so the instructor reads why instead of a bare "error".
"""
from __future__ import annotations

import copy
import json

import nbformat

# what a released cell is (its id, its metadata, an answer cell): the one rule, autograder.nbgrader_cells;
# a student's id that is no string (a list, an object, a number) is no id. Short names, as the tests patch them.
from autograder.nbgrader_cells import grade_id as _gid, is_answer_cell, nbgrader_meta as _nbmeta

MAX_CELLS = 2000        # more than this: only the released cells (with the student's answers) are graded
MAX_SOURCE_CHARS = 200_000  # one cell's source
MAX_NOTEBOOK_CHARS = 4_000_000  # all the cells of the student's own, together
MAX_ATTACHMENT_BYTES = 1 << 20  # images pasted into markdown cells, all together

__all__ = ["canonical_notebook", "MAX_CELLS"]


def _shown(value, limit: int = 120) -> str:
    """Student-made text (a claimed id, a metadata key) as it may appear in a flag: one printable line,
    control and format characters escaped, at most ``limit`` characters."""
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def canonical_notebook(nb, release_nb) -> tuple[nbformat.NotebookNode, list[str]]:
    """(canonical notebook, flags). ``nb`` is not modified."""
    flags: list[str] = []
    release_cells = {(_gid(c)): c for c in release_nb.cells if _gid(c)}
    order = [_gid(c) for c in release_nb.cells if _gid(c)]
    student_by_id: dict[str, object] = {}
    for cell in nb.cells:
        gid = _gid(cell)
        if gid in release_cells and gid not in student_by_id:
            student_by_id[gid] = cell

    def answer_source(gid, rel):
        cell = student_by_id.get(gid)
        if cell is None:
            return rel.source
        if cell.cell_type != rel.cell_type:
            flags.append(f"answer cell '{gid}' was turned into a {cell.cell_type} cell: its text is graded as a "
                         f"{rel.cell_type} cell")
        src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if len(src) > MAX_SOURCE_CHARS:
            flags.append(f"answer cell '{gid}' is over {MAX_SOURCE_CHARS} characters: cut")
            src = src[:MAX_SOURCE_CHARS]
        return src

    def canonical_cell(gid):
        rel = release_cells[gid]
        out = copy.deepcopy(rel)
        student = student_by_id.get(gid)
        if is_answer_cell(rel):
            out.source = answer_source(gid, rel)
        if student is None:
            what = "answer" if is_answer_cell(rel) else ("test" if _nbmeta(rel).get("grade") else "locked")
            flags.append(f"{what} cell '{gid}' was missing (deleted, or its id edited): put back"
                         + (" unanswered" if what == "answer" else ""))
        else:
            if _nbmeta(student) != _nbmeta(rel):
                changed = sorted(k for k in set(_nbmeta(student)) | set(_nbmeta(rel))
                                 if _nbmeta(student).get(k) != _nbmeta(rel).get(k))
                flags.append(f"cell '{gid}': its nbgrader metadata was edited ({_shown(', '.join(changed))}): restored")
            if not is_answer_cell(rel) and student.source != rel.source and not _nbmeta(rel).get("grade"):
                flags.append(f"locked cell '{gid}' was edited: restored")
        if out.cell_type == "code":
            out.outputs, out.execution_count = [], None
        return out

    budget = {"chars": MAX_NOTEBOOK_CHARS, "attachments": MAX_ATTACHMENT_BYTES}
    too_many = len(nb.cells) > MAX_CELLS
    if too_many:
        flags.append(f"the notebook has {len(nb.cells)} cells (limit {MAX_CELLS}): only the assignment's own "
                     "cells were graded, with your answers")
        cells = [canonical_cell(g) if _gid(c) else copy.deepcopy(c) for c in release_nb.cells for g in [_gid(c)]]
    else:
        cells, placed = [], set()
        for cell in nb.cells:
            gid = _gid(cell)
            if gid in release_cells and gid not in placed:
                # put back released cells the student deleted before this one
                for missing in order[:order.index(gid)]:
                    if missing not in placed and missing not in student_by_id:
                        cells.append(canonical_cell(missing))
                        placed.add(missing)
                cells.append(canonical_cell(gid))
                placed.add(gid)
                continue
            extra = copy.deepcopy(cell)
            src = extra.source if isinstance(extra.source, str) else "".join(extra.source)
            if len(src) > MAX_SOURCE_CHARS:
                flags.append(f"a cell of your own is over {MAX_SOURCE_CHARS} characters: cut")
                extra.source = src = src[:MAX_SOURCE_CHARS]
            budget["chars"] -= len(src)
            if budget["chars"] < 0:
                flags.append(f"your own cells are over {MAX_NOTEBOOK_CHARS} characters together: the rest were left out")
                continue
            attachments = extra.get("attachments") or {}
            size = len(json.dumps(attachments, default=str)) if attachments else 0
            if size:
                budget["attachments"] -= size
                if budget["attachments"] < 0:
                    del extra["attachments"]
                    extra.source = src + "\n\n*(attachments removed by the grader: over " \
                                         f"{MAX_ATTACHMENT_BYTES >> 10} KiB in the notebook)*"
                    flags.append(f"attachments over {MAX_ATTACHMENT_BYTES >> 10} KiB per notebook were removed")
            if "nbgrader" in extra.get("metadata", {}):
                flags.append(f"a cell of your own claimed nbgrader metadata ({_shown(_gid(cell) or 'no id')}): removed")
                del extra.metadata["nbgrader"]
            if extra.cell_type == "code":
                extra.outputs, extra.execution_count = [], None
            cells.append(extra)
        for gid in order:
            if gid not in placed:
                cells.append(canonical_cell(gid))
    out = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(release_nb.metadata))
    if nb.metadata.get("kernelspec") != release_nb.metadata.get("kernelspec"):
        flags.append("the notebook's kernel was changed: graded with the course kernel")
    return out, list(dict.fromkeys(flags))
