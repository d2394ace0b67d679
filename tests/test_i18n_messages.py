"""The messages the course's code shows, in Chinese at runtime (autograder.i18n, instructor.translate_messages).

Fast: no kernels. The catalogues are complete and reviewed, a visible test's failure reads Chinese in the
Chinese edition and English otherwise, templates carry their fields, the student package holds no hidden
check's text, an English change without a translation fails ``translate_messages check``, and the kernel's
language comes from the notebook's own metadata.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polib
import pytest

from autograder import i18n
from autograder.checks import CheckFailed, check_equal, check_type, fail
from instructor import translate_messages as tm
from instructor.layout import REPO

STUDENT_PO = tm.student_catalogue_path()
GRADER_PO = tm.grader_catalogue_path()
HAN = re.compile(r"[\u4e00-\u9fff]")
CHINESE = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")   # Han, or Chinese punctuation


@pytest.fixture
def zh(monkeypatch):
    """This process speaks Chinese (as a kernel of the Chinese edition does); English again afterwards."""
    monkeypatch.setenv("COURSE_LANG", "zh_CN")
    i18n.set_language(None)
    yield
    i18n.set_language("en")


@pytest.fixture
def en(monkeypatch):
    monkeypatch.delenv("COURSE_LANG", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    i18n.set_language(None)
    yield
    i18n.set_language(None)


def _raised(fn) -> str:
    with pytest.raises(CheckFailed) as err:
        fn()
    return str(err.value)


# --------------------------------------------------------------------------- the catalogues

@pytest.mark.parametrize("path", [STUDENT_PO, GRADER_PO], ids=["student", "grader"])
def test_every_message_has_a_reviewed_translation_with_the_same_fields(path):
    po = polib.pofile(str(path))
    entries = [e for e in po if not e.obsolete]
    assert len(entries) > 100, f"{path}: only {len(entries)} messages"
    problems = []
    for e in entries:
        if not e.msgstr or "fuzzy" in e.flags:
            problems.append(f"untranslated or fuzzy: {e.msgid!r}")
        elif tm.FLAG in e.flags and sorted(set(i18n.template_fields(e.msgstr))) != sorted(set(i18n.template_fields(e.msgid))):
            problems.append(f"fields {i18n.template_fields(e.msgstr)} != {i18n.template_fields(e.msgid)}: {e.msgid!r}")
        elif e.msgstr != e.msgid and not CHINESE.search(e.msgstr):
            problems.append(f"not Chinese: {e.msgid!r} -> {e.msgstr!r}")
    kept = [e for e in entries if e.msgstr == e.msgid]
    assert len(kept) <= 6, f"{len(kept)} messages kept in English: {[e.msgid[:50] for e in kept]}"
    assert not problems, "\n".join(problems)
    from test_i18n import glossary_problems   # the notebooks' glossary check, on these catalogues too

    assert not glossary_problems(po, path.name)


def test_the_catalogues_match_the_code_now(capsys):
    assert tm.main(["check"]) == 0, capsys.readouterr().out + (
        "\nrun python -m instructor.translate_messages update, then translate what it added")
    assert capsys.readouterr().out.strip() == "every message has a reviewed zh_CN translation"


def test_the_student_package_ships_its_catalogue():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "locale/*/LC_MESSAGES/*.po" in text, "pyproject's package-data must include autograder/locale"
    assert re.search(r'^\s*"polib",?', text, re.M), "polib must be a dependency of the student package"
    assert re.search(r"^polib==", (REPO / "constraints.txt").read_text(encoding="utf-8"), re.M)


# --------------------------------------------------------------------------- a visible test's failure

def _test_cell(notebook: str, grade_id: str) -> str:
    nb = json.loads((REPO / "source" / notebook / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id") == grade_id:
            return tm.HIDDEN_BLOCK.sub("", "".join(cell["source"]))
    raise AssertionError(f"no cell {grade_id} in {notebook}")


def _run_cell(source: str, ns: dict) -> str:
    exec("import re\nfrom autograder.checks import *\n", ns)
    with pytest.raises(CheckFailed) as err:
        exec(compile(source, "<test cell>", "exec"), ns)
    return str(err.value)


def test_a_visible_test_cell_fails_in_chinese_in_the_chinese_edition(zh):
    source = _test_cell("01_version_counter", "reproduce_sigmoid_error_tests")
    message = _run_cell(source, {"reproduce_sigmoid_error": lambda: ValueError("not the one")})
    assert message.splitlines() == [
        "reproduce_sigmoid_error() 的类型不对",
        "  期望\u3000：RuntimeError",
        "  实际\u3000：ValueError: ValueError('not the one')",
        "  下一步：用 `except RuntimeError as err:` 捕获它，再 `return err`（是 return，不是 raise）。",
    ], message
    # the second check of the same cell: PyTorch's words (got) stay English, the course's are Chinese
    message = _run_cell(source, {"reproduce_sigmoid_error": lambda: RuntimeError("CUDA out of memory")})
    assert message.startswith("这不是原地操作的报错\n"), message
    assert "  期望\u3000：一条包含 'modified by an inplace operation' 的报错信息" in message
    assert "  实际\u3000：CUDA out of memory" in message


def test_the_same_cell_fails_in_english_in_the_english_edition(en):
    source = _test_cell("01_version_counter", "reproduce_sigmoid_error_tests")
    message = _run_cell(source, {"reproduce_sigmoid_error": lambda: ValueError("not the one")})
    assert message.splitlines()[0] == "reproduce_sigmoid_error() has the wrong type"
    assert "  try next : catch it with `except RuntimeError as err:`" in message
    assert not HAN.search(message)


def test_checks_own_templates_and_their_fields(zh):
    message = _raised(lambda: check_equal(3, 0, "your prediction for line 1", hint="a brand-new tensor starts at version 0."))
    assert message.splitlines() == ["你对第 1 行的预测与期望的不一致", "  期望\u3000：0", "  实际\u3000：3",
                                    "  下一步：新建的张量从版本 0 开始。"], message
    message = _raised(lambda: check_type([1, 2], dict, "environment_report()"))
    assert message.splitlines()[0] == "environment_report() 的类型不对"
    assert message.splitlines()[-1] == "  下一步：返回 dict。"   # the default hint, a template with {names}
    detail = "\n".join(f"line {k}" for k in range(7))
    message = _raised(lambda: fail("4 step(s) of your predictions are wrong", got="step 2: 1 != 0", detail=detail))
    assert message.splitlines()[0] == "你的预测有 4 步不对"
    assert message.splitlines()[-1] == "  （还有 4 行：在你自己的单元格里运行这次失败的调用，就能看到全部）"
    assert "  line 0" in message and "  实际\u3000：step 2: 1 != 0" in message


def test_template_lookup_fills_the_translations_fields():
    cat = i18n.Catalogue()
    cat.add("{what} has the wrong shape", "{what} 的形状不对", template=True)
    cat.add("{before:.3f} -> {after:.3f} (a drop of {before - after:.4f})",
            "{before:.3f} -> {after:.3f}（下降 {before - after:.4f}）", template=True)
    cat.add("your prediction for line 1", "你对第 1 行的预测", template=False)
    cat.add("{n} and {n}", "{n} 与 {n}", template=True)
    assert i18n.translate("decode(p) has the wrong shape", "zh_CN", cat) == "decode(p) 的形状不对"
    assert i18n.translate("your prediction for line 1 has the wrong shape", "zh_CN", cat) == "你对第 1 行的预测的形状不对"
    assert i18n.translate("0.812 -> 0.700 (a drop of 0.1120)", "zh_CN", cat) == "0.812 -> 0.700（下降 0.1120）"
    assert i18n.translate("a and a", "zh_CN", cat) == "a 与 a"
    assert i18n.translate("a and b", "zh_CN", cat) == "a and b"          # a repeated field holds one text
    assert i18n.translate("RuntimeError: boom", "zh_CN", cat) == "RuntimeError: boom"   # unknown: unchanged
    with pytest.raises(ValueError, match="unclosed field"):
        i18n.template_fields("{what has no end")


def test_extraction_turns_fstrings_into_templates_with_their_expressions():
    src = ('check_true(not wrong, f"{len(wrong)} step(s) of your predictions are wrong", hint="one number per line.")\n'
           'fail(f"{name} raised {kind}{where}\\n  try next : look for a loop that never ends.")\n'
           'x = "not a message, not extracted"\n'
           'hint = "a hint kept in a variable."\n'
           'res.flags.append(f"cell {gid} was put back" + (" unanswered" if answer else ""))\n')
    found = {(m, t) for m, t, _ in tm.messages_in_source(src, "cell.py")}
    assert found == {("{len(wrong)} step(s) of your predictions are wrong", True), ("one number per line.", False),
                     ("{name} raised {kind}", True), ("look for a loop that never ends.", False),
                     ("a hint kept in a variable.", False), ("cell {gid} was put back unanswered", True),
                     ("cell {gid} was put back", True)}


# --------------------------------------------------------------------------- what students must not see

def test_the_student_catalogue_holds_no_hidden_checks_text(tmp_path):
    assert tm.hidden_leaks(STUDENT_PO) == []
    student, grader = tm.extract()
    hidden_only = next(m for m in grader if m not in student)
    assert hidden_only in {e.msgid for e in polib.pofile(str(GRADER_PO))}
    assert hidden_only not in STUDENT_PO.read_text(encoding="utf-8")
    # the attack: a hidden check's text copied into the package students install
    leaky = polib.pofile(str(STUDENT_PO))
    leaky.append(polib.POEntry(msgid=hidden_only, msgstr="泄露"))
    leaky.save(str(tmp_path / "autograder.po"))
    assert tm.hidden_leaks(tmp_path / "autograder.po") == [hidden_only]


# --------------------------------------------------------------------------- translations cannot go stale

def _course_copy(root: Path) -> Path:
    for rel in ["source", "notebooks", "instructor/hidden", "autograder/locale", "instructor/locale"]:
        shutil.copytree(REPO / rel, root / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in tm.STUDENT_MODULES + tm.GRADER_MODULES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    return root


def test_an_english_change_without_a_translation_fails_check(tmp_path, capsys):
    root = _course_copy(tmp_path)
    assert tm.main(["check", "--root", str(root)]) == 0
    nb_path = root / "source" / "01_version_counter" / "01_version_counter.ipynb"
    text = nb_path.read_text(encoding="utf-8")
    assert text.count("the message does not name the sigmoid") == 1
    nb_path.write_text(text.replace("the message does not name the sigmoid", "the message does not name sigmoid"), encoding="utf-8")
    capsys.readouterr()
    assert tm.main(["check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert ("source/01_version_counter/01_version_counter.ipynb#reproduce_sigmoid_error_tests: not in "
            "autograder/locale/zh_CN/LC_MESSAGES/autograder.po: 'the message does not name sigmoid'") in out, out
    # update keeps it for review: a new entry, fuzzy, with the old translation beside it; check still fails
    tm.main(["update", "--root", str(root)])
    entry = polib.pofile(str(tm.student_catalogue_path(root=root))).find("the message does not name sigmoid")
    assert entry is not None and "fuzzy" in entry.flags and entry.previous_msgid == "the message does not name the sigmoid"
    assert tm.main(["check", "--root", str(root)]) == 1
    assert "fuzzy (English changed, translation not reviewed)" in capsys.readouterr().out
    # a fuzzy entry is never shown: the message stays English until a translator reviews it
    assert i18n.translate("the message does not name sigmoid", "zh_CN",
                          i18n.load_catalogue(tm.student_catalogue_path(root=root))) == "the message does not name sigmoid"


def test_a_hidden_checks_change_fails_check_naming_its_file(tmp_path, capsys):
    root = _course_copy(tmp_path)
    path = root / "instructor" / "hidden" / "__init__.py"
    path.write_text(path.read_text(encoding="utf-8").replace("look for a loop that never ends.",
                                                             "look for a loop that does not end."), encoding="utf-8")
    assert tm.main(["check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"instructor/hidden/__init__\.py:\d+: not in instructor/locale/zh_CN\.po: "
                     r"'look for a loop that does not end\.'", out), out


# --------------------------------------------------------------------------- which language

def _notebook(path: Path, language=None) -> Path:
    meta = {"kernelspec": {"name": "python3"}}
    if language is not None:
        meta["course"] = {"language": language}
    path.write_text(json.dumps({"cells": [], "metadata": meta, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_the_language_comes_from_the_notebooks_metadata(tmp_path, monkeypatch, en):
    zh_nb = _notebook(tmp_path / "01_version_counter.zh_CN.ipynb", "zh_CN")
    en_nb = _notebook(tmp_path / "01_version_counter.ipynb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", zh_nb.name)       # relative to the kernel's folder, as Jupyter says it
    i18n.set_language(None)
    assert i18n.language() == "zh_CN"
    assert _raised(lambda: fail("it is not the in-place error")) == "这不是原地操作的报错"
    monkeypatch.setenv("JPY_SESSION_NAME", str(en_nb))
    i18n.set_language(None)
    assert i18n.language() == "en"
    monkeypatch.setenv("COURSE_LANG", "zh_CN")                # the setting wins over the metadata
    i18n.set_language(None)
    assert i18n.language() == "zh_CN"


@pytest.mark.parametrize("content", ["{not json", '{"metadata": {"course": "zh_CN"}}', '{"metadata": [1]}',
                                     '{"metadata": {"course": {"language": ["zh_CN"]}}}', "\udcff"])
def test_a_broken_notebook_means_english_never_an_error(tmp_path, monkeypatch, en, content):
    path = tmp_path / "broken.ipynb"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    i18n.set_language(None)
    assert i18n.language() == "en"


def test_no_notebook_and_no_setting_is_english(tmp_path, monkeypatch, en):
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "gone.ipynb"))
    assert i18n.language() == "en"
    with pytest.raises(ValueError, match="unknown course language 'fr'"):
        i18n.set_language("fr")


# --------------------------------------------------------------------------- check(), Validate, export

def test_check_report_validate_and_export_lines_in_chinese(zh, tmp_path):
    from autograder.check import CheckReport, QuestionResult
    from autograder.handin import HandinReport
    from autograder.validate_view import shown_source

    english = ("grad_fn_chain(t) has the wrong type\n  expected : list\n  got      : NoneType: None\n"
               "  try next : a leaf has grad_fn None: return an empty list.")
    q = QuestionResult("grad_fn_chain_tests", 2, 0.0, message=english)
    assert q.first_line == "grad_fn_chain(t) 的类型不对"
    assert q.next_steps == ["期望\u3000：list", "实际\u3000：NoneType: None", "下一步：叶子张量的 grad_fn 是 None：返回空列表。"]
    report = CheckReport(tmp_path / "00_orientation.ipynb", [q, QuestionResult("essay", 3, None, "manual")],
                         notes=["written answers are graded by hand, after you hand in: not counted here"])
    text = str(report)
    assert "00_orientation.ipynb：2 道评分题" in text and "可见测试：0 / 2  （另有 3 分人工评分）" in text
    assert "人工评分（3 分）" in text and "注意：文字回答在你提交之后人工评分：不计入这里" in text
    assert "<th style='text-align:left'>题目</th>" in report._repr_html_()
    nb = {"cells": [{"cell_type": "code", "source": "assert True",
                     "metadata": {"nbgrader": {"grade_id": "decode_tests", "grade": True, "solution": False}}}]}
    assert shown_source("assert True", nb) == "# decode 的测试（代码在笔记本里，在你的答案下面）"
    handin = str(HandinReport(tmp_path / "a-handin.zip", tmp_path / "a.ipynb", "00_orientation.ipynb", True, ["decode"]))
    assert handin.splitlines()[0] == f"已写好提交文件：{tmp_path / 'a-handin.zip'}"
    assert handin.splitlines()[2] == "  还没完成（1）：decode——可以提交部分完成的作业，也可以改好后再导出一次"


def test_check_report_stays_english_in_the_english_edition(en, tmp_path):
    from autograder.check import CheckReport, QuestionResult

    q = QuestionResult("t", 1, 0.0, message="x has the wrong type\n  try next : return a list.")
    text = str(CheckReport(tmp_path / "a.ipynb", [q]))
    assert "a.ipynb: 1 graded question(s)" in text and "try next : return a list." in text
    assert not HAN.search(text)


# --------------------------------------------------------------------------- the grader's side

def _release(folder: Path, language=None) -> Path:
    folder.mkdir(parents=True)
    _notebook(folder / "01_version_counter.ipynb", language)
    return folder


def test_the_grader_judges_in_english_and_writes_chinese_verdicts_for_a_chinese_release(tmp_path, zh):
    from instructor.engine.i18n import release_language, shown_verdicts

    with i18n.speaking("en"):   # how confirm judges, whatever COURSE_LANG says
        english = _raised(lambda: fail("the tensor is not detector-shaped", expected="(2, 3, 8, 8, 7)",
                                       got="(2, 3)", hint="make p of shape (2, 3, 8, 8, 7), as the task says."))
    assert i18n.language() == "zh_CN" and not HAN.search(english)
    hidden = ("fixed_sigmoid_decode is not implemented yet\n  for input: p float32 (1, 3, 4, 5, 7)\n"
              "  try next : replace `raise NotImplementedError` in the cell that defines fixed_sigmoid_decode, run it.")
    verdicts = {"a": {"passed": False, "message": english, "cases": 1}, "b": {"passed": False, "message": hidden},
                "c": {"passed": True, "message": ""}}
    zh_release, en_release = _release(tmp_path / "zh" / "a01", "zh_CN"), _release(tmp_path / "en" / "a01")
    assert release_language(zh_release) == "zh_CN" and release_language(en_release) is None
    assert shown_verdicts(verdicts, en_release) == verdicts
    shown = shown_verdicts(verdicts, zh_release)
    assert shown["a"]["message"].splitlines() == [
        "这个张量不是检测器输出的形状", "  期望\u3000：(2, 3, 8, 8, 7)", "  实际\u3000：(2, 3)",
        "  下一步：按题目要求，p 的形状是 (2, 3, 8, 8, 7)。"]
    assert shown["b"]["message"].splitlines() == [
        "fixed_sigmoid_decode 还没有实现", "  输入\u3000：p float32 (1, 3, 4, 5, 7)",
        "  下一步：把定义 fixed_sigmoid_decode 的单元格里的 `raise NotImplementedError` 换成你的代码，然后运行它。"]
    assert shown["c"] == verdicts["c"] and shown["a"]["cases"] == 1
    assert verdicts["a"]["message"] == english   # the gradebook's (and the report's) verdicts stay English
    # the grader's texts never reach the student package: the student catalogue alone leaves them English
    assert i18n.translate_message(hidden, "zh_CN").splitlines()[-1] == (
        "  下一步：replace `raise NotImplementedError` in the cell that defines fixed_sigmoid_decode, run it.")


def _feedback_course(root: Path, language) -> tuple[object, Path]:
    from types import SimpleNamespace

    _release(root / "release" / "01_version_counter", language)
    page = root / "feedback" / "ada" / "01_version_counter" / "01_version_counter.html"
    page.parent.mkdir(parents=True)
    page.write_text('<html><head></head><body><a href="#decode_tests">Test cell</a></body></html>', encoding="utf-8")
    res = SimpleNamespace(flags=["locked cell 'decode_tests' was edited: restored"],
                          integrity=["decode_tests: the check outside the kernel passed but the notebook's own tests "
                                     "gave 0; kept 0"],
                          feedback=[page], assignment="01_version_counter", student="ada", questions=[])
    return res, page


def test_the_feedback_pages_notes_in_the_releases_language(tmp_path):
    from instructor.engine.feedback import annotate_feedback

    res, page = _feedback_course(tmp_path / "zh", "zh_CN")
    annotate_feedback(res)
    text = page.read_text(encoding="utf-8")
    assert "<b>评分程序的说明</b>" in text and "<li>锁定的单元格 &#x27;decode_tests&#x27; 被修改了：已恢复</li>" in text, text
    assert "decode_tests：内核之外的检查通过了，但笔记本自己的测试给了 0 分；保留 0 分" in text
    assert '<a href="#decode_tests">题目 <span class="course-question">' in text
    assert res.flags == ["locked cell 'decode_tests' was edited: restored"]   # the results keep English
    res, page = _feedback_course(tmp_path / "en", None)
    annotate_feedback(res)
    text = page.read_text(encoding="utf-8")
    assert "<b>Notes from the grader</b>" in text and "was edited: restored</li>" in text
    assert '<a href="#decode_tests">question <span' in text and not HAN.search(text)


def test_pending_hand_grading_in_chinese(tmp_path):
    from instructor.engine.feedback import mark_pending

    page = ('<h4>01_version_counter (Score: 15.0 / 18.0)</h4><ul><li><a href="#essay">Written answer</a> '
            '(Score: 0.0 / 3.0)</li></ul><a name="essay"></a><div class="panel-heading"><span class="nbgrader-label">'
            'Written answer</span> <span class="pull-right">Score: 0.0 / 3.0</span>')
    zh_page = mark_pending(page, {"essay": 3.0}, lang="zh_CN")
    assert "<h4>01_version_counter (Score: 15 / 15 已自动评分，3 分待人工评分)</h4>" in zh_page, zh_page
    assert "Written answer</a> （待人工评分，3 分）</li>" in zh_page and "待人工评分（3 分）" in zh_page
    en_page = mark_pending(page, {"essay": 3.0})
    assert "(Score: 15 / 15 autograded, 3 points pending hand grading)</h4>" in en_page
    assert "(pending hand grading, 3 points)</li>" in en_page and not HAN.search(en_page)


def _small_class():
    from instructor.engine.pipeline import QuestionScore, Result

    wrong = ("attack exceeds the budget eps\n  expected : |delta| <= 0.03\n"
             "  try next : clamp delta to [-eps, eps] after each step.")
    out = []
    for i, passed in enumerate([False, False, True]):
        verdicts = {"attack_tests": {"passed": passed, "cases": 1, "message": "" if passed else wrong}}
        out.append(Result(f"s{i}", "03_yolo_head", True, [QuestionScore("attack_tests", 2.0 if passed else 0.0, 2.0, "auto")],
                          seconds=1.0, verdicts=verdicts, flags=["locked cell 'attack_tests' was edited: restored"] if i == 0 else []))
    return out


def test_the_class_report_in_the_classs_language(zh):
    from instructor.classroom.report import build_html

    page = build_html(_small_class(), source="grading of 3 submissions", generated="2026-12-05 12:00")
    assert '<html lang="zh-CN">' in page and "<h1>班级报告</h1>" in page and "<h2>需要重讲的内容</h2>" in page
    assert "作答的 3 份提交中有 2 份答错" in page and "共失 4 分（每份 2 分）" in page
    assert "attack 超出了预算 eps" in page                        # the cause: the verdict's first line
    assert "学生收到的提示： 每一步之后把 delta 截断到 [-eps, eps]。" in page   # the hint the students read
    assert "锁定的单元格 &#x27;attack_tests&#x27; 被修改了：已恢复" in page and ">标记</span>" in page
    assert 'data-cause="attack exceeds the budget eps"' in page   # the page's data stays English (tests, tools)
    with i18n.speaking("en"):
        english = build_html(_small_class(), source="grading of 3 submissions", generated="2026-12-05 12:00")
    assert "<h1>Class report</h1>" in english and "hint the students got: clamp delta" in english
    assert not HAN.search(english)


def test_a_short_template_never_takes_a_pytorch_line():
    """A template with few words of its own ("{a} of {b}") must not rewrite PyTorch's text in a message."""
    cat = i18n.Catalogue()
    cat.add("{a} of {b}", "{b} 中的 {a}", template=True)
    cat.add("{what} has wrong values", "{what} 的值不对", template=True)
    message = ("decode(p) has wrong values\n  detail   : one of the variables needed for gradient computation\n"
               "  Mismatched elements: 3 of 5")
    assert i18n.translate_message(message, "zh_CN", cat).splitlines() == [
        "decode(p) 的值不对", "  详情\u3000：one of the variables needed for gradient computation",
        "  Mismatched elements: 3 of 5"]
    assert i18n.translate("3 of 5", "zh_CN", cat) == "5 中的 3"   # asked for by the course's own code: it is
    assert i18n.translate("3 of 5 has wrong values", "zh_CN", cat) == "3 of 5 的值不对"   # nor a field's text


def test_validate_speaks_the_notebooks_language_whatever_the_server_speaks(en):
    from autograder.validate_view import reshape

    nb = {"metadata": {"course": {"language": "zh_CN"}},
          "cells": [{"cell_type": "code", "source": "check_true(False, 'x')",
                     "metadata": {"nbgrader": {"grade_id": "decode_tests", "grade": True, "solution": False}}}]}
    raw = "CheckFailed: decode(p) has the wrong shape\n  expected : (1, 3)\n  got      : (1, 2)"
    result = {"failed": [{"source": "check_true(False, 'x')", "error": raw, "raw_error": raw}]}
    [entry] = reshape(json.loads(json.dumps(result)), nb)["failed"]
    assert entry["source"] == "# decode 的测试（代码在笔记本里，在你的答案下面）"
    assert entry["raw_error"].splitlines() == ["CheckFailed: decode(p) 的形状不对", "  期望\u3000：(1, 3)",
                                               "  实际\u3000：(1, 2)"]
    assert "decode(p) 的形状不对" in entry["error"]
    nb["metadata"] = {}
    [entry] = reshape(json.loads(json.dumps(result)), nb)["failed"]
    assert entry["raw_error"] == raw and entry["source"].startswith("# the test of decode ")
    assert i18n.language() == "en"


def test_selfgrades_last_line_in_the_notebooks_language():
    from types import SimpleNamespace

    from instructor.classroom.cli import _selfgrade_sentence

    res = SimpleNamespace(auto_score=2.0, auto_max=8.0, manual_pending=3.0)
    assert _selfgrade_sentence(res, "zh_CN") == (
        "目前你拿到了自动评分 8 分中的 2 分；下一步试什么，看上面的表格（每道没通过的题目，信息最后都有一行“下一步”），"
        "改好后再评一次。你的文字回答（3 分）在提交之后人工评分。")
    assert _selfgrade_sentence(res).startswith("You have 2 of 8 autograded points so far;")


def test_a_version_prediction_test_reads_chinese_step_by_step(zh):
    from autograder.saved_tensors import VERSION_PROGRAM

    source = _test_cell("01_version_counter", "predict_versions_tests")
    ns = {"predict_versions": lambda: [0] * len(VERSION_PROGRAM)}
    exec("from autograder.saved_tensors import VERSION_PROGRAM, measure_version_program, wrong_steps", ns)
    lines = _run_cell(source, ns).splitlines()
    step = r"第 \d+ 行：你预测 ([+-]\d+（到 0）；实际计数器变化 [+-]\d+|0；实际是 \d+)"
    assert re.fullmatch(r"你的预测有 \d+ 步不对", lines[0]), lines
    assert re.fullmatch("  实际\u3000：" + step, lines[1]), lines
    assert lines[2].startswith("  下一步：对这些行逐一问自己："), lines
    assert all(re.fullmatch("  " + step, line) or line.startswith("  （还有 ") for line in lines[3:]), lines


def test_a_hidden_check_run_in_a_chinese_source_notebook_reads_chinese(zh):
    """An instructor running the Chinese source notebook: confirmed() judges in this process and shows the
    verdict with the grader's catalogue too (the student catalogue alone leaves the hidden texts English)."""
    import torch

    from autograder.verdicts import HiddenTestFailed

    ns = {"environment_report": lambda: {"torch": torch.__version__, "device": 1, "cuda": torch.cuda.is_available()}}
    with pytest.raises(HiddenTestFailed) as err:
        exec("from autograder.verdicts import confirmed\nconfirmed('environment_report_tests')", ns)
    lines = str(err.value).splitlines()
    assert lines[0] == "report['device'] 不是字符串" and lines[1] == "  输入\u3000：environment_report()", lines
    assert lines[-1] == "  下一步：一个字符串：course_device().type 给出 'cuda' 或 'cpu'。"


def test_the_language_from_ipythons_session_and_from_colab(tmp_path, monkeypatch, en):
    import sys
    import types

    import IPython

    zh_nb = _notebook(tmp_path / "a.ipynb", "zh_CN")
    shell = types.SimpleNamespace(user_ns={"__session__": str(zh_nb)})   # what IPython sets in a notebook
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert i18n.language() == "zh_CN"
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    # Colab: no file; the notebook comes from Colab's frontend (a fake of its private API here)
    calls = []

    def blocking_request(kind, timeout_sec=None):
        calls.append(kind)
        return {"ipynb": {"metadata": {"course": {"language": "zh_CN"}}, "cells": []}}

    google, colab, message = (types.ModuleType(n) for n in ("google", "google.colab", "google.colab._message"))
    message.blocking_request = blocking_request
    colab._message, google.colab = message, colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    i18n.set_language(None)
    assert i18n.language() == "zh_CN" and calls == ["get_ipynb"]

    def broken(kind, timeout_sec=None):
        raise TimeoutError("the frontend did not answer")

    message.blocking_request = broken
    i18n.set_language(None)
    assert i18n.language() == "en"   # never an error: English


def test_nbgraders_template_words_on_a_chinese_feedback_page():
    from instructor.engine.feedback import localize_template

    page = ('<h4>00_orientation (Score: 2.0 / 8.0)</h4><li><a href="#essay">Written response</a> (Score: 0.0 / 3.0)</li>'
            '<span class="nbgrader-label">Grade cell: <code>decode_tests</code></span>\n<span class="pull-right">\n'
            '      Score: 0.0 / 2.0 <a href="#top">(Top)</a></span><span class="nbgrader-label">Student\'s answer</span>'
            '<pre>my own output: Score: 3</pre>')
    shown = localize_template(page, "zh_CN")
    assert "<h4>00_orientation (得分：2.0 / 8.0)</h4>" in shown and '<a href="#essay">文字回答</a> (得分：0.0 / 3.0)' in shown
    assert '<span class="nbgrader-label">评分单元格：<code>decode_tests</code>' in shown
    assert "得分：0.0 / 2.0 <a href=\"#top\">（回到顶部）</a>" in shown and ">你的答案</span>" in shown
    assert "<pre>my own output: Score: 3</pre>" in shown   # a student's text is not the template's
    assert localize_template(page, None) == page
