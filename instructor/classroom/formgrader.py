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

Grading runs in a separate process (``python -m instructor.classroom.formgrader``), one at a time, so
the server stays responsive and the pipeline's process-wide state never touches the server's. The
replies have the shape formgrader's JavaScript expects (``success``, ``log``, ``error``); the log
names the score, the flags and the integrity notes.

The submission page (``/formgrader/submissions/<id>/``, where the instructor reads and grades a
student's notebook inside the authenticated Jupyter server) is served by
:func:`secure_submission_page`: the notebook part through Ammonia (``nh3``), formgrader's own template
around it with a per-request nonce on its scripts, and a ``Content-Security-Policy`` header that runs
those scripts only, so a sanitizer miss still runs nothing in the instructor's origin. Every piece of
the student's markup is isolated before the template puts it in the page (the exporter of :mod:`instructor.engine.feedback`):
no student id, name or class, so formgrader's own JavaScript, which finds a test cell's grading buttons by
``$("#" + grade_id).parents(".nbgrader_cell")``, finds only its own (an iframe would hide those buttons
from it: they live inside each cell's markup). Files of a
submission's folder (``/formgrader/submissions/<id>/<file>``) are served in a CSP ``sandbox``.

**Export Grades** (a link added to formgrader's side bar, ``/formgrader/export``) downloads the
gradebook for Canvas, Moodle or Gradescope (:func:`export.sheet_for_course`): points graded by hand
included, late penalties off, and an empty cell with its reason for every hand-in that could not be
graded (the ledger's failures, broken files in ``submitted/``).

What a new instructor would misread, made plain (nbgrader's files untouched: handlers of this extension,
and templates read through its loader, :func:`with_export_link`):

* a late hand-in's score (nbgrader's, before the penalty) carries its late mark (:func:`late_text`, the
  API's ``course_late`` from :func:`with_late`), and a student with no name shows as their id, never
  "None, None" (:data:`PAGES_SCRIPT`, in the list pages' base template);
* in Manual Grading, a score for an autograded cell asks before it replaces the autograder's, and a line
  next to the box says so (:data:`OVERRIDE_SCRIPT`, with the submission page's nonce);
* the side bar's **Class Report** (``/formgrader/report``) serves the course folder's
  ``class-report.html`` read-only under :data:`REPORT_CSP`, or says how to make it.

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
EXTENSION = "instructor.classroom.formgrader"
PIPELINE = ("Graded by the course's trusted pipeline, as `python -m autograder grade` grades: the hidden checks "
            "confirmed outside the student's kernel, nbgrader's autograde with the kernel in the sandbox, "
            "the lower verdict per test cell kept.")


# --------------------------------------------------------------------------- the worker process

def _assignments_root(course_root: Path) -> Path:
    """Where the course folder's assignments come from: an edition's own folder when formgrader serves it
    (``zh_CN/``: grading there must never copy the English source/ over the Chinese), else the repository."""
    from ..layout import edition_root, folder_edition

    return edition_root(folder_edition(course_root), REPO)


def _submissions(course_root: Path, assignment: str, student: str | None):
    """The submissions of ``assignment`` (one student, or all) in the course folder's ``submitted/``,
    checked by :func:`course.collect_submissions`, with the problems that concern them."""
    from ..batch import course

    def mine(s: str | None, a: str | None) -> bool:
        return a == assignment and (student is None or s == student)

    subs, problems = course.collect_submissions(course_root / "submitted", root=_assignments_root(course_root))
    return ([s for s in subs if mine(s.student, s.assignment)],
            [p for p in problems if mine(getattr(p, "student", None), getattr(p, "assignment", None))])


def _reusable(course_root: Path, sub):
    """The pipeline's earlier result for ``sub`` when it still stands: same files (the ledger), the
    autograded notebooks there, and no test cell in the gradebook above the confirmed verdict."""
    from nbgrader.api import MissingEntry

    from ..batch import course

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
    from ..engine.feedback import annotate_feedback
    from ..engine.pipeline import nbgrader_api, prepare_environment, short_error

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
    from ..batch import course

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
        for res in course.grade(todo, course_root, feedback=action == "feedback", progress=False,
                                root=_assignments_root(course_root),
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


def late_text(seconds: float | None, penalty: float | None, score: float | None = None) -> str | None:
    """What formgrader shows next to a late hand-in's score: how late (the gradebook's
    ``total_seconds_late``) and the points the late policy took off (``late_submission_penalty``), e.g.
    ``late: 2 h 10 min, −0.8 points (7.2 counts)``; ``None`` on time. nbgrader's score column is
    the score before the penalty."""
    if not seconds or seconds <= 0:
        return None
    s = int(round(seconds))
    d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if d:
        when = f"{d} d {h} h" if h else f"{d} d"
    elif h:
        when = f"{h} h {m} min" if m else f"{h} h"
    elif m:
        when = f"{m} min"
    else:
        when = f"{s} s"
    penalty = float(penalty or 0.0)
    if penalty <= 0:
        return f"late: {when}, no penalty"
    text = f"late: {when}, \u2212{penalty:g} point{'' if penalty == 1 else 's'}"
    if score is not None:
        text += f" ({max(0.0, float(score) - penalty):g} counts)"
    return text


def with_late(gb, submissions: list[dict]) -> list[dict]:
    """formgrader's submission dicts (``student``, ``name``: the assignment) with ``course_late``: the
    :func:`late_text` of each late hand-in from the gradebook (``None`` on time, or not in it)."""
    from nbgrader.api import MissingEntry

    late: dict[tuple[str, str], str | None] = {}
    for name in {s.get("name") for s in submissions if s.get("name")}:
        try:
            found = gb.find_assignment(name).submissions
        except MissingEntry:
            continue
        for sub in found:
            late[(sub.student.id, name)] = late_text(sub.total_seconds_late, sub.late_submission_penalty, sub.score)
    for s in submissions:
        s["course_late"] = late.get((s.get("student"), s.get("name")))
    return submissions


#: The list pages' own script (Manage Submissions, Manage Students, a student's assignments): a student
#: without a first and last name in the gradebook shows as their id (nbgrader writes "None, None"), and
#: a late hand-in's score gets its late mark (the API's ``course_late``, :func:`with_late`). Text only
#: (jQuery's ``.text``): names come from a roster.
PAGES_SCRIPT = """
(function () {
  function shown(first, last, id) {
    var f = first === null || first === undefined ? "" : String(first).trim();
    var l = last === null || last === undefined ? "" : String(last).trim();
    if (f && l) return l + ", " + f;
    return l || f || String(id);
  }
  function rename($cell, name) {
    var $a = $cell.find("a");
    ($a.length ? $a : $cell).text(name);
    $cell.attr("data-order", name);
  }
  function mark($score, late) {
    if (late) $score.append($("<div/>").addClass("text-danger small course-late").text(late));
  }
  function wrap(view, after) {
    if (typeof view === "undefined" || !view.prototype || !view.prototype.render) return;
    var render = view.prototype.render;
    view.prototype.render = function () {
      var out = render.apply(this, arguments);
      try { after.call(this); } catch (e) { if (window.console) console.error("course formgrader:", e); }
      return out;
    };
  }
  if (typeof SubmissionUI !== "undefined") wrap(SubmissionUI, function () {
    var m = this.model;
    rename(this.$student_name, shown(m.get("first_name"), m.get("last_name"), m.get("student")));
    if (m.get("autograded")) mark(this.$score, m.get("course_late"));
  });
  if (typeof StudentUI !== "undefined") wrap(StudentUI, function () {
    var m = this.model;
    rename(this.$name, shown(m.get("first_name"), m.get("last_name"), m.get("id")));
  });
  if (typeof StudentSubmissionUI !== "undefined") wrap(StudentSubmissionUI, function () {
    if (this.model.get("autograded")) mark(this.$score, this.model.get("course_late"));
  });
})();
"""

#: The submission page's own script (Manual Grading): a score typed into an autograded cell's box, or
#: its full/no credit buttons, replaces the autograder's score; the page asks first, and says so next
#: to the box. Runs with the page's nonce (:func:`secure_submission_page`); no inline handler.
OVERRIDE_NOTE = "autograded: a score typed here replaces the autograder's (leave it empty to keep it)"
OVERRIDE_SCRIPT = """
(function () {
  if (typeof GradeUI === "undefined") return;
  function autograded(m) { return m.get("auto_score") !== null && m.get("auto_score") !== undefined; }
  function allowed(view, score) {
    var m = view.model;
    if (!autograded(m) || score === null || score === "") return true;
    var now = m.get("manual_score");
    if (now !== null && now !== undefined && Number(now) === Number(score)) return true;
    return window.confirm("The autograder gave this cell " + m.get("auto_score") + " / " + m.get("max_score") +
      ".\\nSaving " + score + " here REPLACES the autograder's score (the hidden checks' verdict)." +
      "\\n\\nOverride the autograder?");
  }
  var initialize = GradeUI.prototype.initialize;
  GradeUI.prototype.initialize = function () {
    var out = initialize.apply(this, arguments);
    if (autograded(this.model)) {
      this.$score.attr("title", NOTE);
      this.$score.last().after($("<div/>").addClass("text-muted small course-override-note").text(NOTE));
    }
    return out;
  };
  var save = GradeUI.prototype.save;
  GradeUI.prototype.save = function () {
    var v = this.$score.val();
    if (!allowed(this, v === "" ? null : v)) { this.render(); return; }
    return save.apply(this, arguments);
  };
  var full = GradeUI.prototype.assignFullCredit;
  GradeUI.prototype.assignFullCredit = function () {
    if (!allowed(this, this.model.get("max_score"))) return;
    return full.apply(this, arguments);
  };
  var none = GradeUI.prototype.assignNoCredit;
  GradeUI.prototype.assignNoCredit = function () {
    if (!allowed(this, 0)) return;
    return none.apply(this, arguments);
  };
})();
""".replace("NOTE", json.dumps(OVERRIDE_NOTE))


class UnsafePage(Exception):
    """The page could not be split into formgrader's template and the notebook: not served."""


def secure_submission_page(render, resources: dict, static_prefix: str, *, sanitize: bool = True,
                           nonce: str | None = None, own_script: str | None = None) -> tuple[str, str]:
    """formgrader's submission page, (HTML, Content-Security-Policy header), in two layers:

    * the notebook part of the page, every cell together, through :func:`instructor.engine.sanitize.clean_fragment`
      (Ammonia; formgrader's grading widgets allowed, no script, no event handler);
    * formgrader's own template around it, its scripts given a per-request nonce, and a policy that
      runs only those: a script the sanitizer let through still does not run in the instructor's
      session.

    ``render(resources, cells)`` renders formgrader's page as a string put together by the template
    (nothing parsed back): with ``cells=None`` the submitted notebook between two marker cells, else
    only the two marker cells ``cells``. The two pages must agree outside the markers (the template's
    part: no student content in it), else :class:`UnsafePage`. ``resources``' text is HTML-escaped
    first (nbgrader's templates write it unescaped: a student id, a name). ``sanitize=False`` only for
    tests of the policy alone. ``own_script``: one more script of the course's (:data:`OVERRIDE_SCRIPT`),
    put before the end of the body with the nonce (after formgrader's scripts have defined their views)."""
    from ..engine.sanitize import clean_fragment

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
    if own_script:
        tag = f'<script nonce="{nonce}">{own_script}</script>\n'
        end = after.rfind("</body>")
        after = after[:end] + tag + after[end:] if end >= 0 else after + tag
    return before + notebook + after, submission_policy(nonce, handlers_before + handlers_after)


@functools.lru_cache(maxsize=8)
def _template_exporter(exporter):
    """formgrader's exporter (its configuration: template, the course's preprocessors), rendering
    the template's text as it is (:func:`instructor.engine.feedback.template_exporter_class`)."""
    from ..engine.feedback import template_exporter_class

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
                                                      f"{handler.base_url}/formgrader/static/",
                                                      own_script=OVERRIDE_SCRIPT)
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

    class SubmissionCollectionHandler(apihandlers.SubmissionCollectionHandler):
        """Manage Submissions' rows, each with its late mark (:func:`with_late`)."""

        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        def get(self, assignment_id):
            api = self.api
            submissions = api.get_submissions(assignment_id)
            with api.gradebook as gb:  # a gradebook of its own: the server's shared one may hold an old view
                self.write(json.dumps(with_late(gb, submissions)))

    class SubmissionApiHandler(apihandlers.SubmissionHandler):
        """One row of Manage Submissions (after Autograde), with its late mark."""

        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        def get(self, assignment_id, student_id):
            api = self.api
            submission = api.get_submission(assignment_id, student_id)
            if submission is None:
                raise web.HTTPError(404)
            with api.gradebook as gb:
                self.write(json.dumps(with_late(gb, [submission])[0]))

    class StudentSubmissionCollectionHandler(apihandlers.StudentSubmissionCollectionHandler):
        """A student's assignments (Manage Students), each with its late mark."""

        @web.authenticated
        @check_xsrf
        @check_notebook_dir
        def get(self, student_id):
            api = self.api
            submissions = api.get_student_submissions(student_id)
            with api.gradebook as gb:
                self.write(json.dumps(with_late(gb, submissions)))

    return {apihandlers.AutogradeHandler: AutogradeHandler,
            apihandlers.SubmissionCollectionHandler: SubmissionCollectionHandler,
            apihandlers.SubmissionHandler: SubmissionApiHandler,
            apihandlers.StudentSubmissionCollectionHandler: StudentSubmissionCollectionHandler,
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
REPORT_MISSING_PAGE = """{%- extends 'base.tpl' -%}
{%- block title -%}Class report{%- endblock -%}
{%- block body -%}
<div class="panel panel-warning"><div class="panel-heading"><h2 class="panel-title">No class report yet</h2></div>
<div class="panel-body">
<p>There is no class report in the course folder (<code>{{ report_path | e }}</code>) yet.
Run Autograde / <code>python -m autograder grade</code> first: it writes the report next to
<code>grades.csv</code>. After grading with formgrader's Autograde buttons, write it from what grading
recorded with <code>python -m autograder report --workdir {{ course_dir | e }}</code>.</p>
</div></div>
{%- endblock -%}
"""
NAV_ANCHOR = '/formgrader/manage_students">Manage Students</a></li>'
NAV_EXPORT = ('<li role="presentation"><a href="{{ base_url }}/formgrader/export">Export Grades</a></li>\n'
              '<li role="presentation"><a href="{{ base_url }}/formgrader/report" target="_blank" '
              'rel="noopener noreferrer">Class Report</a></li>')
#: The class report as formgrader serves it: the report's own policy (no script, no network: inline
#: styles and ``data:`` images) in a sandbox (an opaque origin, never the Jupyter server's).
REPORT_CSP = ("sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'self'")
#: The most of the report formgrader serves (a class's report is well under a megabyte per 100 students).
REPORT_MAX_BYTES = 64 * 1024 * 1024
PAGES_ANCHOR = "</body>"


def with_export_link(env) -> None:
    """formgrader's side bar (every page's, including those that override it) gets an "Export Grades"
    and a "Class Report" link: its templates are read through a loader that adds them after "Manage
    Students"; the export page and the "no report yet" page are more templates. The base template
    gets the list pages' own script (:data:`PAGES_SCRIPT`)."""
    import jinja2

    class Loader(jinja2.BaseLoader):
        def __init__(self, inner):
            self.inner = inner

        def get_source(self, environment, template):
            if template == "course_export.tpl":
                return EXPORT_PAGE, None, lambda: True
            if template == "course_report_missing.tpl":
                return REPORT_MISSING_PAGE, None, lambda: True
            source, filename, uptodate = self.inner.get_source(environment, template)
            source = source.replace(NAV_ANCHOR, NAV_ANCHOR + "\n" + NAV_EXPORT)
            if template == "base.tpl":  # every list page's: names shown, late hand-ins marked
                source = source.replace(PAGES_ANCHOR, f"<script>{PAGES_SCRIPT}</script>\n" + PAGES_ANCHOR, 1)
            return source, filename, uptodate

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

    class ClassReport(BaseHandler):
        """The class report the course's grading wrote in the course folder (``class-report.html``),
        read-only, under :data:`REPORT_CSP`; a page saying how to make it when there is none."""

        @web.authenticated
        @check_notebook_dir
        def get(self):
            data, path = read_report(Path(self.coursedir.root))
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Cache-Control", "no-store")
            self.set_header("Referrer-Policy", "no-referrer")
            if data is None:
                self.set_status(404)
                self.write(self.render("course_report_missing.tpl", base_url=self.base_url, report_path=str(path),
                                       course_dir=str(Path(self.coursedir.root))))
                return
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Content-Security-Policy", REPORT_CSP)
            self.write(data)

    return [(r"/formgrader/export/?", ExportPage),
            (r"/formgrader/export/(canvas|moodle|gradescope)", ExportDownload),
            (r"/formgrader/report/?", ClassReport)]


def read_report(course_root: Path) -> tuple[bytes | None, Path]:
    """The class report's bytes in ``course_root`` (``None`` when there is none: no file, not a regular
    file, a link, or larger than :data:`REPORT_MAX_BYTES`), and where it was looked for."""
    import stat

    from .report import REPORT_NAME

    path = Path(course_root) / REPORT_NAME
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, path
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > REPORT_MAX_BYTES:
            return None, path
        with os.fdopen(fd, "rb") as f:
            fd = None
            return f.read(REPORT_MAX_BYTES + 1)[:REPORT_MAX_BYTES], path
    finally:
        if fd is not None:
            os.close(fd)


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
