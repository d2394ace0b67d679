"""Student markup cannot reach the page around it (issue 36, item 1): no script needed.

Two attacks an outside review found, both with markup that every earlier layer let through (no
script, so neither the sanitizer nor the Content-Security-Policy had anything to stop):

1. *Formgrader takeover.* formgrader's own JavaScript binds each test cell's grading buttons with
   ``$("#" + grade_id).parents(".nbgrader_cell")``; the first element with that id wins. A student's
   markdown of nested ``<div class="nbgrader_cell"><h2 id="<grade_id>">`` blocks, one per test cell,
   with an invisible full-window ``<a class="full-credit modal-backdrop fade">`` innermost, is found
   first: the instructor's first click anywhere on the page saved full manual marks on every test
   cell. (Even without any HTML, a markdown heading ``## <grade_id>`` gets that id from nbconvert.)
2. *Overlay.* The pages ship Bootstrap 3: ``<a class="modal-backdrop in" href=...>`` is a fixed
   full-window link, ``navbar-fixed-top`` a fixed banner; a click anywhere loaded the student's URL.

The defence (:func:`instructor.engine.sanitize.isolate_fragment` and ``isolate_notebook``, run by the
exporter behind the feedback page and formgrader's page): each piece of student markup closed on its
own, ids prefixed ``user-content-``, no ``name``, no class but nbconvert's own, no style but a table
cell's alignment; nothing of the student's inside the template's own tags. The class report has no
student markup at all (everything escaped).

Every page is checked in Chromium with a corpus of markup-only payloads, and each has a CONTROL
page where the payloads work: the same page built with the defence monkeypatched off (the exporter's
``isolate_student_markup``; for the class report, its escaping). Each payload must show its effect on
the control, or the test proves nothing.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.lab import instructor_env
from instructor.classroom import report
from instructor.engine.pipeline import QuestionScore, Result
from instructor.engine.sanitize import ID_PREFIX, isolate_fragment, isolate_notebook, render_markdown
from test_browser import CHROMIUM, CHROMIUM_ARGS, _free_port, _require_browser
from test_html_two_layers import FEEDBACK_RESOURCES, PNG, _feedback_config, isolation_off as defence_off

COURSE_ID = "inplace-autograd"
ASSIGNMENT, NOTEBOOK = "a1", "takeover"
GRADE_IDS = ("a_tests", "b_tests")        # two test cells, 4 points each, failed by the autograder
POINTS = 4.0
TOKEN = "page-takeover-test-token"
MARK = "http://127.0.0.1:9/phish/"        # nothing listens there: the test's route answers (204)
VIEWPORT = {"width": 1280, "height": 900}
CLICK = (12, 450)                         # the page's left margin: nothing of the page's own is there

# --------------------------------------------------------------------------- the payloads (no script)


def _hijack(grade_ids) -> str:
    """The takeover: nested fake grading cells, one per test cell, a full-window invisible
    full-credit link innermost."""
    opened = "".join(f'<div class="nbgrader_cell"><h2 id="{g}">{g}</h2>' for g in grade_ids)
    return (f'<div title="payload:hijack">{opened}<a class="full-credit modal-backdrop fade" href="#">.</a>'
            + "</div>" * len(grade_ids) + "</div>")


def _payloads():
    """{name: (where, markup)} of markup-only payloads; each element of a payload carries
    ``title="payload:<name>"`` (titles survive) so the page can find it, except where the payload
    is a value the template writes into its own tags (``celltag``, ``png-width``, ``heading-anchor``)."""
    t = 'title="payload:{}"'.format
    return {
        "overlay-link": ("markdown", f'<a class="modal-backdrop in" href="{MARK}overlay-link" {t("overlay-link")}>.</a>'),
        "fixed-banner": ("html", f'<div class="navbar navbar-default navbar-fixed-top" {t("fixed-banner")}>'
                                 "All tests passed - 8 / 8</div>"),
        "fixed-bottom": ("markdown", f'<div class="navbar-fixed-bottom" {t("fixed-bottom")}>Grade: 8 / 8</div>'),
        "affix": ("html", f'<p class="affix" {t("affix")}>pinned</p>'),
        "hijack": ("markdown", _hijack(GRADE_IDS)),
        "name-anchor": ("markdown", f'<a name="{GRADE_IDS[0]}" {t("name-anchor")}>x</a> <a name="top" {t("name-anchor")}>y</a>'),
        "page-id": ("html", f'<div id="notebook-container" class="nbgrader_cell score tabbable" {t("page-id")}>z</div>'),
        # stray end tags: the rest of the cell outside the cell (and outside the notebook's container)
        "breakout": ("markdown", "</div>" * 8 + f'<p class="text-center" {t("breakout")}>outside the cell</p>'),
        # no HTML at all: nbconvert's own heading anchor is the test cell's id
        "heading-anchor": ("markdown", f"## {GRADE_IDS[1]}\n\nmy heading"),
        # values the template writes into its own tags
        "celltag": ("celltag", "x navbar-fixed-bottom"),
        "png-width": ("png-width", "1 class=navbar-fixed-top title=payload:png-width"),
    }


def _test_cell(grade_id: str):
    """A test cell as the autograded notebook holds it: failed (an AssertionError output)."""
    return new_code_cell(f"assert check_{grade_id}()", execution_count=3, outputs=[
        new_output("error", ename="AssertionError", evalue="", traceback=["AssertionError"])],
        metadata={"nbgrader": {"grade": True, "solution": False, "locked": True, "grade_id": grade_id,
                               "points": POINTS, "score": 0.0, "schema_version": 3}})


def _notebook(names=None):
    """Honest notes (a heading that links to itself, a table, a plot), the payloads ``names`` (all by
    default), the test cells last (as in the course's notebooks, the student's work comes first)."""
    cells = [new_markdown_cell("# My notes\n\nSee [my notes](#My-notes).\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"),
             new_code_cell("plot()", execution_count=1, outputs=[new_output(
                 "display_data", data={"image/png": PNG, "text/plain": "<Figure>"})])]
    for name, (where, value) in _payloads().items():
        if names is not None and name not in names:
            continue
        if where == "markdown":
            cells.append(new_markdown_cell(value))
        elif where == "html":
            cells.append(new_code_cell("show()", execution_count=2, outputs=[
                new_output("display_data", data={"text/html": value, "text/plain": "<html>"})]))
        elif where == "celltag":
            cells.append(new_code_cell("# CELLTAG_PAYLOAD", execution_count=2, metadata={"tags": [value]}))
        elif where == "png-width":
            cells.append(new_code_cell("plot()", execution_count=2, outputs=[new_output(
                "display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                metadata={"image/png": {"width": value}})]))
    cells.append(new_markdown_cell("The end of my notes."))
    cells += [_test_cell(g) for g in GRADE_IDS]
    nb = new_notebook(cells=cells, metadata={"language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


# --------------------------------------------------------------------------- what a page shows

# For each payload: why it reached the page (empty: it did not). The page's selectors are those of
# formgrader's JavaScript (formgrade.js, formgrade_models.js) and Bootstrap 3's positioned classes.
INSPECT = """([gradeIds, prefix]) => {
  const pageSelectors = ['.nbgrader_cell', '.full-credit', '.no-credit', '.mark-graded', '.score', '.extra-credit',
    '.comment', '.tabbable', '.score-saved', '.comment-saved', '.modal-backdrop', '.navbar-fixed-top',
    '.navbar-fixed-bottom', '.affix', '.modal', '.name-shown', '.name-hidden', '[data-link]'];
  const regions = '.text_cell_render, .output_subarea';
  const found = {};
  const add = (name, why) => { (found[name] = found[name] || []).includes(why) || found[name].push(why); };
  const inspect = (name, roots, self) => {
    for (const root of roots) {
      const all = self ? [root] : [root, ...root.querySelectorAll('*')];
      if (!self && !root.closest(regions)) add(name, 'outside the cell');
      for (const e of all) {
        const pos = getComputedStyle(e).position;
        if (pos === 'fixed' || pos === 'absolute' || pos === 'sticky') add(name, 'position ' + pos);
        for (const s of pageSelectors) if (e.matches(s)) add(name, 'matches ' + s);
        if (!self && e.id && !e.id.startsWith(prefix)) add(name, 'id ' + e.id);
        if (!self && e.getAttribute('name')) add(name, 'name ' + e.getAttribute('name'));
      }
    }
  };
  const titled = {};
  for (const e of document.querySelectorAll('[title^="payload:"]')) {
    const name = e.title.slice(8);
    if (!e.parentElement.closest('[title="payload:' + name + '"]')) (titled[name] = titled[name] || []).push(e);
  }
  for (const [name, roots] of Object.entries(titled)) inspect(name, roots, name === 'png-width');
  inspect('celltag', [...document.querySelectorAll('.cell')].filter(
    e => e.querySelector('.input_area') && e.querySelector('.input_area').textContent.includes('CELLTAG_PAYLOAD')), true);
  for (const g of gradeIds) {  // whoever holds a test cell's id: the page's own score box, or no one
    const e = document.getElementById(g);
    for (const h of document.querySelectorAll('[id="' + g + '"]'))  // nbconvert's anchor of a student's heading
      if (h.closest(regions) && !h.closest('[title^="payload:"]')) add('heading-anchor', 'has the id ' + g);
    if (e && e.closest('[title="payload:hijack"]')) add('hijack', 'holds the id ' + g);
    const named = document.getElementsByName(g)[0];
    if (named && named.closest('[title^="payload:"]')) add('name-anchor', 'first name ' + g);
  }
  const top = document.getElementsByName('top')[0];
  if (top && top.closest('[title^="payload:"]')) add('name-anchor', 'first name top');
  const hits = {};  // what is on top at the window's four corners and its centre
  for (const [x, y] of [[8, 8], [innerWidth - 24, 8], [8, innerHeight - 8], [innerWidth - 24, innerHeight - 8],
                        [innerWidth / 2, innerHeight / 2]]) {
    const p = document.elementFromPoint(x, y);
    const owner = p && p.closest('[title^="payload:"]');
    if (owner) hits[owner.title.slice(8)] = (hits[owner.title.slice(8)] || 0) + 1;
  }
  for (const [name, n] of Object.entries(hits)) if (n >= 3) add(name, 'covers the page');
  const own = document.querySelector('a.anchor-link[href="#' + prefix + 'My-notes"]');
  return {found, honest: {
    anchor: !!(own && document.getElementById(prefix + 'My-notes')),
    link: !!document.querySelector('a[href="#' + prefix + 'My-notes"]:not(.anchor-link)'),
    text: document.body.innerText.includes('My notes') && document.body.innerText.includes('The end of my notes.'),
    plots: document.querySelectorAll('img[src^="data:image/png"]').length,
    cells: document.querySelectorAll('td').length}};
}"""


def _visit(browser, url: str, *, headers=None, fulfil=None, before_click=None, settle_ms=800) -> dict:
    """Open ``url`` (``fulfil``: (html, csp) served in place of the real page), inspect it, click once
    in the page's margin; what the page showed and where the click led."""
    context = browser.new_context(extra_http_headers=headers, viewport=VIEWPORT)
    marks, console = [], []

    def route(r):
        u = r.request.url
        if u.startswith(MARK):
            marks.append(u[len(MARK):] or "/")
            return r.fulfill(status=204)  # a navigation to it leaves the page where it is
        if fulfil is not None and u.split("?")[0] == url.split("?")[0]:
            html, csp = fulfil
            return r.fulfill(status=200, body=html, headers={"Content-Type": "text/html; charset=utf-8",
                                                             **({"Content-Security-Policy": csp} if csp else {})})
        if u.startswith("http") and not u.startswith(("http://127.0.0.1", "http://localhost")):
            return r.abort()
        return r.continue_()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: console.append(m.text))
    page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    try:
        page.goto(url, wait_until="load", timeout=60_000)
        extra = before_click(page) if before_click else {}
        seen = page.evaluate(INSPECT, [list(GRADE_IDS), ID_PREFIX])
        start = page.url
        page.mouse.click(*CLICK)
        page.wait_for_timeout(settle_ms)
        seen.update(extra, marks=marks, moved=page.url != start, console=console)
        return seen
    finally:
        context.close()


def _assert_contained(what: str, seen: dict) -> None:
    assert seen["found"] == {}, f"{what}: student markup reached the page: {seen['found']}"
    assert seen["marks"] == [] and not seen["moved"], f"{what}: a click went to {seen['marks']}"
    h = seen["honest"]
    assert h["text"] and h["plots"] >= 1 and h["cells"] >= 2, f"{what}: the honest notes are gone: {h}"
    assert h["anchor"] and h["link"], f"{what}: the student's own heading anchor no longer works: {h}"


def _assert_control(what: str, seen: dict, names) -> None:
    missing = sorted(set(names) - set(seen["found"]))
    assert not missing, f"{what} control: these payloads did nothing even undefended: {missing} ({seen['found']})"


# --------------------------------------------------------------------------- pieces, without a browser

def test_isolate_fragment_keeps_nbconvert_s_own_markup_and_drops_the_student_s():
    html = render_markdown("# My notes\n\nSee [it](#My-notes) and [site](https://example.org/#x).\n\n"
                           "```python\nx = 1  # c\n```\n\n- [x] done\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n")
    out = isolate_fragment(html)
    assert f'<h1 id="{ID_PREFIX}My-notes">' in out and f'class="anchor-link" href="#{ID_PREFIX}My-notes"' in out
    assert f'href="#{ID_PREFIX}My-notes"' in out and 'href="https://example.org/#x"' in out
    assert '<div class="highlight">' in out and '<span class="n">x</span>' in out
    assert 'class="task-list-item"' in out and 'style="text-align:left"' in out
    # what a student writes
    bad = isolate_fragment('<div class="nbgrader_cell full-credit highlight" id="a_tests" name="b" '
                           'style="position:fixed"><h2 id="a_tests">t</h2><a name="top" class="modal-backdrop in" '
                           'href="http://x/">.</a></div></div></div><p>after</p>')
    assert bad.count("<div") == bad.count("</div>") == 1, bad  # the stray end tags are gone
    assert 'class="highlight"' in bad and "nbgrader_cell" not in bad and "modal-backdrop" not in bad
    assert f'id="{ID_PREFIX}a_tests"' in bad and 'id="a_tests"' not in bad and "name=" not in bad
    assert "position" not in bad and 'href="http://x/"' in bad


def test_isolate_fragment_control_the_raw_markup_carries_the_payloads():
    """What :func:`isolate_fragment` removes is there without it (nbconvert's render as it is)."""
    html = render_markdown(_payloads()["hijack"][1] + "\n\n## a_tests\n")
    assert html.count('class="nbgrader_cell"') == 2 and 'id="a_tests"' in html and "full-credit" in html


def test_isolate_notebook_keeps_the_student_out_of_the_template_s_tags():
    nb = new_notebook(cells=[
        new_code_cell("x", execution_count=1, metadata={"tags": ["ok", "x navbar-fixed-top"]}, outputs=[
            new_output("display_data", data={"image/png": PNG, "text/html": "<b class='affix' id='q'>b</b>"},
                       metadata={"image/png": {"width": "1 class=affix", "height": 40, "isolated": True},
                                 "width": "2 style=position:fixed"})]),
        new_code_cell("y", metadata={"nbgrader": {"grade": True, "grade_id": 'x" class="affix', "points": 1}}),
        nbformat.v4.new_raw_cell("<div class='modal-backdrop in'>raw</div></div>")])
    nb.cells[1].execution_count = '<a class="modal-backdrop in" href="http://x/">'
    nb.cells[0].metadata.tags.append(3)
    before = copy.deepcopy(nb)
    out = isolate_notebook(nb)
    c0 = out.cells[0]
    assert c0.metadata.tags == ["ok"]
    assert c0.outputs[0].metadata == {"image/png": {"height": 40}}
    assert c0.outputs[0].data["text/html"] == "<b>b</b>"
    assert "nbgrader" not in out.cells[1].metadata and out.cells[1].execution_count is None
    assert out.cells[2].source == "<div>raw</div>"
    # the control: those values, as they were, are what the template would have written
    assert before.cells[0].metadata.tags[1] == "x navbar-fixed-top" and "class=" in \
        before.cells[0].outputs[0].metadata["image/png"]["width"]


def test_the_feedback_page_carries_no_student_class_id_or_name_and_the_control_does():
    from instructor.engine.feedback import exporter_class

    nb = _notebook()

    def page():
        html, _ = exporter_class()(config=_feedback_config(True)).from_notebook_node(
            copy.deepcopy(nb), resources=copy.deepcopy(FEEDBACK_RESOURCES))
        return html[html.index("<body"):]

    defended = page()
    with defence_off():
        control = page()
    for marker in ('class="modal-backdrop in"', 'class="nbgrader_cell"', f'id="{GRADE_IDS[1]}"',
                   "navbar-fixed-bottom", 'class="affix"', "celltag_x navbar-fixed-bottom"):
        assert marker in control, marker
        assert marker not in defended, marker


# --------------------------------------------------------------------------- in Chromium

@pytest.mark.browser
def test_feedback_page_payloads_stay_in_their_cells_and_the_control_shows_them_out(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    from instructor.engine.feedback import exporter_class

    files = {}
    for variant in ("defended", "control"):
        for names in (None, {"overlay-link"}):  # the whole corpus; the overlay alone (the click's target)
            nb = _notebook(names)
            if variant == "control":
                with defence_off():
                    html, _ = exporter_class()(config=_feedback_config(True)).from_notebook_node(
                        nb, resources=copy.deepcopy(FEEDBACK_RESOURCES))
            else:
                html, _ = exporter_class()(config=_feedback_config(True)).from_notebook_node(
                    nb, resources=copy.deepcopy(FEEDBACK_RESOURCES))
            key = (variant, "corpus" if names is None else "overlay")
            files[key] = tmp_path / f"{key[0]}-{key[1]}.html"
            files[key].write_text(html, encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            seen = {key: _visit(browser, path.as_uri()) for key, path in files.items()}
        finally:
            browser.close()
    # the feedback's cell-by-cell layer (bleach; output metadata made numbers) already drops a student's
    # name= and an unquoted width: those two payloads show on formgrader's control page
    names = set(_payloads()) - {"png-width", "name-anchor"}
    _assert_control("feedback", seen[("control", "corpus")], names)
    assert seen[("control", "overlay")]["marks"] == ["overlay-link"], seen[("control", "overlay")]
    _assert_contained("feedback", seen[("defended", "corpus")])
    _assert_contained("feedback, the overlay alone", seen[("defended", "overlay")])


#: The class report's corpus, one payload in each field a student controls. The report ships no
#: Bootstrap: its overlay and banner position themselves (the report's policy allows inline styles).
REPORT_PAYLOADS = {
    "student": (f'<a class="modal-backdrop in" href="{MARK}report" title="payload:report-overlay" '
                'style="position:fixed;top:0;left:0;right:0;bottom:0;display:block;z-index:9">.</a>'),
    "flag": ('<div title="payload:report-banner" style="position:fixed;top:0;left:0;right:0;z-index:8;'
             'background:#2e8b57;color:#fff">All tests passed - 8 / 8</div>'),
    "verdict": '<section id="reteach" class="tabbable" title="payload:report-id">re-teach nothing</section>',
    "error": '<a name="top" title="payload:report-name">x</a>',
}


def _report_results() -> list[Result]:
    p = REPORT_PAYLOADS

    def r(student, score, **kw):
        return Result(student, "00_orientation", True, [QuestionScore("q_tests", score, 2.0, "auto")], seconds=2.0,
                      verdicts={"q_tests": {"passed": score == 2.0, "message": f"f raised {p['verdict']}",
                                            "cases": 1}}, **kw)

    return [r("ann", 2.0), r(p["student"], 0.0, flags=[p["flag"]], integrity=[p["flag"]]),
            Result("bob", "00_orientation", False, error=p["error"], seconds=1.0)]


@pytest.mark.browser
def test_class_report_shows_student_markup_as_text_and_the_control_does_not(tmp_path, monkeypatch):
    _require_browser()
    from playwright.sync_api import sync_playwright

    pages = {"defended": report.write_report(_report_results(), tmp_path / "defended.html", source="hostile",
                                             generated="g")}
    with monkeypatch.context() as m:
        m.setattr(report, "esc", lambda s: "" if s is None else str(s))  # the control: nothing escaped
        pages["control"] = report.write_report(_report_results(), tmp_path / "control.html", source="hostile",
                                               generated="g")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            seen = {k: _visit(browser, v.as_uri()) for k, v in pages.items()}
        finally:
            browser.close()
    control, defended = seen["control"], seen["defended"]
    names = {"report-overlay", "report-banner", "report-id", "report-name"}
    assert names <= set(control["found"]) and control["marks"] == ["report"], control
    assert defended["found"] == {} and defended["marks"] == [] and not defended["moved"], defended
    text = pages["defended"].read_text()
    assert not any(raw in text for raw in REPORT_PAYLOADS.values())
    assert "&lt;a class=&quot;modal-backdrop in&quot;" in text  # shown, as text


# --------------------------------------------------------------------------- formgrader

def _gradebook(course: Path, students) -> dict:
    """The gradebook: two test cells, failed by the autograder (0 of 4 each), for each student;
    {student: submission notebook id}."""
    from nbgrader.api import Gradebook

    ids = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(NOTEBOOK, ASSIGNMENT)
        for g in GRADE_IDS:
            gb.add_grade_cell(g, NOTEBOOK, ASSIGNMENT, max_score=POINTS, cell_type="code")
        for s in students:
            gb.add_student(s)
            gb.add_submission(ASSIGNMENT, s)
            for g in GRADE_IDS:
                grade = gb.find_grade(g, NOTEBOOK, ASSIGNMENT, s)
                grade.auto_score = 0.0
            gb.db.commit()
            ids[s] = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, s).id
    return ids


def _manual_scores(course: Path, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        return {g: gb.find_grade(g, NOTEBOOK, ASSIGNMENT, student).manual_score for g in GRADE_IDS}


def _reset_scores(course: Path, student: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        for g in GRADE_IDS:
            gb.find_grade(g, NOTEBOOK, ASSIGNMENT, student).manual_score = None
        gb.db.commit()


STUDENTS = {"mallory": {"hijack"}, "eve": None, "oscar": {"overlay-link"}}  # the takeover; the corpus; the overlay


@pytest.fixture(scope="module")
def formgrader(tmp_path_factory):
    """A Jupyter server as ``make lab-instructor`` runs it (the course's formgrader extension), on a
    course folder with one submission per entry of :data:`STUDENTS`, never through the pipeline (the
    course folder does not load the repository's nbgrader_config.py: the extension alone defends)."""
    root = tmp_path_factory.mktemp("takeover")
    course = root / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(f'c = get_config()  # noqa\nc.CourseDirectory.course_id = "{COURSE_ID}"\n')
    for student, names in STUDENTS.items():
        folder = course / "autograded" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(_notebook(names), folder / f"{NOTEBOOK}.ipynb")
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + path  # nbgrader runs alembic from there
    try:
        ids = _gradebook(course, STUDENTS)
    finally:
        os.environ["PATH"] = path
    env = instructor_env(root / "jupyter-config")
    env.update(JUPYTER_RUNTIME_DIR=str(root / "runtime"), JUPYTER_DATA_DIR=str(root / "data"),
               JUPYTER_CONFIG_DIR=str(root / "jupyter-user"))
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={course}", f"--ServerApp.port={port}",
           "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", "--ServerApp.open_browser=False",
           f"--IdentityProvider.token={TOKEN}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = root / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 90
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/formgrader/api/status?token={TOKEN}", timeout=5):
                        break
                except OSError:
                    if proc.poll() is not None or time.time() > deadline:
                        pytest.fail("the Jupyter server did not start:\n" + log_path.read_text()[-3000:])
                    time.sleep(0.5)
            yield {"base": base, "course": course, "ids": ids, "log": log_path}
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _control_page(course: Path, student: str, submission_id: str) -> tuple[str, str]:
    """formgrader's page for ``student`` as the extension serves it (nh3, nonce'd scripts, the policy),
    built here with the defence monkeypatched off."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    from instructor.classroom.formgrader import _render_with, secure_submission_page

    c = Config()
    c.HTMLExporter.template_name = "formgrade"  # as nbgrader's FormgradeExtension configures it
    c.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = dict(assignment_id=ASSIGNMENT, notebook_id=NOTEBOOK, submission_id=submission_id, index=0, total=1,
                     base_url="", student=student, last_name="", first_name="",
                     notebook_path=f"/tree/autograded/{student}/{ASSIGNMENT}/{NOTEBOOK}.ipynb")
    nb_path = course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    with defence_off():
        return secure_submission_page(_render_with(HTMLExporter(config=c), str(nb_path)), resources,
                                      "/formgrader/static/")


def _grading_ready(page) -> dict:
    """formgrader's JavaScript ran and bound its grading widgets; who its selector finds for each test cell."""
    page.wait_for_function("() => window.formgrader && formgrader.grades && formgrader.grades.loaded === true",
                           timeout=20_000)
    page.wait_for_timeout(300)
    return {"bound": page.evaluate("""(ids) => ids.map(g => {
        const el = $('#' + g).parents('.nbgrader_cell');
        return [el.length, $('#' + g).is('input.score'), el.find('.full-credit').is('button')];
    })""", list(GRADE_IDS))}


@pytest.mark.browser
def test_formgrader_one_click_gives_no_marks_and_shows_no_overlay_the_control_does(formgrader):
    _require_browser()
    from playwright.sync_api import sync_playwright

    base, course, ids = formgrader["base"], formgrader["course"], formgrader["ids"]
    headers = {"Authorization": f"token {TOKEN}"}
    seen, scores = {}, {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for student in STUDENTS:
                url = f"{base}/formgrader/submissions/{ids[student]}/"
                for variant in ("defended", "control"):
                    _reset_scores(course, student)
                    fulfil = _control_page(course, student, ids[student]) if variant == "control" else None
                    seen[(student, variant)] = _visit(browser, url, headers=headers, fulfil=fulfil,
                                                      before_click=_grading_ready, settle_ms=1500)
                    scores[(student, variant)] = _manual_scores(course, student)
        finally:
            browser.close()
    full = {g: POINTS for g in GRADE_IDS}
    untouched = {g: None for g in GRADE_IDS}
    # the controls: the takeover gives 8/8 with one click in the margin; the overlay navigates; every payload shows
    assert scores[("mallory", "control")] == full, (scores, seen[("mallory", "control")]["console"])
    assert seen[("mallory", "control")]["bound"][0][1] is False  # formgrader's selector found the student's heading
    assert seen[("oscar", "control")]["marks"] == ["overlay-link"], seen[("oscar", "control")]
    _assert_control("formgrader", seen[("eve", "control")], set(_payloads()) - {"hijack"})
    _assert_control("formgrader", seen[("mallory", "control")], {"hijack"})
    # the defended pages: formgrader's widgets bound to its own cells, nothing saved, nothing covered
    for student in STUDENTS:
        s = seen[(student, "defended")]
        assert scores[(student, "defended")] == untouched, (student, scores)
        assert s["bound"] == [[1, True, True]] * len(GRADE_IDS), (student, s["bound"])
        _assert_contained(f"formgrader, {student}", s)
        refused = [m for m in s["console"] if "Content Security Policy" in m]
        assert refused == [], refused
