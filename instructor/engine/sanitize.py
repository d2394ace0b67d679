"""No live student HTML or JavaScript: a student's notebook made inert before anyone's browser shows it.

A submitted notebook reaches two browsers as HTML: the student's own feedback page
(``generate_feedback``) and formgrader's page for the submission, which runs inside the instructor's
authenticated Jupyter server (a ``<script>`` there can do anything the instructor can). nbgrader and
nbconvert's templates put a notebook's ``text/html`` outputs, ``application/javascript`` outputs and
the HTML inside markdown cells into those pages as they are. This module guards both:

* :func:`clean_html` — an allow-list sanitizer (bleach, the library nbconvert's own ``sanitize_html``
  uses, with a wider list than nbconvert's ``clean_html`` so that tables, headings and embedded images
  survive): formatting, tables and ``<img>`` whose source is a ``data:image/...`` URI; no scripts,
  event handlers, ``javascript:`` links, ``<iframe>``/``<object>``/``<svg>``/``<meta>``/``<style>``,
  no attribute that loads anything from the network. :func:`is_inert` is its checker: a spec-compliant
  parse (html5lib, bleach's parser) of what a browser will build, every element and attribute held to
  the same list.
* :class:`InertNotebook` — an nbconvert preprocessor (for nbgrader's converters and nbconvert's
  exporters). Outputs: ``text/html`` cleaned, ``text/markdown`` made inert, images kept (a
  matplotlib plot is ``image/png``), a scripted SVG
  dropped, and every other mimetype (``application/javascript``, widget views, anything unknown)
  dropped, ``text/plain`` kept or put in its place; output metadata that makes the page load a URL
  (``filenames``) dropped. Markdown cells and ``text/markdown`` outputs: rendered exactly as nbconvert
  renders them and checked; markdown that renders inert is left byte for byte as written, otherwise its
  raw HTML is escaped, and if even that does not render inert, the cell is shown as text (a code
  block). Attachments: only PNG/JPEG/GIF/WebP images stay. Saved widget state (notebook metadata,
  which a widget manager would render) goes.

Where it is wired (:func:`instructor.batch.course.sandboxed_config` and ``nbgrader_config.py``): the autograded
notebook nbgrader writes is inert already (in autograde's sanitize phase for markdown, so a worker's
and the recorder's notebooks stay identical, and after execution for outputs); ``generate_feedback``
runs it again with ``HTMLExporter.sanitize_html`` on and this module's :func:`clean_html` as the
template's ``clean_html`` filter; formgrader's exporter gets the same from ``nbgrader_config.py``, so a
notebook that never went through this pipeline is made inert when formgrader renders it.
Cell by cell is not enough: markup split across cells (``<!--`` in one markdown cell, ``-->`` inside an
attribute of the next) forms a tag only on the assembled page. So the whole rendered page goes
through a second, parser-based sanitizer, Ammonia (``nh3``): :func:`clean_page` for the feedback
page (plus a ``script-src 'none'`` Content-Security-Policy ``<meta>``), :func:`clean_fragment` for the
notebook part of formgrader's page (``instructor/classroom/formgrader.py`` adds a nonce-only policy
header). Output metadata ``width``/``height`` (written unquoted by nbconvert) stay only as numbers.
``tests/test_html_two_layers.py`` shows each layer holding alone in Chromium.

Markup with no script can still take a page over: Bootstrap's ``modal-backdrop in`` is a fixed
full-window link, and formgrader's JavaScript binds its grading buttons to the first element with a test
cell's id. So each piece of student markup is isolated before the template puts it in a page
(:func:`isolate_fragment`, :func:`isolate_notebook`, run by the exporter of :mod:`.feedback` for the
feedback page and formgrader's): closed on its own, ids prefixed ``user-content-``, no ``name``, no class
but nbconvert's own (:data:`STUDENT_CLASSES`), nothing of the student's in the template's own tags.
``tests/test_page_takeover.py`` shows the takeover and the overlays in Chromium, with their controls. ``tests/test_sanitize.py`` tests the pieces; ``tests/test_inert_html.py`` opens the real pages in
Chromium with the hostile sample ``tests/hostile/00_orientation/html_payloads.py``.
"""
from __future__ import annotations

import functools
import html as _html
import re

import bleach
import nh3
from bleach._vendor import html5lib  # the parser bleach itself uses (html5lib, pinned with bleach)
from bleach.css_sanitizer import CSSSanitizer
from nbconvert.preprocessors import Preprocessor
from pygments.token import STANDARD_TYPES
from traitlets import Bool

__all__ = ["ALLOWED_TAGS", "FEEDBACK_CSP", "ID_PREFIX", "STUDENT_CLASSES", "clean_html", "clean_fragment", "clean_page",
           "is_inert", "inert_markdown", "inert_output", "isolate_fragment", "isolate_notebook", "InertNotebook"]

ALLOWED_TAGS = frozenset({
    "a", "abbr", "acronym", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd",
    "del", "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "input", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp",
    "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "tt", "u", "ul", "var",
})
#: Image types kept as ``data:`` URIs in ``<img>`` and as attachments. SVG only in ``<img>``: an SVG
#: loaded as an image runs no script and loads nothing.
RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp")
_IMG_DATA = re.compile(r"data:image/(png|jpeg|jpg|gif|webp|svg\+xml)[;,]")
_SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
_NUMBER = re.compile(r"\d{1,5}%?")
_STYLE = re.compile(r"\s*(text-align\s*:\s*(left|right|center|justify)\s*;?\s*)*", re.I)
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_ALIGNABLE = {"p", "div", "table", "tr", "td", "th", "thead", "tbody", "tfoot", "col", "colgroup", "img",
              "caption"} | _HEADINGS


def _normalized_url(value: str) -> str:
    # what a browser's URL parser sees, as strictly as possible: entities decoded, control
    # characters and spaces gone anywhere ("java\tscript:" is "javascript:"), lower case
    return _CONTROL.sub("", _html.unescape(value)).lower()


def _safe_href(value: str) -> bool:
    url = _normalized_url(value)
    m = _SCHEME.match(url)
    return m is None or m.group(1) in _SAFE_SCHEMES  # no scheme: a relative link, needs a click


def _safe_img_src(value: str) -> bool:
    return bool(_IMG_DATA.match(_normalized_url(value)))  # never a URL: nothing loads from anywhere


def _allow_attribute(tag: str, name: str, value: str) -> bool:
    """The attribute allow-list, shared by :func:`clean_html` (bleach) and :func:`is_inert`."""
    name = name.lower()
    if name in ("class", "title"):
        return True
    if name == "align":
        return tag in _ALIGNABLE
    if tag == "a":
        return name == "href" and _safe_href(value)
    if tag == "img":
        if name == "src":
            return _safe_img_src(value)
        return name == "alt" or (name in ("width", "height") and bool(_NUMBER.fullmatch(value.strip())))
    if tag in _HEADINGS:
        return name == "id"  # nbconvert's heading anchors
    if tag in ("td", "th"):
        return (name in ("colspan", "rowspan") and bool(_NUMBER.fullmatch(value.strip()))) or (
            name == "style" and bool(_STYLE.fullmatch(value)))  # markdown tables' column alignment
    if tag == "table":
        return name == "border" and bool(_NUMBER.fullmatch(value.strip()))  # pandas' border="1"
    if tag in ("col", "colgroup"):
        return name == "span" and bool(_NUMBER.fullmatch(value.strip()))
    if tag == "ol":
        return name == "start" and bool(_NUMBER.fullmatch(value.strip()))
    if tag == "input":  # markdown task lists: a disabled checkbox
        return (name == "type" and value.strip().lower() == "checkbox") or name in ("checked", "disabled")
    return False


# Elements dropped with their content before bleach runs (bleach would keep their text: a page full
# of CSS and script source). Only cosmetic: bleach below is what makes the HTML safe.
_WITH_CONTENT = re.compile(
    r"<(script|style|template|noscript|iframe|object|embed|noembed|noframes|xmp|textarea|title|svg|math)\b"
    r"[^>]*>.*?</\1\s*>", re.I | re.S)
_CLEANER = bleach.Cleaner(tags=ALLOWED_TAGS, attributes=_allow_attribute, protocols=set(_SAFE_SCHEMES) | {"data"},
                          strip=True, strip_comments=True,
                          css_sanitizer=CSSSanitizer(allowed_css_properties=["text-align"]))


def clean_html(html) -> str:
    """``html`` with only allow-listed elements and attributes (see :func:`_allow_attribute`).

    Also the ``clean_html`` filter of nbconvert's templates (``HTMLExporter.filters``), used when
    ``HTMLExporter.sanitize_html`` is on."""
    html = html.decode() if isinstance(html, bytes) else str(html)
    return _CLEANER.clean(_WITH_CONTENT.sub("", html))


def is_inert(html: str) -> bool:
    """Whether ``html``, parsed as a browser parses it, holds only allow-listed elements and attributes."""
    root = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
    for element in root.iter():
        if element is root or not isinstance(element.tag, str):  # the fragment itself; comments
            continue
        if element.tag not in ALLOWED_TAGS:  # "{http://www.w3.org/2000/svg}svg" too
            return False
        for name, value in element.attrib.items():
            if not (isinstance(name, str) and _allow_attribute(element.tag, name, value)):
                return False
    return True


# --------------------------------------------------------------------------- markdown

def render_markdown(source: str, attachments: dict | None = None) -> str:
    """Markdown to HTML exactly as ``HTMLExporter.markdown2html`` does with its default settings."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments=attachments or {}, embed_images=False, path="",
                               anchor_link_text="¶", exclude_anchor_links=False)
    return MarkdownWithMath(renderer=renderer).render(source)


def _renders_inert(source: str, attachments: dict | None) -> bool:
    try:
        return is_inert(render_markdown(source, attachments))
    except Exception:  # noqa: BLE001 - e.g. a missing attachment: nbconvert would fail the whole page
        return False


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# kept as written: code spans and inline math (the renderer escapes their text itself)
_INLINE = re.compile(r"(?P<code>(?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`)|\$\$.+?\$\$|\$[^$\n]+?\$)|<(?=[A-Za-z/!?])")


def _escape_raw_html(source: str) -> str:
    """Every ``<`` that could open a tag, comment or declaration written ``&lt;``, outside code."""
    out, fence = [], None
    for line in source.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                fence = None
            out.append(line)
        elif m:
            fence = m.group(1)
            out.append(line)
        else:
            out.append(_INLINE.sub(lambda k: k.group(0) if k.group("code") else "&lt;", line))
    return "".join(out)


_AS_TEXT_NOTE = "*(shown as text by the grader: this markdown held HTML that could run in a browser)*"
_REMOVED = "*(removed by the grader: this markdown held HTML that could run in a browser)*"


def inert_markdown(source: str, attachments: dict | None = None) -> str:
    """``source`` if it renders inert (unchanged, byte for byte); else with its raw HTML escaped;
    else the whole text as a code block; else a note."""
    source = source if isinstance(source, str) else "".join(source)
    if not attachments:  # a class's notebooks share most of their markdown: each text is checked once
        return _inert_markdown_text(source)
    return _inert_markdown(source, attachments)


@functools.lru_cache(maxsize=8192)
def _inert_markdown_text(source: str) -> str:
    return _inert_markdown(source, None)


def _inert_markdown(source: str, attachments: dict | None) -> str:
    if _renders_inert(source, attachments):
        return source
    escaped = _escape_raw_html(source)
    if _renders_inert(escaped, attachments):
        return escaped
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", source)), default=0))
    as_text = f"{_AS_TEXT_NOTE}\n\n{fence}\n{source}\n{fence}\n"
    return as_text if _renders_inert(as_text, None) else _REMOVED


def inert_attachments(attachments: dict) -> dict:
    """Only PNG/JPEG/GIF/WebP images, as base64 text."""
    kept = {}
    for name, bundle in (attachments or {}).items():
        if isinstance(bundle, dict):
            images = {m: v for m, v in bundle.items() if m in RASTER and _is_base64(v)}
            if images:
                kept[name] = images
    return kept


# --------------------------------------------------------------------------- outputs

_B64 = re.compile(r"[A-Za-z0-9+/=\s]*")
# An SVG is kept only when nothing in it can run or load: nbconvert shows it as <img>, JupyterLab
# may inline it.
_SVG_ACTIVE = re.compile(
    r"<\s*(script|foreignobject|iframe|object|embed|handler|listener|set|animate\w*|a)\b|\bon[a-z]+\s*="
    r"|javascript:|<!entity|\bhref\s*=\s*(?![\"']?(#|data:image/(png|jpeg|gif);))"
    r"|url\s*\(\s*(?![\"']?#)|@import", re.I)
_OUTPUT_KEYS = {"display_data": ("output_type", "data", "metadata"),
                "execute_result": ("output_type", "data", "metadata", "execution_count"),
                "stream": ("output_type", "name", "text"),
                "error": ("output_type", "ename", "evalue", "traceback")}
# not "isolated" (an <iframe> of the HTML) nor "filenames" (the page would load them)
_META_KEYS = {"width", "height", "needs_background", "unconfined", "alt"}


def _meta_value(key: str, value):
    """An output metadata value as it may reach the template, or None (dropped). nbconvert's classic
    template writes ``width``/``height`` into the ``<img>`` tag unquoted (``width=1 onload=...`` would
    be an event handler): they stay only as plain numbers."""
    if key in ("width", "height"):
        if isinstance(value, bool):
            return None
        if isinstance(value, int) or (isinstance(value, float) and value == value and abs(value) != float("inf")):
            return value if 0 <= value < 100000 else None
        if isinstance(value, str) and re.fullmatch(r"\d{1,5}", value.strip()):
            return int(value.strip())
        return None
    if key in ("needs_background",):
        return value if isinstance(value, str) and value in ("light", "dark") else None
    if key == "unconfined":
        return value if isinstance(value, bool) else None
    return value if isinstance(value, str) else None  # alt: the template escapes it


def _is_base64(value) -> bool:
    return isinstance(value, str) and bool(_B64.fullmatch(value))


def _text(value) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return value if isinstance(value, str) else None


def svg_is_static(svg: str) -> bool:
    return isinstance(svg, str) and not _SVG_ACTIVE.search(svg)


def inert_output(output):
    """The output made inert in place (returned), or None when it should go."""
    kind = output.get("output_type")
    if kind not in _OUTPUT_KEYS:
        return None
    for key in [k for k in output if k not in _OUTPUT_KEYS[kind]]:
        del output[key]
    if kind not in ("display_data", "execute_result"):
        return output
    data, dropped = {}, []
    for mime, value in dict(output.get("data", {})).items():
        text = _text(value)
        if mime in RASTER and _is_base64(text):
            data[mime] = text
        elif mime in ("text/plain", "text/latex") and text is not None:
            data[mime] = text
        elif mime == "application/json" and isinstance(value, (dict, list)):
            data[mime] = value
        elif mime == "text/html" and text is not None:
            data[mime] = clean_html(text)
        elif mime == "text/markdown" and text is not None:
            data[mime] = inert_markdown(text)
        elif mime == "image/svg+xml" and svg_is_static(text):
            data[mime] = text
        else:
            dropped.append(mime)
    if dropped and "text/plain" not in data:
        data["text/plain"] = f"[output removed by the grader: {', '.join(sorted(dropped))}]"
    output["data"] = data
    meta = output.get("metadata", {})
    output["metadata"] = {m: {k: v for k, v in ((k, _meta_value(k, v)) for k, v in md.items() if k in _META_KEYS)
                              if v is not None}
                          for m, md in (meta.items() if isinstance(meta, dict) else [])
                          if m in data and isinstance(md, dict)}
    return output


class InertNotebook(Preprocessor):
    """Make a notebook inert: no student HTML or JavaScript that a browser would run (module docstring).

    An nbconvert preprocessor, on by default (nbgrader registers its converters' preprocessors without
    enabling them). Idempotent: what is inert is left as it is, so running it twice (autograde, then
    feedback or formgrader) changes nothing the second time."""

    enabled = Bool(True, help="Make notebooks inert (turning this off lets student HTML run).").tag(config=True)

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            if "attachments" in cell:
                kept = inert_attachments(cell.attachments)
                if kept != cell.attachments:
                    cell.attachments = kept
            source = inert_markdown(cell.source, cell.get("attachments"))
            if source != cell.source:
                self.log.warning("cell %s: markdown with active HTML made inert", index)
                cell.source = source
        elif cell.cell_type == "raw":
            if not is_inert(cell.source):
                cell.source = clean_html(cell.source)
        elif cell.cell_type == "code":
            cell.outputs = [o for o in (inert_output(out) for out in cell.get("outputs", [])) if o is not None]
        return cell, resources


# --------------------------------------------------------------------------- the assembled page

#: The feedback page's policy (a ``<meta>``, the first thing in its ``<head>``: it is a file, no server
#: sends it headers). Nothing runs and nothing loads: no script at all (the page ships none), images
#: only as ``data:`` URIs, styles only the page's own inline ones, no frames, plugins, forms or ``<base>``.
FEEDBACK_CSP = ("default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; child-src 'none'; "
                "base-uri 'none'; form-action 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'")
#: Elements removed with everything inside them (no text of a script or a stylesheet on the page).
PAGE_DROPPED = frozenset({"script", "style", "template", "noscript", "iframe", "object", "embed", "noembed",
                          "noframes", "xmp", "textarea", "title", "svg", "math", "select", "plaintext"})
#: The page's tags: the cells' allow-list, the template's ``<main>``, and for formgrader the grading
#: widgets its template puts in the cells (score boxes, buttons, comment boxes).
PAGE_TAGS = ALLOWED_TAGS | {"main"}
WIDGET_TAGS = PAGE_TAGS | {"button", "textarea"}
_PAGE_ATTRIBUTES = {"class", "title", "id", "name", "align", "style", "href", "src", "alt", "width", "height",
                    "colspan", "rowspan", "border", "span", "start", "type", "checked", "disabled"}
_ID = re.compile(r"\S{1,300}")  # the serializer quotes it; an id runs nothing
_WIDGET_STYLE = re.compile(r"\s*width\s*:\s*\d{1,3}(\.\d{1,2})?(em|px)\s*;?\s*", re.I)


def _page_attribute(tag: str, name: str, value: str, widgets: bool) -> bool:
    if name == "id":  # nbconvert's heading anchors and page containers (#notebook-container)
        return bool(_ID.fullmatch(value))
    if name == "name":  # nbgrader's <a name="grade_id"> targets of the page's table of contents
        return tag == "a" and bool(_ID.fullmatch(value))
    if widgets and tag in ("input", "button", "textarea"):
        if name == "class":
            return True
        if tag == "input":
            return ((name == "type" and value.strip().lower() in ("number", "checkbox"))
                    or (name == "style" and bool(_WIDGET_STYLE.fullmatch(value))) or name in ("checked", "disabled"))
        return tag == "button" and name == "type" and value.strip().lower() == "button"
    return _allow_attribute(tag, name, value)


def _nh3_rules(widgets: bool) -> dict:
    def keep(tag, name, value):
        return value if _page_attribute(tag, name, value, widgets) else None

    return dict(tags=set(WIDGET_TAGS if widgets else PAGE_TAGS),
                clean_content_tags=set(PAGE_DROPPED - (WIDGET_TAGS if widgets else PAGE_TAGS)),
                attributes={"*": set(_PAGE_ATTRIBUTES)}, attribute_filter=keep, strip_comments=True,
                link_rel=None, url_schemes={"http", "https", "mailto", "data"})


def clean_fragment(html: str, *, widgets: bool = False) -> str:
    """``html`` (any amount of a page: several cells together) through Ammonia (``nh3``), a parser-based
    sanitizer, with the course's allow-list. What comes out is a serialized tree: every element it
    opens it closes, so nothing after it on the page can become part of a tag it began (an unclosed
    comment, attribute or element in one cell cannot reach into the next)."""
    return nh3.clean(html, **_nh3_rules(widgets))


def _head_styles(page: str) -> tuple[str, list[str]]:
    """The template's ``<title>`` text and ``<style>`` sheets: what comes before the first ``<body``,
    which is the template's own (a notebook's content is rendered inside the body)."""
    end = page.lower().find("<body")
    doc = html5lib.parse(page[:end] if end >= 0 else "", treebuilder="etree", namespaceHTMLElements=False)
    title = next(("".join(t.itertext()) for t in doc.iter("title")), "")
    sheets = ["".join(s.itertext()) for s in doc.iter("style")]
    return title, [css for css in sheets if "</" not in css]  # no way out of the <style> it goes back into


def clean_page(page: str, *, csp: str = FEEDBACK_CSP) -> str:
    """The whole rendered page made safe: the body (everything nbconvert wrote: the template's
    markup and every cell together) through :func:`clean_fragment`; the head rebuilt from the
    template's title and stylesheets, with ``csp`` as a ``<meta>`` policy before anything else.
    No ``<script>`` survives (MathJax's included: math shows as its TeX source)."""
    title, sheets = _head_styles(page)
    body = clean_fragment(page)
    policy = _html.escape(csp, quote=False).replace('"', "&quot;")
    styles = "".join(f'<style type="text/css">\n{css}\n</style>\n' for css in sheets)
    return ('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8" />\n'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}" />\n'
            f"<title>{_html.escape(title)}</title>\n{styles}</head>\n<body>\n{body}\n</body>\n</html>\n")


# --------------------------------------------------------------------------- student markup inside the page

#: What a student's ``id`` becomes on a page (and a student's ``href="#x"``, so that the link still
#: finds it): never one of the page's own ids (formgrader's score boxes are ``id="<grade_id>"``, and
#: its JavaScript finds each one with ``$("#" + grade_id)``; the first match wins).
ID_PREFIX = "user-content-"
#: The classes nbconvert itself writes into a rendered markdown cell or output: heading anchors
#: (``anchor-link``), Pygments' highlighting of fenced code (``highlight`` and its token classes),
#: task lists, pandas' tables. Every other class a student writes goes: Bootstrap 3, which the pages
#: ship, has ``modal-backdrop in`` (a fixed full-window layer) and ``navbar-fixed-top`` (a fixed
#: banner), and formgrader's own JavaScript binds its grading buttons by class (``.nbgrader_cell``,
#: ``.full-credit``, ``.score``, ``.tabbable``).
STUDENT_CLASSES = frozenset({"anchor-link", "highlight", "hll", "task-list-item", "task-list-item-checkbox",
                             "dataframe"}) | frozenset(c for c in STANDARD_TYPES.values() if c)


def _student_attribute(tag: str, name: str, value: str):
    """A student's attribute as it may reach a page, or None: :func:`_allow_attribute`, and then no
    ``id`` that is not prefixed, no ``name``, no class outside :data:`STUDENT_CLASSES`."""
    name = name.lower()
    if name == "class":
        kept = [c for c in value.split() if c in STUDENT_CLASSES]
        return " ".join(kept) or None
    if name == "id":
        return ID_PREFIX + value if tag in _HEADINGS and _ID.fullmatch(value) else None
    if not _allow_attribute(tag, name, value):
        return None
    if tag == "a" and name == "href" and value.startswith("#") and len(value) > 1:
        return "#" + ID_PREFIX + value[1:]  # a link to a heading of the student's own: still works
    return value


_ISOLATE = dict(tags=set(ALLOWED_TAGS), clean_content_tags=set(PAGE_DROPPED - ALLOWED_TAGS),
                attributes={"*": set(_PAGE_ATTRIBUTES)}, attribute_filter=_student_attribute, strip_comments=True,
                link_rel=None, url_schemes={"http", "https", "mailto", "data"})


def isolate_fragment(html) -> str:
    """One piece of a student's markup (a rendered markdown cell, an HTML output, a raw cell) as it
    may go into a page: through Ammonia (``nh3``) on its own, with the cells' allow-list and
    :func:`_student_attribute`. What comes out is a closed tree: nothing in it can close the page's
    element around it (a stray ``</div>`` is gone) or name one of the page's elements (ids prefixed
    with :data:`ID_PREFIX`, no ``name``, no class but nbconvert's own), and no ``style`` but a table
    cell's ``text-align``: nothing positioned over the page."""
    html = html.decode() if isinstance(html, bytes) else "".join(html) if isinstance(html, list) else str(html)
    return nh3.clean(html, **_ISOLATE)


_CELL_TAG = re.compile(r"[A-Za-z0-9_.:\-]{1,100}")
_GRADE_ID = re.compile(r"[A-Za-z0-9_\-]{1,200}")


def isolate_notebook(nb):
    """``nb`` (changed in place, returned) with nothing of the student's in the markup the template
    itself writes, and every piece of the student's own markup through :func:`isolate_fragment`.
    nbconvert's templates put some notebook values into their own tags: cell tags into a ``class``
    (``celltag_<tag>``: a tag with a space adds any class), an image's ``width``/``height`` unquoted
    (``1 class=modal-backdrop`` adds attributes), ``execution_count`` and nbgrader's ``grade_id``
    unescaped. So: tags without spaces only, width and height only as numbers, an execution count
    only as a number, a ``grade_id`` only as nbgrader allows one (else the cell is shown as a plain
    cell). HTML outputs and raw cells are isolated here; markdown is isolated after it is rendered
    (the exporter's ``markdown2html``, :func:`.feedback.template_exporter_class`)."""
    for cell in nb.get("cells", []):
        meta = cell.get("metadata")
        if isinstance(meta, dict):
            tags = meta.get("tags")
            if tags is not None:
                meta["tags"] = [t for t in tags if isinstance(t, str) and _CELL_TAG.fullmatch(t)] \
                    if isinstance(tags, list) else []
            grader = meta.get("nbgrader")
            if grader is not None and (not isinstance(grader, dict) or (
                    "grade_id" in grader and not (isinstance(grader["grade_id"], str)
                                                  and _GRADE_ID.fullmatch(grader["grade_id"])))):
                del meta["nbgrader"]
        if "execution_count" in cell and not (type(cell["execution_count"]) is int):
            cell["execution_count"] = None
        if cell.get("cell_type") == "raw" and isinstance(cell.get("source"), (str, list)):
            cell["source"] = isolate_fragment(cell["source"])
        for out in cell.get("outputs", []) if isinstance(cell.get("outputs"), list) else []:
            if not isinstance(out, dict):
                continue
            if "execution_count" in out and not (type(out["execution_count"]) is int):
                out["execution_count"] = None
            data = out.get("data")
            if isinstance(data, dict) and "text/html" in data:
                data["text/html"] = isolate_fragment(_text(data["text/html"]) or "")
            meta = out.get("metadata")
            if isinstance(meta, dict):
                _isolate_output_metadata(meta)
                for inner in meta.values():
                    if isinstance(inner, dict):
                        _isolate_output_metadata(inner)
    return nb


def _isolate_output_metadata(meta: dict) -> None:
    for key in ("width", "height"):
        if key in meta:
            value = _meta_value(key, meta[key])
            if value is None:
                del meta[key]
            else:
                meta[key] = value
    meta.pop("isolated", None)  # an <iframe> of the HTML, with the template's own style
