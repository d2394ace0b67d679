"""The course's messages in the notebook's language: English, or Simplified Chinese (``zh_CN``).

The Chinese edition runs the *same* code cells as the English one, with the same English string
literals in its test cells; a message is translated when it is shown, from a gettext catalogue
(``autograder/locale/zh_CN/LC_MESSAGES/autograder.po``, made by ``python -m instructor.translate_messages``):

* :func:`language` says which language this kernel speaks: ``COURSE_LANG`` when set, else the
  notebook's own metadata (``metadata.course.language``, which the Chinese notebooks carry), found
  through ``JPY_SESSION_NAME`` (Jupyter sets it to the notebook's path), IPython's ``__session__``,
  or Colab's notebook; else English.
* :func:`translate` looks a text up: exactly, else by template (a msgid made from an f-string, its
  ``{...}`` fields matched as text and put into the translation, themselves translated when they are
  msgids). A text the catalogue does not hold comes back unchanged (PyTorch's messages stay English).
* :func:`translate_message` translates a failure in the course's layout (``what``, then ``for input``,
  ``expected``, ``got``, ``try next``, ``detail`` lines) piece by piece: the labels, the course's texts;
  the values a program made (PyTorch's messages, the student's values) stay verbatim.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LANGUAGES", "LABELS", "language", "set_language", "speaking", "notebook_language", "metadata_language",
           "translate", "translate_message", "_", "N_", "Catalogue", "load_catalogue", "catalogue", "catalogue_path",
           "template_fields", "label_lines"]

LANGUAGES = ("en", "zh_CN")
DOMAIN = "autograder"
LOCALE = Path(__file__).resolve().parent / "locale"
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024   # a notebook larger than this is not read for its language

#: the course's layout labels (autograder.checks.fail), as the English lines start, and in Chinese.
#: The Chinese labels are aligned for a monospace font: an ideographic space (U+3000) is as wide as a character.
LABELS = {
    "for input": ("  for input: ", "  输入\u3000："),
    "expected": ("  expected : ", "  期望\u3000："),
    "got": ("  got      : ", "  实际\u3000："),
    "got :": ("  got : ", "  实际\u3000："),
    "try next": ("  try next : ", "  下一步："),
    "detail": ("  detail   : ", "  详情\u3000："),
}
#: an error's type before its message: "CheckFailed: ...", "HandinRefused: ..."
_ERROR_PREFIX = re.compile(r"^(\w+(?:Error|Failed|Refused|NotFound): )(.+)$", re.S)
#: labels whose values are the course's texts; the others are mostly values a program made (PyTorch's
#: messages, the student's values: verbatim), so only templates with this many letters of their own match them
_TRANSLATED_LABELS = ("for input", "expected", "try next")
_VALUE_LITERAL = 7   # "{value} at index {idx}" has 7
#: a line of a message matches only templates with this many letters of their own: a short one
#: ("{a} of {b}", a heading's) would take a line of PyTorch's for its own
_LINE_LITERAL = 4
#: a space the English layout put between a field and a word, between two Chinese characters once filled
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")


def label_lines(lang: str = "zh_CN") -> tuple[str, ...]:
    """The stripped line starts of the ``expected`` / ``got`` / ``try next`` lines in ``lang``."""
    keys = ("expected", "got", "got :", "try next")
    if lang == "en":
        return tuple(LABELS[k][0].strip() for k in keys)
    return tuple(LABELS[k][1].strip() for k in keys)


# --------------------------------------------------------------------------- which language

_language: str | None = None


def set_language(lang: str | None) -> None:
    """Fix this kernel's language (``"en"`` or ``"zh_CN"``); ``None`` detects it again on the next call."""
    global _language
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"unknown course language {lang!r}: the course has {', '.join(LANGUAGES)}")
    _language = lang


@contextlib.contextmanager
def speaking(lang: str):
    """This process's language is ``lang`` inside the block (the grader judges in English whatever
    ``COURSE_LANG`` says, and translates where a student reads the verdict)."""
    global _language
    saved = _language
    set_language(lang)
    try:
        yield
    finally:
        _language = saved


def _normal(lang) -> str | None:
    if not isinstance(lang, str):
        return None
    lang = lang.strip().replace("-", "_")
    if lang in LANGUAGES:
        return lang
    if lang.lower() in ("zh", "zh_cn", "zh_hans", "zh_hans_cn", "cn", "chinese"):
        return "zh_CN"
    if lang.lower().startswith("en"):
        return "en"
    return None


def _from_metadata(nb) -> str | None:
    if not isinstance(nb, dict):
        return None
    meta = nb.get("metadata")
    course = meta.get("course") if isinstance(meta, dict) else None
    return _normal(course.get("language")) if isinstance(course, dict) else None


def metadata_language(nb) -> str | None:
    """The language a notebook (its JSON, as a dict) names in ``metadata.course.language``, or None."""
    return _from_metadata(nb)


def _notebook_file() -> Path | None:
    """The notebook file this kernel runs, as Jupyter (``JPY_SESSION_NAME``) or IPython (``__session__``) says."""
    names = [os.environ.get("JPY_SESSION_NAME", "")]
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            names.append(str(shell.user_ns.get("__session__", "") or ""))
    except Exception:  # noqa: BLE001 - no IPython, or a broken one: no notebook to read
        pass
    cwd = Path.cwd()
    for name in names:
        if not name:
            continue
        path = Path(name).expanduser()
        for candidate in ([path] if path.is_absolute() else [cwd / path, cwd / path.name]):
            try:
                if candidate.suffix == ".ipynb" and candidate.is_file():
                    return candidate
            except OSError:
                continue
    return None


def notebook_language(path: str | os.PathLike) -> str | None:
    """The language a notebook file's metadata names (``metadata.course.language``), or None."""
    try:
        path = Path(path)
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            return None
        return _from_metadata(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def _colab_language() -> str | None:
    """On Colab, the language the open notebook's metadata names (best effort: never raises)."""
    import sys

    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import _message  # type: ignore[import-not-found]

        reply = _message.blocking_request("get_ipynb", timeout_sec=5)
        return _from_metadata(reply.get("ipynb") if isinstance(reply, dict) else None)
    except Exception:  # noqa: BLE001 - Colab's private API: any failure means "not known"
        return None


def language() -> str:
    """``"en"`` or ``"zh_CN"``: ``COURSE_LANG``, else the notebook's metadata, else English (cached)."""
    global _language
    if _language is not None:
        return _language
    forced = os.environ.get("COURSE_LANG", "")
    lang = _normal(forced) if forced else None
    if lang is None:
        path = _notebook_file()
        lang = notebook_language(path) if path is not None else _colab_language()
    _language = lang or "en"
    return _language


# --------------------------------------------------------------------------- catalogues

def _split_template(text: str) -> list[tuple[bool, str]]:
    """A brace-format msgid cut into (is a field, text) parts: ``{{`` and ``}}`` are literal braces,
    ``{...}`` (nested braces counted) a field kept with its braces."""
    parts: list[tuple[bool, str]] = []
    literal, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "{}" and text[i:i + 2] in ("{{", "}}"):
            literal.append(ch)
            i += 2
            continue
        if ch == "{":
            depth, j = 0, i
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= n:
                raise ValueError(f"unclosed field in {text!r}")
            if literal:
                parts.append((False, "".join(literal)))
                literal = []
            parts.append((True, text[i:j + 1]))
            i = j + 1
            continue
        literal.append(ch)
        i += 1
    if literal:
        parts.append((False, "".join(literal)))
    return parts


def template_fields(text: str) -> list[str]:
    """The ``{...}`` fields of a brace-format text, in order (repeats kept)."""
    return [t for is_field, t in _split_template(text) if is_field]


@dataclass
class _Template:
    regex: re.Pattern
    fields: list[str]
    msgstr: str
    literal: int   # letters outside the fields: the more, the more specific


@dataclass
class Catalogue:
    """One language's translations: exact msgids, and brace-format templates matched by regex."""
    exact: dict[str, str] = field(default_factory=dict)
    templates: list[_Template] = field(default_factory=list)

    def add(self, msgid: str, msgstr: str, template: bool) -> None:
        if not msgstr:
            return
        if not template:
            self.exact[msgid] = msgstr
            return
        parts = _split_template(msgid)
        pattern, fields = [], []
        for is_field, text in parts:
            if not is_field:
                pattern.append(re.escape(text))
            elif text in fields:   # the same expression twice: the same text twice
                pattern.append(f"(?P=f{fields.index(text)})")
            else:
                pattern.append(f"(?P<f{len(fields)}>.+?)")
                fields.append(text)
        if not fields:   # a brace-format text without fields: its braces were doubled
            self.exact[_unescape(msgid)] = _unescape(msgstr)
            return
        literal = sum(ch.isalpha() for is_field, t in parts if not is_field for ch in t)
        self.templates.append(_Template(re.compile("".join(pattern), re.S), fields, msgstr, literal))
        self.templates.sort(key=lambda t: -t.literal)

    def merged(self, other: "Catalogue") -> "Catalogue":
        out = Catalogue(dict(self.exact), list(self.templates))
        out.exact.update(other.exact)
        out.templates = sorted(out.templates + other.templates, key=lambda t: -t.literal)
        return out


def _unescape(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def load_catalogue(path: str | os.PathLike) -> Catalogue:
    """A PO file's reviewed translations (untranslated and fuzzy entries are left out: they show English)."""
    import polib

    cat = Catalogue()
    for entry in polib.pofile(str(path)):
        if entry.obsolete or "fuzzy" in entry.flags or not entry.msgstr:
            continue
        cat.add(entry.msgid, entry.msgstr, "python-brace-format" in entry.flags)
    return cat


def catalogue_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


_catalogues: dict[str, Catalogue] = {}


def catalogue(lang: str) -> Catalogue:
    """The student package's catalogue for ``lang`` (empty for English, or when the file is missing)."""
    if lang not in _catalogues:
        path = catalogue_path(lang)
        _catalogues[lang] = load_catalogue(path) if lang != "en" and path.is_file() else Catalogue()
    return _catalogues[lang]


# --------------------------------------------------------------------------- translating

def translate(text: str, lang: str | None = None, cat: Catalogue | None = None, *, min_literal: int = 0) -> str:
    """``text`` in ``lang`` (default: :func:`language`): exactly, else by template; unchanged when unknown."""
    lang = lang or language()
    if (lang == "en" and cat is None) or not isinstance(text, str) or not text:
        return text
    cat = cat if cat is not None else catalogue(lang)
    found = cat.exact.get(text)
    if found is not None:
        return found
    stripped = text.strip()
    if stripped != text and stripped in cat.exact:
        return text[:len(text) - len(text.lstrip())] + cat.exact[stripped] + text[len(text.rstrip()):]
    lead, trail = text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]
    for tpl in cat.templates:
        if tpl.literal < min_literal:
            break   # sorted by their letters: the rest have fewer
        m = tpl.regex.fullmatch(stripped)
        if m is None:
            continue
        # a field's text, translated when it is a msgid (a short template never takes a value: it may be PyTorch's)
        values = {f: translate(m.group(f"f{k}"), lang, cat, min_literal=max(min_literal, _LINE_LITERAL))
                  for k, f in enumerate(tpl.fields)}
        out = []
        for is_field, part in _split_template(tpl.msgstr):
            out.append(values.get(part, part) if is_field else part)
        return lead + _CJK_SPACE.sub("", "".join(out)) + trail
    return text


def _(text: str) -> str:
    """Mark a course message for extraction (``instructor.translate_messages``) and translate it."""
    return translate(text)


def N_(text: str) -> str:
    """Mark a course message for extraction only (gettext's ``gettext_noop``): it is translated where it
    is shown, and stays English where the code reads it."""
    return text


def translate_message(message: str, lang: str | None = None, cat: Catalogue | None = None) -> str:
    """A failure in the course's layout, translated piece by piece (see the module's docstring)."""
    lang = lang or language()
    if (lang == "en" and cat is None) or not isinstance(message, str) or not message:
        return message
    cat = cat if cat is not None else catalogue(lang)
    out = []
    for k, line in enumerate(message.split("\n")):
        for key, (english, chinese) in LABELS.items():
            if line.startswith(english):
                value = line[len(english):]
                value = translate(value, lang, cat,
                                  min_literal=_LINE_LITERAL if key in _TRANSLATED_LABELS else _VALUE_LITERAL)
                out.append(chinese + value)
                break
        else:   # the first line (what failed), a detail line (PyTorch's, verbatim) or one of the course's notes
            shown = translate(line, lang, cat, min_literal=_LINE_LITERAL if k == 0 else _VALUE_LITERAL)
            named = _ERROR_PREFIX.match(line) if shown == line and k == 0 else None
            if named:   # "CheckFailed: <the course's text>" as a test cell's error shows it
                shown = named.group(1) + translate(named.group(2), lang, cat, min_literal=_LINE_LITERAL)
            out.append(shown)
    return "\n".join(out)
