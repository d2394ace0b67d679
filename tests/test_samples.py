"""Sample submissions parse, name real cells, and inherit from their base correctly."""
from __future__ import annotations

import pytest

from instructor.authoring import samples


@pytest.mark.parametrize("sample", samples.load_samples(), ids=lambda s: f"{s.assignment}/{s.student}")
def test_sample_builds_from_the_release_notebook(sample):
    name, nb = samples.build_notebook(sample)  # raises when a block names a cell that does not exist
    assert name.endswith(".ipynb") and nb.cells
    assert sample.about, f"{sample.path.name}: say in '# about:' what this sample proves"


def test_base_blocks_are_inherited_and_overridden(tmp_path):
    folder = tmp_path / "00_orientation"
    folder.mkdir()
    (folder / "a.py").write_text("# expect: auto=8\n# %% solution: q1\nA1\n# %% solution: q2\nA2\n")
    (folder / "b.py").write_text("# expect: auto=4\n# base: a\n# %% solution: q2\nB2\n")
    b = samples.parse_sample(folder / "b.py")
    assert dict((g, t) for _, g, t in b.blocks) == {"q1": "A1", "q2": "B2"}
    (folder / "c.py").write_text("# expect: auto=0\n# base: nobody\n")
    with pytest.raises(ValueError, match="names no other sample"):
        samples.parse_sample(folder / "c.py")
    (folder / "d.py").write_text("# %% solution: q1\nx\n")
    with pytest.raises(ValueError, match="expect: auto"):
        samples.parse_sample(folder / "d.py")
