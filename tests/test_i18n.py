"""The Chinese edition (issue #39): generated from the English notebooks and ``i18n/zh_CN/*.po``, never stale,
the same course where it must be, every text translated, within its length budget.

Each check is a function returning the problems it finds. The tests run it on the repository's committed
edition (``zh_CN/``: must be clean) and on an edition built in a temporary folder from *fake* catalogues
(every markdown text "中文 " + its English, every comment and string kept): clean too, and with a planted
defect the check must name it — so no check passes by finding nothing to look at.
"""
from __future__ import annotations

import filecmp
import json
import re
import shutil
from pathlib import Path

import nbformat
import polib
import pytest

from instructor import edition, translate
from instructor.hidden import STUB_MESSAGE_ZH_CN, is_stub_message
from instructor.layout import REPO, assignments, edition_root, is_test_cell, nbgrader_meta, notebook_language

LANG = "zh_CN"
ZH = REPO / LANG
BUILD_HINT = "run `python -m autograder release --lang zh_CN` (COURSE_LANG=zh_CN make release) and commit zh_CN/"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
README_BUDGET = re.compile(r"不超过 \*\*([\d,]+) 个汉字\*\*")


# --------------------------------------------------------------------------- a fake edition, built for real

def _copy_course(dest: Path) -> Path:
    """What building an edition reads: the English notebooks, the catalogues, the setting, zh_CN's config."""
    for d in ("source", "notebooks", "i18n"):
        shutil.copytree(REPO / d, dest / d, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    shutil.copy2(REPO / "pyproject.toml", dest / "pyproject.toml")
    (dest / LANG).mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / LANG / "nbgrader_config.py", dest / LANG / "nbgrader_config.py")
    return dest


def _fake_catalogues(root: Path) -> None:
    """Every entry reviewed: markdown "中文 " + the English, comments and strings kept as they are."""
    for path in translate.english_notebooks(root):
        translate.update(LANG, root, [path])
        po_path = translate.catalogue_path(path, LANG, root)
        po = polib.pofile(str(po_path), wrapwidth=0)
        for e in po:
            e.msgstr = ("中文 " + e.msgid) if e.comment == translate.KIND_NOTE["markdown"] else e.msgid
            e.flags = [f for f in e.flags if f != "fuzzy"]
        po.save()


@pytest.fixture(scope="module")
def fake(tmp_path_factory) -> Path:
    """A repository copy whose edition zh_CN/ was built and released from fake catalogues (seconds)."""
    root = _copy_course(tmp_path_factory.mktemp("edition"))
    _fake_catalogues(root)
    edition.release_edition(LANG, root=root)
    return root


def _committed() -> Path:
    missing = [p for p in (ZH / "source", ZH / "release", ZH / "notebooks") if not p.is_dir()]
    assert not missing, f"the Chinese edition is not in the repository ({', '.join(map(str, missing))}): {BUILD_HINT}"
    return REPO


# --------------------------------------------------------------------------- (a) sync: a changed English text

def test_a_changed_english_text_fails_the_check_and_the_build_names_it(fake, tmp_path):
    root = _copy_course(tmp_path)
    shutil.copytree(fake / "i18n", root / "i18n", dirs_exist_ok=True)
    assert translate.check(LANG, root) == [], "control: the fake catalogues translate every unit"
    path = root / "source" / "00_orientation" / "00_orientation.ipynb"
    nb = json.loads(path.read_text())
    us = translate.units(nb)
    para = next(u for u in us if u.kind == "markdown" and len(u.text.split()) > 8)
    comment = next(u for u in us if u.kind == "comment")
    for u, new in sorted([(para, para.text + " This sentence is new."), (comment, comment.text + " and more")],
                         key=lambda x: (x[0].cell, x[0].start), reverse=True):
        src = "".join(nb["cells"][u.cell]["source"])
        assert src[u.start:u.end] == u.text
        nb["cells"][u.cell]["source"] = (src[:u.start] + new + src[u.end:]).splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")

    problems = "\n".join(translate.check(LANG, root))
    for text in ("This sentence is new.", comment.text + " and more"):
        assert text[:60] in problems or text[-60:] in problems, problems
    assert problems.count("source/00_orientation/00_orientation.ipynb") == 2, problems
    assert "01_version_counter" not in problems, "only the changed notebook is named"

    (root / LANG / "source").mkdir(parents=True, exist_ok=True)
    with pytest.raises(translate.Untranslated) as err:
        edition.build_edition(LANG, root)
    assert "This sentence is new." in str(err.value) and "00_orientation.ipynb" in str(err.value)
    assert not list((root / LANG / "source").rglob("*.ipynb")), "a refused build wrote notebooks (a fallback)"
    # the command `python -m autograder release --lang zh_CN` runs first, on this copy
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "instructor.edition", "build", "--lang", LANG, "--root", str(root)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "This sentence is new." in out.stderr and "00_orientation.ipynb" in out.stderr, \
        out.stdout + out.stderr
    assert not list((root / LANG / "source").rglob("*.ipynb"))


# --------------------------------------------------------------------------- (b) the glossary

def glossary() -> list[tuple[str, str, list[str]]]:
    """(english, chinese, forbidden variants) from i18n/glossary.tsv; a malformed line is an error naming it."""
    rows = []
    path = REPO / "i18n" / "glossary.tsv"
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        assert len(cols) in (2, 3) and cols[0].strip() and cols[1].strip(), \
            f"{path}:{n}: expected english<TAB>chinese[<TAB>forbidden,...], got {line!r}"
        rows.append((cols[0].strip(), cols[1].strip(),
                     [v.strip() for v in (cols[2] if len(cols) == 3 else "").split(",") if v.strip()]))
    return rows


_CODE_SPAN = re.compile(r"``.+?``|`[^`\n]+`|\]\([^)\s]*\)|https?://\S+|\$[^$\n]+\$|<[^>\n]+>")


def _english_term(term: str) -> re.Pattern:
    """The term as a word (its plural too), case-insensitive."""
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(term) + r"(?:s|es)?(?![A-Za-z0-9_])", re.I)


def glossary_problems(po: polib.POFile, name: str, terms=None) -> list[str]:
    """Entries that use a forbidden variant, or say an English term (outside code) without the course's
    Chinese term and without keeping the English word."""
    out = []
    for e in po:
        if e.obsolete or not e.msgstr:
            continue
        prose = _CODE_SPAN.sub(" ", e.msgid)
        said = _CODE_SPAN.sub(" ", e.msgstr)
        for en, zh, forbidden in terms or glossary():
            bad = [v for v in forbidden if v in e.msgstr]
            if bad:
                out.append(f"{name}: {e.msgid[:70]!r}: uses {', '.join(bad)} (the glossary says {zh} for {en!r})")
            if _english_term(en).search(prose) and zh not in e.msgstr and not _english_term(en).search(said):
                out.append(f"{name}: {e.msgid[:70]!r}: says {en!r} but its translation has neither {zh} nor {en!r}")
    return out


def test_the_glossary_is_well_formed_and_names_the_course_terms():
    terms = {en: (zh, bad) for en, zh, bad in glossary()}
    for en in ("in-place operation", "version counter", "computational graph", "leaf tensor", "backpropagation"):
        assert en in terms, f"i18n/glossary.tsv lacks {en!r}"
    for en, (zh, bad) in terms.items():
        assert HAN.search(zh), f"glossary: {en!r} -> {zh!r} is not Chinese"
        assert zh not in bad, f"glossary: {en!r}: {zh} is both the term and a forbidden variant"


def test_every_translation_follows_the_glossary():
    problems = []
    for po_path in sorted((REPO / "i18n" / LANG).glob("*.po")):
        problems += glossary_problems(translate.load_catalogue(po_path), po_path.name)
    assert not problems, f"{len(problems)} entries break i18n/glossary.tsv:\n" + "\n".join(problems[:60])


def test_the_glossary_check_fails_on_planted_bad_entries():
    po = polib.POFile()
    po.append(polib.POEntry(msgid="The version counter of a leaf tensor.", msgstr="叶子张量的版本计数器。"))
    po.append(polib.POEntry(msgid="Keep `tensor.grad` and the gradient.", msgstr="保留 `tensor.grad` 和 gradient。"))
    po.append(polib.POEntry(msgid="An in-place operation bumps it.", msgstr="就地操作会让它加一。"))
    po.append(polib.POEntry(msgid="Walk the computational graph.", msgstr="沿着运算图走。"))
    po.append(polib.POEntry(msgid="`x.view(2, 3)` shares storage.", msgstr="`x.view(2, 3)` 共享存储。"))
    problems = glossary_problems(po, "planted.po")
    assert not [p for p in problems if "leaf tensor" in p or "gradient" in p or "view" in p], problems
    assert any("就地操作" in p for p in problems), problems        # a forbidden variant
    assert any("'computational graph'" in p and "neither" in p for p in problems), problems   # the term missing
    assert any("运算图" in p for p in problems), problems


# --------------------------------------------------------------------------- (c) the same course where it must be

def _skeleton(src: str) -> str:
    """A code cell without what a reader reads: each comment's text and each display string (print's
    arguments, docstrings, labels: what :func:`instructor.translate.same_program` blanks) replaced by a
    marker; every other character kept."""
    import ast
    import io
    import tokenize

    parsed = translate._python_for_parsing(src)
    starts = translate._offsets(parsed)
    spans = []
    for tok in tokenize.generate_tokens(io.StringIO(parsed).readline):
        if tok.type == tokenize.COMMENT:
            a = starts[tok.start[0] - 1] + tok.start[1]
            spans.append((a, a + len(tok.string), "#"))
    for s in translate._display_strings(ast.parse(parsed), parsed):   # what translate.same_program blanks
        a = starts[s.lineno - 1] + translate._col(parsed, starts, s.lineno, s.col_offset)
        b = starts[s.end_lineno - 1] + translate._col(parsed, starts, s.end_lineno, s.end_col_offset)
        spans.append((a, b, "''"))
    for a, b, mark in sorted(spans, reverse=True):
        src = src[:a] + mark + src[b:]
    return src


def _stubs() -> tuple[str, str]:
    """nbgrader's code stub in the English release and in the Chinese one (their configurations)."""
    from instructor.layout import load_config

    return load_config(REPO).ClearSolutions.code_stub["python"], load_config(ZH).ClearSolutions.code_stub["python"]


_NBGRADER_KEYS = ("grade_id", "points", "grade", "solution", "locked", "task", "schema_version")


def edition_differences(english: Path, translated: Path) -> list[str]:
    """How the edition's notebooks differ from the English ones where they must not: cells (count, order,
    type, id), nbgrader metadata, the program of every code cell, graded test cells outside their comments."""
    out = []
    pairs = []
    english_stub, chinese_stub = _stubs()
    for a in assignments(english):
        for kind in ("source", "release"):
            pairs.append((english / kind / a / f"{a}.ipynb", translated / kind / a / f"{a}.ipynb"))
    pairs += [(p, translated / "notebooks" / p.name) for p in sorted((english / "notebooks").glob("*.ipynb"))]
    for en_path, zh_path in pairs:
        where = zh_path.relative_to(translated.parent)
        if not zh_path.is_file():
            out.append(f"{where}: missing")
            continue
        en, zh = nbformat.read(en_path, as_version=4), nbformat.read(zh_path, as_version=4)
        shape = lambda nb: [(c.cell_type, c.get("id")) for c in nb.cells]  # noqa: E731
        if shape(en) != shape(zh):
            out.append(f"{where}: its cells (type, id, order) are not the English notebook's")
            continue
        if notebook_language(zh) != LANG:
            out.append(f"{where}: metadata.course.language is not {LANG}")
        for n, (ce, cz) in enumerate(zip(en.cells, zh.cells)):
            me, mz = nbgrader_meta(ce), nbgrader_meta(cz)
            if {k: me.get(k) for k in _NBGRADER_KEYS} != {k: mz.get(k) for k in _NBGRADER_KEYS}:
                out.append(f"{where}: cell {n} ({me.get('grade_id') or ce.get('id')}): nbgrader metadata differs: "
                           f"{ {k: me.get(k) for k in _NBGRADER_KEYS} } vs { {k: mz.get(k) for k in _NBGRADER_KEYS} }")
            if ce.cell_type != "code":
                continue
            zh_source = cz.source
            if mz.get("solution"):   # the release's stub, indented as nbgrader indents it, is the edition's own
                for en_line, zh_line in zip(english_stub.splitlines(), chinese_stub.splitlines()):
                    zh_source = zh_source.replace(zh_line, en_line)
            try:
                translate.same_program(ce.source, zh_source, f"{where}: cell {n}")
            except translate.BadTranslation as err:
                out.append(str(err))
                continue
            if is_test_cell(ce) and _skeleton(ce.source) != _skeleton(cz.source):
                out.append(f"{where}: test cell {me.get('grade_id')}: differs from the English outside its comments")
    return out


def test_the_chinese_edition_is_the_same_course():
    root = _committed()
    problems = edition_differences(root, root / LANG)
    assert not problems, "\n".join(problems[:40])


def test_the_sameness_check_passes_a_faithful_build_and_names_each_planted_difference(fake, tmp_path):
    assert edition_differences(REPO, fake / LANG) == [], "control: a build from fake catalogues is the same course"
    bad = tmp_path / LANG
    shutil.copytree(fake / LANG, bad)
    rel = bad / "release" / "01_version_counter" / "01_version_counter.ipynb"
    nb = nbformat.read(rel, as_version=4)
    tests = [c for c in nb.cells if is_test_cell(c)]
    tests[0].source = tests[0].source.replace("(", "( ", 1)          # the same program, not the same bytes
    code = next(c for c in nb.cells if c.cell_type == "code" and not is_test_cell(c))
    code.source += "\nplanted = 1"                                         # the program changed
    tests[1].metadata["nbgrader"]["points"] = 99                           # points changed
    nbformat.write(nb, rel)
    src = bad / "source" / "02_names_and_storage" / "02_names_and_storage.ipynb"
    nb2 = nbformat.read(src, as_version=4)
    nb2.cells.insert(1, nbformat.v4.new_markdown_cell("多出来的一段。"))   # an extra cell
    nbformat.write(nb2, src)
    problems = "\n".join(edition_differences(REPO, bad))
    assert f"test cell {nbgrader_meta(tests[0])['grade_id']}: differs" in problems, problems
    assert "points" in problems and "99" in problems, problems
    assert "changed the code itself" in problems, problems
    assert "02_names_and_storage.ipynb: its cells" in problems, problems


# --------------------------------------------------------------------------- (d) never stale

def _tree_differences(expected: Path, got: Path) -> list[str]:
    cmp = filecmp.dircmp(expected, got, ignore=[".ipynb_checkpoints", "__pycache__"])

    def walk(d, prefix=""):
        found = [f"{prefix}{f}" for f in d.diff_files + d.left_only + d.right_only]
        for name, sub in d.subdirs.items():
            found += walk(sub, f"{prefix}{name}/")
        return found
    return walk(cmp)


def stale_edition(committed_root: Path, tmp: Path) -> list[str]:
    """What differs between the edition committed under ``committed_root/zh_CN`` and a fresh build of it
    (translate build, Colab lines, nbgrader release) from ``committed_root``'s English notebooks and catalogues."""
    root = _copy_course(tmp)
    shutil.rmtree(root / "i18n")
    shutil.copytree(committed_root / "i18n", root / "i18n")
    for d in ("source", "notebooks"):
        shutil.rmtree(root / d)
        shutil.copytree(committed_root / d, root / d, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    edition.release_edition(LANG, root=root)
    out = []
    for d in ("source", "notebooks", "release"):
        if not (committed_root / LANG / d).is_dir():
            out.append(f"{LANG}/{d}/: missing")
            continue
        out += [f"{LANG}/{d}/{p}" for p in _tree_differences(committed_root / LANG / d, root / LANG / d)]
    return out


def test_the_committed_chinese_edition_is_what_the_catalogues_build(tmp_path):
    changed = stale_edition(_committed(), tmp_path)
    assert not changed, f"zh_CN/ differs from what the English notebooks and i18n/zh_CN build: {changed}; {BUILD_HINT}"


def test_the_stale_check_names_an_edited_edition(fake, tmp_path):
    assert stale_edition(fake, tmp_path / "again") == [], "control: the build is deterministic"
    lesson = fake / LANG / "notebooks" / "02_autograd_graph.ipynb"
    original = lesson.read_bytes()
    try:
        lesson.write_text(lesson.read_text().replace("中文 ", "中文（手改）", 1))
        assert stale_edition(fake, tmp_path / "edited") == [f"{LANG}/notebooks/02_autograd_graph.ipynb"]
    finally:
        lesson.write_bytes(original)


# --------------------------------------------------------------------------- (e) the length budget

def markdown_han(nb: dict) -> int:
    """Chinese characters (Han) in the markdown cells: what a student reads."""
    return sum(len(HAN.findall("".join(c["source"]))) for c in nb["cells"] if c["cell_type"] == "markdown")


def edition_length(root: Path) -> dict[str, int]:
    return {a: markdown_han(json.loads((root / LANG / "release" / a / f"{a}.ipynb").read_text(encoding="utf-8")))
            for a in assignments(root)}


def readme_budget() -> int:
    found = README_BUDGET.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md's 中文版 section must state the budget once: 不超过 **N 个汉字**"
    return int(found[0].replace(",", ""))


def test_the_chinese_course_stays_within_its_stated_character_budget():
    counts = edition_length(_committed())
    total, budget = sum(counts.values()), readme_budget()
    assert total <= budget, (f"zh_CN/release/ markdown has {total:,} Chinese characters, over the budget of "
                             f"{budget:,} stated in README.md: {counts}. Say it shorter (short sentences).")
    assert total >= 0.8 * budget, (f"zh_CN/release/ has {total:,} Chinese characters, far under the stated budget "
                                   f"{budget:,}: measure again and state the budget (about the count + 3%)")


def test_the_character_counter_counts_chinese_in_markdown_only():
    nb = {"cells": [{"cell_type": "markdown", "source": ["版本计数器 counts `x.add_(1)`，", "是 5 个字"]},
                    {"cell_type": "code", "source": ["x = 1  # 代码里的注释不算"]}]}
    assert markdown_han(nb) == 8   # 版本计数器 是 个字: punctuation, digits, code and comments are not counted


# --------------------------------------------------------------------------- (f) no untranslated prose

_FENCE = re.compile(r"^\s*(```|~~~)")
_PYTORCH_MESSAGE = re.compile(r"^[>*_\s]*(?:\w+\.)*\w*(?:Error|Exception|Warning)\b:?")
_NOT_PROSE = re.compile(r"``.+?``|`[^`\n]+`|\]\([^)\s]*\)|https?://\S+|\$\$.*?\$\$|\$[^$\n]+\$|<[^>\n]*>", re.S)


def untranslated_blocks(nb: dict, where: str) -> list[str]:
    """Markdown blocks (split at blank lines, code fences left out) that are English prose: six English
    words or more and no Chinese, outside inline code, links' targets, math and HTML tags — except a
    block that quotes one of PyTorch's messages (``RuntimeError: ...``), kept verbatim on purpose."""
    out = []
    for n, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        blocks, block, fenced = [], [], False
        for line in "".join(cell["source"]).split("\n"):
            if _FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            if line.strip():
                block.append(line)
            elif block:
                blocks.append("\n".join(block))
                block = []
        if block:
            blocks.append("\n".join(block))
        for text in blocks:
            prose = _NOT_PROSE.sub(" ", text)
            words = re.findall(r"[A-Za-z][A-Za-z'’-]+", prose)
            if len(words) >= 6 and not CJK.search(prose) and not _PYTORCH_MESSAGE.match(prose):
                out.append(f"{where}: cell {n}: {text[:100]!r}")
    return out


def edition_notebooks(root: Path) -> list[Path]:
    return sorted((root / LANG).glob("source/*/*.ipynb")) + sorted((root / LANG).glob("release/*/*.ipynb")) \
        + sorted((root / LANG).glob("notebooks/*.ipynb"))


def test_no_english_prose_is_left_in_the_chinese_edition():
    root = _committed()
    paths = edition_notebooks(root)
    assert len(paths) == 2 * len(assignments(root)) + len(list((root / "notebooks").glob("*.ipynb"))), paths
    problems = [p for path in paths
                for p in untranslated_blocks(json.loads(path.read_text(encoding="utf-8")), str(path.relative_to(root)))]
    assert not problems, f"{len(problems)} markdown blocks are English prose:\n" + "\n".join(problems[:40])


def test_the_prose_check_names_an_english_paragraph_and_lets_pytorch_messages_be(fake):
    paths = edition_notebooks(fake)
    assert paths and all(untranslated_blocks(json.loads(p.read_text()), p.name) == [] for p in paths), \
        "control: every block of the fake build has Chinese"
    nb = json.loads(paths[0].read_text())
    nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": [
        "中文的一段。\n", "\n",
        "This paragraph was left in English by mistake, nobody translated it.\n", "\n",
        "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation\n",
        "\n", "```\n", "a fenced block of program output is not prose at all\n", "```\n", "\n",
        "`x.add_(1)` `y.mul_(2)` [link](https://example.org/a/b/c/d/e/f)\n"]})
    problems = untranslated_blocks(nb, "planted")
    assert len(problems) == 1 and "left in English by mistake" in problems[0], problems


# --------------------------------------------------------------------------- the edition's configuration and stub

def test_the_chinese_stub_fails_loudly_and_reads_as_the_stub():
    from instructor.layout import load_config

    config = load_config(ZH)
    stub = config.ClearSolutions.code_stub["python"]
    assert stub.startswith("# 在这里写你的代码\nraise NotImplementedError(") and STUB_MESSAGE_ZH_CN in stub
    message = re.search(r'NotImplementedError\("(.*)"\)', stub).group(1)
    assert is_stub_message(message)
    # the message with a PyTorch-like tail is still the stub; PyTorch's own is not
    assert is_stub_message(message + " (aten::add not implemented for 'Half')")
    assert not is_stub_message("\"addmm_impl_cpu_\" not implemented for 'Half'")
    # everything else is the course's own configuration
    english = load_config(REPO)
    for section, key in (("Sandbox", "memory_gb"), ("Execute", "timeout"), ("HTMLExporter", "preprocessors"),
                         ("Exchange", "root"), ("CourseDirectory", "course_id")):
        assert config[section][key] == english[section][key], (section, key)
    assert english.ClearSolutions.code_stub != config.ClearSolutions.code_stub


def test_the_release_carries_the_chinese_stub_and_the_language(fake):
    for a in assignments(fake):
        nb = nbformat.read(fake / LANG / "release" / a / f"{a}.ipynb", as_version=4)
        answers = [c for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"]
        assert answers and all("# 在这里写你的代码" in c.source and STUB_MESSAGE_ZH_CN in c.source for c in answers), a
        assert notebook_language(nb) == LANG
        assert "BEGIN SOLUTION" not in json.dumps(nb) and "BEGIN HIDDEN TESTS" not in json.dumps(nb)


def test_the_kernel_is_given_a_language_code_and_nothing_else():
    from instructor.sandbox.kernel import kernel_language

    assert kernel_language({"COURSE_LANG": "zh_CN", "OTHER": "x"}) == {"COURSE_LANG": "zh_CN"}
    for bad in ("", "zh_CN; rm -rf /", "../../x", "zh_CN\nPATH=/tmp", "x" * 40):
        assert kernel_language({"COURSE_LANG": bad}) == {}, bad
    assert kernel_language(None) == {} and kernel_language({}) == {}


def test_a_student_cannot_pick_a_language_the_course_lacks():
    assert notebook_language({"metadata": {"course": {"language": "zh_CN"}}}) == LANG
    assert notebook_language({"metadata": {"course": {"language": "../../etc"}}}) is None
    assert notebook_language({"metadata": {"course": ["zh_CN"]}}) is None
    assert notebook_language({"metadata": []}) is None
    with pytest.raises(SystemExit, match="no edition in 'fr'"):
        edition_root("fr")
    assert edition_root("zh-CN") == ZH and edition_root("") == REPO and edition_root("en") == REPO


def test_a_sample_moves_to_the_chinese_release_with_its_answers_byte_for_byte(fake):
    from instructor.authoring.samples import build_notebook, load_samples
    from instructor.classroom.cli import transplant

    sample = next(s for s in load_samples("00_orientation") if s.student == "ben")
    name, filled = build_notebook(sample)
    en_release = nbformat.read(REPO / "release" / "00_orientation" / name, as_version=4)
    zh_release = nbformat.read(fake / LANG / "release" / "00_orientation" / name, as_version=4)
    moved = transplant(filled, en_release, zh_release, LANG)
    assert notebook_language(moved) == LANG
    en_by_id = {c.id: c for c in en_release.cells}
    zh_by_id = {c.id: c for c in zh_release.cells}
    kept = changed = 0
    for before, after in zip(filled.cells, moved.cells):
        if before.source != en_by_id.get(before.get("id"), {}).get("source"):
            assert after.source == before.source and after.cell_type == before.cell_type, \
                "a cell the student wrote must stay byte for byte"
            mine, released = before.metadata.get("nbgrader"), en_by_id.get(before.get("id"), {}).get("metadata", {})
            if mine is not None and mine == released.get("nbgrader"):   # as released: the edition's metadata
                assert after.metadata["nbgrader"] == zh_by_id[before.id].metadata["nbgrader"]
            else:
                assert after.metadata == before.metadata
            kept += 1
        elif before.cell_type == "markdown" and HAN.search(zh_by_id[before.id].source):
            assert after.source == zh_by_id[before.id].source and after.metadata == before.metadata
            changed += 1
    assert kept >= 1 and changed >= 1 and len(moved.cells) == len(filled.cells)


# --------------------------------------------------------------------------- JupyterLab's own interface in Chinese

def _lab_locale_default(extra_args: list[str], tmp_path: Path) -> tuple[str, dict]:
    """Start JupyterLab with ``extra_args``: (the translation setting's locale, the zh_CN language pack's data)."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", f"--port={port}",
                             "--ServerApp.ip=127.0.0.1", "--ServerApp.token=t", "--allow-root",
                             f"--ServerApp.root_dir={root}", *extra_args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/lab/api"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{base}/settings/{TRANSLATION_PLUGIN}?token=t", timeout=2) as r:
                    setting = json.loads(r.read())
                break
            except OSError:
                assert proc.poll() is None, "jupyter lab exited"
                time.sleep(0.5)
        else:
            pytest.fail("jupyter lab did not answer in 60 s")
        with urllib.request.urlopen(f"{base}/translations/zh_CN?token=t", timeout=10) as r:
            pack = json.loads(r.read())
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return setting["schema"]["properties"]["locale"]["default"], pack


TRANSLATION_PLUGIN = "@jupyterlab/translation-extension:plugin"


def test_lab_in_the_chinese_edition_shows_jupyterlab_in_chinese(tmp_path):
    from autograder.lab import interface_language

    args = interface_language(tmp_path / "view", LANG)
    overrides = json.loads((tmp_path / "view" / "lab" / "settings" / "overrides.json").read_text())
    assert overrides[TRANSLATION_PLUGIN]["locale"] == "zh_CN"
    locale, pack = _lab_locale_default(args, tmp_path)
    assert locale == "zh_CN", "JupyterLab's locale setting is not the Chinese one"
    strings = json.dumps(pack.get("data", {}).get("jupyterlab", {}), ensure_ascii=False)
    assert HAN.search(strings), "JupyterLab's Chinese language pack (jupyterlab-language-pack-zh-CN) is not installed"
    # control: without the setting, JupyterLab keeps its default (English) interface
    assert _lab_locale_default([], tmp_path)[0] != "zh_CN"


# --------------------------------------------------------------------------- the same scores in both editions

def _demo(tmp: Path, lang: str | None) -> tuple[dict, str, str]:
    """``python -m autograder demo`` (the four demo samples) in its own folders: ({(student, assignment,
    question): score}, the text of one feedback page, what the command printed)."""
    import csv
    import os
    import subprocess
    import sys

    work, course_dir = tmp / f"demo-{lang or 'en'}", tmp / f"course-{lang or 'en'}"
    env = {k: v for k, v in os.environ.items() if k != "COURSE_LANG"}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "autograder", "demo", "--workdir", str(work), "--course", str(course_dir)]
    out = subprocess.run(cmd + (["--lang", lang] if lang else []), cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, f"demo {lang or 'en'} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    with (work / "grades_by_question.csv").open() as f:
        scores = {(r["student"], r["assignment"], r["question"]): r["score"] for r in csv.DictReader(f)}
    page = next((course_dir / "feedback" / "ben" / "00_orientation").glob("*.html")).read_text(encoding="utf-8")
    return scores, page, out.stdout


@pytest.mark.slow
def test_the_samples_get_the_same_scores_in_both_editions(tmp_path):
    """The demo's four samples (full marks, a silent-wrong fix caught, partial credit, a cheat flagged),
    graded in the English course and, moved onto the Chinese release, in the Chinese one: the same score
    for every question; the Chinese feedback speaks Chinese, the English one English."""
    _committed()
    english, en_page, en_out = _demo(tmp_path, None)
    chinese, zh_page, zh_out = _demo(tmp_path, LANG)
    assert len(english) >= 20 and set(english) == set(chinese), sorted(set(english) ^ set(chinese))
    differ = {k: (english[k], chinese[k]) for k in english if english[k] != chinese[k]}
    assert not differ, f"questions scored differently (English, Chinese): {differ}"
    assert "下一步" in zh_page and "try next" not in zh_page, "the Chinese feedback's messages are not in Chinese"
    assert "try next" in en_page and "下一步" not in en_page
    # the same submissions flagged for the same things (no flag the move to the edition made up)
    flagged = [sorted(re.findall(r"(?m)^  (?:flagged|integrity): +(\S+?):", out)) for out in (en_out, zh_out)]
    assert flagged[0] == flagged[1], flagged


def test_a_hub_for_the_chinese_class_serves_the_chinese_edition(tmp_path):
    """``make hub`` with COURSE_LANG=zh_CN (``setup --lang zh_CN``): the hub's course folder, a copy of the
    checkout, holds the Chinese source/, release/ and lessons and nbgrader writes the Chinese stubs; an
    English hub is left as it is. (No OS accounts: the step alone.)"""
    from instructor.classroom.hub import Hub, use_edition
    from instructor.layout import load_config

    root = _committed()
    for lang in ("", LANG):
        hub = Hub(prefix=str(tmp_path / (lang or "en")), lang=lang)
        shutil.copytree(root, hub.course, ignore=lambda d, names: [n for n in names if n not in (
            "source", "release", "notebooks", "nbgrader_config.py", LANG)] if Path(d) in (root, root / LANG) else [])
        english = (hub.course / "source" / "00_orientation" / "00_orientation.ipynb").read_bytes()
        use_edition(hub)
        use_edition(hub)   # idempotent
        got = hub.course / "source" / "00_orientation" / "00_orientation.ipynb"
        stub = load_config(hub.course).ClearSolutions.code_stub["python"]
        if not lang:
            assert got.read_bytes() == english and STUB_MESSAGE_ZH_CN not in stub
            continue
        for d in ("source", "release", "notebooks"):
            assert not _tree_differences(root / LANG / d, hub.course / d), d
        assert notebook_language(json.loads(got.read_text())) == LANG and STUB_MESSAGE_ZH_CN in stub
        assert (hub.course / "nbgrader_config.py").read_text().count("the zh_CN edition") == 1


# --------------------------------------------------------------------------- Binder and Colab links to the Chinese edition

def _course_links():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("course_links", REPO / "scripts" / "course_links.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["course_links"] = module   # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_the_chinese_edition_gets_its_own_links_once_the_course_is_published():
    links = _course_links()
    placeholder = links.read_setting(REPO / "pyproject.toml")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    if placeholder.placeholder:   # not published: no link anywhere in the edition, the README names the setting
        assert links.render_readme(readme, placeholder) == readme
        block = readme.split("<!-- course_links:badges-zh_CN -->")[1].split("<!-- /course_links:badges-zh_CN -->")[0]
        assert "[tool.inplace-course]" in block and "mybinder" not in block and HAN.search(block)
        for nb in links.notebooks(REPO, ("source", "release", "notebooks")) + sorted(ZH.glob("release/*/*.ipynb")):
            lines = "".join(json.loads(nb.read_text())["cells"][0]["source"]).split("\n")
            assert not any(links.NOTEBOOK_LINE.match(l) for l in lines), nb
    s = links.Setting("example-teacher", "autograd-course", "spring")
    badges = links.readme_blocks(s)["badges-zh_CN"]
    assert s.binder("zh_CN/notebooks/00_start_here.ipynb") in badges
    assert s.colab("zh_CN/notebooks/00_start_here.ipynb") in badges
    src = REPO / LANG / "source" / "03_yolo_head" / "03_yolo_head.ipynb"
    assert links.student_path(REPO, src) == "zh_CN/release/03_yolo_head/03_yolo_head.ipynb"
    line = links.notebook_line(s, links.student_path(REPO, src))
    assert links.NOTEBOOK_LINE.match(line) and HAN.search(line)
    assert f"({s.colab('zh_CN/release/03_yolo_head/03_yolo_head.ipynb')})" in line
    assert links.notebook_line(s, "release/03_yolo_head/03_yolo_head.ipynb").startswith("**[Open in Colab]")
    # the edition's build writes it under the title, once
    once = links.render_notebook(src.read_text(), line, "nb")
    first = "".join(json.loads(once)["cells"][0]["source"]).split("\n")
    assert first[0].startswith("# ") and first[2] == line and links.render_notebook(once, line, "nb") == once


def test_grading_in_the_chinese_course_folder_takes_its_assignments_from_it(tmp_path):
    """formgrader (make lab-instructor with COURSE_LANG=zh_CN), ``grade --workdir zh_CN`` and ``demo --course
    zh_CN`` grade with the Chinese source: the English source/ is never copied over zh_CN/source/."""
    from instructor.classroom.formgrader import _assignments_root
    from instructor.layout import folder_edition

    assert folder_edition(ZH) == LANG and folder_edition(REPO) is None and folder_edition(tmp_path) is None
    assert _assignments_root(ZH) == ZH and _assignments_root(REPO) == REPO and _assignments_root(tmp_path) == REPO
