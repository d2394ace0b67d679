"""The course's command line: ``python -m autograder {release,grade,selfgrade,demo}``.

Thin over nbgrader: releasing is ``generate_assignment``, grading is ``autograde`` +
``generate_feedback`` per submission, both through :mod:`instructor.batch.course`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from autograder.i18n import N_

from ..batch import course
from ..batch.course import REPO, Problem
from ..engine.i18n import translate_text, translate_verdict
from ..layout import EDITIONS, LANG_ENV, edition_lang, edition_root, folder_edition, notebook_language
from . import export

GRADE_HELP = """\
Autograde every submission under SUBMISSIONS_DIR with nbgrader, write grades and feedback.

Accepted layouts of SUBMISSIONS_DIR:
  * nbgrader's exchange layout   <student>/<assignment>/<notebook>.ipynb
    (SUBMISSIONS_DIR may be the 'submitted' folder or the course folder holding it);
  * one folder per student       <student>/<notebook>.ipynb
    (the assignment is recognised from the notebook's file name, or from its cell ids for a
    renamed copy such as 00_orientation-Copy1.ipynb);
  * an LMS's bulk download (a .zip, or with --lms the folder it was unpacked into): Canvas's
    <lastfirst>_<user id>_<submission id>_<file> or Moodle's <Full Name>_<id>_assignsubmission_file_/<file>,
    notebooks or autograder.export()'s hand-in zips; renamed copies (-Copy1) are recognised by their
    cell ids; --roster maps the LMS's user ids (and names, for a roster row without lms_id) to student
    ids; one student's hand-ins from two LMS user ids are none of them graded. The mapped notebooks are
    laid out under <out>/handins/<download>-<n>/ and every file that could not be mapped is listed.

Nothing under SUBMISSIONS_DIR is modified: files are copied into the working course folder
(--workdir) where nbgrader writes autograded/, feedback/ and gradebook.db. A file that cannot be
graded (not a notebook, corrupt JSON, unknown assignment) is reported on one line and skipped;
the others are graded. The exit status is 1 when anything failed, 0 otherwise.
"""


def _print_problems(problems: list[Problem]) -> None:
    for p in problems:
        print(p, file=sys.stderr)


def _table(results: list[course.Result], per_block: int = 7) -> str:
    """One block per assignment (and per group of students): questions down, students across."""
    out = []
    for assignment in sorted({r.assignment for r in results}):
        layout = course.gradebook_layout(assignment)
        everyone = [r for r in results if r.assignment == assignment]
        w0 = max([len("question")] + [len(c["grade_id"]) + 12 for c in layout] + [16])
        for start in range(0, len(everyone), per_block):
            rs = everyone[start:start + per_block]
            ws = [max(len(r.student), 7) for r in rs]

            def row(label, cells):
                return label.ljust(w0) + "  " + "  ".join(str(c).rjust(w) for c, w in zip(cells, ws))

            head = row("question", [r.student for r in rs])
            out += [f"\n{assignment}" + (f" ({start + 1}-{start + len(rs)} of {len(everyone)})"
                                         if len(everyone) > per_block else ""), head, "-" * len(head)]
            for c in layout:
                label = f"{c['grade_id']} ({c['points']:g}{'' if c['kind'] == 'auto' else ', ' + c['kind']})"
                cells = []
                for r in rs:
                    q = next((q for q in r.questions if q.grade_id == c["grade_id"]), None)
                    cells.append("error" if not r.ok else
                                 "pending" if q is None or q.score is None else f"{q.score:g}")
                out.append(row(label, cells))
            out.append("-" * len(head))
            out.append(row("autograded total", [f"{r.auto_score:g}/{r.auto_max:g}" if r.ok else "error" for r in rs]))
            out.append(row("autograde time", [f"{r.seconds:.0f} s" for r in rs]))
    return "\n".join(out)


def _failed_line(r: course.Result) -> str:
    """``error: STUDENT/ASSIGNMENT: grading failed: WHY`` — the reason's first line, then the last lines
    of the failing process's error output (bounded by the pipeline), indented."""
    first, *rest = (r.error or "no reason was recorded").splitlines() or [""]
    return "\n".join([f"error: {r.student}/{r.assignment}: grading failed: {first}"] + [f"    {l}" for l in rest])


def cmd_release(args) -> int:
    t0 = time.perf_counter()
    if args.lang:   # an edition (zh_CN/): built from the catalogues first (the tool on top), never half in English
        import subprocess

        built = subprocess.run([sys.executable, "-m", "instructor.edition", "build", "--lang", args.lang], cwd=REPO)
        if built.returncode:
            print(f"error: the {args.lang} edition was not built (above), so it is not released", file=sys.stderr)
            return 1
    written = course.release(args.assignments or None, root=edition_root(args.lang))
    for p in written:
        print(f"released {p.relative_to(REPO)}")
    print(f"{len(written)} notebook(s) in {time.perf_counter() - t0:.1f} s")
    return 0


def _grade_and_report(subs, problems, workdir: Path, outdir: Path, progress: bool = True, jobs: int | None = 1,
                      force: bool = False, scheduler: str | None = None, exports: list[str] = (),
                      keep: list | None = None, roster: list | None = None, late: dict | None = None,
                      src: Path | None = None, root: Path = REPO) -> int:
    """Grade, write grades.csv (and the exports), print the report; the exit status. ``keep``: a list
    that receives the results. ``late``: (student, assignment) -> the LMS that marked the hand-in late
    (a flag on its row); ``roster``: every student on it gets a row for every assignment of this run,
    a "no hand-in" one when nothing of theirs was found (not a problem: the exit status ignores it)."""
    _print_problems(problems)
    if not subs:
        print("error: nothing to grade", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    results = course.grade(subs, workdir, progress=progress, jobs=jobs, force=force, scheduler=scheduler, root=root)
    if keep is not None:
        keep.extend(results)
    for r in results:
        if (r.student, r.assignment) in (late or {}):
            r.flags.append(f"late: {late[(r.student, r.assignment)]} marked this hand-in late")
    absent = _absent(results, problems, roster, src)
    if absent:
        print(f"roster: {len(absent)} (student, assignment) with no hand-in: "
              + ", ".join(f"{p.student}/{p.assignment}" for p in absent[:20]) + (" ..." if len(absent) > 20 else ""))
    totals, by_q = course.write_csv(results, outdir, problems + absent)
    exported = export.export_results(results, outdir, exports, problems + absent,
                                     export.people_from(roster, workdir) if exports else None,
                                     export.lms_ids_from(roster))
    print(_table(results))
    for r in results:
        for note in r.notes:
            if "not graded again" not in note:
                print(f"note: {r.student}/{r.assignment}: {note}")
    flagged = [r for r in results if r.flags or r.integrity]
    if flagged:
        print(f"\n{len(flagged)} submission(s) flagged (also in grades.csv and at the top of their feedback):")
    for r in flagged:
        for line in r.flags:
            print(f"  flagged:   {r.student}/{r.assignment}: {line}")
        for line in r.integrity:
            print(f"  integrity: {r.student}/{r.assignment}: {line}")
    sandboxed = sum(r.sandboxed for r in results)
    if results:
        print(f"\nsandbox: {sandboxed} of {len(results)} submission(s) ran in bubblewrap; every autograded point "
              "was confirmed outside the student's kernel")
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(_failed_line(r), file=sys.stderr)
    times = sorted(r.seconds for r in results)
    if times:
        def pct(q):
            return times[min(len(times) - 1, int(round(q * (len(times) - 1))))]

        slowest = sorted(results, key=lambda r: -r.seconds)[:3]
        print(f"\nper notebook: p50 {pct(0.5):.1f} s, p95 {pct(0.95):.1f} s; slowest: "
              + ", ".join(f"{r.student}/{r.assignment} {r.seconds:.1f} s" for r in slowest))
    took = time.perf_counter() - t0
    fresh = [r for r in results if not any("not graded again" in n for n in r.notes)]
    print(f"\ngraded {len(results) - len(failed)} of {len(results)} submission(s) in {took:.1f} s "
          f"({len(fresh)} graded in this run, {60 * len(fresh) / max(took, 1e-9):.1f} notebooks/min); "
          f"{len(problems)} file(s) skipped")
    print(f"grades:   {totals}\n          {by_q}")
    for fmt, paths in exported.items():
        for path in paths:
            print(f"export:   {fmt:<10} {path}")
    print(f"feedback: {workdir / 'feedback'}/<student>/<assignment>/*.html")
    page = _class_report(results, outdir, workdir)   # the class report's path, last: where to look next
    print(f"report:   {page}" + ("" if page.startswith("not written") else "  (the class report: open it in a web browser"
          + ("; formgrader's Class Report link shows it" if Path(outdir).resolve() == Path(workdir).resolve() else "")
          + ")"))
    return 1 if (problems or failed) else 0


def _class_report(results: list[course.Result], outdir: Path, workdir: Path) -> str:
    """The class report of this run's results (:mod:`.report`), next to grades.csv: its path, or why it
    was not written (a report that cannot be drawn never fails the grading)."""
    from . import report

    try:
        return str(report.write_report(results, outdir / report.REPORT_NAME,
                                       source=f"grading {len(results)} submission(s) in the course folder {workdir}"))
    except Exception as err:  # noqa: BLE001 - the grades are written; the report is extra
        return f"not written ({type(err).__name__}: {err})"


def _absent(results: list[course.Result], problems: list[Problem], roster: list | None,
            src: Path | None) -> list[Problem]:
    """A "no hand-in" row for each student of the roster and assignment of this run with neither a
    result nor a problem of theirs."""
    if not roster:
        return []
    assignments = sorted({r.assignment for r in results} | {p.assignment for p in problems if p.assignment})
    have = {(r.student, r.assignment) for r in results} | {(p.student, p.assignment) for p in problems if p.student}
    somewhere = {p.student for p in problems if p.student and not p.assignment}
    where = Path(src) if src is not None else Path("submissions")
    return [Problem(where, "no hand-in: nothing handed in maps to this student", st.id, a)
            for st in roster if st.id not in somewhere for a in assignments if (st.id, a) not in have]


def _late(imported) -> dict:
    """(student, assignment) -> the LMS that marked the hand-in late (Canvas's ``_LATE``)."""
    return {(m.student, m.assignment): m.lms for m in imported.mapped if m.late}


def _import_handins(src: Path, lms: str, roster: list | None, outdir: Path):
    """An LMS download laid out as nbgrader's folders under ``outdir/handins`` (a new folder each time):
    (that folder or None, problems, the import or None). Every file that could not be mapped becomes a
    :class:`Problem` naming it, and its student and assignment where they are known (their row)."""
    from . import handins

    try:
        n = 1
        while (dest := outdir / "handins" / f"{src.stem}-{n}").exists():
            n += 1
        imported = handins.import_bulk(src, dest, lms, roster)
    except handins.HandinError as err:
        return None, [Problem(src, str(err).removeprefix(f"{src}: "))], None
    print(f"hand-ins: {src} -> {dest}\n" + imported.summary())
    problems = [Problem(src / s[0], f"not mapped to a student and assignment: {s[1]}", s.student, s.assignment)
                for s in imported.unmapped]
    return dest, problems, imported


def cmd_grade(args) -> int:
    src = Path(args.submissions)
    # the edition: --lang, else the one whose folder --workdir is (never the English source copied over zh_CN/)
    root = edition_root(args.lang or (folder_edition(args.workdir) if args.workdir else None))
    workdir = Path(args.workdir) if args.workdir else root
    roster = None
    if args.roster:
        from .handins import HandinError, read_roster

        try:
            roster = read_roster(Path(args.roster))
        except HandinError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    extra: list[Problem] = []
    late: dict = {}
    given = src
    if src.suffix.lower() == ".zip" or args.lms:
        folder, extra, imported = _import_handins(src, args.lms or "auto", roster, Path(args.out or workdir))
        if folder is None:
            _print_problems(extra)
            return 1
        late = _late(imported)
        src = folder
    subs, problems = course.collect_submissions(src, root)
    problems = extra + problems
    return _grade_and_report(subs, problems, workdir, Path(args.out or workdir), not args.no_progress,
                             jobs=args.jobs, force=args.force, scheduler=args.scheduler,
                             exports=args.export or [], roster=roster, late=late, src=given, root=root)


def cmd_report(args) -> int:
    """The class report rebuilt from what grading recorded in the course folder (its ledger)."""
    from . import report

    workdir = Path(args.workdir)
    try:
        results = report.results_from_ledger(workdir)
    except report.ReportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else workdir / report.REPORT_NAME
    path = report.write_report(results, out, source=f"{workdir.resolve() / 'grading-ledger.json'} "
                                                    f"({len(results)} submission(s))")
    print(f"report:   {path}")
    return 0


def cmd_selfgrade(args) -> int:
    """Grade one filled-in notebook in a throw-away course folder.

    The assignment comes from ``--assignment``, else the file's name, else its nbgrader cell ids (a
    renamed copy, ``00_orientation-Copy1.ipynb``): the release notebook sharing the most of them, at
    least half. ``COURSE_SELFGRADE_JSON=PATH`` also writes the result as JSON (``autograder.check``).
    The exit status: 0 when the notebook was graded, whatever its score (the last line says where it
    stands); 1 when grading itself failed; 2 when the file cannot be graded (no such file, not a
    notebook, an unknown assignment)."""
    import json
    import threading

    path = Path(args.notebook)
    nb, why = course.read_notebook(path) if path.is_file() else (None, "no such file")
    if path.is_file() and path.suffix != course.NB_EXT:
        why = "not a notebook (.ipynb)"
    if why:
        print(Problem(path, why), file=sys.stderr)
        return 2
    if args.assignment and args.assignment not in course.assignments():
        print(Problem(path, f"unknown assignment '{args.assignment}' (known: {', '.join(course.assignments())})"),
              file=sys.stderr)
        return 2

    # the edition it was handed out in: --lang, else what the notebook says (only a language the course has)
    lang = args.lang or notebook_language(nb)
    root = edition_root(lang)

    def tr(text: str) -> str:   # what the student reads, in the notebook's language
        return translate_text(text, lang)
    found = course.recognise(nb, path.name)   # (assignment, the course's notebook name, how), or None
    if args.assignment:
        assignment, how = args.assignment, "because --assignment says so"
    elif found:
        assignment, how = found[0], found[2]
    else:
        print(Problem(path, "which assignment is this? Its name matches no notebook in source/ and its cell ids "
                            "match no released notebook; pass --assignment NAME"), file=sys.stderr)
        return 2
    expected = [p.name for p in course.source_notebooks(assignment)]
    name = (path.name if path.name in expected
            else found[1] if found and found[0] == assignment else expected[0])
    # rough seconds on a busy 2-core machine (measured: selfgrade of a full-marks sample)
    about = {"00_orientation": 35, "01_version_counter": 45, "02_names_and_storage": 45,
             "03_yolo_head": 60, "04_in_the_wild": 75}.get(assignment, 60)
    first = N_(f"grading {path} as {assignment} (hidden tests included); about {about} s")
    print(tr(first), flush=True)
    if how != "from its file name":
        print(tr(N_(f"  recognised as {assignment} {how}")) + (tr(N_(f"; graded as {name}")) if name != path.name else ""),
              flush=True)

    done, t0 = threading.Event(), time.monotonic()
    tty = sys.stdout.isatty()

    def tick() -> None:  # an elapsed-time line while nbgrader works (it prints nothing for a while)
        n = 0
        while not done.wait(1.0):
            n += 1
            if tty:
                print(f"\r  grading ... {n} s (about {about} s)", end="", flush=True)
            elif n % 15 == 0:
                print(f"  grading ... {n} s", flush=True)

    ticker = threading.Thread(target=tick, daemon=True)
    with tempfile.TemporaryDirectory(prefix="selfgrade-") as tmp:
        work = Path(tmp)
        target = work / "incoming" / "you" / assignment
        target.mkdir(parents=True)
        shutil.copy2(path, target / name)
        ticker.start()
        try:
            [res] = course.grade([course.Submission("you", assignment, [target / name])], work, root=root,
                                 feedback=False, progress=False)
        finally:
            done.set()
            ticker.join(timeout=2)
            if tty:
                print("\r" + " " * 40 + "\r", end="")
        print(tr(N_(f"graded in {time.monotonic() - t0:.0f} s")), flush=True)
        if not res.ok:
            first, *rest = (res.error or "no reason was recorded").splitlines() or [""]
            print("\n".join([f"error: {path}: grading failed: {first}"] + [f"    {l}" for l in rest]), file=sys.stderr)
            return 1
        failures = dict(f for nbp in res.autograded for f in course.failing_tests(nbp))
        print()
        for q in res.questions:
            if q.kind != "auto":
                score = (N_("pending (graded by hand)") if q.score is None else
                         f"{q.score:g} / {q.max_score:g} (graded by hand{'; not answered' if q.score == 0 else ''})")
            else:
                score = N_("pending") if q.score is None else f"{q.score:g} / {q.max_score:g}"
            print(f"  {q.grade_id:<32} {tr(score)}")
            if q.grade_id in failures:
                failures[q.grade_id] = translate_verdict(failures[q.grade_id], lang)
                for line in failures[q.grade_id].splitlines():
                    print(f"      {line}")
        for line in res.flags + res.integrity:
            note = tr(N_("note:"))
            print("  " + note + ("" if note.endswith("：") else " ") + translate_verdict(line, lang))
        print("\n" + tr(N_(f"autograded total: {res.auto_score:g} / {res.auto_max:g}"))
              + ("  " + tr(N_(f"(+ {res.manual_pending:g} point(s) graded by hand)")) if res.manual_pending else ""))
        if os.environ.get("COURSE_SELFGRADE_JSON"):
            Path(os.environ["COURSE_SELFGRADE_JSON"]).write_text(json.dumps({
                "notebook": str(path), "assignment": assignment, "recognised": how, "first_line": first,
                "questions": [dict(grade_id=q.grade_id, score=q.score, max_score=q.max_score, kind=q.kind,
                                   message=failures.get(q.grade_id, "")) for q in res.questions],
                "auto_score": res.auto_score, "auto_max": res.auto_max, "manual_pending": res.manual_pending,
                "notes": [translate_verdict(n, lang) for n in res.flags + res.integrity]}))
    print(_selfgrade_sentence(res, lang))
    return 0   # graded, whatever the score: a partial score is an answer, not a failure of the command


def _selfgrade_sentence(res, lang: str | None = None) -> str:
    """The last line of ``selfgrade``: where the student stands, in words (in the notebook's language)."""
    if res.auto_score >= res.auto_max:
        text = translate_text(N_(f"You have all {res.auto_max:g} autograded points: every visible and hidden test "
                                 "passes."), lang)
    else:
        text = translate_text(N_(f"You have {res.auto_score:g} of {res.auto_max:g} autograded points so far; see the "
                                 "table above for what to try next (each failing question's message ends with it), "
                                 "then grade it again."), lang)
    if res.manual_pending:
        text += ("" if lang and lang != "en" else " ") + translate_text(N_(f"Your written answers ({res.manual_pending:g} points) are graded by hand "
                                        "after you hand in."), lang)
    return text


#: The short demo: a handful of submissions that show the whole lifecycle (``demo --full``: every sample).
DEMO = [
    ("samples", "03_yolo_head", "cat_style", "full marks: the decoding head fixed with torch.cat"),
    ("samples", "03_yolo_head", "detach_fix", "a silent-wrong fix (decode on p.detach()): no error, no gradient: caught"),
    ("samples", "00_orientation", "ben", "partial credit, with the judge's messages in the feedback"),
    ("hostile", "00_orientation", "patch_checks", "cheating: patches the checks so every test in its kernel "
                                                  "passes: flagged, keeps what the outside check gives"),
]


def transplant(submitted, english_release, edition_release, lang: str):
    """A notebook filled in on the English release, as the same student's work on the edition's release:
    every cell the student left as released (same id, type and source as the English release's) takes
    the edition's text; every other cell (answers, the student's own cells, deleted ones) stays exactly as
    handed in, metadata and outputs included. The notebook says it is of the edition ``lang``."""
    import copy

    en = {c.get("id"): c for c in english_release.cells if c.get("id")}
    ed = {c.get("id"): c for c in edition_release.cells if c.get("id")}
    out = copy.deepcopy(submitted)
    for cell in out.cells:
        cid = cell.get("id")
        if not (cid in en and cid in ed and cell.cell_type == en[cid].cell_type == ed[cid].cell_type):
            continue
        if cell.source == en[cid].source:
            cell.source = ed[cid].source
        # nbgrader's metadata as released (its checksum is of the released text) is the edition's; a
        # metadata the student edited stays edited (only its released checksum follows the edition)
        mine, theirs, ours = (c.get("metadata", {}).get("nbgrader") for c in (cell, en[cid], ed[cid]))
        if isinstance(mine, dict) and isinstance(theirs, dict) and isinstance(ours, dict):
            if mine == theirs:
                cell.metadata["nbgrader"] = copy.deepcopy(ours)
            elif "checksum" in mine and mine.get("checksum") == theirs.get("checksum"):
                mine["checksum"] = ours.get("checksum")
    if not isinstance(out.metadata.get("course"), dict):
        out.metadata["course"] = {}
    out.metadata["course"]["language"] = lang
    return out


def _to_edition(incoming: Path, lang: str) -> None:
    """Each sample notebook under ``incoming`` as the same student's work in the edition ``lang``: its
    answers (and anything else the sample did) moved by cell onto the edition's release notebook."""
    import nbformat

    for path in sorted(incoming.glob("*/*/*" + course.NB_EXT)):
        assignment = path.parent.name
        english = nbformat.read(REPO / "release" / assignment / path.name, as_version=4)
        translated = nbformat.read(edition_root(lang) / "release" / assignment / path.name, as_version=4)
        nbformat.write(transplant(nbformat.read(path, as_version=4), english, translated, lang), path)


def _demo_submissions(incoming: Path, full: bool, students: list[str] | None) -> list:
    """Write the demo's samples under ``incoming``; return them (:class:`instructor.authoring.samples.Sample`, with their
    ``# expect:`` lines)."""
    import nbformat

    from ..authoring.samples import build_notebook, load_samples, materialize_samples, parse_sample

    if full or students:
        materialize_samples(incoming, students=students)
        return [s for s in load_samples() if not students or s.student in students]
    chosen = []
    for folder, assignment, student, why in DEMO:
        sample = parse_sample(REPO / "tests" / folder / assignment / f"{student}.py")
        name, nb = build_notebook(sample)
        dest = incoming / student / assignment
        dest.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest / name)
        print(f"  {student}/{assignment}: {why} (expected {sample.expect_auto:g})")
        chosen.append(sample)
    return chosen


def demo_mismatches(chosen: list, results: list[course.Result]) -> list[str]:
    """One line per sample whose grading differs from its ``# expect:`` line (its total, or a question it
    names), was not graded, or failed (with the first line of the reason)."""
    by_key = {(r.student, r.assignment): r for r in results}
    out = []
    for s in chosen:
        r = by_key.get((s.student, s.assignment))
        who = f"{s.student}/{s.assignment}"
        if r is None:
            out.append(f"{who}: expected {s.expect_auto:g}, not graded (see the errors above)")
        elif not r.ok:
            out.append(f"{who}: expected {s.expect_auto:g}, grading failed: {(r.error or '?').splitlines()[0]}")
        elif r.auto_score != s.expect_auto:
            out.append(f"{who}: expected {s.expect_auto:g}, got {r.auto_score:g}")
        else:
            got = {q.grade_id: q.score for q in r.questions}
            wrong = [f"{gid} expected {want:g}, got {'none' if got.get(gid) is None else format(got[gid], 'g')}"
                     for gid, want in s.expect_questions.items() if got.get(gid) != want]
            if wrong:
                out.append(f"{who}: " + "; ".join(wrong))
    return out


def cmd_demo(args) -> int:
    """Release, autograde a handful of sample submissions (``--full``: all of them), print the grade table."""
    t0 = time.perf_counter()
    # the edition: --lang, else the one whose folder --course is (never the English source copied over zh_CN/)
    lang = args.lang or (folder_edition(args.course) if args.course else None)
    root = edition_root(lang)
    workdir = Path(args.workdir or REPO / "grading" / ("demo-" + lang if lang else "demo")).resolve()
    marker = workdir / ".course-demo"
    if workdir.exists() and any(workdir.iterdir()):
        if not marker.exists():
            print(f"error: {workdir}: exists and was not made by 'demo'; give an empty or new --workdir",
                  file=sys.stderr)
            return 2
        shutil.rmtree(workdir)  # only ever a previous demo's own folder
    workdir.mkdir(parents=True, exist_ok=True)
    marker.write_text("made by python -m autograder demo; deleted and rebuilt by the next demo\n")
    incoming, course_dir = workdir / "incoming", Path(args.course or root).resolve()
    print(f"== 1/3 submissions: {'every sample' if args.full else 'a handful of samples'} -> {incoming}")
    chosen = _demo_submissions(incoming, args.full, args.students)
    if lang:
        _to_edition(incoming, lang)
        print(f"  each moved onto the {lang} edition's release notebook (its answers byte for byte)")
    print(f"{len(chosen)} notebook(s); `demo --full` grades all "
          f"{sum(1 for _ in (REPO / 'tests' / 'samples').glob('*/*.py'))} samples")
    subs, problems = course.collect_submissions(incoming, root)
    names = sorted({s.assignment for s in subs})
    print(f"== 2/3 release: nbgrader generate_assignment {' '.join(names)} in the course folder {course_dir}"
          + (" (answers found in release/ are kept in workspace/ first)" if course_dir == REPO.resolve() else ""))
    print("== 3/3 autograding: sandbox, confirmation outside the kernel, lower verdict, feedback")
    graded: list[course.Result] = []
    _grade_and_report(subs, problems, course_dir, workdir, jobs=args.jobs, force=True,
                      keep=graded, root=root)
    # The demo's verdict: every sample is graded as its `# expect:` line says (a flagged cheat included:
    # its expected score is what the trusted pipeline gives it), or the demo fails and says which.
    wrong = demo_mismatches(chosen, graded)
    took = time.perf_counter() - t0
    if wrong:
        for line in wrong:
            print(f"error: demo: {line}", file=sys.stderr)
        print(f"demo FAILED after {took:.0f} s: {len(wrong)} of {len(chosen)} sample(s) were not graded as their "
              "`# expect:` line says (listed above); the grades, flags and reasons are in "
              f"{workdir / 'grades.csv'}", file=sys.stderr)
        return 1
    lab = "make lab-instructor" + (f" with COURSE_LANG={lang}" if lang else "")
    where = lab if course_dir == root.resolve() else f"formgrader with its course folder at {course_dir}"
    print(f"demo finished in {took:.0f} s: all {len(chosen)} sample(s) were graded as their `# expect:` lines say; "
          f"the grades are in formgrader ({where}), the feedback under {course_dir / 'feedback'}")
    return 0


def _lang_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--lang``: the course's edition (default: ``COURSE_LANG``, else English)."""
    import os

    p.add_argument("--lang", default=edition_lang(os.environ.get(LANG_ENV)), choices=list(EDITIONS),
                   help=f"{what} in the course's edition in this language, the course folder {'/'.join(EDITIONS)}/ "
                        f"(default: ${LANG_ENV}, else the English course)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="Release, grade and self-grade the in-place autograd course.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("release", help="regenerate release/ from source/ (deterministic)")
    p.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    _lang_option(p, "build (python -m instructor.translate build) and release")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("grade", help="autograde a folder of submissions",
                       description=GRADE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR")
    p.add_argument("--workdir", default=None,
                   help="course folder where nbgrader works (default: the repository; with --lang, its folder)")
    p.add_argument("--out", help="folder for grades.csv and grades_by_question.csv (default: --workdir)")
    _lang_option(p, "grade")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="grade this many submissions at once (default: the number of cores, one per "
                        f"{course.SUBMISSIONS_PER_WORKER} submissions at most; 1: one at a time)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="grade on a dask.distributed cluster (its workers run the sandbox; see docs/instructors.md)")
    p.add_argument("--export", action="append", metavar="FORMAT", type=export.format_arg,
                   help="also write the grades for an LMS to import, into --out: canvas (canvas.csv), "
                        "moodle (moodle.csv), gradescope (gradescope-<assignment>.csv); repeat the "
                        "option or separate formats with commas")
    p.add_argument("--force", action="store_true",
                   help="grade every submission again, also those unchanged since they were last graded")
    p.add_argument("--lms", choices=["auto", "canvas", "moodle"],
                   help="SUBMISSIONS_DIR is an LMS's bulk download (a .zip is read as one without this)")
    p.add_argument("--roster", metavar="CSV",
                   help="the class list (id,first_name,last_name,email[,lms_id], or the LMS's own: a Canvas "
                        "gradebook export, a Moodle participants export): names, emails and Canvas user ids in "
                        "the --export files, a row for every student on it; with an LMS download it also maps "
                        "the LMS's user ids (and names, for a row without lms_id) to student ids (a file of "
                        "someone not on it is listed, not graded)")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("report", help="the class report (HTML) rebuilt from what grading recorded",
                       description="Write the class report (one offline HTML page: what to re-teach, score "
                                   "distributions, causes of failure, flagged submissions, grading times) from "
                                   "the grading ledger of a course folder; `grade` writes it too.")
    p.add_argument("--workdir", default=str(REPO),
                   help="the course folder graded in (the --workdir of `grade`; default: the repository)")
    p.add_argument("--out", metavar="FILE", help="the page to write (default: WORKDIR/class-report.html)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("selfgrade", help="grade one filled-in notebook against the hidden tests")
    p.add_argument("notebook", metavar="NOTEBOOK")
    p.add_argument("--assignment", help="assignment name, when the file was renamed")
    p.add_argument("--lang", default=None, help="the edition it belongs to (default: what the notebook says, "
                                                 "e.g. zh_CN for the Chinese edition's notebooks)")
    p.set_defaults(func=cmd_selfgrade)

    p = sub.add_parser("bench", help="time grading a synthetic class: nbgrader alone, --jobs 1, --jobs N",
                       add_help=False)
    p.set_defaults(func=None)

    p = sub.add_parser("demo", help="release + autograde the bundled sample submissions")
    p.add_argument("--workdir", default=None,
                   help="the demo's own folder: its sample submissions and grades.csv (default: grading/demo/; "
                        "with --lang zh_CN, grading/demo-zh_CN/)")
    _lang_option(p, "grade the samples")
    p.add_argument("--students", nargs="*", help="only these sample students")
    p.add_argument("--full", action="store_true", help="grade every sample submission (minutes)")
    p.add_argument("--course", default=None,
                   help="the course folder nbgrader grades in (default: the repository, which formgrader shows; "
                        "with --lang, the edition's folder)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="submissions at once (default: as grade's)")
    p.set_defaults(func=cmd_demo)
    return parser


def _quiet_library_warnings() -> None:
    """nbgrader's own SQLAlchemy and nbformat warnings say nothing to an instructor."""
    import warnings

    warnings.filterwarnings("ignore", module=r"nbgrader\..*")
    warnings.filterwarnings("ignore", message=r".*not in session.*")
    warnings.filterwarnings("ignore", message=r"Cell is missing an id field.*")


def main(argv: list[str] | None = None) -> int:
    _quiet_library_warnings()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from ..authoring.bench import main as bench

        return bench(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)
