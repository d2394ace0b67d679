"""No student script runs in the pages that show a submission, in two independent layers (issue #27).

A hostile notebook (``_hostile_notebook``: the two known bypasses of the cell-by-cell sanitizer plus a
corpus of payloads, each of which, if it runs, logs ``PWNED:<name>`` to the console or requests
``http://127.0.0.1:9/pwned/<name>``) is shown in Chromium as:

* the student's feedback page, as the grading pipeline writes it (layer 1: the whole rendered page
  through nh3, :func:`instructor.engine.sanitize.clean_page`; layer 2: a ``script-src 'none'``
  Content-Security-Policy ``<meta>``);
* formgrader's page for the submission, served by the course's formgrader extension in a real
  Jupyter server as ``make lab-instructor`` configures it (layer 1: the notebook part through nh3;
  layer 2: a CSP header that runs only formgrader's own scripts, by nonce), with formgrader's own
  JavaScript still working (its grades load from its API);
* each page with ONE layer only: the sanitizer without the policy, the policy without the sanitizer
  (the raw page nbconvert writes). Either alone must hold;
* the CONTROL: the same notebook rendered without either layer (nbconvert/nbgrader as they come).
  Every payload of the corpus must fire there, or the test proves nothing.

The only thing a policy cannot stop is a ``<meta http-equiv="refresh">`` to a plain URL (a navigation,
no script: CSP has no directive for it); it is expected to fire on the policy-only pages, and nowhere
where the sanitizer runs.
"""
from __future__ import annotations

import contextlib
import http.server
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.lab import instructor_env
from test_browser import CHROMIUM, CHROMIUM_ARGS, _free_port, _require_browser

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
COURSE_ID = "inplace-autograd"
ASSIGNMENT, NOTEBOOK, STUDENT = "a1", "hostile", "mallory"
TOKEN = "two-layers-test-token"
MARK = "http://127.0.0.1:9/pwned/"      # nothing listens there: the test's route answers (204)
# a valid 8x8 PNG (its onload fires)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGM4ISeHFTEMLQkAkL9BAbKfPiIAAAAASUVORK5CYII="


def js(name: str) -> str:
    """The payload's script: no spaces or quotes, so it fits an unquoted attribute too."""
    return f"console.log(/PWNED:{name}/.source)"


def _html_out(html: str):
    return new_output("display_data", data={"text/html": html, "text/plain": "<html>"})


def _hostile_notebook():
    """Honest content (a heading, notes, a table, a plot) and the payloads; {name: where} of the corpus."""
    cells, corpus = [], {}

    def md(name, *sources):
        corpus[name] = "markdown"
        cells.extend(new_markdown_cell(s) for s in sources)

    def out(name, *outputs, where="output"):
        corpus[name] = where
        cells.append(new_code_cell("show()", outputs=list(outputs), execution_count=1))

    cells.append(new_markdown_cell("# Honest notes\n\nMy notes on the gradient, with a table:\n\n"
                                   "| x | y |\n|---|---|\n| 1 | 2 |\n"))
    cells.append(new_code_cell("plot()", execution_count=1, outputs=[
        new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                   metadata={"image/png": {"width": 80, "height": 80}})]))
    # the two known bypasses of the cell-by-cell sanitizer: each cell inert alone
    md("split-comment", "<!--", f'<a title="--><img src=x onerror={js("split-comment")}>">see</a>')
    out("png-width", new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"},
                                metadata={"image/png": {"width": f"1 onload={js('png-width')}"}}))
    # more markup split across cells: an attribute quote opened in one, closed in the next
    md("split-quote", "<div title='", f"<div title=\"'><img src=x onerror={js('split-quote')}>\">y</div>")
    md("script", f"<script>{js('script')}</script>")
    md("img-onerror", f"<img src=x onerror={js('img-onerror')}>")
    md("details-ontoggle", f"<details open ontoggle={js('details-ontoggle')}><summary>s</summary>d</details>")
    md("svg-onload", f"<svg onload={js('svg-onload')}><circle r=5></circle></svg>")
    md("js-href", f'<a href="javascript:{js("js-href")}">a link</a>')
    md("js-href-entity", f'<a href="jav&#x61;scr&#x09;ipt:{js("js-href-entity")}">another link</a>')
    md("cdata", f"<![CDATA[><img src=x onerror={js('cdata')}>]]>")
    out("noscript-mxss", _html_out(f'<noscript><p title="</noscript><img src=x onerror={js("noscript-mxss")}>">'))
    out("iframe-srcdoc", _html_out(f'<iframe srcdoc="<script>{js("iframe-srcdoc")}</script>"></iframe>'))
    out("iframe-data-uri", _html_out(f'<iframe src="data:text/html,<script>{js("iframe-data-uri")}</script>">'
                                     "</iframe>"))
    out("object-data-uri", _html_out(f'<object data="data:text/html,<script>{js("object-data-uri")}</script>">'
                                     "</object>"))
    out("video-onerror", _html_out(f"<video><source src=x onerror={js('video-onerror')}></video>"))
    out("svg-animate", _html_out(f"<svg><animate onbegin={js('svg-animate')} attributeName=x dur=1s></svg>"))
    # nbconvert's wrapper of a JavaScript output calls jQuery's $ first: the student defines it
    out("js-output", _html_out("<script>window.$ = window.$ || function () {};</script>"),
        new_output("display_data", data={"application/javascript": js("js-output"), "text/plain": "<js>"}))
    out("markdown-output", new_output("display_data", data={
        "text/markdown": f"<img src=x onerror={js('markdown-output')}>", "text/plain": "md"}))
    out("meta-refresh", _html_out(f'<meta http-equiv="refresh" content="0;url={MARK}meta-refresh">'),
        where="navigation")
    out("css-url", _html_out(f'<div style="background:url({MARK}css-url)">styled</div>'))
    out("style-import", _html_out(f"<style>@import url({MARK}style-import);</style>"))
    out("link-stylesheet", _html_out(f'<link rel="stylesheet" href="{MARK}link-stylesheet">'))
    out("remote-img", _html_out(f'<img src="{MARK}remote-img">'))
    cells.append(new_markdown_cell("The end of my notes."))
    nb = new_notebook(cells=cells, metadata={"language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb, corpus


# --------------------------------------------------------------------------- the pages

def _feedback_config(defended: bool):
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    from instructor.engine.sanitize import InertNotebook, clean_html

    c = Config()
    c.HTMLExporter.template_name = "feedback"  # what nbgrader's GenerateFeedback sets
    c.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    c.HTMLExporter.extra_template_paths = [os.path.join(handlers.static_path, "node_modules", "bootstrap", "dist",
                                                        "css")]
    c.HTMLExporter.preprocessors = [CSSHTMLHeaderPreprocessor] + ([InertNotebook] if defended else [])
    if defended:  # as instructor/engine/pipeline.py:sandboxed_config configures generate_feedback
        c.HTMLExporter.sanitize_html = True
        c.HTMLExporter.filters = {"clean_html": clean_html}
    return c


@contextlib.contextmanager
def isolation_off():
    """The course's exporter without its isolation of each piece of student markup
    (:func:`instructor.engine.sanitize.isolate_fragment`, ``tests/test_page_takeover.py``): the page as
    nbconvert's template writes it, for the controls and the policy-only pages."""
    from instructor.engine.feedback import template_exporter_class

    cls = template_exporter_class()
    cls.isolate_student_markup = False
    try:
        yield
    finally:
        cls.isolate_student_markup = True


FEEDBACK_RESOURCES = {"nbgrader": {"notebook": NOTEBOOK, "score": 0, "max_score": 0, "late_penalty": 0}}


def _feedback_pages(nb, out: Path) -> dict:
    """{variant: file} of the feedback page: defended (as generate_feedback writes it), sanitizer
    only (its CSP <meta> taken out), policy only (nbconvert's raw page plus the <meta>), control."""
    import copy

    from instructor.engine.feedback import exporter_class, template_exporter_class
    from instructor.engine.sanitize import FEEDBACK_CSP

    defended, _ = exporter_class()(config=_feedback_config(True)).from_notebook_node(
        copy.deepcopy(nb), resources=copy.deepcopy(FEEDBACK_RESOURCES))
    # the page generate_feedback wrote before this defence: the course's exporter without clean_page,
    # nothing made inert (nbconvert's template text as it is)
    with isolation_off():
        raw, _ = template_exporter_class()(config=_feedback_config(False)).from_notebook_node(
            copy.deepcopy(nb), resources=copy.deepcopy(FEEDBACK_RESOURCES))
    meta = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n?')
    assert len(meta.findall(defended)) == 1 and "script-src 'none'" in defended
    assert "<script" not in defended.lower()
    policy = f'<meta http-equiv="Content-Security-Policy" content="{FEEDBACK_CSP}" />'
    head = raw.index("<head>") + len("<head>")
    pages = {"defended": defended, "sanitizer only": meta.sub("", defended),
             "policy only": raw[:head] + policy + raw[head:], "control": raw}
    files = {}
    for variant, html in pages.items():
        files[variant] = out / (variant.replace(" ", "_") + ".html")
        files[variant].write_text(html, encoding="utf-8")
    return files


class _Pages(http.server.BaseHTTPRequestHandler):
    """Serves {path: (html, csp or None)}: formgrader's page variants, with their headers."""
    pages: dict = {}

    def do_GET(self):  # noqa: N802
        html, csp = self.pages.get(self.path, ("not here", None))
        self.send_response(200 if self.path in self.pages else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if csp:
            self.send_header("Content-Security-Policy", csp)
        self.end_headers()
        self.wfile.write(html.encode())

    def log_message(self, *args):
        pass


def _formgrader_variants(nb_path: Path) -> dict:
    """{variant: (html, csp)} of formgrader's submission page built by the extension's own function:
    sanitizer only (no header), policy only (nothing sanitized: no course preprocessor, no nh3),
    control (neither), and the page nbgrader's own formgrader serves (its defaults, no header)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    from instructor.batch import course
    from instructor.classroom.formgrader import _render_with, secure_submission_page

    def config(course_settings: bool):
        c = course.load_config(REPO) if course_settings else Config()  # the repository's nbgrader_config.py
        c.HTMLExporter.template_name = "formgrade"  # as nbgrader's FormgradeExtension configures it
        c.HTMLExporter.extra_template_basedirs = [handlers.template_path]
        return c

    resources = dict(assignment_id=ASSIGNMENT, notebook_id=NOTEBOOK, submission_id="s1", index=0, total=1,
                     base_url="", student=STUDENT, last_name="", first_name="", notebook_path="x.ipynb")
    sanitized, _ = secure_submission_page(_render_with(HTMLExporter(config=config(True)), str(nb_path)),
                                          dict(resources), "/formgrader/static/")
    with isolation_off():
        unsanitized, policy = secure_submission_page(_render_with(HTMLExporter(config=config(False)), str(nb_path)),
                                                     dict(resources), "/formgrader/static/", sanitize=False)
    stock, _ = HTMLExporter(config=config(False)).from_filename(str(nb_path), resources=dict(resources))
    assert "script-src 'nonce-" in policy and "'unsafe-inline'" not in policy.split("style-src")[0]
    return {"sanitizer only": (sanitized, None), "policy only": (unsanitized, policy),
            "control": (unsanitized, None), "nbgrader as shipped": (stock, None)}


# --------------------------------------------------------------------------- the browser

def _visit(browser, url: str, settle_ms: int = 1500, after=None, headers=None) -> dict:
    """Open ``url`` in a fresh context, click every ``javascript:`` link, wait; what fired."""
    context = browser.new_context(extra_http_headers=headers)
    console, marks = [], []

    def route(r):
        url = r.request.url
        if url.startswith(MARK):
            marks.append(url[len(MARK):])
            return r.fulfill(status=204)  # a navigation to it (meta refresh) leaves the page where it is
        if url.startswith("http") and not url.startswith(("http://127.0.0.1", "http://localhost")):
            return r.abort()  # CDNs (MathJax): no network here
        return r.continue_()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: console.append(m.text))
    page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    page.on("response", lambda r: console.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
    try:
        page.goto(url, wait_until="load", timeout=60_000)
        page.evaluate("() => { for (const a of document.querySelectorAll('a[href]')) "
                      "if (a.protocol === 'javascript:') a.click(); }")  # a student's link, clicked
        page.wait_for_timeout(settle_ms)
        fired = {m.split("PWNED:", 1)[1] for m in console if m.startswith("PWNED:")} | set(marks)
        seen = {"fired": fired, "console": console, "url": page.url,
                "plots": page.locator('img[src^="data:image/png"]').count(),
                "cells": page.locator("td").count(), "text": page.locator("body").inner_text()}
        if after:
            seen.update(after(page))
        return seen
    finally:
        context.close()


def _assert_holds(what: str, seen: dict, allowed: set = frozenset()) -> None:
    assert seen["fired"] <= allowed, f"{what}: payloads fired: {sorted(seen['fired'] - allowed)}"
    assert "Honest notes" in seen["text"] and "The end of my notes." in seen["text"], f"{what}: the notes are gone"
    assert seen["plots"] >= 1 and seen["cells"] >= 2, f"{what}: the plot or the table is gone"


def _gradebook(course: Path) -> str:
    """A gradebook with the one submission (its graded cell: what formgrader's widgets show)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(NOTEBOOK, ASSIGNMENT)
        gb.add_grade_cell("answer", NOTEBOOK, ASSIGNMENT, max_score=1, cell_type="code")
        gb.add_solution_cell("answer", NOTEBOOK, ASSIGNMENT)
        gb.add_student(STUDENT)
        gb.add_submission(ASSIGNMENT, STUDENT)
        return gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, STUDENT).id


@pytest.fixture(scope="module")
def formgrader_server(tmp_path_factory):
    """A Jupyter server as ``make lab-instructor`` runs it (the course's formgrader extension) on a
    course folder whose gradebook holds one submission: the hostile notebook, never through the
    pipeline, and an HTML file beside it. The course folder's nbgrader_config.py does not load the
    repository's: the extension's own two layers are all that stand between the notebook and the page."""

    root = tmp_path_factory.mktemp("two_layers")
    course = root / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(f'c = get_config()  # noqa\nc.CourseDirectory.course_id = "{COURSE_ID}"\n')
    nb, corpus = _hostile_notebook()
    nb.cells.append(new_code_cell("answer = 42", metadata={"nbgrader": {
        "grade": True, "solution": True, "grade_id": "answer", "points": 1, "locked": False, "schema_version": 3}}))
    autograded = course / "autograded" / STUDENT / ASSIGNMENT
    autograded.mkdir(parents=True)
    nbformat.write(nb, autograded / f"{NOTEBOOK}.ipynb")
    (autograded / "notes.html").write_text(f"<p>my notes</p><script>{js('submission-file')}</script>")
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + path  # nbgrader runs alembic from there
    try:
        submission_id = _gradebook(course)
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
    log = log_path.open("w")
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
        yield {"base": base, "submission_id": submission_id, "notebook": autograded / f"{NOTEBOOK}.ipynb",
               "corpus": corpus, "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_corpus_fires_without_the_defence_and_nowhere_with_either_layer(tmp_path, formgrader_server):
    _require_browser()
    from playwright.sync_api import sync_playwright

    nb, corpus = _hostile_notebook()
    assert corpus.keys() == formgrader_server["corpus"].keys()
    names = set(corpus)
    navigation = {n for n, where in corpus.items() if where == "navigation"}
    feedback = _feedback_pages(nb, tmp_path)
    variants = _formgrader_variants(formgrader_server["notebook"])
    _Pages.pages = {f"/{v.replace(' ', '_')}": page for v, page in variants.items()}
    pages_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=pages_server.serve_forever, daemon=True).start()
    pages_base = f"http://127.0.0.1:{pages_server.server_address[1]}"
    base, sid = formgrader_server["base"], formgrader_server["submission_id"]

    def formgrader_state(page):
        # formgrader's own JavaScript ran under the policy: its models fetched the grades from its API
        try:
            page.wait_for_function("() => window.formgrader && formgrader.grades && formgrader.grades.loaded === true",
                                   timeout=20_000)
            loaded = True
        except Exception:  # noqa: BLE001 - reported below, with the console
            loaded = page.evaluate("() => [typeof formgrader, window.formgrader && formgrader.loaded, "
                                   "window.formgrader && formgrader.grades && formgrader.grades.length, "
                                   "document.readyState, performance.getEntriesByType('resource').map(e => e.name + ' ' + e.responseStatus).filter(n => n.includes('api'))]")
        types = page.evaluate("() => [typeof jQuery, typeof Backbone, typeof toggle_name]")
        return {"grades_loaded": loaded, "own_scripts_blocked": [
            lib for lib, kind, want in zip(("jQuery", "Backbone", "toggle_name"), types, ("function", "object", "function"))
            if kind != want]}

    seen = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for variant, path in feedback.items():
                    seen[("feedback", variant)] = _visit(browser, path.as_uri())
                for variant in variants:
                    seen[("formgrader", variant)] = _visit(browser, f"{pages_base}/{variant.replace(' ', '_')}")
                # the submission page as the instructor sees it: every request of the page authenticated
                # (formgrader's own JavaScript calls its API)
                instructor = {"Authorization": f"token {TOKEN}"}
                seen[("formgrader", "defended")] = _visit(
                    browser, f"{base}/formgrader/submissions/{sid}/", after=formgrader_state, headers=instructor)
                files = _visit(browser, f"{base}/formgrader/submissions/{sid}/notes.html", settle_ms=500,
                               headers=instructor)
            finally:
                browser.close()
    finally:
        pages_server.shutdown()
        pages_server.server_close()

    # the control: every payload of the corpus is real
    for where in ("feedback", "formgrader"):
        control = seen[(where, "control")]
        assert control["fired"] == names, f"{where} control: did not fire: {sorted(names - control['fired'])}"
    # nbgrader's formgrader as it comes runs them too (its BeautifulSoup pass happens to defuse the
    # noscript one), the two bypasses of the old cell-by-cell sanitizer among them
    stock = seen[("formgrader", "nbgrader as shipped")]["fired"]
    assert {"split-comment", "png-width", "script", "img-onerror", "js-href"} <= stock, sorted(stock)
    # the defended pages, and each layer alone
    for (where, variant), s in seen.items():
        if variant in ("control", "nbgrader as shipped"):
            continue
        _assert_holds(f"{where}, {variant}", s, allowed=navigation if variant == "policy only" else frozenset())
        if variant == "policy only":  # nothing but the navigation: no script ran
            assert s["fired"] == navigation, (where, s["fired"])
    defended = seen[("formgrader", "defended")]
    assert defended["own_scripts_blocked"] == [], defended
    assert defended["grades_loaded"] is True, f"formgrader's own JavaScript did not load the grades: {defended['grades_loaded']} {defended['console']}"
    refused = [m for m in defended["console"] if "Content Security Policy" in m and "/formgrader/static/" in m]
    assert refused == [], refused
    assert files["fired"] == set() and "my notes" in files["text"]


def test_formgrader_serves_the_policies_as_headers(formgrader_server):
    """The headers themselves: the submission page runs only nonce'd scripts (a fresh nonce on every
    request, none of them in the page unannounced); a file of the submission is sandboxed."""
    base, sid = formgrader_server["base"], formgrader_server["submission_id"]
    nonces = []
    for _ in range(2):
        req = urllib.request.Request(f"{base}/formgrader/submissions/{sid}/",
                                     headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            policy, page = resp.headers["Content-Security-Policy"], resp.read().decode()
        m = re.search(r"script-src 'nonce-([A-Za-z0-9_\-]+)'", policy)
        assert m and "'unsafe-inline'" not in policy.split(";")[1] and "default-src 'none'" in policy, policy
        nonces.append(m.group(1))
        scripts = re.findall(r"<script\b[^>]*>", page, re.I)
        assert scripts and all(f'nonce="{m.group(1)}"' in s for s in scripts), scripts
        assert all(src.startswith("/formgrader/static/") for src in re.findall(r'<script[^>]*\ssrc="([^"]*)"', page))
        assert 'class="score tabbable"' in page and 'id="answer-comment"' in page  # grading widgets kept
    assert nonces[0] != nonces[1]
    req = urllib.request.Request(f"{base}/formgrader/submissions/{sid}/notes.html",
                                 headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.headers["Content-Security-Policy"].startswith("sandbox;"), resp.headers["Content-Security-Policy"]


def test_each_layer_alone_on_the_markup(tmp_path):
    """Without a browser: the feedback page holds no script, handler or javascript: URL once nh3 ran
    (even with nothing before it), and the two known bypasses are what makes the raw page live."""
    import copy

    from instructor.engine.feedback import template_exporter_class
    from instructor.engine.sanitize import clean_page, inert_output

    nb, _ = _hostile_notebook()
    with isolation_off():
        raw, _ = template_exporter_class()(config=_feedback_config(False)).from_notebook_node(
            copy.deepcopy(nb), resources=copy.deepcopy(FEEDBACK_RESOURCES))
    assert "width=1 onload=" in raw and '<!--\n' in raw  # the bypasses, as nbconvert writes them
    page = clean_page(raw)  # nh3 alone, on nbconvert's raw page
    body = page[page.index("<body>"):]
    assert not re.search(r"<(script|iframe|object|svg|meta|link|style|noscript|video)\b", body, re.I)
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", body, re.I) and "javascript:" not in body.replace("&lt;", "")
    assert body.count('src="data:image/png;base64,') == 2 and "<td>1</td>" in body and "Honest notes" in body
    # output metadata: width/height only as numbers
    out = new_output("display_data", data={"image/png": PNG},
                     metadata={"image/png": {"width": "1 onload=x", "height": "64", "alt": "a plot"}})
    assert inert_output(out)["metadata"] == {"image/png": {"height": 64, "alt": "a plot"}}
    out = new_output("display_data", data={"image/png": PNG}, metadata={"image/png": {"width": 3.5, "height": True}})
    assert inert_output(out)["metadata"] == {"image/png": {"width": 3.5}}
