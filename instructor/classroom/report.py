"""The class report: one offline HTML page an instructor reads in half a minute to see what to re-teach.

Built after ``grade`` from the results in memory (:func:`write_report`), or later by
``python -m autograder report`` from what grading persisted in the course folder: the
``grading-ledger.json`` of :class:`instructor.batch.course.Ledger` (each submission's scores, the hidden checks'
verdicts, flags, integrity lines, timings; :func:`results_from_ledger`).

The page, top to bottom:

1. *what to re-teach*: the tasks ranked by how many submissions answered them and got them wrong (a
   real mistake: an answer was written and its check failed), each with its most common causes of
   failure and how many submissions had each;
2. *not attempted*: per task, how many submissions left it unanswered (the hidden check reached the
   ``raise NotImplementedError`` stub: :func:`is_unanswered`), apart from the mistakes: an empty answer
   is not something to re-teach, and a task most students skipped must not push a task they got wrong
   out of the headline;
3. the score distribution of each question (one small histogram each), per assignment;
4. the causes of failure per task: every failing answered test cell grouped by the cause its hidden check
   gave (the verdict's first line, normalised: :func:`cause_of`), counted, with who had it;
5. the flagged submissions: what grading undid or stopped, the in-kernel tests that disagreed with
   the check outside the kernel, and the submissions whose grading failed, with the reason;
6. the grading time per submission (where the seconds went).

Plots are matplotlib (Agg) PNGs embedded as ``data:`` URIs. Everything a student controls (ids,
flags, reasons, verdict texts, which quote what a submission raised) is HTML-escaped, and the page
carries a Content-Security-Policy that runs no script at all (:data:`CSP`). No student markup reaches
the page at all, so none can match its selectors or lie over it (``tests/test_page_takeover.py``). The output depends only
on the results (sorted orders, no time in the plots) except the one "generated" line.
"""
from __future__ import annotations

import base64
import html
import io
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder.i18n import N_, language

from ..engine.i18n import translate_text, translate_verdict
from ..engine.pipeline import QuestionScore, Result

__all__ = ["REPORT_NAME", "CSP", "ReportError", "write_report", "build_html", "results_from_ledger",
           "cause_of", "hint_of", "is_unanswered", "task_causes", "reteach", "not_attempted", "esc"]

#: The report's file name, next to grades.csv.
REPORT_NAME = "class-report.html"
#: No script, no network: only inline styles and ``data:`` images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
#: How many tasks the headline lists, and causes per task there.
TOP_TASKS, TOP_CAUSES = 6, 3
#: Above this many submissions the time plot is a histogram (and the slowest are listed).
MAX_TIME_BARS = 40

PASSED_HERE_FAILED_THERE = N_("the notebook's own test failed in the student's kernel "
                               "(the hidden check outside it passed)")
NO_VERDICT = N_("no verdict from a hidden check (the test cell failed)")


class ReportError(Exception):
    """Nothing to report from: the message names the folder and what is missing."""


def esc(text) -> str:
    """Text for the page: HTML-escaped (quotes too), control characters dropped."""
    s = "" if text is None else str(text)
    s = "".join(c for c in s if c in "\n\t" or (ord(c) >= 32 and not 0x7f <= ord(c) < 0xa0))
    return html.escape(s, quote=True)


# --------------------------------------------------------------------------- causes of failure

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def cause_of(message: str) -> str:
    """The cause a verdict gives, normalised so that the same cause from different students groups
    together: its first line (the lines below it name the input, expected/got values, the hint),
    whitespace collapsed, free-standing numbers (a call's index, a parameter's) as ``#``."""
    lines = [l.strip() for l in (message or "").splitlines() if l.strip()]
    first = " ".join(lines[0].split()) if lines else "failed"
    first = _NUMBER.sub("#", first)
    return first if len(first) <= 200 else first[:199] + "…"


#: The first line of a verdict on a test cell whose answer was never written: the hidden check called the
#: student's function and reached its ``raise NotImplementedError`` stub. The hidden checks write
#: ``"{function} is not implemented yet"`` (``instructor.hidden._error_message``), the visible tests and
#: ``check()`` the same words (``autograder.checks.call_student``, ``autograder.check``). Anchored: a
#: function's name, then those words, so a wrong answer's verdict that only quotes them ("decode raised
#: ...: x is not implemented yet") stays a wrong answer.
_UNANSWERED = re.compile(r"^`?[A-Za-z_][\w.]*`?(?:\(\.\.\.\))? is not implemented yet\b")


def is_unanswered(message: str) -> bool:
    """Whether a failing verdict says the answer was never written (the ``raise NotImplementedError``
    stub was reached), as opposed to an answer that was written and is wrong."""
    lines = [l.strip() for l in (message or "").splitlines() if l.strip()]
    return bool(lines) and bool(_UNANSWERED.match(lines[0]))


def hint_of(message: str) -> str:
    """The verdict's ``try next`` hint (what the hidden check tells the student to do), or ''."""
    for line in (message or "").splitlines():
        if line.strip().startswith("try next"):
            return line.split(":", 1)[1].strip() if ":" in line else ""
    return ""


@dataclass
class Cause:
    text: str
    count: int = 0
    points: float = 0.0
    students: list[str] = field(default_factory=list)
    hints: Counter = field(default_factory=Counter)


@dataclass
class Task:
    assignment: str
    grade_id: str
    kind: str
    max_score: float
    scores: list[float] = field(default_factory=list)       # the graded submissions' scores
    pending: int = 0                                         # not graded yet (by hand)
    causes: dict[str, Cause] = field(default_factory=dict)   # the answered-and-wrong ones, by cause
    unanswered: list[str] = field(default_factory=list)      # who left it unanswered (the stub reached)
    unanswered_points: float = 0.0

    @property
    def lost(self) -> float:
        return sum(self.max_score - s for s in self.scores)

    @property
    def failing(self) -> int:
        return sum(1 for s in self.scores if s < self.max_score)

    @property
    def answered(self) -> int:
        """Graded submissions that wrote an answer (right or wrong)."""
        return len(self.scores) - len(self.unanswered)

    @property
    def wrong(self) -> int:
        """Submissions that answered and lost points: the mistakes to re-teach."""
        return self.failing - len(self.unanswered)

    @property
    def wrong_lost(self) -> float:
        return self.lost - self.unanswered_points

    def ranked_causes(self) -> list[Cause]:
        return sorted(self.causes.values(), key=lambda c: (-c.count, -c.points, c.text))


def _graded(results: list[Result]) -> list[Result]:
    return sorted((r for r in results if r.ok), key=lambda r: (r.assignment, r.student))


def task_causes(results: list[Result]) -> dict[tuple[str, str], Task]:
    """{(assignment, grade_id): Task} over the graded submissions, in the assignments' question order;
    each lost point of an autograded question booked under the cause its hidden check gave, or, when the
    check found the answer never written (:func:`is_unanswered`), under the task's unanswered."""
    tasks: dict[tuple[str, str], Task] = {}
    for r in _graded(results):
        for q in r.questions:
            key = (r.assignment, q.grade_id)
            t = tasks.setdefault(key, Task(r.assignment, q.grade_id, q.kind, q.max_score))
            if q.score is None:
                t.pending += 1
                continue
            t.scores.append(float(q.score))
            if q.kind != "auto" or q.score >= q.max_score:
                continue
            v = (r.verdicts or {}).get(q.grade_id)
            if isinstance(v, dict) and not v.get("passed", False) and is_unanswered(str(v.get("message", ""))):
                t.unanswered.append(r.student)
                t.unanswered_points += q.max_score - q.score
                continue
            if isinstance(v, dict) and not v.get("passed", False):
                text, hint = cause_of(str(v.get("message", ""))), hint_of(str(v.get("message", "")))
            elif isinstance(v, dict):
                text, hint = PASSED_HERE_FAILED_THERE, ""
            else:
                text, hint = NO_VERDICT, ""
            c = t.causes.setdefault(text, Cause(text))
            c.count += 1
            c.points += q.max_score - q.score
            c.students.append(r.student)
            if hint:
                c.hints[hint] += 1
    order = {a: i for i, a in enumerate(sorted({a for a, _ in tasks}))}
    return dict(sorted(tasks.items(), key=lambda kv: (order[kv[0][0]],)))  # stable: question order kept


def reteach(tasks: dict[tuple[str, str], Task]) -> list[Task]:
    """The autograded tasks that submissions answered and got wrong, the most such submissions first
    (then the points they lost). A task nobody answered wrongly is not here, however many left it
    unanswered: those are :func:`not_attempted`."""
    wrong = [t for t in tasks.values() if t.kind == "auto" and t.wrong > 0]
    return sorted(wrong, key=lambda t: (-t.wrong, -t.wrong_lost, t.assignment, t.grade_id))


def not_attempted(tasks: dict[tuple[str, str], Task]) -> list[Task]:
    """The autograded tasks some submissions left unanswered, the most such submissions first."""
    left = [t for t in tasks.values() if t.kind == "auto" and t.unanswered]
    return sorted(left, key=lambda t: (-len(t.unanswered), t.assignment, t.grade_id))


# --------------------------------------------------------------------------- reading what grading persisted

def results_from_ledger(workdir: Path) -> list[Result]:
    """The results grading recorded in ``workdir/grading-ledger.json`` (every submission graded in that
    course folder, its latest grading). Raises :class:`ReportError` naming what is missing."""
    workdir = Path(workdir)
    ledger = workdir / "grading-ledger.json"
    if not workdir.is_dir():
        raise ReportError(f"{workdir}: no such folder (give the course folder you graded in: "
                          "the --workdir of `python -m autograder grade`)")
    if not ledger.is_file():
        extra = (" (grades.csv is here, but the ledger lives in the course folder nbgrader graded in: "
                 "the --workdir of `grade`, not its --out)" if (workdir / "grades.csv").is_file() else "")
        raise ReportError(f"{workdir}: nothing graded here yet: no grading-ledger.json{extra}; run "
                          f"`python -m autograder grade SUBMISSIONS_DIR --workdir {workdir}` first")
    try:
        data = json.loads(ledger.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ReportError(f"{ledger}: cannot be read as the grading ledger ({err})") from None
    results = []
    for key in sorted(data if isinstance(data, dict) else {}):
        entry = data[key]
        if not isinstance(entry, dict):
            continue
        student, _, assignment = key.rpartition("/")
        if "attempt" in entry:   # a grading process died on these files; `grade` will not retry them
            started = (entry["attempt"] or {}).get("started", "?")
            results.append(Result(student, assignment, ok=False,
                                  error=f"not graded: the grading process died while grading this submission "
                                        f"(run started {started}); `grade --force` retries it"))
            continue
        r = entry.get("result")
        if not isinstance(r, dict):
            continue
        results.append(Result(
            student=str(r.get("student", student)), assignment=str(r.get("assignment", assignment)),
            ok=bool(r.get("ok")), error=str(r.get("error") or ""),
            questions=[QuestionScore(q["grade_id"], q.get("score"), q.get("max_score", 0.0), q.get("kind", "auto"))
                       for q in r.get("questions") or []],
            seconds=float(r.get("seconds") or 0.0), flags=list(r.get("flags") or []),
            integrity=list(r.get("integrity") or []), confirm_seconds=float(r.get("confirm_seconds") or 0.0),
            verdicts=dict(r.get("verdicts") or {}), phases=dict(r.get("phases") or {})))
    if not results:
        raise ReportError(f"{ledger}: records no graded submission yet; run `python -m autograder grade` first")
    return results


# --------------------------------------------------------------------------- plots

#: colours: lost everything / some / nothing
RED, AMBER, GREEN, GREY = "#c0392b", "#e0a030", "#2e8b57", "#9aa0a6"
PHASE_COLOURS = {"confirm": "#4c72b0", "kernel start": "#9aa0a6", "answer cells": "#55a868",
                 "test cells": "#8172b2", "bookkeeping": "#ccb974", "feedback": "#64b5cd"}


class _Plots:
    """matplotlib without pyplot (no global state): each figure to a PNG ``data:`` URI."""

    def __init__(self):
        # no pyplot and no matplotlib.use(): a Figure saved as PNG is drawn by the Agg canvas, whatever
        # backend the calling process (a notebook, formgrader) has chosen
        from matplotlib.figure import Figure

        self.Figure = Figure
        self.rc = {"text.parse_math": False,   # a student's '$' is text, never mathtext
                   "font.size": 9, "axes.titlesize": 9, "axes.spines.top": False, "axes.spines.right": False,
                   "svg.hashsalt": "course", "path.simplify": True}

    def png(self, fig) -> str:
        import matplotlib

        buf = io.BytesIO()
        with matplotlib.rc_context(self.rc):
            fig.savefig(buf, format="png", metadata={"Software": None})
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")

    def figure(self, w: float, h: float):
        import matplotlib

        from matplotlib.backends.backend_agg import FigureCanvasAgg

        with matplotlib.rc_context(self.rc):
            fig = self.Figure(figsize=(w, h), dpi=100, layout="constrained")
            FigureCanvasAgg(fig)   # drawn by Agg
            return fig

    def histogram(self, scores: list[float], max_score: float, title: str, w=2.05, h=1.6) -> str:
        """Bars: how many submissions got each score (0 .. max), red/amber/green."""
        import matplotlib

        with matplotlib.rc_context(self.rc):
            fig = self.figure(w, h)
            ax = fig.add_subplot()
            values = sorted({0.0, float(max_score)} | {float(s) for s in scores})
            counts = Counter(float(s) for s in scores)
            colours = [RED if v <= 0 else GREEN if v >= max_score else AMBER for v in values]
            xs = range(len(values))
            ax.bar(xs, [counts.get(v, 0) for v in values], color=colours, width=0.7)
            ax.set_xticks(list(xs), [f"{v:g}" for v in values])
            top = max(counts.values(), default=0)
            ax.set_ylim(0, max(1, top) * 1.15)
            ax.yaxis.get_major_locator().set_params(integer=True)
            ax.set_title(title, loc="left")
            ax.set_xlabel("points", labelpad=1)
            for x, v in zip(xs, values):
                if counts.get(v):
                    ax.annotate(str(counts[v]), (x, counts[v]), ha="center", va="bottom", fontsize=8)
            return self.png(fig)

    def pending(self, n: int, title: str, w=2.05, h=1.6) -> str:
        import matplotlib

        with matplotlib.rc_context(self.rc):
            fig = self.figure(w, h)
            ax = fig.add_subplot()
            ax.axis("off")
            ax.set_title(title, loc="left")
            ax.text(0.5, 0.45, f"{n} pending\n(graded by hand)", ha="center", va="center", color=GREY,
                    transform=ax.transAxes)
            return self.png(fig)

    def times(self, results: list[Result]) -> str:
        """Seconds per submission: stacked by phase (slowest first), or a histogram for a big class."""
        import matplotlib

        rs = sorted(results, key=lambda r: (-r.seconds, r.assignment, r.student))
        with matplotlib.rc_context(self.rc):
            if len(rs) > MAX_TIME_BARS:
                fig = self.figure(7.5, 2.6)
                ax = fig.add_subplot()
                ax.hist([r.seconds for r in rs], bins=30, color="#4c72b0")
                ax.set_xlabel("seconds to grade one submission")
                ax.set_ylabel("submissions")
                return self.png(fig)
            phased = any(r.phases for r in rs)
            fig = self.figure(9.0, (0.9 if phased else 0.6) + 0.24 * len(rs))
            ax = fig.add_subplot()
            labels = [_short(f"{r.student} / {r.assignment}", 48) for r in rs]
            ys = list(range(len(rs)))[::-1]
            if phased:
                left = [0.0] * len(rs)
                names = [p for p in PHASE_COLOURS if any(p in r.phases for r in rs)]
                names += sorted({p for r in rs for p in r.phases} - set(names))
                for p in names:
                    vals = [float(r.phases.get(p, 0.0)) for r in rs]
                    ax.barh(ys, vals, left=left, color=PHASE_COLOURS.get(p, GREY), label=p, height=0.7)
                    left = [a + b for a, b in zip(left, vals)]
                rest = [max(0.0, r.seconds - l) for r, l in zip(rs, left)]
                if any(x > 0.05 for x in rest):
                    ax.barh(ys, rest, left=left, color="#dddddd", label="other", height=0.7)
                fig.legend(loc="outside upper left", fontsize=7, ncols=8, frameon=False)
            else:
                ax.barh(ys, [r.seconds for r in rs], color=[RED if not r.ok else "#4c72b0" for r in rs], height=0.7)
            for y, r in zip(ys, rs):
                ax.annotate(f"{r.seconds:.1f} s", (r.seconds, y), xytext=(3, 0), textcoords="offset points",
                            va="center", fontsize=7)
            ax.set_yticks(ys, labels, fontsize=7)
            ax.set_xlabel("seconds to grade the submission")
            ax.set_xlim(0, max([r.seconds for r in rs] + [1.0]) * 1.12)
            return self.png(fig)


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


# --------------------------------------------------------------------------- the page

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1240px;
 padding:0 16px;color:#1d1d1f}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #e3e3e3;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#555;margin:0 0 4px}.muted{color:#666}
#reteach{background:#fff6e5;border:1px solid #f0c36d;border-radius:8px;padding:10px 18px 12px;margin-top:16px}
#reteach h2{border:0;margin:4px 0 6px}#reteach ol{margin:0;padding-left:22px}#reteach li{margin:6px 0}
.task{font-weight:600}.lost{color:#c0392b;font-weight:600}
ul.causes{margin:2px 0 0;padding-left:18px}ul.causes li{margin:1px 0}
.n{display:inline-block;min-width:2.2em;padding-right:.4em;font-weight:600;color:#c0392b}.hint{color:#555;font-size:12.5px}
.grid{display:flex;flex-wrap:wrap;gap:8px}figure{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:4px;
 background:#fff}figure.total{border-color:#999}figcaption{font-size:12px;color:#444;max-width:205px;
 overflow-wrap:anywhere}table{border-collapse:collapse;width:100%;margin:4px 0 10px}
th,td{border-bottom:1px solid #e6e6e6;padding:4px 8px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f5f5f5}td.c{text-align:right;font-weight:600;white-space:nowrap}
.who{color:#444;overflow-wrap:anywhere}pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-size:12px}
.ok{color:#2e8b57}.tag{display:inline-block;font-size:11px;border-radius:3px;padding:0 5px;color:#fff}
.tag.flag{background:#e0a030}.tag.integrity{background:#8e44ad}.tag.error{background:#c0392b}
"""


def _who(students: list[str], n: int = 8) -> str:
    names = sorted(set(students))
    shown = ", ".join(esc(s) for s in names[:n])
    return shown + (" " + _tr(N_(f"and {len(names) - n} more")) if len(names) > n else "")


def _tr(text: str) -> str:
    """The report's own text in the class's language (``COURSE_LANG``, :func:`autograder.i18n.language`)."""
    return translate_text(text, language())


def _tv(text: str) -> str:
    """A verdict's or a flag's text (what a student read, what grading said) in the class's language."""
    return translate_verdict(text, language())


def _pts(x: float) -> str:
    return f"{x:g}"


def build_html(results: list[Result], *, source: str, generated: str | None = None) -> str:
    """The report's HTML for ``results`` (``source``: where they came from, one line)."""
    plots = _Plots()
    results = sorted(results, key=lambda r: (r.assignment, r.student))
    graded = _graded(results)
    failed = [r for r in results if not r.ok]
    tasks = task_causes(results)
    ranked = reteach(tasks)
    skipped = not_attempted(tasks)
    assignments = sorted({r.assignment for r in results})
    flagged = [r for r in results if r.flags or r.integrity or not r.ok]
    out: list[str] = []
    w = out.append
    w(f"<!DOCTYPE html>\n<html lang=\"{'en' if language() == 'en' else language().replace('_', '-')}\"><head>"
      "<meta charset=\"utf-8\">")
    w(f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">")
    w("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    w(f"<title>{esc(_tr(N_('Class report')))}: {esc(', '.join(assignments))}</title><style>{STYLE}</style></head><body>")
    w(f"<h1>{esc(_tr(N_('Class report')))}</h1>")
    students = len({r.student for r in results})
    n_flagged = sum(1 for r in results if r.flags or r.integrity)
    w("<p class=\"meta\">" + _tr(N_(f"{len(results)} submission(s) from {students} student(s) in {len(assignments)} "
                                    f"assignment(s) ({esc(', '.join(assignments))}): {len(graded)} graded, "
                                    f"{n_flagged} flagged, {len(failed)} failed to grade.")) + "</p>")
    stamp = esc(generated or time.strftime('%Y-%m-%d %H:%M'))
    w("<p class=\"meta muted\">" + _tr(N_(f"generated {stamp} from {esc(source)}")) + "</p>")

    # 1. what to re-teach
    w(f"<section id=\"reteach\"><h2>{_tr(N_('What to re-teach'))}</h2>")
    if not ranked:
        w(("<p class=\"ok\">" + _tr(N_("No answered task lost autograded points: nothing to re-teach"))
           + (" " + _tr(N_("(some tasks were left unanswered: see <i>Not attempted</i> below)")) if skipped else "")
           + ".</p>") if graded else f"<p>{_tr(N_('No submission was graded.'))}</p>")
    else:
        w("<p class=\"muted\">" + _tr(N_("Tasks ranked by how many submissions answered them and got them wrong (an "
          "answer was written and its check failed; questions left unanswered are counted apart, under <i>Not "
          "attempted</i>); under each, the causes the hidden checks found, with how many submissions had each."))
          + "</p><ol>")
        for t in ranked[:TOP_TASKS]:
            left = ("; " + _tr(N_(f"{len(t.unanswered)} other(s) left it unanswered")) if t.unanswered else "")
            w(f"<li data-task=\"{esc(t.assignment)}/{esc(t.grade_id)}\" data-wrong=\"{t.wrong}\" "
              f"data-unanswered=\"{len(t.unanswered)}\"><span class=\"task\">{esc(t.grade_id)}</span> "
              f"<span class=\"muted\">({esc(t.assignment)})</span>: <span class=\"lost\">"
              + _tr(N_(f"{t.wrong} of {t.answered} submission(s) that answered it got it wrong")) + "</span>, "
              + _tr(N_(f"{_pts(t.wrong_lost)} point(s) lost ({_pts(t.max_score)} pt each)"))
              + f"{left}<ul class=\"causes\">")
            causes = t.ranked_causes()
            for c in causes[:TOP_CAUSES]:
                hint = c.hints.most_common(1)[0][0] if c.hints else ""
                w(f"<li><span class=\"n\">{c.count}&times;</span>{esc(_tv(c.text))}"
                  + (f"<br><span class=\"hint\">{esc(_tr(N_('hint the students got:')))} "
                     f"{esc(_short(_tv(hint), 220))}</span>" if hint else "")
                  + "</li>")
            if len(causes) > TOP_CAUSES:
                w("<li class=\"muted\">" + _tr(N_(f"and {len(causes) - TOP_CAUSES} other cause(s): see below")) + "</li>")
            w("</ul></li>")
        w("</ol>")
        if len(ranked) > TOP_TASKS:
            w("<p class=\"muted\">" + _tr(N_(f"{len(ranked) - TOP_TASKS} more task(s) answered wrongly: see the causes "
                                             "below.")) + "</p>")
    w("</section>")

    # 2. not attempted: unanswered, apart from the mistakes
    w(f"<section id=\"unanswered\"><h2>{_tr(N_('Not attempted'))}</h2>")
    if not skipped:
        w(f"<p class=\"ok\">{_tr(N_('Every graded submission answered every autograded task.'))}</p>" if graded else
          f"<p>{_tr(N_('No submission was graded.'))}</p>")
    else:
        w("<p class=\"muted\">" + _tr(N_("Autograded tasks that submissions left unanswered: the hidden check reached "
          "the <code>raise NotImplementedError</code> left in the answer cell (the student read &ldquo;&hellip; is "
          "not implemented yet&rdquo;). Not mistakes, so not ranked above; many here may mean the task came too "
          "late or took too long.")) + "</p><table><tr>"
          + "".join(f"<th>{_tr(h)}</th>" for h in (N_("task"), N_("assignment"), N_("unanswered"), N_("answered"),
                                                   N_("answered and wrong"), N_("students who left it unanswered")))
          + "</tr>")
        for t in skipped:
            w(f"<tr data-task=\"{esc(t.assignment)}/{esc(t.grade_id)}\" data-unanswered=\"{len(t.unanswered)}\" "
              f"data-wrong=\"{t.wrong}\"><td>{esc(t.grade_id)}</td><td>{esc(t.assignment)}</td>"
              f"<td class=\"c\">{len(t.unanswered)} of {len(t.scores)}</td><td class=\"c\">{t.answered}</td>"
              f"<td class=\"c\">{t.wrong}</td><td class=\"who\">{_who(t.unanswered)}</td></tr>")
        w("</table>")
    w("</section>")

    # 3. score distribution per question
    w(f"<section id=\"scores\"><h2>{_tr(N_('Score distribution per question'))}</h2>")
    for a in assignments:
        rs = [r for r in graded if r.assignment == a]
        w(f"<h3>{esc(a)}</h3>")
        if not rs:
            w(f"<p>{_tr(N_('No submission of this assignment was graded.'))}</p>")
            continue
        totals = [r.auto_score for r in rs]
        amax = max(r.auto_max for r in rs)
        mean = sum(totals) / len(totals)
        full = sum(1 for x in totals if x >= amax)
        w("<p class=\"muted\">" + _tr(N_(f"{len(rs)} graded; autograded total: mean {mean:.1f} of {_pts(amax)}, "
                                         f"{full} with full marks.")) + "</p><div class=\"grid\">")
        img = plots.histogram(totals, amax, "autograded total", w=2.6, h=1.6)
        w(f"<figure class=\"total\"><img src=\"{img}\" alt=\"histogram: {esc(a)} autograded total\" "
          f"data-assignment=\"{esc(a)}\" data-question=\"(total)\"><figcaption>"
          + _tr(N_(f"autograded total (of {_pts(amax)})")) + "</figcaption></figure>")
        for (ta, gid), t in tasks.items():
            if ta != a:
                continue
            title = _short(gid, 30)
            img = (plots.histogram(t.scores, t.max_score, title) if t.scores else plots.pending(t.pending, title))
            kind = "" if t.kind == "auto" else f", {t.kind}"
            cap = (f"{esc(gid)} ({_pts(t.max_score)} pt{esc(kind)}): "
                   + (_tr(N_(f"mean {sum(t.scores) / len(t.scores):.2g}")) if t.scores else _tr(N_("not graded yet")))
                   + (", " + _tr(N_(f"{t.pending} pending")) if t.pending and t.scores else "")
                   + (", " + _tr(N_(f"{len(t.unanswered)} unanswered")) if t.unanswered else ""))
            w(f"<figure><img src=\"{img}\" alt=\"histogram: {esc(a)} {esc(gid)}\" data-assignment=\"{esc(a)}\" "
              f"data-question=\"{esc(gid)}\"><figcaption>{cap}</figcaption></figure>")
        w("</div>")
    w("</section>")

    # 4. causes of failure per task
    w(f"<section id=\"causes\"><h2>{_tr(N_('Causes of failure per task'))}</h2>")
    w("<p class=\"muted\">" + _tr(N_("Each answered autograded test cell below full marks, grouped by the cause its "
      "hidden check gave (the first line of the verdict the student read; numbers shown as #). Unanswered ones "
      "are under <i>Not attempted</i>.")) + "</p>")
    any_cause = False
    for a in assignments:
        rows = [(t, c) for (ta, _), t in tasks.items() if ta == a for c in t.ranked_causes()]
        if not rows:
            continue
        any_cause = True
        w(f"<h3>{esc(a)}</h3><table><tr>"
          + "".join(f"<th>{_tr(h)}</th>" for h in (N_("task"), N_("cause (hidden check's verdict)"), N_("count"),
                                                   N_("points lost"), N_("students"))) + "</tr>")
        for t, c in rows:
            w(f"<tr data-task=\"{esc(a)}/{esc(t.grade_id)}\" data-cause=\"{esc(c.text)}\" data-count=\"{c.count}\">"
              f"<td>{esc(t.grade_id)}</td><td>{esc(_tv(c.text))}</td><td class=\"c\">{c.count}</td>"
              f"<td class=\"c\">{_pts(c.points)}</td><td class=\"who\">{_who(c.students)}</td></tr>")
        w("</table>")
    if not any_cause:
        w(f"<p class=\"ok\">{_tr(N_('No answered autograded test cell failed.'))}</p>")
    w("</section>")

    # 5. flagged submissions
    w(f"<section id=\"flagged\"><h2>{_tr(N_('Flagged submissions'))}</h2>")
    if not flagged:
        w(f"<p class=\"ok\">{_tr(N_('No submission was flagged and every grading succeeded.'))}</p>")
    else:
        w("<p class=\"muted\">" + _tr(N_("What grading undid or stopped (flag), where the notebook's own tests and the "
          "check outside the kernel disagreed (integrity: the lower score was kept), and gradings that failed "
          "(error).")) + "</p><table><tr>"
          + "".join(f"<th>{_tr(h)}</th>" for h in (N_("submission"), N_("what"), N_("detail"))) + "</tr>")
        for r in flagged:
            sid = f"{esc(r.student)} / {esc(r.assignment)}"
            items = ([("flag", x) for x in r.flags] + [("integrity", x) for x in r.integrity]
                     + ([("error", r.error or N_("no reason was recorded"))] if not r.ok else []))
            for kind, text in items:
                w(f"<tr data-submission=\"{esc(r.student)}/{esc(r.assignment)}\" data-kind=\"{kind}\">"
                  f"<td class=\"who\">{sid}</td><td><span class=\"tag {kind}\">{esc(_tr(kind))}</span></td>"
                  f"<td><pre>{esc(_tv(text))}</pre></td></tr>")
        w("</table>")
    w("</section>")

    # 6. grading time
    w(f"<section id=\"time\"><h2>{_tr(N_('Grading time per submission'))}</h2>")
    N_("flag"), N_("integrity"), N_("error")   # the kinds of the flagged table, shown translated
    if results:
        times = sorted(r.seconds for r in results)

        def pct(q):
            return times[min(len(times) - 1, int(round(q * (len(times) - 1))))]

        slowest = sorted(results, key=lambda r: (-r.seconds, r.assignment, r.student))[:5]
        w("<p class=\"muted\">" + _tr(N_(f"p50 {pct(0.5):.1f} s, p95 {pct(0.95):.1f} s, total {sum(times):.0f} s; "
                                         "slowest:")) + " "
          + ", ".join(f"{esc(r.student)}/{esc(r.assignment)} {r.seconds:.1f} s" for r in slowest) + "</p>")
        w(f"<figure><img src=\"{plots.times(results)}\" alt=\"grading time per submission\" "
          "data-plot=\"time\"></figure>")
    w("</section></body></html>\n")
    return "\n".join(out)


def write_report(results: list[Result], path: Path, *, source: str, generated: str | None = None) -> Path:
    """Write the report for ``results`` to ``path`` (atomically); return the path."""
    from ..engine.pipeline import write_atomically

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, build_html(results, source=source, generated=generated))
    return path
