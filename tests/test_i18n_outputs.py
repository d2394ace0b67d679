"""What the course's own tools print and draw, in the Chinese edition and in English (#39).

The in-place report (``autograder.inplace.explain``), the version explorer's verdicts and saved-tensor
lines, storage's measurement table and read-outs, the attack figures' labels and ``describe()``: in
English byte for byte what they were before they were translated (the expected texts below were
captured from the code before the change), and in Chinese free of the course's English sentences
(what stays English is code, PyTorch's own names and messages, and the student's lines of code).
Fast: no kernels, a tiny program, the course's small detector.
"""
from __future__ import annotations

import contextlib
import io
import linecache
import re

import pytest
import torch

from autograder import attack, checks, i18n, inplace, storage
from autograder import explorers as E

HAN = re.compile(r"[\u4e00-\u9fff]")
#: two English words in a row (three letters or more each): a sentence of the course left in English
ENGLISH_WORDS = re.compile(r"(?<![A-Za-z_.])[A-Za-z]{3,}[ ,]+[A-Za-z]{3,}(?![A-Za-z_(])")

DEMO = "<i18n-demo>"
SRC = ("def f(p):\n    y = p.sigmoid()\n    y[0:2] = 0\n    y += 1\n    return y\n\n\n"
       "def run(p):\n    f(p).sum().backward()\n")

EXPLAIN_EN = (
    "In-place write on a tensor autograd saved for backward (error raised at <i18n-demo>:9).\n"
    "  In short: saved at version 0 by sigmoid at <i18n-demo>:2; written at <i18n-demo>:3 (0 → 1) and "
    "<i18n-demo>:4 (1 → 2).\n"
    "  Tensor:  float32, shape [4, 3], on cpu (PyTorch calls it output 0 of Sigmoid)\n"
    "  Saved:   sigmoid at <i18n-demo>:2 kept its result for backward (node SigmoidBackward0), at version 0:\n"
    "             y = p.sigmoid()\n"
    "             (in f, called from <i18n-demo>:9)\n"
    "  Then written in place, in this order:\n"
    "    1. <i18n-demo>:3  fill_  version 0 → 1\n"
    "         y[0:2] = 0\n"
    "    2. <i18n-demo>:4  add_ (+= or .add_)  version 1 → 2\n"
    "         y += 1\n"
    "  Backward needs the values of version 0, but the tensor is now at version 2, so PyTorch refuses to "
    "compute the gradient.\n"
    "  Fix: leave the saved tensor alone - build the new values out of place (e.g. torch.cat of the pieces) "
    "or write into a copy (y = y.clone()).")
UNLOCATED_EN = (
    "In-place write on a tensor autograd saved for backward (not seen by the locator).\n"
    "  Tensor:  float32, shape [4, 3], on cpu, output 0 of Sigmoid\n"
    "  It was saved at version 0 and has since been written in place 2 time(s) (now version 2).\n"
    "  Run the forward pass inside locate_inplace() (or `python -m autograder.inplace script.py`) to see "
    "which lines wrote it.")
VERDICTS_EN = [
    "backward() now: no graph yet, nothing to differentiate",
    "backward() now: no graph yet, nothing to differentiate",
    "backward() now: would run",
    "backward() now: would run",
    "backward() now: FAILS — SigmoidBackward0 needs y at v0, it is at v1",
    "backward() now: FAILS — SigmoidBackward0 needs y at v0, it is at v2",
    "backward() now: FAILS — SigmoidBackward0 needs y at v0, it is at v2",
    "this line raised RuntimeError: one of the variables needed for gradient computation has been modified by "
    "an inplace operation: [torch.FloatTensor [4]], which is output 0 of Sigmoid, is at version 2; expected "
    "version 0 instead."]
SAVED_EN = [
    ["no autograd node yet: no tensor has a grad_fn"],
    ["no autograd node yet: no tensor has a grad_fn"],
    ["SigmoidBackward0 saved result = y (v0)"],
    ["MulBackward0 saved other = tensor(2) (v0)", "SigmoidBackward0 saved result = y (v0)"],
    ["MulBackward0 saved other = tensor(2) (v0)", "SigmoidBackward0 saved result = y: saved at v0, now v1 (stale)"],
    ["MulBackward0 saved other = tensor(2) (v0)", "SigmoidBackward0 saved result = y: saved at v0, now v2 (stale)",
     "PowBackward0 saved self = tensor[2] (v0)", "MulBackward0 saved other = tensor(2) (v0)"],
    ["PowBackward0 saved self = tensor[2] (v0)", "MulBackward0 saved other = tensor(2) (v0)",
     "MulBackward0 saved other = tensor(2) (v0)", "SigmoidBackward0 saved result = y: saved at v0, now v2 (stale)"],
    ["SigmoidBackward0 saved result = y: saved at v0, now v2 (stale)"]]
FIXED_LAST_EN = (["none any more: backward() freed the tensors the nodes had saved"],
                 "backward() ran: the graph's saved tensors are freed")
MEASURE_EN = (
    "statement                    same object same storage x0._version x0 changed\n"
    "----------------------------------------------------------------------------\n"
    "x += 1                              True         True      0 -> 1       True\n"
    "x = x[:]                           False         True      0 -> 0      False\n"
    "x.data += 1                         True         True      0 -> 0       True\n")
PYTORCH_MESSAGE = re.compile(r"RuntimeError: one of the variables needed.*?instead\.", re.S)


def _english_left(text: str, code: tuple[str, ...] = ()) -> list[str]:
    """The English sentences of the course in ``text``, once PyTorch's message and the given lines of
    the student's code are taken out."""
    text = PYTORCH_MESSAGE.sub(" ", text)
    lines = [line for line in text.splitlines() if line.strip() not in code]
    return [m.group(0) for line in lines for m in ENGLISH_WORDS.finditer(line)]


@pytest.fixture
def en():
    with i18n.speaking("en"):
        yield


@pytest.fixture
def zh():
    with i18n.speaking("zh_CN"):
        yield


def _demo() -> dict:
    linecache.cache[DEMO] = (len(SRC), None, SRC.splitlines(True), DEMO)
    ns: dict = {}
    exec(compile(SRC, DEMO, "exec"), ns)  # noqa: S102 - the test's own program
    return ns


def _reports() -> tuple[str, str]:
    """explain() of the same in-place error, located and not."""
    ns = _demo()
    p = torch.randn(4, 3, requires_grad=True)
    with pytest.raises(RuntimeError) as located:
        with inplace.locate_inplace():
            ns["run"](p)
    with pytest.raises(RuntimeError) as plain:
        ns["run"](p)
    return inplace.explain(located.value), inplace.explain(plain.value)


SOURCE_LINES = tuple(line.strip() for line in SRC.splitlines() if line.strip())


# --------------------------------------------------------------------------- the in-place report

def test_explain_in_english_is_what_it_was(en):
    assert _reports() == (EXPLAIN_EN, UNLOCATED_EN)


def test_explain_in_chinese_has_no_english_sentence_of_the_course(zh):
    located, plain = _reports()
    for report in (located, plain):
        assert HAN.search(report), report
        assert not _english_left(report, SOURCE_LINES), (_english_left(report, SOURCE_LINES), report)
    # the facts are the same: places, versions, PyTorch's names, the student's lines
    for fact in ("<i18n-demo>:2", "<i18n-demo>:3 (0 → 1)", "<i18n-demo>:4 (1 → 2)", "SigmoidBackward0",
                 "y = p.sigmoid()", "y[0:2] = 0", "y += 1", "add_（+= 或 .add_）", "版本 1 → 2", "[4, 3]"):
        assert fact in located, fact
    assert len(located.splitlines()) == len(EXPLAIN_EN.splitlines())
    assert "原地" in located and "反向传播" in located and "梯度" in located


def test_a_failed_check_keeps_the_english_reports_shape_in_english(en):
    """fail() cuts a long locator report to its "In short" line and first write (checks._brief)."""
    located, _ = _reports()
    with pytest.raises(checks.CheckFailed) as err:
        checks.fail("backward failed", detail=located)
    assert "In short: saved at version 0 by sigmoid" in str(err.value)
    assert "1. <i18n-demo>:3  fill_  version 0 → 1" in str(err.value)


# --------------------------------------------------------------------------- the version explorer

def test_version_explorer_lines_in_english_are_what_they_were(en):
    ex = E.VersionExplorer(E.DEFAULT_PROGRAM)
    assert [ex.verdict(s) for s in ex.snapshots] == VERDICTS_EN
    assert [ex.saved_lines(s) for s in ex.snapshots] == SAVED_EN
    fixed = E.VersionExplorer(E.FIXED_PROGRAM)
    last = fixed.snapshots[-1]
    assert (fixed.saved_lines(last), fixed.verdict(last)) == FIXED_LAST_EN


def test_version_explorer_lines_in_chinese(zh):
    code = tuple(line.strip() for line in E.DEFAULT_PROGRAM.splitlines() if line.strip())
    for program in (E.DEFAULT_PROGRAM, E.FIXED_PROGRAM):
        ex = E.VersionExplorer(program)
        for snap in ex.snapshots:
            shown = [ex.verdict(snap)] + ex.saved_lines(snap) + [ex.report(snap)]
            for text in shown:
                assert HAN.search(text), text
                assert not _english_left(text, code), (_english_left(text, code), text)
    ex = E.VersionExplorer(E.DEFAULT_PROGRAM)
    assert ex.verdict(ex.snapshots[4]) == "现在 backward()：会失败 —— SigmoidBackward0 需要 v0 的 y，它现在是 v1"
    assert "RuntimeError: one of the variables needed" in ex.verdict(ex.snapshots[-1])   # PyTorch's, verbatim
    fig = ex.figure(ex.snapshots[4])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts] + [fig._suptitle.get_text()]
    assert not [t for t in texts if _english_left(t, code)], texts
    widget = ex.widget()
    buttons = [c.description for c in widget.children[0].children]
    assert buttons == ["◀ 上一步", "行", "下一步 ▶"]


# --------------------------------------------------------------------------- storage

def _printed(statements) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        storage.print_measurements(statements)
    return buf.getvalue()


def test_print_measurements_in_english_is_what_it_was(en):
    assert _printed(["x += 1", "x = x[:]", "x.data += 1"]) == MEASURE_EN


def test_print_measurements_and_the_read_out_in_chinese(zh):
    text = _printed(["x += 1", "x = x[:]", "x.data += 1"])
    head, rule, *rows = text.splitlines()
    assert head.split() == ["语句", "同一对象", "同一存储", "x0._version", "x0", "变了"]
    assert storage._width(head) == len(rule)   # aligned for a monospace font: a Chinese character is two wide
    assert rows == MEASURE_EN.splitlines()[2:]   # the measurements themselves do not change
    html = storage.measurement_html(storage.measure("x = x[:]"))
    prose = re.sub(r"<code>.*?</code>|<[^>]+>", " ", html)
    assert HAN.search(prose) and not _english_left(prose, ("x = x[:]",)), prose
    assert "id" in storage.measure("x += 1").before.short() and "存储" in storage.measure("x += 1").before.short()


# --------------------------------------------------------------------------- the attack figures

@pytest.fixture(scope="module")
def attacked():
    import matplotlib.pyplot as plt

    torch.manual_seed(0)
    model = attack.attack_model()
    images = torch.rand(2, 3, 64, 64)
    delta = (torch.rand_like(images) - 0.5) * 0.1
    yield model, images, delta
    plt.close("all")


def _labels(fig) -> list[str]:
    out = []
    for ax in fig.axes:
        out += [t for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) if t]
    return out


def test_attack_labels_in_english_are_what_they_were(en, attacked, monkeypatch):
    from autograder.detector import best_objectness, detect

    monkeypatch.delenv("COURSE_GRADING", raising=False)
    model, images, delta = attacked
    image = images[:1]
    eps = float(delta[:1].abs().max())
    with torch.no_grad():
        b, a = float(best_objectness(model, image)), float(best_objectness(model, image + delta[:1]))
    d0, d1 = detect(model, image)[0], detect(model, image + delta[:1])[0]
    assert _labels(attack.show_attack(model, images, delta)) == [
        f"before: best objectness {b:.3f}\n{len(d0)} detection(s)",
        f"after: best objectness {a:.3f}\n{len(d1)} detection(s)",
        f"perturbation (grey = 0, ±{eps * 255:.0f}/255)"]
    with torch.no_grad():
        before, after = detect(model, images), detect(model, images + delta)
    labels = _labels(attack.show_vanish(model, images, delta, [5, 3, 1], shown=2))
    assert sorted(labels) == sorted([f"before: {len(before[0])}", f"after: {len(after[0])}",
                                     f"before: {len(before[1])}", f"after: {len(after[1])}",
                                     "PGD step", "detections left in 2 images"])


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")   # no Chinese font on this machine: boxes
def test_attack_labels_in_chinese(zh, attacked, monkeypatch):
    monkeypatch.delenv("COURSE_GRADING", raising=False)
    model, images, delta = attacked
    labels = _labels(attack.show_attack(model, images, delta)) + _labels(
        attack.show_vanish(model, images, delta, [5, 3, 1], shown=2))
    assert len(labels) == 9
    for label in labels:
        assert HAN.search(label), label
        assert not _english_left(label), label
    assert labels[0].startswith("攻击前：最高 objectness ") and labels[0].endswith(" 个检测")
    assert "PGD 步数" in labels and "2 张图中剩下的检测数" in labels
    names = [t.get_text().rsplit(" ", 1)[0] for ax in attack.show_attack(model, images, delta).axes for t in ax.texts]
    assert names and set(names) <= {"正方形", "圆盘", "三角形"}, names


def test_the_detectors_class_names_stay_english_in_code_and_read_chinese_in_figures(attacked, monkeypatch):
    from autograder.detector import CLASSES

    monkeypatch.delenv("COURSE_GRADING", raising=False)
    model, images, delta = attacked
    with i18n.speaking("zh_CN"):
        assert CLASSES == ("square", "disc", "triangle")
    with i18n.speaking("en"):
        names = [t.get_text().rsplit(" ", 1)[0] for ax in attack.show_attack(model, images, delta).axes
                 for t in ax.texts]
    assert names and set(names) <= set(CLASSES), names


# --------------------------------------------------------------------------- describe() and the "at:" line

def test_describe_in_both_languages():
    t, g = torch.zeros(2), torch.zeros(2, requires_grad=True)
    with i18n.speaking("en"):
        assert [checks.describe(t), checks.describe(g), checks.describe(list(range(9)))] == [
            "tensor float32 (2,) on cpu", "tensor float32 (2,) on cpu, requires_grad", "list of 9 items"]
    with i18n.speaking("zh_CN"):
        assert [checks.describe(t), checks.describe(g), checks.describe(list(range(9)))] == [
            "张量 float32 (2,)，在 cpu 上", "张量 float32 (2,)，在 cpu 上，requires_grad", "含 9 项的 list"]


def test_the_at_line_of_a_crash_in_a_cell_in_both_languages():
    cell = "<ipython-input-7-i18n>"
    code = "def student(x):\n    return x.foo\n"
    linecache.cache[cell] = (len(code), None, code.splitlines(True), cell)
    ns: dict = {}
    exec(compile(code, cell, "exec"), ns)  # noqa: S102 - a student's cell, as IPython names it
    for lang, line in (("en", "  at: return x.foo  (in student)"), ("zh_CN", "  位置：return x.foo  （在 student 中）")):
        with i18n.speaking(lang), pytest.raises(checks.CheckFailed) as err:
            checks.call_student(ns["student"], 1)
        assert line in str(err.value).splitlines(), str(err.value)


def test_a_wrong_category_reads_chinese_in_the_chinese_edition():
    def in_place_student(statement, device=None, dtype=None):
        return "in-place"

    messages = {}
    for lang in ("en", "zh_CN"):
        with i18n.speaking(lang), pytest.raises(checks.CheckFailed) as err:
            storage.check_example_category(in_place_student, "x.data += 1", "untracked-write", "cpu")
        messages[lang] = str(err.value)
    assert "measured: same object True, same storage True, x0._version 0 -> 0, x0's contents changed True" \
        in messages["en"] and "try next : x0._version stayed put, but x0's contents did not" in messages["en"]
    assert "实测：同一对象 True，同一存储 True，x0._version 0 -> 0，x0 的内容变了 True" in messages["zh_CN"]
    assert "下一步：x0._version 没变，但 x0 的内容变了" in messages["zh_CN"]
    assert not _english_left(messages["zh_CN"], ("x.data += 1",)), messages["zh_CN"]
