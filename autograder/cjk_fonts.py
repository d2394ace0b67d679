"""Chinese text in the course's figures: a font that has the characters, or a note saying how to get one.

matplotlib's default font (DejaVu Sans) has no Chinese characters: a Chinese title or legend comes out
as empty boxes, with a "Glyph ... missing from font(s)" warning. When the notebook is in Chinese,
:func:`use_cjk_font` puts the first Chinese font this machine has in front of matplotlib's sans-serif
list. Binder installs one (``apt.txt``: WenQuanYi Micro Hei); elsewhere the note names the command.
"""
from __future__ import annotations

#: Fonts with Simplified Chinese, the free ones first (Debian/Ubuntu packages, then macOS and Windows).
CJK_FONTS = ("WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC",
             "Droid Sans Fallback", "PingFang SC", "Heiti SC", "Microsoft YaHei", "SimHei")
INSTALL_NOTE = ("图中的中文需要一个中文字体，这台机器上没有找到。"
                "Debian/Ubuntu/Colab：在一个单元格里运行 `!apt-get -qq install fonts-wqy-microhei`，"
                "然后重启内核（Kernel ▸ Restart）。在那之前，图里的中文会显示成方框，其余一切照常。")


def find_cjk_font() -> str | None:
    """The first font of :data:`CJK_FONTS` that matplotlib can find here, else None."""
    from matplotlib import font_manager

    have = {f.name for f in font_manager.fontManager.ttflist}
    found = next((name for name in CJK_FONTS if name in have), None)
    if found is None:   # a font installed after matplotlib built its cache: add the new files to it
        known = {f.fname for f in font_manager.fontManager.ttflist}
        for path in font_manager.findSystemFonts():
            if path not in known:
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        have = {f.name for f in font_manager.fontManager.ttflist}
        found = next((name for name in CJK_FONTS if name in have), None)
    return found


def use_cjk_font(verbose: bool = True) -> str | None:
    """Make matplotlib draw Chinese with a font that has it; the font's name, or None (with a note)."""
    import matplotlib

    found = find_cjk_font()
    if found is None:
        if verbose:
            print(INSTALL_NOTE)
        return None
    families = [f for f in matplotlib.rcParams["font.sans-serif"] if f != found]
    matplotlib.rcParams["font.sans-serif"] = [found, *families]
    matplotlib.rcParams["font.family"] = ["sans-serif"]
    matplotlib.rcParams["axes.unicode_minus"] = False   # the CJK fonts lack U+2212: use ASCII '-'
    return found
