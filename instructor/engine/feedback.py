"""Report: the feedback a student reads — nbgrader's HTML, made quicker to write and easier to read.

* :func:`exporter_class` — the HTML exporter ``generate_feedback`` uses (``GenerateFeedback.exporter_class``):
  nbconvert's, with two costs removed that bought nothing here. Its Jinja templates are compiled once
  per process, not once per notebook (a bytecode cache in memory), and the page is not parsed back
  through BeautifulSoup after rendering (nbconvert does that to put ``tabindex`` on JupyterLab-template
  cells, which the classic feedback template has none of, and ``alt`` text on images, done here with one
  pattern). Measured on 11 graded notebooks across the sample class: 0.36 -> 0.10 s a page, the same page.
  Then the whole page, as rendered, goes through :func:`.sanitize.clean_page` (Ammonia, ``nh3``: the
  body parsed and rebuilt from an allow-list, the head rebuilt from the template's title and styles)
  and carries a ``Content-Security-Policy`` ``<meta>`` with ``script-src 'none'``
  (:data:`.sanitize.FEEDBACK_CSP`): two layers, each enough alone to keep a student's script from
  running in the page. Before any of that, each piece of student markup is isolated
  (:func:`.sanitize.isolate_fragment`, :func:`.sanitize.isolate_notebook`): no student id, name or class
  can reach the page's selectors, nothing can be positioned over it. formgrader's page uses the same exporter.
* :func:`annotate_feedback` — the grader's notes on top, questions named, long lines wrapped, and a
  written answer not graded by hand yet shown as "pending hand grading" (nbgrader's template shows it
  as ``0.0 / 3.0``), at the question and in the total; once an instructor has graded it by hand
  (``manual_score`` in the gradebook), nbgrader's real score shows.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import html
import re

__all__ = ["FEEDBACK_CSS", "IMAGE_ALT", "exporter_class", "template_exporter_class", "question_label",
           "annotate_feedback", "hand_grading", "mark_pending", "localize_template"]

#: Feedback a student reads at a glance: long lines wrap (the "try next" hint is never cut at the right edge).
FEEDBACK_CSS = ("<style>/* added by the course's grader */ pre, .output_text pre, .output_error pre, code "
                "{ white-space: pre-wrap !important; overflow-wrap: anywhere; word-break: break-word; } "
                ".course-question { font-family: monospace; }</style>")

#: What an image without alternative text gets (nbconvert's own wording).
IMAGE_ALT = "No description has been provided for this image"
_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\balt\s*=)(?=[\s/>])", re.IGNORECASE)


def exporter_class():
    """nbconvert's ``HTMLExporter``, rendering without the two costs above (same page, same filters),
    the page then made safe (:func:`.sanitize.clean_page`)."""
    return _classes()[1]


def template_exporter_class():
    """The same exporter without :func:`.sanitize.clean_page`: the template's text exactly, a string
    put together from the cells and nothing parsed back (formgrader's secured page splits it into
    the template's part and the notebook's, :func:`instructor.classroom.formgrader.secure_submission_page`)."""
    return _classes()[0]


def cached_highlighter():
    """The highlighter the feedback pages use (nbconvert's ``Highlight2HTML``, results kept for the process)."""
    return _classes()[2]


@functools.lru_cache(maxsize=None)
def _classes():
    from jinja2 import BytecodeCache, pass_context
    from nbconvert.exporters import HTMLExporter, TemplateExporter
    from nbconvert.exporters.html import WidgetsDataTypeFilter
    from nbconvert.filters.highlight import Highlight2HTML

    from .sanitize import clean_page, isolate_fragment, isolate_notebook

    highlighted: dict = {}   # (source, language, magics language, options) -> html: a pure function's results

    class CachedHighlight(Highlight2HTML):
        """nbconvert's highlighter, each result kept for the process: most input cells of a class's
        feedback pages are the course's own, the same text on every page (pygments was about a third of
        a page's rendering). The key is everything the result depends on (nbconvert reads the cell's
        metadata for ``magics_language`` only)."""

        def __call__(self, source, language=None, metadata=None):
            magics = metadata.get("magics_language") if metadata else None
            key = (source, language or self.pygments_lexer, magics, repr(sorted(self.extra_formatter_options.items())))
            if len(source) > 20_000:   # only short cells are kept (the course's): a student's 4 MB cells
                return super().__call__(source, language, metadata)   # would fill the grader's memory
            page = highlighted.get(key)
            if page is None:
                page = super().__call__(source, language, metadata)
                if len(highlighted) >= 4096:
                    highlighted.clear()
                highlighted[key] = page
            return page

    class InMemory(BytecodeCache):
        """Compiled templates kept for the life of the process, keyed by Jinja (name and source checksum)."""

        def __init__(self):
            self.code = {}

        def load_bytecode(self, bucket):
            code = self.code.get((bucket.key, bucket.checksum))
            if code is not None:
                bucket.code = code

        def dump_bytecode(self, bucket):
            self.code[(bucket.key, bucket.checksum)] = bucket.code

    compiled = InMemory()

    class TemplateOnly(HTMLExporter):
        """The page as the template writes it: compiled templates reused, no re-parse of the page.
        Every piece of the student's markup isolated before it goes in (:func:`.sanitize.isolate_notebook`
        for outputs, raw cells and the values the template writes into its own tags;
        :func:`.sanitize.isolate_fragment` for each markdown cell, once rendered)."""

        #: Off only in tests, for the control page that shows the student's markup reaching the page.
        isolate_student_markup = True

        def _create_environment(self):
            environment = super()._create_environment()
            environment.bytecode_cache = compiled
            return environment

        @pass_context
        def markdown2html(self, context, source):
            html = super().markdown2html(context, source)
            return isolate_fragment(html) if self.isolate_student_markup else html

        def from_notebook_node(self, nb, resources=None, **kw):
            if self.isolate_student_markup:
                nb = isolate_notebook(copy.deepcopy(nb))
            language = nb.metadata.get("language_info", {})
            lexer = language.get("pygments_lexer", language.get("name"))
            self.register_filter("highlight_code", self.filters.get(
                "highlight_code", CachedHighlight(pygments_lexer=lexer, parent=self)))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return _IMG_WITHOUT_ALT.sub(f'<img alt="{IMAGE_ALT}"', page), resources

    class FeedbackExporter(TemplateOnly):
        """HTML feedback page: :class:`TemplateOnly`'s page, made safe as a whole."""

        def from_notebook_node(self, nb, resources=None, **kw):
            page, resources = super().from_notebook_node(nb, resources, **kw)
            # the assembled page, not cell by cell: markup a student split across cells (a comment
            # opened in one, closed inside an attribute of the next) forms no tag; no script at all
            return clean_page(page), resources

    return TemplateOnly, FeedbackExporter, CachedHighlight


def question_label(grade_id: str) -> str:
    """What the feedback calls a graded test cell: the function it tests (``cube_sum_grad_tests`` ->
    ``cube_sum_grad``), never nbgrader's generic "Test cell"."""
    return grade_id[:-len("_tests")] if grade_id.endswith("_tests") else grade_id


#: A submitted notebook's grades in nbgrader's gradebook (its schema since 0.6): name, points, scores.
_GRADES_SQL = """
SELECT bc.name, gc.max_score, g.auto_score, g.manual_score
FROM grade g
JOIN submitted_notebook sn ON sn.id = g.notebook_id
JOIN notebook n ON n.id = sn.notebook_id
JOIN submitted_assignment sa ON sa.id = sn.assignment_id
JOIN assignment a ON a.id = sa.assignment_id
JOIN grade_cells gc ON gc.id = g.cell_id
JOIN base_cell bc ON bc.id = gc.id
WHERE n.name = ? AND a.name = ? AND sa.student_id = ?"""


def hand_grading(path, res) -> tuple[dict[str, float], bool]:
    """``({grade_id: points}, any graded by hand)`` for the feedback page ``path``
    (``<course>/feedback/<student>/<assignment>/<notebook>.html``): the answers nobody has scored yet
    (no autograde score, no manual score: nbgrader counts them 0). Read, read-only, from the course's
    gradebook, which a hand grade in formgrader updates (``res.questions`` can be older than that);
    without that gradebook, from ``res.questions``."""
    import sqlite3
    from pathlib import Path

    path = Path(path)
    db = path.parents[3] / "gradebook.db" if len(path.parents) > 3 else None
    if db is not None and db.is_file():
        try:
            with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as con:
                rows = con.execute(_GRADES_SQL, (path.stem, res.assignment, res.student)).fetchall()
        except sqlite3.Error:
            rows = []
        if rows:
            return ({name: float(points) for name, points, auto, manual in rows if auto is None and manual is None},
                    any(manual is not None for *_, manual in rows))
    return ({q.grade_id: float(q.max_score) for q in getattr(res, "questions", [])
             if q.kind != "auto" and q.score is None}, False)


_TOTAL = re.compile(r"(<h4>[^<]*\(Score: )([0-9.]+) / ([0-9.]+)(\)</h4>)")


def mark_pending(text: str, pending: dict[str, float], graded_by_hand: bool = False, lang: str | None = None) -> str:
    """nbgrader's feedback page with each answer in ``pending`` (grade id: points) shown as pending hand
    grading instead of a score of 0, in the list at the top, at the answer, and in the total:
    "Score: 10 / 13 autograded, 3 points pending hand grading"."""
    if not pending:
        return text
    from autograder.i18n import N_
    from .i18n import translate_verdict

    def tr(english: str) -> str:   # a notebook of the Chinese edition: in Chinese (``lang``)
        return translate_verdict(english, lang)

    for gid, points in pending.items():
        name = re.escape(html.escape(gid))
        text = re.sub(rf'(<li><a href="#{name}">[^<]*</a>) \(Score: [0-9.]+ / [0-9.]+\)',
                      lambda m: f"{m.group(1)} " + tr(N_(f"(pending hand grading, {points:g} points)")), text, count=1)
        text = re.sub(rf'(<a name="{name}"></a><div class="panel-heading"><span class="nbgrader-label">[^<]*</span>'
                      rf'\s*<span class="pull-right">\s*)Score: [0-9.]+ / [0-9.]+',
                      lambda m: m.group(1) + tr(N_(f"Pending hand grading ({points:g} points)")), text)
    waiting = sum(pending.values())

    def total(m) -> str:
        score, out_of = float(m.group(2)), float(m.group(3)) - waiting
        so_far = N_("graded so far") if graded_by_hand else N_("autograded")
        if lang:
            return m.group(1) + tr(N_(f"{score:g} / {out_of:g} {so_far}, {waiting:g} point(s) pending hand grading")) \
                + m.group(4)
        return (f"{m.group(1)}{score:g} / {out_of:g} {so_far}, {waiting:g} point{'s' if waiting != 1 else ''} "
                f"pending hand grading{m.group(4)}")

    return _TOTAL.sub(total, text, count=1)


#: nbgrader's feedback template's own words (its ``feedback/index.html.j2``), in the places it puts them
_TEMPLATE_WORDS = [
    ('<span class="nbgrader-label">Student\'s answer</span>', "Student's answer", '<span class="nbgrader-label">{}</span>'),
    ('<span class="nbgrader-label">Student\'s task</span>', "Student's task", '<span class="nbgrader-label">{}</span>'),
    ('<span class="nbgrader-label">Grade cell: ', "Grade cell:", '<span class="nbgrader-label">{}'),
    ('<span class="nbgrader-label">Task: ', "Task:", '<span class="nbgrader-label">{}'),
    ('<a href="#top">(Top)</a>', "(Top)", '<a href="#top">{}</a>'),
    ("<b>Comments:</b>", "Comments:", "<b>{}</b>"),
    ('<li class="late-penalty">Late submission penalty (', "Late submission penalty", '<li class="late-penalty">{} ('),
]
_TEMPLATE_LINKS = re.compile(r'(<li><a href="#[^"]*">)(Coding free-response|Written response|Task|Comment)(</a>)')
_TEMPLATE_SCORE = re.compile(r'(\(|<span class="pull-right">\s*)Score: (?=-?[0-9])')


def localize_template(text: str, lang: str | None) -> str:
    """A feedback page of another edition with nbgrader's template words in its language (unchanged for
    English): the labels, the list's kinds of cell, "Score:", "(Top)"."""
    if not lang or lang == "en":
        return text
    from autograder.i18n import N_
    from .i18n import translate_text

    def tr(english: str) -> str:   # "Score:" -> "得分：" (a full-width colon needs no space after it)
        shown = html.escape(translate_text(english, lang), quote=False)
        return shown + " " if english.endswith(":") and not shown.endswith("：") else shown

    N_("Student's answer"), N_("Student's task"), N_("Grade cell:"), N_("Task:"), N_("(Top)"), N_("Comments:")
    N_("Late submission penalty"), N_("Coding free-response"), N_("Written response"), N_("Task"), N_("Comment")
    for english, words, shown in _TEMPLATE_WORDS:
        text = text.replace(english, shown.format(tr(words)))
    text = _TEMPLATE_LINKS.sub(lambda m: m.group(1) + tr(m.group(2)) + m.group(3), text)
    return _TEMPLATE_SCORE.sub(lambda m: m.group(1) + tr(N_("Score:")), text)


def annotate_feedback(res) -> None:
    """The feedback made readable, and a short note at the top: what grading undid or stopped, and
    disagreements (``res``: a grading result with ``flags``, ``integrity`` and the ``feedback`` files).
    The summary names each question instead of "Test cell"; long lines wrap; an answer waiting for its
    hand grade says so (:func:`mark_pending`)."""
    from autograder.i18n import N_
    from .i18n import release_language, translate_verdict

    lines = res.flags + res.integrity
    for path in res.feedback:
        # a notebook of the Chinese edition: the notes in Chinese (the results keep them in English)
        lang = release_language(path.parents[3] / "release" / res.assignment) if len(path.parents) > 3 else None
        note = ("<div style='border:2px solid #c60;padding:8px;margin:8px'><b>"
                + html.escape(translate_verdict(N_("Notes from the grader"), lang)) + "</b><ul>"
                + "".join(f"<li>{html.escape(translate_verdict(l, lang))}</li>" for l in lines)
                + "</ul></div>") if lines else ""
        question = html.escape(translate_verdict(N_("question"), lang))
        text = path.read_text(encoding="utf-8")
        text = mark_pending(text, *hand_grading(path, res), lang=lang)
        text = re.sub(r'<a href="#([A-Za-z0-9_\-]+)">Test cell</a>',
                      lambda m: f'<a href="#{m.group(1)}">{question} <span class="course-question">'
                                f'{html.escape(question_label(m.group(1)))}</span></a>', text)
        text = localize_template(text, lang)
        k = text.find("</head>")
        if k >= 0:
            text = text[:k] + FEEDBACK_CSS + text[k:]
        i = text.find("<body")
        j = text.find(">", i) + 1 if i >= 0 else 0
        path.write_text(text[:j] + note + text[j:], encoding="utf-8")
