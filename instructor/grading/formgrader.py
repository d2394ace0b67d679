"""nbgrader's formgrader, with its Autograde and Generate Feedback buttons on the trusted pipeline.

Plain formgrader's buttons call nbgrader's API directly: the student's kernel runs unconfined, the
hidden checks run inside it, nothing confirms them. This Jupyter server extension serves the same
formgrader (pages, static files, every other API handler: nbgrader's own classes), except that the
handlers behind those buttons run what ``python -m autograder grade`` runs (:func:`course.grade`:
the confirmation outside the kernel, nbgrader autograde with the kernel in the sandbox, the lower
verdict per test cell in the gradebook, flags, notes at the top of the feedback):

* ``/formgrader/api/submission/<assignment>/<student>/autograde`` (Manage Submissions: Autograde)
  regrades that submission (``force``: an explicit click always regrades);
* ``/formgrader/api/assignment/<assignment>/<student>/generate_feedback`` and
  ``/formgrader/api/assignment/<assignment>/generate_feedback`` (Generate Feedback, one student or
  all) reuse the pipeline's grade when the submitted files are the ones it graded and the gradebook
  still holds its (lower) verdicts, re-rendering the feedback from the gradebook with the grader's
  notes on top; anything else is graded again through the pipeline first.

Grading runs in a separate process (``python -m instructor.grading.formgrader``), one at a time, so
the server stays responsive and the pipeline's process-wide state never touches the server's. The
replies have the shape formgrader's JavaScript expects (``success``, ``log``, ``error``); the log
names the score, the flags and the integrity notes.

The submission page (``/formgrader/submissions/<id>/``, where the instructor reads and grades a
student's notebook inside the authenticated Jupyter server) is served by
:func:`secure_submission_page`: the notebook part through Ammonia (``nh3``), formgrader's own template
around it with a per-request nonce on its scripts, and a ``Content-Security-Policy`` header that runs
those scripts only, so a sanitizer miss still runs nothing in the instructor's origin. Every piece of
the student's markup is isolated before the template puts it in the page (the exporter of :mod:`.feedback`):
no student id, name or class, so formgrader's own JavaScript, which finds a test cell's grading buttons by
``$("#" + grade_id).parents(".nbgrader_cell")``, finds only its own (an iframe would hide those buttons
from it: they live inside each cell's markup). Files of a
submission's folder (``/formgrader/submissions/<id>/<file>``) are served in a CSP ``sandbox``.

**Export Grades** (a link added to formgrader's side bar, ``/formgrader/export``) downloads the
gradebook for Canvas, Moodle or Gradescope (:func:`export.sheet_for_course`): points graded by hand
included, late penalties off, and an empty cell with its reason for every hand-in that could not be
graded (the ledger's failures, broken files in ``submitted/``).

The instructor lab (``python -m autograder.lab --instructor``) turns this extension on in place of
``nbgrader.server_extensions.formgrader``. Were both on, this one still wins: jupyter_server loads
extensions in name order and tornado serves the first matching rule.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import hashlib
import html
import json
import os
import re
import secrets
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTENSION = "instructor.grading.formgrader"
PIPELINE = ("Graded by the course's trusted pipeline, as `python -m autograder grade` grades: the hidden checks "
            "confirmed outside the student's kernel, nbgrader's autograde with the kernel in the sandbox, "
            "the lower verdict per test cell kept.")


# --------------------------------------------------------------------------- the worker process

def _submissions(course_root: Path, assignment: str, student: str | None):
    """The submissions of ``assignment`` (one student, or all) in the course folder's ``submitted/``,
    checked by :func:`course.collect_submissions`, with the problems that concern them."""
    from . import course

    def mine(s: str | None, a: str | None) -> bool:
        return a == assignment and (student is None or s == student)

    subs, problems = course.collect_submissions(course_root / "submitted", root=REPO)
    return ([s for s in subs if mine(s.student, s.assignment)],
            [p for p in problems if mine(getattr(p, "student", None), getattr(p, "assignment", None))])


def _reusable(course_root: Path, sub):
    """The pipeline's earlier result for ``sub`` when it still stands: same files (the ledger), the
    autograded notebooks there, and no test cell in the gradebook above the confirmed verdict."""
    from nbgrader.api import MissingEntry

    from . import course

    earlier = course.Ledger(course_root).unchanged(sub)
    autograded = course_root / "autograded" / sub.student / sub.assignment
    if earlier is None or not all((autograded / nb.name).is_file() for nb in sub.notebooks):
        return None
    with course.nbgrader_api(course_root).gradebook as gb:
        try:
            found = gb.find_submission(sub.assignment, sub.student)
        except MissingEntry:
            return None
        for nb in found.notebooks:
            for g in nb.grades:
                v = earlier.verdicts.get(g.name)
                if v is not None and g.auto_score is not None and g.auto_score > (g.max_score if v["passed"] else 0.0):
                    return None
    return earlier


def _feedback_from_gradebook(course_root: Path, res) -> None:
    """nbgrader generate_feedback (the pipeline's configuration: hidden tests cleared), then the notes."""
    from .feedback import annotate_feedback
    from .pipeline import nbgrader_api, prepare_environment, short_error

    prepare_environment()
    out = nbgrader_api(course_root, sandboxed=True).generate_feedback(res.assignment, res.student, force=True)
    if not out.get("success"):
        raise RuntimeError("nbgrader generate_feedback failed: " + short_error(out))
    res.feedback = sorted((course_root / "feedback" / res.student / res.assignment).glob("*.html"))
    annotate_feedback(res)


def _describe(res, how: str) -> list[str]:
    lines = [f"{res.student}/{res.assignment}: " + (
        f"{res.auto_score:g}/{res.auto_max:g} autograded points" if res.ok else f"ERROR: {res.error}")
        + (f" (+{res.manual_pending:g} point(s) of written answers, graded by hand in Manual Grading)"
           if res.ok and res.manual_pending else "")
        + f" ({how}; kernel {'in the bubblewrap sandbox' if res.sandboxed else 'NOT sandboxed: bubblewrap missing'})"]
    lines += [f"  flagged: {f}" for f in res.flags]
    lines += [f"  integrity: {i}" for i in res.integrity]
    lines += [f"  note: {n}" for n in res.notes if "not graded again" not in n]
    if res.feedback:
        lines.append(f"  feedback: {', '.join(str(p) for p in res.feedback)}")
    return lines


def pipeline(course_root: Path, assignment: str, student: str | None, action: str) -> dict:
    """Run one button's work through the pipeline; formgrader's reply (success, log, error)."""
    from . import course

    course_root = Path(course_root).resolve()
    log = [PIPELINE]
    subs, problems = _submissions(course_root, assignment, student)
    log += [str(p) for p in problems]
    if not subs:
        who = f"student '{student}'" if student else "any student"
        error = f"no gradable submission of '{assignment}' from {who} in {course_root / 'submitted'}"
        return {"success": False, "log": "\n".join(log), "error": error}
    results = {}
    if action == "feedback":
        for sub in subs:
            earlier = _reusable(course_root, sub)
            if earlier is None:
                continue
            try:
                _feedback_from_gradebook(course_root, earlier)
                results[(sub.student, sub.assignment)] = (earlier, "the pipeline's grade reused: files unchanged "
                                                          "since it graded them")
            except Exception as err:  # noqa: BLE001 - then grade it again below
                log.append(f"{sub.student}/{sub.assignment}: feedback from the gradebook failed ({err}); grading again")
    todo = [s for s in subs if (s.student, s.assignment) not in results]
    if todo:
        for res in course.grade(todo, course_root, feedback=action == "feedback", progress=False, root=REPO,
                                force=True):
            results[(res.student, res.assignment)] = (res, "graded now")
    failed = []
    for sub in subs:
        res, how = results[(sub.student, sub.assignment)]
        log += _describe(res, how)
        if not res.ok or (action == "feedback" and not res.feedback):
            failed.append(f"{res.student}/{res.assignment}: {res.error or 'no feedback written'}")
    reply = {"success": not failed, "log": "\n".join(log)}
    if failed:
        reply["error"] = "\n".join(failed)
    return reply


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {EXTENSION}",
                                     description="One formgrader button's work, through the trusted pipeline.")
    parser.add_argument("action", choices=["autograde", "feedback"])
    parser.add_argument("--course", required=True, help="the course folder formgrader serves")
    parser.add_argument("--assignment", required=True)
    parser.add_argument("--student", help="one student (default: every submission of the assignment)")
    parser.add_argument("--result", required=True, help="where to write the reply (JSON)")
    args = parser.parse_args(argv)
    try:
        reply = pipeline(Path(args.course), args.assignment, args.student, args.action)
    except Exception:  # noqa: BLE001 - the button shows the traceback
        import traceback

        reply = {"success": False, "log": PIPELINE, "error": traceback.format_exc()}
    Path(args.result).write_text(json.dumps(reply))
    return 0 if reply["success"] else 1


# --------------------------------------------------------------------------- the submission page

#: formgrader's pages for files in a submission's folder (``/formgrader/submissions/<id>/<file>``, where
#: a relative link in a student's notebook leads): a sandbox, an opaque origin, no script.
FILES_CSP = ("sandbox; default-src 'none'; img-src 'self' data:; media-src 'self' data:; "
             "style-src 'unsafe-inline'; frame-ancestors 'self'")
#: MathJax is not loaded next to a student's notebook (a third-party script, rendering the student's
#: TeX in the instructor's session): math shows as its TeX source. formgrade.js waits for MathJax's
#: "End" signal before it selects the first score box; this gives it at once.
MATHJAX_STAND_IN = ("window.MathJax = window.MathJax || {Hub: {Startup: {signal: {Interest: function (f) "
                    "{ setTimeout(function () { f('End'); }, 0); }}}}};")
_SCRIPT_TAG = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.I | re.S)
_SRC = re.compile(r"""\ssrc\s*=\s*["']([^"']*)["']""", re.I)
_HANDLER = re.compile(r'\son[a-z]+\s*=\s*"([^"]*)"', re.I)


def submission_policy(nonce: str, handlers: list[str]) -> str:
    """The submission page's Content-Security-Policy: formgrader's own scripts only (each carries
    ``nonce``; its ``onclick`` handlers by hash), nothing a student's notebook could add."""
    hashes = " ".join(sorted({"'sha256-%s'" % base64.b64encode(hashlib.sha256(h.encode()).digest()).decode()
                              for h in handlers}))
    return ("default-src 'none'; "
            f"script-src 'nonce-{nonce}'" + (f" 'unsafe-hashes' {hashes}" if hashes else "") + "; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
            "object-src 'none'; frame-src 'none'; child-src 'none'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'self'")


def own_scripts(shell: str, static_prefix: str, nonce: str) -> tuple[str, list[str]]:
    """formgrader's template text (no student content in it) with ``nonce`` on its scripts: inline
    ones and those served from ``static_prefix``; any other (MathJax from a CDN) removed. Also the
    inline event handlers it holds (for the policy's hashes)."""
    def one(m):
        attrs, body = m.group(1), m.group(2)
        src = _SRC.search(attrs)
        if src and not src.group(1).startswith(static_prefix):
            return ""
        if not src and "mathjax" in attrs.lower():
            return ""  # MathJax's configuration: nothing to configure
        return f'<script nonce="{nonce}"{attrs}>{body}</script>'

    handlers = [html.unescape(h) for h in _HANDLER.findall(shell)]
    return _SCRIPT_TAG.sub(one, shell), handlers


class UnsafePage(Exception):
    """The page could not be split into formgrader's template and the notebook: not served."""


def secure_submission_page(render, resources: dict, static_prefix: str, *, sanitize: bool = True,
                           nonce: str | None = None) -> tuple[str, str]:
    """formgrader's submission page, (HTML, Content-Security-Policy header), in two layers:

    * the notebook part of the page, every cell together, through :func:`.sanitize.clean_fragment`
      (Ammonia; formgrader's grading widgets allowed, no script, no event handler);
    * formgrader's own template around it, its scripts given a per-request nonce, and a policy that
      runs only those: a script the sanitizer let through still does not run in the instructor's
      session.

    ``render(resources, cells)`` renders formgrader's page as a string put together by the template
    (nothing parsed back): with ``cells=None`` the submitted notebook between two marker cells, else
    only the two marker cells ``cells``. The two pages must agree outside the markers (the template's
    part: no student content in it), else :class:`UnsafePage`. ``resources``' text is HTML-escaped
    first (nbgrader's templates write it unescaped: a student id, a name). ``sanitize=False`` only for
    tests of the policy alone."""
    from .sanitize import clean_fragment

    resources = {k: html.escape(v) if isinstance(v, str) else v for k, v in resources.items()}
    token = secrets.token_hex(16)
    first, last = f"course-notebook-begins-{token}", f"course-notebook-ends-{token}"
    shell = render(dict(resources), (first, last))
    page = render(dict(resources), None, (first, last))
    if not all(text.count(m) == 1 for text in (shell, page) for m in (first, last)):
        raise UnsafePage("formgrader's page does not hold each marker cell once")
    before, after = shell.split(first)[0], shell.split(last)[1]
    if page.split(first)[0] != before or page.split(last)[1] != after:
        raise UnsafePage("formgrader's page around the notebook is not the template's")
    notebook = page[len(before) + len(first):len(page) - len(after) - len(last)]
    if sanitize:
        notebook = clean_fragment(notebook, widgets=True)
    nonce = nonce or secrets.token_urlsafe(18)
    before, handlers_before = own_scripts(before, static_prefix, nonce)
    head = before.find("<head>")
    head = head + len("<head>") if head >= 0 else 0
    before = before[:head] + f'\n<script nonce="{nonce}">{MATHJAX_STAND_IN}</script>' + before[head:]
    after, handlers_after = own_scripts(after, static_prefix, nonce)
    return before + notebook + after, submission_policy(nonce, handlers_before + handlers_after)


@functools.lru_cache(maxsize=8)
def _template_exporter(exporter):
    """formgrader's exporter (its configuration: template, the course's preprocessors), rendering
    the template's text as it is (:func:`.feedback.template_exporter_class`)."""
    from .feedback import template_exporter_class

    return template_exporter_class()(config=exporter.config)


def _render_with(exporter, filename: str):
    """``render`` for :func:`secure_submission_page`: the notebook nbgrader's SubmissionHandler shows."""
    import nbformat

    def render(resources: dict, cells, markers=None) -> str:
        raw = nbformat.v4.new_raw_cell
        if cells is None:
            nb = nbformat.read(filename, as_version=4)
            nb.cells = [raw(markers[0]), *nb.cells, raw(markers[1])]
        else:
            nb = nbformat.v4.new_notebook(cells=[raw(cells[0]), raw(cells[1])])
        resources["metadata"] = {"name": Path(filename).stem, "path": str(Path(filename).parent)}
        page, _ = _template_exporter(exporter).from_notebook_node(nb, resources=resources)
        return page

    return render


# --------------------------------------------------------------------------- the server side

_lock: asyncio.Lock | None = None  # one grading at a time: they share the gradebook and the ledger


async def run_button(course_root: Path, action: str, assignment: str, student: str | None) -> dict:
    """Run :func:`pipeline` in a worker process, without blocking the server; its reply, with the
    worker's own output appended to the log."""
    global _lock
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        fd, result = tempfile.mkstemp(prefix="formgrader-", suffix=".json")
        os.close(fd)
        try:
            cmd = [sys.executable, "-m", EXTENSION, action, "--course", str(course_root),
                   "--assignment", assignment, "--result", result] + (["--student", student] if student else [])
            env = dict(os.environ)
            env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
            proc = await asyncio.create_subprocess_exec(*cmd, cwd=str(REPO), env=env, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.STDOUT)
            output, _ = await proc.communicate()
            try:
                reply = json.loads(Path(result).read_text() or "null")
            except (OSError, ValueError):
                reply = None
            output = output.decode("utf-8", "replace").strip()
            if not isinstance(reply, dict):
                return {"success": False, "log": output,
                        "error": f"the grading process ended (exit status {proc.returncode}) without a result"}
            if output:
                reply["log"] = reply.get("log", "") + "\n\n--- grading process output ---\n" + output[-20000:]
            return reply
        finally:
            os.unlink(result)


def _handlers():
    """The handler classes, built on nbgrader's (imported only where nbgrader is)."""
    from nbgrader.server_extensions.formgrader import apihandlers, handlers
    from nbgrader.server_extensions.formgrader.base import BaseApiHandler, check_notebook_dir, check_xsrf
    from tornado import web

    class TrustedButton(BaseApiHandler):
        action = "autograde"

        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        async def post(self, assignment_id, student_id=None):
            reply = await run_button(Path(self.coursedir.root), self.action, assignment_id, student_id)
            self.write(json.dumps(reply))  # a JSON string, as nbgrader writes it (the JS parses the text)

    class AutogradeHandler(TrustedButton):
        action = "autograde"

    class GenerateFeedbackHandler(TrustedButton):
        action = "feedback"

    class GenerateAllFeedbackHandler(TrustedButton):
        action = "feedback"

    class SubmissionHandler(handlers.SubmissionHandler):
        """nbgrader's page for one submitted notebook, rendered by :func:`secure_submission_page`."""

        @property
        def exporter(self):
            return _SecuredExporter(self)

    class _SecuredExporter:
        """What nbgrader's SubmissionHandler calls as ``self.exporter``: the secured page, and the
        handler's Content-Security-Policy header set to go with it."""

        def __init__(self, handler):
            self.handler = handler

        def from_filename(self, filename, resources=None, **kw):
            handler = self.handler
            render = _render_with(handler.settings["nbgrader_exporter"], filename)
            try:
                page, policy = secure_submission_page(render, dict(resources or {}),
                                                      f"{handler.base_url}/formgrader/static/")
            except UnsafePage as err:
                handler.log.error("formgrader: %s: not shown (%s)", filename, err)
                raise web.HTTPError(500, "this submission's page could not be rendered safely")
            handler.set_header("Content-Security-Policy", policy)
            return page, resources

    class SubmissionFilesHandler(handlers.SubmissionFilesHandler):
        """Files of a submission's folder, in a sandbox (no script, an origin of their own)."""

        @property
        def content_security_policy(self):
            return FILES_CSP

        def set_extra_headers(self, path):
            super().set_extra_headers(path)
            self.set_header("Content-Security-Policy", FILES_CSP)

    return {apihandlers.AutogradeHandler: AutogradeHandler,
            apihandlers.GenerateFeedbackHandler: GenerateFeedbackHandler,
            apihandlers.GenerateAllFeedbackHandler: GenerateAllFeedbackHandler,
            handlers.SubmissionHandler: SubmissionHandler,
            handlers.SubmissionFilesHandler: SubmissionFilesHandler}


EXPORT_PAGE = """{%- extends 'base.tpl' -%}
{%- block title -%}Export grades{%- endblock -%}
{%- block body -%}
<div class="panel panel-default"><div class="panel-heading"><h2 class="panel-title">Export grades for your LMS</h2></div>
<div class="panel-body">
<p>Every assignment and every student of the gradebook: the points so far (autograded, and graded by hand
in Manual Grading) out of every point of the assignment, minus nbgrader's late penalty. A hand-in that could
not be graded gets an empty cell, never 0, with its reason in Moodle's feedback column.</p>
<ul>
<li><a href="{{ base_url }}/formgrader/export/canvas" download>Canvas</a> (canvas.csv: Grades, Import)</li>
<li><a href="{{ base_url }}/formgrader/export/moodle" download>Moodle</a> (moodle.csv: Grade import, CSV file)</li>
<li><a href="{{ base_url }}/formgrader/export/gradescope" download>Gradescope</a> (gradescope.zip: one CSV per assignment)</li>
</ul></div></div>
{%- endblock -%}
"""
NAV_ANCHOR = '/formgrader/manage_students">Manage Students</a></li>'
NAV_EXPORT = '<li role="presentation"><a href="{{ base_url }}/formgrader/export">Export Grades</a></li>'


def with_export_link(env) -> None:
    """formgrader's side bar (every page's, including those that override it) gets an "Export Grades"
    link: its templates are read through a loader that adds it after "Manage Students"; the page
    itself is one more template."""
    import jinja2

    class Loader(jinja2.BaseLoader):
        def __init__(self, inner):
            self.inner = inner

        def get_source(self, environment, template):
            if template == "course_export.tpl":
                return EXPORT_PAGE, None, lambda: True
            source, filename, uptodate = self.inner.get_source(environment, template)
            return source.replace(NAV_ANCHOR, NAV_ANCHOR + "\n" + NAV_EXPORT), filename, uptodate

    if not isinstance(env.loader, Loader):
        env.loader = Loader(env.loader)


def _export_handlers():
    from nbgrader.server_extensions.formgrader.base import BaseHandler, check_notebook_dir
    from tornado import web

    from . import export

    class ExportPage(BaseHandler):
        @web.authenticated
        @check_notebook_dir
        def get(self):
            self.write(self.render("course_export.tpl", base_url=self.base_url))

    class ExportDownload(BaseHandler):
        @web.authenticated
        @check_notebook_dir
        def get(self, fmt):
            name, data, kind = export.download(export.sheet_for_course(Path(self.coursedir.root)), fmt)
            self.set_header("Content-Type", kind)
            self.set_header("Content-Disposition", f'attachment; filename="{name}"')
            self.set_header("X-Content-Type-Options", "nosniff")
            self.write(data)

    return [(r"/formgrader/export/?", ExportPage),
            (r"/formgrader/export/(canvas|moodle|gradescope)", ExportDownload)]


def routes() -> list[tuple]:
    """formgrader's URL rules, nbgrader's button handlers replaced by the pipeline's and its
    submission pages by the secured ones."""
    from nbgrader.server_extensions.formgrader import apihandlers, handlers
    from tornado import web

    swap = _handlers()
    return [*[(pattern, swap.get(cls, cls), *rest) for pattern, cls, *rest in handlers.default_handlers],
            *[(pattern, swap.get(cls, cls), *rest) for pattern, cls, *rest in apihandlers.default_handlers],
            *_export_handlers(),
            (r"/formgrader/static/(.*)", web.StaticFileHandler, {"path": handlers.static_path}),
            (r"/formgrader/.*", handlers.Template404)]


def _jupyter_server_extension_points():
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(serverapp):
    """Load formgrader as nbgrader's extension does, with :func:`routes` as its handlers."""
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    webapp = serverapp.web_app
    if "nbgrader_formgrader" in webapp.settings:
        serverapp.log.error("%s: nbgrader's own formgrader was loaded first; its Autograde and Generate Feedback "
                            "buttons may bypass the trusted pipeline. Disable nbgrader.server_extensions.formgrader.",
                            EXTENSION)
    serverapp.log.info("Loading formgrader with the trusted pipeline behind Autograde and Generate Feedback")
    formgrader = FormgradeExtension(parent=serverapp)
    formgrader.root_dir = serverapp.root_dir
    formgrader.log = serverapp.log
    formgrader.initialize([])
    formgrader.init_tornado_settings(webapp)
    with_export_link(webapp.settings["nbgrader_jinja2_env"])
    base = webapp.settings["base_url"]
    webapp.add_handlers(".*$", [(url_path_join(base, r[0].lstrip("/")), *r[1:]) for r in routes()])


if __name__ == "__main__":
    sys.exit(main())
