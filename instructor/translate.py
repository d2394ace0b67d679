"""The course in another language, generated from the English notebooks and gettext catalogues.

The English notebooks in ``source/`` and ``notebooks/`` stay the single source of code, cells, grade ids,
points and tests. Everything a reader reads in them is cut into *units*, each of which becomes one
entry of a gettext PO file (``i18n/<lang>/<notebook>.po``) whose ``msgid`` is the English text itself:

* a markdown cell, block by block (blocks are separated by blank lines; a fenced block is one block):
  a fenced block of Python gives its comments, any other fenced block (an error message, output) is
  copied as it is;
* a code cell's comments (``# ...``, without the ``#``) and the strings a reader sees: the arguments of
  ``print(...)`` and docstrings. Those are *Python source* (``"grid:"``, ``f"{n} boxes"``): a translation
  keeps the quotes and every ``{...}`` field; the generator checks that it parses to the same program.

``build`` writes the translated notebooks; it fails, naming each notebook, cell and English text, when any
unit has no reviewed translation (empty or *fuzzy*): a release never falls back to English silently.
``update`` rewrites the catalogues from the English notebooks the gettext way: a changed English text
becomes a new entry, marked fuzzy with the old text and translation beside it for the translator to
review; texts that went away become obsolete entries.

    python -m instructor.translate update [--lang zh_CN]     # after an English change
    python -m instructor.translate check  [--lang zh_CN]     # what is missing, per notebook
    python -m instructor.translate build  [--lang zh_CN]     # write the translated notebooks
"""
from __future__ import annotations

import argparse
import ast
import copy
import difflib
import io
import json
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import polib

REPO = Path(__file__).resolve().parents[1]
LANGS = ("zh_CN",)
DEFAULT_LANG = "zh_CN"
CATALOGUES = REPO / "i18n"
#: Comments that are machinery, not prose: nbgrader's solution markers, linters' pragmas.
_MACHINE_COMMENT = re.compile(r"^#+\s*(i18n\b|BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS|"
                              r"YOUR CODE HERE|noqa|type:|pragma|fmt:)", re.I)
_FENCE = re.compile(r"^(\s*)(```|~~~)")
KIND_NOTE = {
    "markdown": "Markdown: keep the markup, links, `code`, $math$ and **emphasis** as they are.",
    "comment": "A comment in Python code (the text after #): one line of plain text.",
    "string": "A Python string literal, as source: keep the quotes, escapes and every {...} field exactly.",
}


@dataclass(frozen=True)
class Unit:
    """One translatable piece of a notebook: where it is (cell, character span) and its English text."""
    cell: int
    cell_id: str
    kind: str          # markdown | comment | string
    start: int         # character offsets into the cell's source
    end: int
    text: str          # the msgid


class Untranslated(Exception):
    """Units of an English notebook with no reviewed translation: each names notebook, cell and text."""


class BadTranslation(Exception):
    """A translation that would change the program or break its notebook."""


def english_notebooks(root: Path = REPO) -> list[Path]:
    """Every English notebook a reader opens: the assignments' sources and the lessons, in course order."""
    return sorted((root / "source").glob("*/*.ipynb")) + sorted((root / "notebooks").glob("*.ipynb"))


def catalogue_path(notebook: Path, lang: str = DEFAULT_LANG, root: Path = REPO) -> Path:
    return root / "i18n" / lang / (notebook.stem + ".po")


def translated_path(notebook: Path, lang: str = DEFAULT_LANG, root: Path = REPO) -> Path:
    """Where the edition of ``lang`` keeps the notebook: ``<lang>/source/<a>/`` or ``<lang>/notebooks/``."""
    rel = notebook.resolve().relative_to(root.resolve())
    return root / lang / rel


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _offsets(text: str) -> list[int]:
    starts, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _python_for_parsing(src: str) -> str:
    """IPython's ``%magic`` and ``!shell`` lines as ``pass`` of the same length: positions stay put."""
    out = []
    for line in src.splitlines(keepends=True):
        body = line.rstrip("\n")
        stripped = body.lstrip()
        if stripped.startswith(("%", "!")):
            body = body[:len(body) - len(stripped)] + "pass" + " " * max(0, len(stripped) - 4)
        out.append(body + line[len(line.rstrip("\n")):])
    return "".join(out)


def _code_units(src: str, base: int = 0) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, text) for the comments and display strings (:func:`_display_strings`) of Python source."""
    parsed = _python_for_parsing(src)
    starts = _offsets(parsed)
    found: list[tuple[str, int, int, str]] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(parsed).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return found
    for tok in tokens:
        if tok.type != tokenize.COMMENT or _MACHINE_COMMENT.match(tok.string):
            continue
        body = tok.string.lstrip("#")
        text = body.strip()
        if not text or not re.search(r"[A-Za-z]{2}", text):
            continue
        start = starts[tok.start[0] - 1] + tok.start[1] + (len(tok.string) - len(tok.string.lstrip("#"))) \
            + (len(body) - len(body.lstrip()))
        found.append(("comment", base + start, base + start + len(text), text))
    try:
        tree = ast.parse(parsed)
    except SyntaxError:
        return found

    def span(node: ast.AST) -> tuple[int, int]:
        return (starts[node.lineno - 1] + _col(parsed, starts, node.lineno, node.col_offset),
                starts[node.end_lineno - 1] + _col(parsed, starts, node.end_lineno, node.end_col_offset))

    strings = _display_strings(tree, parsed)
    for node in strings:
        a, b = span(node)
        text = parsed[a:b]
        if re.search(r"[A-Za-z]{2}", _literal_words(node)):
            found.append(("string", base + a, base + b, src[a:b]))
    return sorted(found, key=lambda u: u[1])


#: Keyword arguments whose string is shown to a reader (matplotlib's labels and titles, ipywidgets' texts).
DISPLAY_KWARGS = {"label", "title", "xlabel", "ylabel", "suptitle", "description", "tooltip", "placeholder", "desc"}
#: A line of code whose string literals are all text a reader sees (a label in a list that is printed later):
#: the author marks it with this comment at its end; the marker itself is never translated.
DISPLAY_PRAGMA = re.compile(r"#\s*i18n\b")


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant) and isinstance(node.value, str)


def _display_strings(tree: ast.AST, parsed: str) -> list[ast.AST]:
    """The string literals of a program that a reader sees: print's arguments, docstrings, display keyword
    arguments, and every string on a line marked ``# i18n``. Their positions are the program's, so the same
    rule picks the same literals in a translated cell (what :func:`same_program` blanks)."""
    marked = {n + 1 for n, line in enumerate(parsed.splitlines()) if DISPLAY_PRAGMA.search(line)}
    inside_fstring = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                      for v in ast.walk(node) if v is not node}
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "print":
                found += [a for a in node.args if _is_text(a)]
            found += [k.value for k in node.keywords if k.arg in DISPLAY_KWARGS and _is_text(k.value)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.append(first.value)
        if marked and _is_text(node) and id(node) not in inside_fstring and node.lineno in marked:
            found.append(node)
    seen, out = set(), []
    for node in found:
        if id(node) not in seen:
            seen.add(id(node))
            out.append(node)
    return out


def _col(text: str, starts: list[int], lineno: int, col: int) -> int:
    """ast's column offsets count UTF-8 bytes; turn one into characters."""
    line = text[starts[lineno - 1]:starts[lineno] if lineno < len(starts) else len(text)]
    return len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))


def _literal_words(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value)
    return " ".join(v.value for v in getattr(node, "values", []) if isinstance(v, ast.Constant))


def _markdown_units(src: str) -> list[tuple[str, int, int, str]]:
    """Blocks of a markdown cell, split at blank lines; fenced blocks give their Python comments only."""
    found = []
    lines = src.splitlines(keepends=True)
    pos, i = 0, 0
    block_start: int | None = None
    block: list[str] = []

    def flush():
        nonlocal block_start, block
        if block:
            text = "".join(block)
            stripped = text.strip()
            if stripped and re.search(r"[A-Za-z]{2}", stripped):
                lead = len(text) - len(text.lstrip())
                found.append(("markdown", block_start + lead, block_start + lead + len(stripped), stripped))
        block_start, block = None, []

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            marker = fence.group(2)
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(marker):
                j += 1
            inner_start = pos + len(line)
            inner = "".join(lines[i + 1:j])
            info = line.strip()[3:].strip().lower()
            if info in ("python", "py", "") and inner.strip():
                try:
                    ast.parse(_python_for_parsing(inner))
                    found.extend(_code_units(inner, inner_start) if info else
                                 [u for u in _code_units(inner, inner_start) if u[0] == "comment"])
                except SyntaxError:
                    pass
            for k in range(i, min(j + 1, len(lines))):
                pos += len(lines[k])
            i = j + 1
            continue
        if not line.strip():
            flush()
        else:
            if block_start is None:
                block_start = pos
            block.append(line)
        pos += len(line)
        i += 1
    flush()
    return found


def units(nb: dict) -> list[Unit]:
    """Every translatable unit of a notebook, in reading order."""
    out = []
    for n, cell in enumerate(nb["cells"]):
        src = _source(cell)
        cid = cell.get("id") or str(n)
        if cell["cell_type"] == "markdown":
            pieces = _markdown_units(src)
        elif cell["cell_type"] == "code":
            pieces = _code_units(src)
        else:
            continue
        out += [Unit(n, cid, kind, a, b, text) for kind, a, b, text in pieces]
    return out


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SystemExit(f"error: {path}: not a readable notebook ({err})") from None


def load_catalogue(path: Path) -> polib.POFile:
    if not path.is_file():
        return polib.POFile()
    try:
        return polib.pofile(str(path), wrapwidth=0)
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise SystemExit(f"error: {path}: not a readable PO file ({err})") from None


def reviewed(catalogue: polib.POFile) -> dict[str, str]:
    """msgid -> msgstr for every entry a translator finished: not empty, not fuzzy, not obsolete."""
    return {e.msgid: e.msgstr for e in catalogue
            if e.msgstr and not e.obsolete and "fuzzy" not in e.flags}


def _check_string(english: str, translated: str) -> None:
    """A translated string literal must parse as one string with the same {fields}, in any order."""
    def shape(src: str):
        try:
            # parenthesized: an implicit concatenation continued on an indented line parses too
            node = ast.parse("(" + src.strip() + "\n)", mode="eval").body
        except SyntaxError as err:
            raise BadTranslation(f"not a Python string literal: {src!r} ({err.msg})") from None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return ("str", [])
        if isinstance(node, ast.JoinedStr):
            return ("f", sorted(ast.dump(v) for v in node.values if isinstance(v, ast.FormattedValue)))
        raise BadTranslation(f"not a Python string literal: {src!r}")
    if shape(english) != shape(translated):
        raise BadTranslation(f"the translation of {english!r} changes its {{fields}} or its kind: {translated!r}")


def translate_notebook(nb: dict, table: dict[str, str], name: str, lang: str = DEFAULT_LANG) -> dict:
    """The notebook in ``lang``; :class:`Untranslated` lists every unit without a reviewed translation."""
    missing = []
    out = copy.deepcopy(nb)
    by_cell: dict[int, list[Unit]] = {}
    for u in units(nb):
        if u.text not in table:
            missing.append(f"{name}: cell {u.cell} ({u.cell_id}), {u.kind}: {u.text[:100]!r}")
        by_cell.setdefault(u.cell, []).append(u)
    if missing:
        raise Untranslated("\n".join(missing))
    for n, us in by_cell.items():
        src = _source(nb["cells"][n])
        for u in sorted(us, key=lambda u: u.start, reverse=True):
            new = table[u.text]
            if u.kind == "string":
                _check_string(u.text, new)
            elif u.kind == "comment" and "\n" in new:
                raise BadTranslation(f"{name}: cell {u.cell}: a comment's translation must be one line: {new!r}")
            src = src[:u.start] + new + src[u.end:]
        cell = out["cells"][n]
        cell["source"] = src.splitlines(keepends=True)
        if cell["cell_type"] == "code":
            same_program(_source(nb["cells"][n]), src, f"{name}: cell {u.cell}")
    out.setdefault("metadata", {}).setdefault("course", {})["language"] = lang
    return out


def _program_dump(src: str) -> str:
    """The program without what a reader reads: its display strings (:func:`_display_strings`) blanked,
    comments gone."""
    parsed = _python_for_parsing(src)
    tree = ast.parse(parsed)
    blank = {id(n) for n in _display_strings(tree, parsed)}

    class Blank(ast.NodeTransformer):
        def visit(self, node):
            if id(node) in blank:
                return ast.Constant("")
            return super().visit(node)
    return ast.dump(Blank().visit(tree))


def same_program(english: str, translated: str, where: str) -> None:
    try:
        ok = _program_dump(english) == _program_dump(translated)
    except SyntaxError as err:
        raise BadTranslation(f"{where}: the translated cell does not parse ({err.msg}, line {err.lineno})") from None
    if not ok:
        raise BadTranslation(f"{where}: the translation changed the code itself, not only comments and printed text")


def update(lang: str = DEFAULT_LANG, root: Path = REPO, notebooks: list[Path] | None = None) -> list[str]:
    """Rewrite each notebook's catalogue from its English text; returns one summary line per notebook."""
    report = []
    for path in notebooks or english_notebooks(root):
        nb = _read(path)
        po_path = catalogue_path(path, lang, root)
        old = load_catalogue(po_path)
        old_live = {e.msgid: e for e in old if not e.obsolete}
        old_all = {e.msgid: e for e in old}
        new = polib.POFile(wrapwidth=0)
        new.metadata = {
            "Project-Id-Version": "inplace-course",
            "Language": lang,
            "MIME-Version": "1.0",
            "Content-Type": "text/plain; charset=UTF-8",
            "Content-Transfer-Encoding": "8bit",
            "X-Source-Notebook": str(path.relative_to(root)),
        }
        seen: dict[str, polib.POEntry] = {}
        fresh = fuzzy = 0
        texts = {x.text for x in units(nb)}
        for u in units(nb):
            where = (f"{path.relative_to(root)}#{u.cell_id}", "")
            if u.text in seen:
                if where not in seen[u.text].occurrences:
                    seen[u.text].occurrences.append(where)
                continue
            prev = old_live.get(u.text) or old_all.get(u.text)
            entry = polib.POEntry(msgid=u.text, msgstr="", occurrences=[where], comment=KIND_NOTE[u.kind])
            if prev is not None and prev.msgstr:
                entry.msgstr = prev.msgstr
                entry.flags = list(prev.flags)
                entry.tcomment = prev.tcomment
                entry.previous_msgid = prev.previous_msgid if "fuzzy" in prev.flags else None
            else:
                candidates = [e for e in old if e.msgstr and e.msgid not in texts]
                best = max(candidates, key=lambda e: difflib.SequenceMatcher(None, e.msgid, u.text).ratio(),
                           default=None)
                if best is not None and difflib.SequenceMatcher(None, best.msgid, u.text).ratio() >= 0.6:
                    entry.msgstr, entry.flags, entry.previous_msgid = best.msgstr, ["fuzzy"], best.msgid
                    fuzzy += 1
                else:
                    fresh += 1
            seen[u.text] = entry
            new.append(entry)
        gone = [e for e in old if not e.obsolete and e.msgid not in seen and e.msgstr]
        for e in gone:
            e.obsolete = True
            new.append(e)
        po_path.parent.mkdir(parents=True, exist_ok=True)
        new.save(str(po_path))
        report.append(f"{po_path.relative_to(root)}: {len(seen)} entries, {fresh} new, {fuzzy} fuzzy, "
                      f"{len(gone)} obsolete")
    return report


def check(lang: str = DEFAULT_LANG, root: Path = REPO, only: list[str] | None = None) -> list[str]:
    """Every problem of the edition: untranslated or fuzzy units, translations that break a cell."""
    problems = []
    for path in english_notebooks(root):
        if only and path.stem not in only:
            continue
        table = reviewed(load_catalogue(catalogue_path(path, lang, root)))
        try:
            translate_notebook(_read(path), table, str(path.relative_to(root)), lang)
        except (Untranslated, BadTranslation) as err:
            problems += str(err).splitlines()
    return problems


def build(lang: str = DEFAULT_LANG, root: Path = REPO, out_root: Path | None = None) -> list[Path]:
    """Write every translated notebook; refuses (naming each) when any unit has no reviewed translation."""
    problems = check(lang, root)
    if problems:
        raise Untranslated(f"{len(problems)} units of the English notebooks have no reviewed {lang} "
                           "translation (run `python -m instructor.translate update`, translate, remove "
                           "`fuzzy`):\n" + "\n".join(problems))
    written = []
    for path in english_notebooks(root):
        table = reviewed(load_catalogue(catalogue_path(path, lang, root)))
        nb = translate_notebook(_read(path), table, str(path.relative_to(root)), lang)
        target = translated_path(path, lang, root)
        if out_root is not None:   # the same layout under another folder (a check, a preview)
            target = Path(out_root) / target.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m instructor.translate", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["update", "check", "build"])
    ap.add_argument("--lang", default=DEFAULT_LANG, choices=LANGS)
    ap.add_argument("--only", nargs="*", metavar="NOTEBOOK", help="check: only these notebooks (file stems)")
    args = ap.parse_args(argv)
    if args.command == "update":
        print("\n".join(update(args.lang)))
        return 0
    if args.command == "check":
        problems = check(args.lang, only=args.only)
        print("\n".join(problems) if problems else f"every unit has a reviewed {args.lang} translation")
        return 1 if problems else 0
    try:
        for p in build(args.lang):
            print("wrote", p.relative_to(REPO))
    except (Untranslated, BadTranslation) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
