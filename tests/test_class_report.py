"""The class report (issue #29, item 4): after ``grade`` and as ``python -m autograder report``, one offline
HTML page: what to re-teach first, a histogram per question, the hidden checks' causes of failure per
task (counted), the flagged submissions, the grading time per submission; no script in it.

The demo class (``python -m autograder demo``'s handful of samples) is graded once for the module; every
expected number is derived from its Results, never written down here. Chromium loads the page (every
image decodes, no console error), and a hostile student id / flag / reason stays text — with a control
page, built with neither escaping nor the policy, where the same payloads do run.
"""
from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.classroom import cli, report  # noqa: E402
from instructor.batch import course  # noqa: E402
from instructor.engine.pipeline import QuestionScore, Result  # noqa: E402


def run(*args):
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


class Page(HTMLParser):
    """The report's elements that carry data: images, rows and list items with their data-* attributes."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.imgs, self.rows, self.items, self.scripts = [], [], [], 0
        self._row = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        elif tag == "script":
            self.scripts += 1
        elif tag == "tr" and any(k.startswith("data-") for k in a):
            self._row = {**a, "text": ""}
            self.rows.append(self._row)
        elif tag == "li" and "data-task" in a:
            self.items.append(a)

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None

    def handle_data(self, data):
        if self._row is not None:
            self._row["text"] += data


def _without_generated(text: str) -> str:
    return re.sub(r'<p class="meta muted">generated .*?</p>', "", text)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's samples graded the way ``demo`` grades them (``--jobs`` left to the grader: a handful of
    notebooks is graded in the grading process); the Results kept."""
    root = tmp_path_factory.mktemp("class-report")
    out, err = io.StringIO(), io.StringIO()
    graded: list[Result] = []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        chosen = cli._demo_submissions(root / "incoming", False, None)
        subs, problems = course.collect_submissions(root / "incoming")
        status = cli._grade_and_report(subs, problems, root / "course", root / "out", progress=False, jobs=None,
                                       force=True, keep=graded)
    page = root / "out" / report.REPORT_NAME
    assert status == 0 and page.is_file(), out.getvalue()[-3000:] + err.getvalue()[-3000:]
    assert not cli.demo_mismatches(chosen, graded), cli.demo_mismatches(chosen, graded)
    return SimpleNamespace(root=root, course=root / "course", page=page, html=page.read_text(encoding="utf-8"),
                           results=graded, stdout=out.getvalue())


# --------------------------------------------------------------------------- after `grade`: the page's content

@pytest.mark.slow
def test_grade_prints_the_report_path_last(demo):
    last = [l for l in demo.stdout.strip().splitlines() if l.strip()][-1]
    assert last == f"report:   {demo.page}  (the class report: open it in a web browser)", demo.stdout[-1500:]


@pytest.mark.slow
def test_every_question_of_every_graded_assignment_has_a_histogram(demo):
    page = Page(demo.html)
    assert page.scripts == 0 and 'http-equiv="Content-Security-Policy"' in demo.html
    assert f'content="{report.CSP}"' in demo.html
    hists = {(i.get("data-assignment"), i.get("data-question")): i["src"] for i in page.imgs
             if i.get("alt", "").startswith("histogram: ")}
    wanted = {(r.assignment, q.grade_id) for r in demo.results if r.ok for q in r.questions}
    wanted |= {(a, "(total)") for a in {r.assignment for r in demo.results if r.ok}}
    assert len(wanted) >= 10 and wanted <= set(hists), sorted(wanted - set(hists))
    for key, src in hists.items():
        assert src.startswith("data:image/png;base64,"), key
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n", key
    assert any(i.get("data-plot") == "time" for i in page.imgs)


@pytest.mark.slow
def test_the_causes_are_the_hidden_checks_verdicts_counted(demo):
    """Each failing autograded test cell counted under its verdict's first line: counted here from the
    Results the grading returned, compared with the page's table."""
    expected = Counter()
    students = {}
    for r in demo.results:
        if not r.ok:
            continue
        for q in r.questions:
            if q.kind == "auto" and q.score is not None and q.score < q.max_score:
                v = r.verdicts[q.grade_id]
                assert v["passed"] is False, (r.student, q.grade_id, v)
                if report.is_unanswered(v["message"]):
                    continue   # counted apart, under "Not attempted" (test_unanswered_... below)
                first = v["message"].strip().splitlines()[0].strip()
                key = (f"{r.assignment}/{q.grade_id}", report.cause_of(first))
                assert report.cause_of(first) == " ".join(first.split()) or re.search(r"\d", first)
                expected[key] += 1
                students.setdefault(key, set()).add(r.student)
    rows = {(row["data-task"], row["data-cause"]): row for row in Page(demo.html).rows if "data-cause" in row}
    assert {k: int(row["data-count"]) for k, row in rows.items()} == dict(expected)
    for key, who in students.items():
        for s in who:
            assert s in rows[key]["text"], (key, s)
    # the demo's silent-wrong fix: decode on p.detach() is caught, and its cause names the lost gradient
    detach = [k for k in expected if "detach_fix" in students[k]]
    assert detach and any("gradient" in cause for _, cause in detach), detach
    # a cause shared by two students is counted once with 2
    assert max(expected.values()) >= 2


@pytest.mark.slow
def test_what_to_reteach_comes_first_ranked_by_wrong_answers(demo):
    """Ranked by the submissions that answered and lost points; those that left it unanswered apart."""
    wrong, left = Counter(), Counter()
    for r in demo.results:
        for q in r.questions if r.ok else []:
            if q.kind == "auto" and q.score is not None and q.score < q.max_score:
                unanswered = report.is_unanswered(r.verdicts[q.grade_id]["message"])
                (left if unanswered else wrong)[f"{r.assignment}/{q.grade_id}"] += 1
    page = Page(demo.html)
    headline = [i["data-task"] for i in page.items]
    assert headline and demo.html.index('id="reteach"') < demo.html.index('id="unanswered"') \
        < demo.html.index('id="scores"')
    assert [int(i["data-wrong"]) for i in page.items] == [wrong[t] for t in headline]
    assert [wrong[t] for t in headline] == sorted((wrong[t] for t in headline), reverse=True)
    assert wrong[headline[0]] == max(wrong.values()) > 0
    assert set(headline) == {t for t, v in wrong.items() if v > 0} or len(headline) == report.TOP_TASKS
    rows = {row["data-task"]: int(row["data-unanswered"]) for row in page.rows
            if "data-unanswered" in row and "data-cause" not in row}
    assert rows == dict(left)


@pytest.mark.slow
def test_flagged_submissions_are_listed_with_each_line(demo):
    flagged = [r for r in demo.results if r.flags or r.integrity or not r.ok]
    assert flagged, "the demo grades a cheat: it must be flagged"
    rows = [row for row in Page(demo.html).rows if "data-submission" in row]
    for r in flagged:
        mine = [row for row in rows if row["data-submission"] == f"{r.student}/{r.assignment}"]
        texts = " ".join(" ".join(row["text"].split()) for row in mine)
        for line in r.flags + r.integrity:
            assert " ".join(line.split()) in texts, line
        assert {row["data-kind"] for row in mine} == ({"flag"} if r.flags else set()) | (
            {"integrity"} if r.integrity else set()) | (set() if r.ok else {"error"})
    assert {row["data-submission"] for row in rows} == {f"{r.student}/{r.assignment}" for r in flagged}


@pytest.mark.slow
def test_the_report_command_rebuilds_the_same_page_from_what_grading_recorded(demo, tmp_path):
    out = tmp_path / "again.html"
    proc = run("report", "--workdir", str(demo.course), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"report:   {out}"
    assert _without_generated(out.read_text(encoding="utf-8")) == _without_generated(demo.html)


def test_the_report_command_without_grading_names_the_folder_and_what_is_missing(tmp_path):
    proc = run("report", "--workdir", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {tmp_path}: nothing graded here yet: no grading-ledger.json"), proc.stderr
    proc = run("report", "--workdir", str(tmp_path / "nope"))
    assert proc.returncode == 2 and f"error: {tmp_path / 'nope'}: no such folder" in proc.stderr
    assert not list(tmp_path.iterdir()), "nothing is written when there is nothing to report"


def test_the_same_cause_from_different_students_groups_together():
    a = ("no gradient reached the model at its optimizer step (call 2, parameter 0)\n  for input: a\n"
         "  expected : x\n  try next : keep the graph.")
    b = "no gradient reached  the model at its optimizer step (call 3, parameter 1)\n  for input: b\n  got : y"
    assert report.cause_of(a) == report.cause_of(b) == \
        "no gradient reached the model at its optimizer step (call #, parameter #)"
    assert report.cause_of("decode writes in place into a tensor autograd saved for backward\n  x") != report.cause_of(a)
    assert report.cause_of("x has the wrong dtype\n  expected : torch.float16") == "x has the wrong dtype"
    assert report.hint_of(a) == "keep the graph."


# --------------------------------------------------------------------------- unanswered apart from wrong

NOT_IMPLEMENTED = ("decode is not implemented yet\n  for input: a float32 p\n"
                   "  try next : replace `raise NotImplementedError` in the cell that defines decode, run it.")
WRONG = "saved_by names the wrong operation\n  expected : 'mul'\n  got : 'add'\n  try next : read the graph."


def _class_skipped_vs_wrong() -> list[Result]:
    """Ten students, two 2-point tasks of one assignment. ``decode_tests``: 6 left it unanswered (the
    hidden check reached the stub), 1 answered wrong, 3 right: 14 points lost, 1 mistake.
    ``saved_by_tests``: 3 answered wrong, 7 right: 6 points lost, 3 mistakes. ``attack_tests``: 2 left
    it unanswered, nobody answered it wrong."""
    plan = {"decode_tests": ["skip"] * 6 + ["wrong"] + ["right"] * 3,
            "saved_by_tests": ["right"] * 4 + ["wrong"] * 3 + ["right"] * 3,
            "attack_tests": ["right"] * 8 + ["skip"] * 2}
    message = {"decode_tests": "decode returns the wrong boxes\n  expected : x\n  got : y",
               "saved_by_tests": WRONG, "attack_tests": WRONG}
    out = []
    for i in range(10):
        qs, vs = [], {}
        for gid, what in plan.items():
            qs.append(QuestionScore(gid, 2.0 if what[i] == "right" else 0.0, 2.0, "auto"))
            vs[gid] = {"passed": what[i] == "right", "cases": 3,
                       "message": "" if what[i] == "right" else
                       NOT_IMPLEMENTED.replace("decode", gid[:-6]) if what[i] == "skip" else message[gid]}
        out.append(Result(f"s{i:02d}", "03_yolo_head", True, qs, seconds=1.0, verdicts=vs))
    return out


def test_unanswered_questions_are_listed_apart_and_do_not_outrank_a_real_mistake():
    rs = _class_skipped_vs_wrong()
    tasks = report.task_causes(rs)
    decode, saved_by = tasks[("03_yolo_head", "decode_tests")], tasks[("03_yolo_head", "saved_by_tests")]
    # what the old ranking (points lost, then submissions below full marks) put first: the skipped task
    old = sorted((t for t in tasks.values() if t.lost > 0),
                 key=lambda t: (-t.lost, -t.failing, t.assignment, t.grade_id))
    assert [t.grade_id for t in old][:2] == ["decode_tests", "saved_by_tests"]
    assert (decode.lost, saved_by.lost) == (14.0, 6.0)
    # the new one: the task answered wrong by the most submissions first; a task only skipped is not there
    assert [t.grade_id for t in report.reteach(tasks)] == ["saved_by_tests", "decode_tests"]
    assert (saved_by.wrong, decode.wrong, decode.answered, len(decode.unanswered)) == (3, 1, 4, 6)
    assert decode.unanswered == [f"s{i:02d}" for i in range(6)] and decode.unanswered_points == 12.0
    assert [c.count for c in decode.ranked_causes()] == [1]   # the stub is not a cause of failure
    assert [(t.grade_id, len(t.unanswered)) for t in report.not_attempted(tasks)] == \
        [("decode_tests", 6), ("attack_tests", 2)]

    text = report.build_html(rs, source="s", generated="g")
    page = Page(text)
    assert [(i["data-task"], i["data-wrong"], i["data-unanswered"]) for i in page.items] == [
        ("03_yolo_head/saved_by_tests", "3", "0"), ("03_yolo_head/decode_tests", "1", "6")]
    left = [(row["data-task"], row["data-unanswered"], row["data-wrong"]) for row in page.rows
            if "data-unanswered" in row]
    assert left == [("03_yolo_head/decode_tests", "6", "1"), ("03_yolo_head/attack_tests", "2", "0")]
    assert text.index('id="reteach"') < text.index('id="unanswered"') < text.index('id="scores"')
    assert "1 of 4 submission(s) that answered it got it wrong" in text
    causes = {(row["data-task"], row["data-cause"]): int(row["data-count"]) for row in page.rows if "data-cause" in row}
    assert not [c for _, c in causes if "not implemented" in c], causes
    assert causes[("03_yolo_head/saved_by_tests", report.cause_of(WRONG))] == 3


def test_control_without_telling_unanswered_apart_the_skipped_task_comes_first(monkeypatch):
    """The defence off (every failing verdict a mistake): the page ranks the task most students skipped
    first and lists nothing as not attempted: what the review found."""
    monkeypatch.setattr(report, "is_unanswered", lambda message: False)
    text = report.build_html(_class_skipped_vs_wrong(), source="s", generated="g")
    page = Page(text)
    assert [i["data-task"] for i in page.items][:2] == ["03_yolo_head/decode_tests", "03_yolo_head/saved_by_tests"]
    assert [i["data-wrong"] for i in page.items][:2] == ["7", "3"]
    assert not [row for row in page.rows if "data-unanswered" in row]
    assert "Every graded submission answered every autograded task" in text


def test_only_the_stub_s_verdict_counts_as_unanswered():
    """The words a hidden check, a visible test and check() write for a reached stub; a wrong answer
    whose verdict quotes them elsewhere (what it raised, the detail lines) stays a mistake."""
    for stub in (NOT_IMPLEMENTED, "stub is not implemented yet",
                 "cube_sum_grad is not implemented yet: replace `raise NotImplementedError` in its cell (cell 4)",
                 "FixedDetect.forward is not implemented yet\n  for input: x"):
        assert report.is_unanswered(stub), stub
    for wrong in ("decode raised NotImplementedError\n  detail   : x is not implemented yet",
                  "decode raised Oops is not implemented yet", "the boxes are wrong\n decode is not implemented yet",
                  "a b is not implemented yet", "", "failed", WRONG):
        assert not report.is_unanswered(wrong), wrong


def test_unanswered_survive_the_ledger_and_stay_escaped(tmp_path, monkeypatch):
    """``report`` rebuilds the same split from grading-ledger.json; a hostile id among those who left a
    task unanswered is text (control: the same page without escaping carries the markup)."""
    import dataclasses
    import json

    rs = _class_skipped_vs_wrong()
    rs[0].student = PAYLOAD_ID
    ledger = {f"{r.student}/{r.assignment}": {"result": {**dataclasses.asdict(r), "feedback": [], "autograded": []}}
              for r in rs}
    (tmp_path / "grading-ledger.json").write_text(json.dumps(ledger), encoding="utf-8")
    again = report.results_from_ledger(tmp_path)
    text = report.build_html(again, source="s", generated="g")
    assert text == report.build_html(rs, source="s", generated="g")
    row = next(row for row in Page(text).rows if row.get("data-task") == "03_yolo_head/decode_tests"
               and "data-unanswered" in row)
    assert PAYLOAD_ID in row["text"] and "<img src=x" not in text
    monkeypatch.setattr(report, "esc", lambda s: "" if s is None else str(s))
    assert "<img src=x onerror" in report.build_html(again, source="s", generated="g")


@pytest.mark.slow
def test_a_blank_hand_in_graded_for_real_is_not_attempted_not_a_mistake(tmp_path):
    """Every released notebook handed in untouched (``blank``) next to a partial answer (the demo's
    ``ben``), graded by the real pipeline: each of blank's autograded questions comes back with the
    hidden check's "... is not implemented yet", is listed under Not attempted, and the headline holds
    only ben's mistakes. The old ranking (points lost) would have put blank's tasks in it."""
    import nbformat

    from instructor.authoring.samples import build_notebook, parse_sample

    incoming = tmp_path / "incoming"
    for a in course.assignments():
        for nb in course.source_notebooks(a):
            dest = incoming / "blank" / a
            dest.mkdir(parents=True, exist_ok=True)
            (dest / nb.name).write_bytes((REPO / "release" / a / nb.name).read_bytes())
    name, nb = build_notebook(parse_sample(REPO / "tests" / "samples" / "00_orientation" / "ben.py"))
    (incoming / "ben" / "00_orientation").mkdir(parents=True)
    nbformat.write(nb, incoming / "ben" / "00_orientation" / name)
    subs, problems = course.collect_submissions(incoming)
    graded: list[Result] = []
    with contextlib.redirect_stdout(io.StringIO()):
        status = cli._grade_and_report(subs, problems, tmp_path / "course", tmp_path / "out", progress=False,
                                       jobs=None, force=True, keep=graded)
    assert status == 0 and all(r.ok for r in graded), [(r.student, r.assignment, r.error) for r in graded]
    blank = {(r.assignment, q.grade_id) for r in graded if r.student == "blank" for q in r.questions
             if q.kind == "auto"}
    assert len(blank) >= 15
    for r in graded:
        if r.student == "blank":
            for a, gid in blank:
                if a == r.assignment:
                    assert report.is_unanswered(r.verdicts[gid]["message"]), (gid, r.verdicts[gid])
    ben = next(r for r in graded if r.student == "ben")
    ben_wrong = {f"00_orientation/{q.grade_id}" for q in ben.questions if q.kind == "auto" and q.score < q.max_score}
    assert ben_wrong and not any(report.is_unanswered(ben.verdicts[g.split("/")[1]]["message"]) for g in ben_wrong)

    page = Page((tmp_path / "out" / report.REPORT_NAME).read_text(encoding="utf-8"))
    assert {i["data-task"] for i in page.items} == ben_wrong
    assert all(i["data-wrong"] == "1" for i in page.items)
    left = {row["data-task"]: row["data-unanswered"] for row in page.rows
            if "data-unanswered" in row and "data-cause" not in row}
    assert left == {f"{a}/{gid}": "1" for a, gid in blank}
    # the control: the old ranking, by points lost, over the same grading
    tasks = report.task_causes(graded)
    old = sorted((t for t in tasks.values() if t.kind == "auto" and t.lost > 0),
                 key=lambda t: (-t.lost, -t.failing, t.assignment, t.grade_id))[:report.TOP_TASKS]
    assert any(f"{t.assignment}/{t.grade_id}" not in ben_wrong for t in old), [t.grade_id for t in old]


def test_the_hub_docs_name_the_file_formgrader_serves_and_a_command_that_writes_it(tmp_path):
    """docs/deploying.md's "Where the class report is": the path it names is the one formgrader's Class
    Report link reads, and its command is a real ``report`` invocation writing there."""
    from instructor.classroom import formgrader
    from instructor.classroom.cli import build_parser

    doc = (REPO / "docs" / "deploying.md").read_text(encoding="utf-8")
    section = doc.split("### Where the class report is", 1)[1].split("\n## ", 1)[0]
    assert f"`P/course/{report.REPORT_NAME}`" in section and "**Class Report**" in section
    assert formgrader.read_report(tmp_path) == (None, tmp_path / report.REPORT_NAME)
    cmd = re.search(r"P/env/bin/python -m autograder (report [^\n`]*)", section).group(1).split()
    args = build_parser().parse_args(cmd)
    assert args.func is cli.cmd_report and args.workdir == "P/course" and args.out is None
    assert "Class Report" in (REPO / "docs" / "instructors.md").read_text(encoding="utf-8")


def test_the_page_is_the_same_for_the_same_results():
    rs = _synthetic()
    one = report.build_html(rs, source="s", generated="g")
    two = report.build_html(list(reversed(rs)), source="s", generated="g")
    assert one == two


# --------------------------------------------------------------------------- hostile text

PAYLOAD_ID = "<img src=x onerror=console.log(/PWNED:student-id/.source)>$\\frac{1}{$"
PAYLOAD_FLAG = "<script>console.log(/PWNED:flag-script/.source)</script> and <b>bold</b>"
PAYLOAD_REASON = "ValueError: <svg onload=console.log(/PWNED:reason-svg/.source)></svg>"
PAYLOAD_CAUSE = "f raised <img src=y onerror=console.log(/PWNED:verdict/.source)>\n  try next : <script>x</script>"


def _synthetic() -> list[Result]:
    """A tiny class with hostile text wherever a student controls it (ids, flags, reasons, what a
    submission raised, which a verdict quotes)."""
    def r(student, score, **kw):
        return Result(student, "00_orientation", True, [QuestionScore("q_tests", score, 2.0, "auto"),
                                                        QuestionScore("essay", None, 1.0, "manual")],
                      seconds=3.0 + score, verdicts={"q_tests": {"passed": score == 2.0, "message": PAYLOAD_CAUSE,
                                                                 "cases": 1}}, **kw)

    return [r("ann", 2.0), r(PAYLOAD_ID, 0.0, flags=[PAYLOAD_FLAG], integrity=["q_tests: " + PAYLOAD_FLAG]),
            Result("bob", "00_orientation", False, error=PAYLOAD_REASON, seconds=1.0)]


def test_hostile_text_is_escaped_in_the_page():
    text = report.build_html(_synthetic(), source="s", generated="g")
    for raw in ("<img src=x", "<img src=y", "<script>console", "<svg onload", "<b>bold"):
        assert raw not in text, raw
    assert "&lt;img src=x onerror=console.log(/PWNED:student-id/.source)&gt;" in text
    assert "&lt;script&gt;console.log(/PWNED:flag-script/.source)&lt;/script&gt;" in text
    assert Page(text).scripts == 0


# --------------------------------------------------------------------------- in Chromium

def _load(paths: list[Path], profile: Path) -> dict:
    """Each page in a fresh headless Chromium profile: its images, console messages and what ran."""
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    seen = {}
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, headless=True,
                                                   args=CHROMIUM_ARGS,
                                                   viewport={"width": 1280, "height": 900})
        try:
            for path in paths:
                page = ctx.new_page()
                console, requests = [], []
                page.on("console", lambda m, c=console: c.append((m.type, m.text)))
                page.on("pageerror", lambda e, c=console: c.append(("error", f"uncaught: {e}")))
                page.on("request", lambda r, q=requests: q.append(r.url))
                page.goto(path.as_uri(), wait_until="load", timeout=60_000)
                page.wait_for_timeout(300)   # an onerror fires after the load event
                imgs = page.evaluate("Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])")
                seen[path.name] = {"console": console, "imgs": imgs, "requests": requests,
                                   "fired": {t.split("PWNED:", 1)[1] for _, t in console if "PWNED:" in t}}
                page.close()
        finally:
            ctx.close()
    return seen


@pytest.mark.slow
@pytest.mark.browser
def test_chromium_shows_the_demo_report_every_image_decoded_no_console_error(demo, tmp_path):
    from test_browser import _require_browser

    _require_browser()
    seen = _load([demo.page], tmp_path / "profile")[demo.page.name]
    assert len(seen["imgs"]) == sum(1 for _ in Page(demo.html).imgs) >= 10
    bad = [alt for alt, complete, width in seen["imgs"] if not (complete and width > 0)]
    assert not bad, bad
    assert not [m for m in seen["console"] if m[0] in ("error", "warning")], seen["console"]
    assert all(u.startswith(("file:", "data:")) for u in seen["requests"]), seen["requests"]


@pytest.mark.browser
def test_chromium_runs_no_student_payload_and_the_control_shows_it_would(tmp_path, monkeypatch):
    """Two layers, each checked alone: the escaping, and the page's policy. The control — neither —
    runs every payload, or this test proves nothing."""
    from test_browser import _require_browser

    _require_browser()
    pages = {}
    for name, escaping, policy in [("defended", True, True), ("escaped-only", True, False),
                                   ("policy-only", False, True), ("control", False, False)]:
        with monkeypatch.context() as m:
            if not escaping:
                m.setattr(report, "esc", lambda s: "" if s is None else str(s))
            if not policy:
                m.setattr(report, "CSP", "default-src *; script-src 'unsafe-inline'")
            pages[name] = report.write_report(_synthetic(), tmp_path / f"{name}.html", source="hostile", generated="g")
    seen = _load(list(pages.values()), tmp_path / "profile")
    payloads = {"student-id", "flag-script", "reason-svg", "verdict"}
    assert seen["control.html"]["fired"] >= payloads, seen["control.html"]
    for name in ("defended", "escaped-only", "policy-only"):
        assert seen[f"{name}.html"]["fired"] == set(), (name, seen[f"{name}.html"]["console"])
    defended = seen["defended.html"]
    assert all(c and w > 0 for _, c, w in defended["imgs"]), defended["imgs"]
    assert not [m for m in defended["console"] if m[0] == "error"], defended["console"]
