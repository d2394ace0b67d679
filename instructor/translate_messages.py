"""The messages the course's code shows a student, in gettext catalogues (translated at runtime).

The Chinese edition's code cells are the English ones byte for byte: a test cell calls
``check_true(..., "it is not the in-place error", hint="...")`` with the English text, and
:mod:`autograder.i18n` translates the message when it is shown. This module finds every such text
and keeps the catalogues in step with the code, the gettext way:

* **student catalogue** ``autograder/locale/<lang>/LC_MESSAGES/autograder.po`` (shipped in the student
  package): the string literals and f-strings given to :mod:`autograder.checks`' functions in the code
  cells of the English assignments (``source/*/*.ipynb``, their hidden-test blocks left out) and lessons
  (``notebooks/*.ipynb``); ``autograder/checks.py``'s own message templates; and the texts marked with
  ``_()`` / ``N_()`` / ``translate()`` in the student modules that print (:data:`STUDENT_MODULES`: check,
  validate_view, cli, handin, runtime, verdicts, saved_tensors, inplace and inplace_messages, explorers, storage,
  attack, detector's class names).
* **grader catalogue** ``instructor/locale/<lang>.po``: the hidden checks' messages (``instructor/hidden``,
  the hidden-test blocks of the source notebooks) and the grader's own texts a student or an instructor
  reads (:data:`GRADER_MODULES`: confirm's verdicts, the notes on a submission, the feedback page's,
  selfgrade's lines, the class report), never shipped to students; only those the student catalogue
  does not already hold. :mod:`instructor.engine.i18n` applies it where a verdict is shown.

A text marked ``N_()`` is extracted but stays English where the code reads it; it is translated where
it is shown. The grader judges in English; the gradebook, the ledger and the report's data keep English.

An f-string becomes a template (flag ``python-brace-format``): its fields are the expressions' source
(``{len(wrong)}``), literal braces doubled; a translation keeps the same fields. A multi-line message in
the course's layout (``what``, ``  try next : ...``) gives one entry per piece.

    python -m instructor.translate_messages update [--lang zh_CN]   # after a change to a message
    python -m instructor.translate_messages check  [--lang zh_CN]   # exit 1, naming file and text, if any
                                                                    # message has no reviewed translation
"""
from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import polib

REPO = Path(__file__).resolve().parents[1]
LANGS = ("zh_CN",)
DEFAULT_LANG = "zh_CN"

#: autograder.checks' functions whose text arguments a student reads
CHECK_FUNCTIONS = {"fail", "check_true", "check_type", "check_tensor", "check_close", "check_equal", "call_student",
                   "Verdict"}   # the grader's own verdicts (instructor/engine/confirm.py)
#: the marker functions of autograder.i18n
MARKERS = {"_", "N_", "translate", "translate_message"}
#: keyword arguments that are not text a student reads
NOT_TEXT = {"name", "rtol", "atol", "shape", "dtype", "device", "lang", "cat"}
#: names whose assigned texts are messages (``hint = "..."``, ``DEVICE_HINT = (...)``)
MESSAGE_NAME = re.compile(r"(?i)(^|_)hint$|^hint")
#: functions whose every text is a message (their whole body), per module of the grader and checks.py
MESSAGE_FUNCTIONS = {
    "autograder/checks.py": {"no_match_hint", "_crash_hint", "_brief"},
    "instructor/hidden/__init__.py": {"_error_message", "judge_case", "judge_results"},
}
#: calls whose text arguments are not messages (a test on a text, a lookup)
NOT_MESSAGE_CALLS = {"startswith", "endswith", "get", "split", "partition", "rpartition", "join", "search", "match",
                     "compile", "sub", "findall", "replace", "strip", "rstrip", "lstrip", "is_stub_message",
                     "getattr", "isinstance", "splitlines", "format"}
STUDENT_MODULES = ["autograder/checks.py", "autograder/check.py", "autograder/validate_view.py",
                   "autograder/cli.py", "autograder/handin.py", "autograder/runtime.py", "autograder/verdicts.py",
                   "autograder/saved_tensors.py", "autograder/inplace.py", "autograder/inplace_messages.py",
                   "autograder/explorers.py",
                   "autograder/storage.py", "autograder/attack.py", "autograder/detector.py"]
#: the grader's modules whose verdicts a student reads (beside instructor/hidden)
GRADER_MODULES = ["instructor/engine/confirm.py", "instructor/engine/canonical.py", "instructor/engine/execute.py",
                  "instructor/engine/pipeline.py", "instructor/engine/feedback.py", "instructor/classroom/report.py",
                  "instructor/classroom/cli.py"]
#: lists of the grader's notes on a submission that its feedback page shows (``flags.append(...)``)
NOTE_LISTS = re.compile(r"(flags|integrity)$")
HIDDEN_BLOCK = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)
#: the course's layout labels (autograder.checks.fail): a piece of a message starts after one
LAYOUT_LABEL = re.compile(r"^\s*(for input|expected|got|try next|detail)\s*:\s?")
FLAG = "python-brace-format"


def student_catalogue_path(lang: str = DEFAULT_LANG, root: Path = REPO) -> Path:
    return root / "autograder" / "locale" / lang / "LC_MESSAGES" / "autograder.po"


def grader_catalogue_path(lang: str = DEFAULT_LANG, root: Path = REPO) -> Path:
    return root / "instructor" / "locale" / f"{lang}.po"


# --------------------------------------------------------------------------- texts from Python source

@dataclass
class Message:
    msgid: str
    template: bool
    places: list[tuple[str, str]] = field(default_factory=list)   # (file, line or cell)


class _Unknown(Exception):
    """A part of an expression that is not text (a variable): the text is not a fixed message."""


def _field(node: ast.FormattedValue) -> str:
    text = ast.unparse(node.value)
    if node.conversion != -1:
        text += "!" + chr(node.conversion)
    if node.format_spec is not None:
        spec = "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in node.format_spec.values)
        text += ":" + spec
    return "{" + text + "}"


def _esc(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _texts(node: ast.AST, constants: dict[str, str]) -> list[tuple[str, bool]]:
    """The texts an expression can be, as (text, is a template); [] when it is not text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, False)]
    if isinstance(node, ast.JoinedStr):
        parts, template = [], False
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(_esc(v.value))
            else:
                parts.append(_field(v))
                template = True
        text = "".join(parts)
        return [(text if template else text.replace("{{", "{").replace("}}", "}"), template)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if isinstance(node.left, (ast.List, ast.Tuple)) or isinstance(node.right, (ast.List, ast.Tuple)):
            return _texts(node.left, constants) + _texts(node.right, constants)
        lefts, rights = _part(node.left, constants), _part(node.right, constants)
        if lefts is None or rights is None:
            return _texts(node.left, constants) if lefts is not None else []
        out = []   # every combination: "... put back" + (" unanswered" if ... else "") gives both texts
        for lt, ltpl in lefts:
            for rt, rtpl in rights:
                if ltpl or rtpl:
                    out.append(((lt if ltpl else _esc(lt)) + (rt if rtpl else _esc(rt)), True))
                else:
                    out.append((lt + rt, False))
        return out[:8]
    if isinstance(node, ast.IfExp):
        return _texts(node.body, constants) + _texts(node.orelse, constants)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [t for v in node.elts for t in _texts(v, constants)]
    if isinstance(node, ast.Name) and node.id in constants:
        return [(constants[node.id], False)]
    if isinstance(node, ast.BoolOp):
        return [t for v in node.values for t in _texts(v, constants)]
    return []


def _part(node: ast.AST, constants: dict[str, str]) -> list[tuple[str, bool]] | None:
    """The texts one operand of a ``+`` of texts can be: texts, a module's text constant, or a field."""
    found = _texts(node, constants)
    if found:
        return found[:4]
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return [("{" + ast.unparse(node) + "}", True)]
    return None


def pieces(text: str, template: bool, marked: bool = False) -> list[tuple[str, bool]]:
    """A message cut into the pieces that are translated one by one (its lines, without layout labels)."""
    out = []
    for line in text.split("\n"):
        line = LAYOUT_LABEL.sub("", line, count=1).strip()
        if template:   # the grader's {where} (a "for input" line) is not part of the piece
            line = re.sub(r"^\{where\}|\{where\}$", "", line).strip()
        words = re.sub(r"\{[^{}]*\}", "", line) if template else line
        # words, not code ("decode(p, ...)"): two words, or a word beside a field ("{name} raised {kind}")
        if (marked and re.search(r"[A-Za-z]{2,}", words)) or re.search(r"[A-Za-z]{2,} [A-Za-z]{2,}", words) or (template and re.search(r"(^|\s)[A-Za-z]{3,}(\s|$)", words)
                                                              and words.strip() != line.strip()):
            has_field = template and bool(re.search(r"(?<!\{)\{(?!\{)", line))
            out.append((line if has_field else (line.replace("{{", "{").replace("}}", "}") if template else line),
                        has_field))
    return out


def _constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and _call_name(value) in MARKERS and len(value.args) == 1:
                value = value.args[0]
            found = _texts(value, {})
            if len(found) == 1 and not found[0][1]:
                out[node.targets[0].id] = found[0][0]
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def messages_in_source(source: str, filename: str, whole: set[str] = frozenset(), place: str | None = None
                       ) -> list[tuple[str, bool, str]]:
    """(msgid, is a template, where) for every message of a piece of Python source."""
    tree = ast.parse(source, filename=filename)
    constants = _constants(tree)
    found: list[tuple[ast.AST, int]] = []
    marked: set[int] = set()   # the expressions marked with _() / N_() / translate(): every one is a message
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and _call_name(node) in ("append", "extend") and isinstance(node.func, ast.Attribute)
                and NOTE_LISTS.search(ast.unparse(node.func.value))):   # a note the feedback page shows
            found += [(a, node.lineno) for a in node.args]
        elif isinstance(node, ast.Call) and _call_name(node) in CHECK_FUNCTIONS | MARKERS:
            found += [(a, node.lineno) for a in node.args]
            found += [(k.value, node.lineno) for k in node.keywords if k.arg not in NOT_TEXT]
            if _call_name(node) in MARKERS:
                marked.update(id(a) for a in node.args)
        elif isinstance(node, ast.Dict):   # a hidden check's case: its "label" is the "for input" line
            found += [(v, getattr(v, "lineno", 0)) for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and k.value == "label"]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(isinstance(t, ast.Name) and MESSAGE_NAME.search(t.id) for t in targets):
                found.append((node.value, node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in whole:
            for sub in ast.walk(node):   # what it returns, assigns, or hands to a constructor
                if isinstance(sub, (ast.Return, ast.Assign)) and sub.value is not None:
                    found.append((sub.value, sub.lineno))
                elif isinstance(sub, ast.Call) and _call_name(sub) not in NOT_MESSAGE_CALLS:
                    found += [(a, sub.lineno) for a in sub.args]
    out = []
    for expr, line in found:
        for text, template in _texts(expr, constants):
            for piece, tpl in pieces(text, template, id(expr) in marked):
                out.append((piece, tpl, place or f"{filename}:{line}"))
    return out


def _cell_python(src: str) -> str:
    lines = []
    for line in src.splitlines():
        stripped = line.lstrip()
        lines.append(line[:len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line)
    return "\n".join(lines)


def notebook_cells(path: Path) -> list[tuple[str, str, str]]:
    """(where, visible code, hidden-test code) of each code cell of a notebook."""
    from autograder.nbgrader_cells import grade_id

    nb = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        gid = grade_id(cell) or f"cell {k}"
        hidden = "\n".join(m.group(0) for m in HIDDEN_BLOCK.finditer(src))
        out.append((f"{path.as_posix()}#{gid}", HIDDEN_BLOCK.sub("", src), hidden))
    return out


def _add(table: dict[str, Message], items) -> None:
    for msgid, template, where in items:
        msg = table.setdefault(msgid, Message(msgid, template))
        msg.template = msg.template or template
        if where not in [p[0] for p in msg.places]:
            msg.places.append((where, ""))


def extract(root: Path = REPO) -> tuple[dict[str, Message], dict[str, Message]]:
    """(the student catalogue's messages, the grader's), each msgid -> :class:`Message`."""
    student: dict[str, Message] = {}
    grader: dict[str, Message] = {}
    notebooks = sorted((root / "source").glob("*/*.ipynb")) + sorted((root / "notebooks").glob("*.ipynb"))
    for path in notebooks:
        for where, visible, hidden in notebook_cells(path):
            where = where.replace(root.as_posix() + "/", "")
            for code, table in ((visible, student), (hidden, grader)):
                if not code.strip():
                    continue
                try:
                    _add(table, messages_in_source(_cell_python(code), where, place=where))
                except SyntaxError as err:
                    raise SystemExit(f"{where}: not Python ({err.msg}, line {err.lineno}): cannot read its messages")
    for rel in STUDENT_MODULES:
        path = root / rel
        _add(student, messages_in_source(path.read_text(encoding="utf-8"), rel, MESSAGE_FUNCTIONS.get(rel, set())))
    for path in sorted((root / "instructor" / "hidden").rglob("*.py")) + [root / m for m in GRADER_MODULES]:
        rel = path.relative_to(root).as_posix()
        _add(grader, messages_in_source(path.read_text(encoding="utf-8"), rel, MESSAGE_FUNCTIONS.get(rel, set())))
    grader = {k: v for k, v in grader.items() if k not in student}
    return student, grader


# --------------------------------------------------------------------------- catalogues

def _header(lang: str, what: str) -> dict:
    return {"Project-Id-Version": f"inplace-course {what}", "Language": lang, "MIME-Version": "1.0",
            "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}


def update_catalogue(path: Path, messages: dict[str, Message], lang: str, what: str) -> list[str]:
    """Rewrite one PO file from the extracted messages: kept translations stay, new texts are new
    entries (fuzzy, with the closest old translation to review, when one is close), gone texts obsolete."""
    old = polib.pofile(str(path), wrapwidth=0) if path.is_file() else polib.POFile(wrapwidth=0)
    by_id = {e.msgid: e for e in old if not e.obsolete}
    previous = {e.msgid: e for e in old}
    new = polib.POFile(wrapwidth=0)
    new.metadata = old.metadata or _header(lang, what)
    changes = []
    for msgid, msg in messages.items():
        entry = polib.POEntry(msgid=msgid, msgstr="", occurrences=[(p, "") for p, _ in msg.places][:8])
        if msg.template:
            entry.flags.append(FLAG)
        kept = by_id.get(msgid)
        if kept is not None:
            entry.msgstr, entry.tcomment = kept.msgstr, kept.tcomment
            if "fuzzy" in kept.flags:
                entry.flags.append("fuzzy")
                entry.previous_msgid = kept.previous_msgid
        else:
            gone = [m for m in previous if m not in messages and previous[m].msgstr]
            close = difflib.get_close_matches(msgid, gone, n=1, cutoff=0.75)
            if close:
                entry.msgstr, entry.previous_msgid = previous[close[0]].msgstr, close[0]
                entry.flags.append("fuzzy")
            changes.append(f"new: {msgid!r}")
        new.append(entry)
    for msgid, entry in previous.items():
        if msgid not in messages and entry.msgstr:
            entry.obsolete = True
            new.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    new.save(str(path))
    return changes


def update(lang: str = DEFAULT_LANG, root: Path = REPO) -> list[str]:
    student, grader = extract(root)
    return (update_catalogue(student_catalogue_path(lang, root), student, lang, "autograder")
            + update_catalogue(grader_catalogue_path(lang, root), grader, lang, "hidden checks"))


def hidden_leaks(catalogue: Path, root: Path = REPO, extracted=None) -> list[str]:
    """The msgids of a student catalogue that only the hidden checks say (students must never read
    them in the package they install): [] when none. ``extracted``: :func:`extract`'s result, if at hand."""
    student, grader = extracted or extract(root)
    po = polib.pofile(str(catalogue)) if catalogue.is_file() else []
    return [e.msgid for e in po if e.msgid in grader and e.msgid not in student]


def check(lang: str = DEFAULT_LANG, root: Path = REPO) -> list[str]:
    """One line per message without a reviewed translation (missing, empty, fuzzy, or with other fields),
    naming where the English text is, and one per hidden check's text in the student catalogue; []
    when every message has a reviewed translation where it belongs."""
    from autograder.i18n import template_fields

    student, grader = extract(root)
    rel_student = student_catalogue_path(lang, root).relative_to(root).as_posix()
    problems = [f"{rel_student}: a hidden check's text in the student package (move it to the grader's "
                f"catalogue): {m!r}" for m in hidden_leaks(student_catalogue_path(lang, root), root, (student, grader))]
    for path, messages in ((student_catalogue_path(lang, root), student), (grader_catalogue_path(lang, root), grader)):
        po = {e.msgid: e for e in polib.pofile(str(path))} if path.is_file() else {}
        rel = path.relative_to(root).as_posix()
        for msgid, msg in messages.items():
            where = msg.places[0][0] if msg.places else "?"
            entry = po.get(msgid)
            if entry is None or entry.obsolete:
                problems.append(f"{where}: not in {rel}: {msgid!r}")
            elif not entry.msgstr:
                problems.append(f"{where}: untranslated in {rel}: {msgid!r}")
            elif "fuzzy" in entry.flags:
                problems.append(f"{where}: fuzzy (English changed, translation not reviewed) in {rel}: {msgid!r}")
            elif msg.template and set(template_fields(entry.msgstr)) != set(template_fields(msgid)):
                problems.append(f"{where}: the translation's fields differ from the English in {rel}: {msgid!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m instructor.translate_messages", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["update", "check"])
    ap.add_argument("--lang", default=DEFAULT_LANG, choices=LANGS)
    ap.add_argument("--root", type=Path, default=REPO, help="the course repository (default: this one)")
    args = ap.parse_args(argv)
    if args.command == "update":
        changes = update(args.lang, args.root)
        print("\n".join(changes) or "catalogues up to date")
        return 0
    problems = check(args.lang, args.root)
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} message(s) without a reviewed {args.lang} translation: translate them in the "
              "catalogue named (after `python -m instructor.translate_messages update`)")
        return 1
    print(f"every message has a reviewed {args.lang} translation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
