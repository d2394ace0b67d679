"""Sample submissions: what a student might hand in, with the score it must get.

A sample is a small text file ``tests/samples/<assignment>/<student>.py``::

    # about: the canonical answer, except the hook trick in the last question
    # expect: auto=8
    # expect: reproduce_sigmoid_error=2 silent_fixes=0

    # %% solution: reproduce_sigmoid_error
    def reproduce_sigmoid_error():
        ...

    # %% answer: reflection
    Free text for a hand-graded answer.

    # %% delete: reproduce_sigmoid_error_tests

Hostile samples (``tests/hostile/``) also use ``# %% metadata: ID`` (JSON merged into that cell's
nbgrader metadata), ``# %% after: ID`` (a new cell of the student's own after that cell),
``# %% first:`` (a new first cell), ``# %% markdown-after: ID`` (a markdown cell of the student's own
after that cell), ``# %% attachments:`` (JSON: the attachments of the markdown cell just added),
``# %% notebook-metadata:`` (JSON merged into the notebook's
metadata), ``# %% extra-cells: N`` (N copies of a cell appended), ``# flag: TEXT`` (grading must
flag the submission with a reason containing TEXT) and ``# base: 00_orientation/ada`` (a sample of
``tests/samples/``).

``# visible: fail=ID,ID pass=ID`` says what the student sees *before* handing in: with this sample's
answers in the released notebook, the visible tests in those test cells must fail (or pass). This is
how a sample proves that a visible test catches the silent-wrong fix its section warns about
(:mod:`.visible` runs them; the hidden tests are not in the release).

Each block replaces the source of the cell with that nbgrader ``grade_id`` in the *released*
notebook (``delete`` removes the cell, as a careless student might); cells not named keep their
stub. Because samples are built from ``release/``, they never drift from the assignment.

A sample that differs from another in one answer says so instead of repeating the rest:
``# base: ada`` starts from ``ada.py``'s blocks (same folder) and its own blocks replace those with
the same grade id.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.nbgrader_cells import grade_id as _grade_id

from ..layout import REPO, source_notebooks

SAMPLES = REPO / "tests" / "samples"
_BLOCK = re.compile(r"^# %% (solution|answer|delete|metadata|after|markdown-after|attachments|first|notebook-metadata|extra-cells): *([\w-]*) *$", re.M)

__all__ = ["Sample", "load_samples", "build_notebook", "materialize_samples"]


@dataclass
class Sample:
    path: Path
    assignment: str
    student: str
    about: str
    expect_auto: float | None
    expect_questions: dict[str, float] = field(default_factory=dict)
    blocks: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, grade_id, text)
    base: str | None = None
    expect_flags: list[str] = field(default_factory=list)  # '# flag: TEXT': a flag containing TEXT is raised
    expect_visible: dict[str, str] = field(default_factory=dict)  # '# visible: fail=ID pass=ID'


def parse_sample(path: Path) -> Sample:
    text = path.read_text()
    head = text[: m.start()] if (m := _BLOCK.search(text)) else text
    about = " ".join(l[len("# about:"):].strip() for l in head.splitlines() if l.startswith("# about:"))
    expect_auto, expect_q, base, flags, visible = None, {}, None, [], {}
    for line in head.splitlines():
        if line.startswith("# visible:"):
            for item in line[len("# visible:"):].split():
                outcome, _, ids = item.partition("=")
                if outcome not in ("fail", "pass") or not ids:
                    raise ValueError(f"{path}: '# visible:' takes fail=ID,ID and pass=ID,ID, not {item!r}")
                visible.update({g: outcome for g in ids.split(",") if g})
        if line.startswith("# base:"):
            base = line[len("# base:"):].strip()
        if line.startswith("# flag:"):
            flags.append(line[len("# flag:"):].strip())
        if line.startswith("# expect:"):
            for item in line[len("# expect:"):].split():
                key, _, value = item.partition("=")
                if key == "auto":
                    expect_auto = float(value)
                else:
                    expect_q[key] = float(value)
    parts = _BLOCK.split(text)[1:]
    blocks = [(parts[i], parts[i + 1], parts[i + 2].strip("\n") + "\n") for i in range(0, len(parts), 3)]
    if expect_auto is None:
        raise ValueError(f"{path}: no '# expect: auto=N' line")
    own = [(k, g, t.rstrip("\n")) for k, g, t in blocks]
    if base:
        base_path = (SAMPLES / (base + ".py")) if "/" in base else path.with_name(base + ".py")
        if not base_path.exists() or base_path == path:
            raise ValueError(f"{path}: '# base: {base}' names no other sample in {path.parent}")
        mine = {g for k, g, _ in own if k in ("solution", "answer", "delete")}
        own = [b for b in parse_sample(base_path).blocks if b[1] not in mine] + own
    return Sample(path, path.parent.name, path.stem, about, expect_auto, expect_q, own, base, flags, visible)


def load_samples(assignment: str | None = None) -> list[Sample]:
    paths = sorted(SAMPLES.glob(f"{assignment or '*'}/*.py"))
    return [parse_sample(p) for p in paths]


def build_notebook(sample: Sample) -> tuple[str, nbformat.NotebookNode]:
    """The sample as a filled-in copy of the released notebook: (file name, notebook)."""
    [src] = source_notebooks(sample.assignment)[:1]
    release_nb = REPO / "release" / sample.assignment / src.name
    nb = nbformat.read(release_nb, as_version=4)
    by_id = {_grade_id(c): c for c in nb.cells}
    added_markdown = None
    for kind, grade_id, text in sample.blocks:
        if kind == "attachments":
            if added_markdown is None:
                raise ValueError(f"{sample.path}: '# %% attachments:' must follow a '# %% markdown-after:' block")
            added_markdown.attachments = json.loads(text)
            continue
        if kind == "notebook-metadata":
            nb.metadata.update(json.loads(text))
            continue
        if kind == "extra-cells":
            nb.cells += [nbformat.v4.new_code_cell(text.strip() or "pass") for _ in range(int(grade_id))]
            continue
        if kind == "first":
            nb.cells.insert(0, nbformat.v4.new_code_cell(text))
            continue
        if grade_id not in by_id:
            raise ValueError(f"{sample.path}: no cell with grade_id '{grade_id}' in {release_nb.name}")
        cell = by_id[grade_id]
        if kind == "delete":
            nb.cells.remove(cell)
        elif kind == "metadata":
            cell.metadata.setdefault("nbgrader", {}).update(json.loads(text))
        elif kind == "after":
            nb.cells.insert(nb.cells.index(cell) + 1, nbformat.v4.new_code_cell(text))
        elif kind == "markdown-after":
            added_markdown = nbformat.v4.new_markdown_cell(text)
            nb.cells.insert(nb.cells.index(cell) + 1, added_markdown)
        else:
            cell.source = text
    return src.name, nb


def materialize_samples(dest: Path, students: list[str] | None = None,
                        assignment: str | None = None) -> int:
    """Write every sample as ``dest/<student>/<assignment>/<notebook>.ipynb``; return the count."""
    n = 0
    for sample in load_samples(assignment):
        if students and sample.student not in students:
            continue
        name, nb = build_notebook(sample)
        out = Path(dest) / sample.student / sample.assignment / name
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out)
        n += 1
    return n
