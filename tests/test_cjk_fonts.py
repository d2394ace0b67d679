"""The Chinese edition's figures draw Chinese characters, not empty boxes (autograder/cjk_fonts.py).

.ci/run installs WenQuanYi Micro Hei (Debian's fonts-wqy-microhei), as Binder's apt.txt does."""
from __future__ import annotations

import warnings

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from autograder import cjk_fonts  # noqa: E402


def _missing_glyph_warnings(title: str) -> list[str]:
    fig, ax = plt.subplots()
    ax.set_title(title)
    ax.plot([0, 1], [0, -1], label="训练前的 G")
    ax.legend()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    plt.close(fig)
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


@pytest.fixture
def fresh_rc():
    with matplotlib.rc_context():
        yield


def test_default_font_draws_boxes_for_chinese(fresh_rc):
    """The control: matplotlib's own default has no Chinese glyphs."""
    matplotlib.rcParams["font.family"] = ["sans-serif"]
    matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans"]
    assert _missing_glyph_warnings("反向传播会失败")


def test_a_chinese_font_is_installed_and_used(fresh_rc):
    found = cjk_fonts.use_cjk_font(verbose=False)
    assert found in cjk_fonts.CJK_FONTS, "no Chinese font: apt-get install fonts-wqy-microhei (.ci/run does)"
    assert matplotlib.rcParams["font.sans-serif"][0] == found
    assert _missing_glyph_warnings("反向传播会失败：版本 0 → 2") == []


def test_no_font_gives_a_note_that_says_how_to_get_one(fresh_rc, monkeypatch, capsys):
    monkeypatch.setattr(cjk_fonts, "CJK_FONTS", ("A Font Nobody Has",))
    before = list(matplotlib.rcParams["font.sans-serif"])
    assert cjk_fonts.use_cjk_font() is None
    assert "fonts-wqy-microhei" in capsys.readouterr().out
    assert list(matplotlib.rcParams["font.sans-serif"]) == before


def test_setup_notebook_picks_the_font_only_in_chinese(fresh_rc, monkeypatch):
    from autograder import i18n, runtime
    calls = []
    monkeypatch.setattr(cjk_fonts, "use_cjk_font", lambda verbose=True: calls.append(verbose))
    for lang, expected in (("en", []), ("zh_CN", [False])):
        calls.clear()
        i18n.set_language(lang)
        try:
            runtime.setup_notebook(seed=0, verbose=False)
        finally:
            i18n.set_language(None)
        assert calls == expected, lang
