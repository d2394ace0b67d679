"""Hostile submissions, graded by the real pipeline next to two honest students.

Every sample in ``tests/hostile/<assignment>/`` is a notebook that attacks the grader (patching the
checks, reading the solutions, signals, endless loops, memory, forks, detached writers, tampered
metadata, 10,000 cells, ...; its ``# about:`` says how). The whole corpus is graded in one batch
per shard, each shard with the honest students ``ada`` (full marks) and ``ben`` (partial), with short
limits (this folder's course config), and each hostile submission must:

* get exactly the score its answers deserve (``# expect:``), and be flagged when it says ``# flag:``;
* leave every file outside its scratch folder unchanged (hashes before/after, a detached process
  given time to strike);
* not move the honest students' scores;
* finish within the wall-clock limit.
"""
from __future__ import annotations

import csv
import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples
from instructor.sandbox import status

REPO = Path(__file__).resolve().parents[1]
HOSTILE = REPO / "tests" / "hostile"
HONEST = {"ada": 8.0, "ben": 2.0}
WALL_SECONDS = 90
DISK_MB = 96                  # each submission's writable space (a tmpfs when grading as root)
NOTEBOOK_OUTPUT = 4 << 20     # outputs kept per autograded notebook
COURSE_CONFIG = f"""c = get_config()  # noqa
c.Execute.timeout = 15
c.Sandbox.wall_minutes = {WALL_SECONDS / 60}
c.Sandbox.case_seconds = 5
c.Sandbox.memory_gb = 2
c.Sandbox.processes = 200
c.Sandbox.disk_mb = {DISK_MB}
c.Sandbox.notebook_output_bytes = {NOTEBOOK_OUTPUT}
"""
PORT = 47613  # network.py tries to reach this listener on the grader's loopback

pytestmark = [pytest.mark.slow]


def _hostile_samples() -> list[samples.Sample]:
    return [samples.parse_sample(p) for p in sorted(HOSTILE.glob("*/*.py"))]


def _hash_tree(paths: list[Path]) -> dict[str, str]:
    out = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" in p.parts or ".ipynb_checkpoints" in p.parts:
                continue
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _listener(stop: threading.Event, hits: list) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", PORT))
    srv.listen()
    srv.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _ = srv.accept()
            hits.append(time.time())
            conn.close()
        except OSError:
            pass
    srv.close()


@pytest.fixture(scope="session")
def hostile_batch(tmp_path_factory):
    if not status()["bwrap"]:
        pytest.fail(f"bubblewrap is required for the hostile corpus: {status()['why']} "
                    "(.ci/run installs it; or: apt-get install bubblewrap)")
    root = tmp_path_factory.mktemp("hostile")
    corpus = _hostile_samples()
    honest = [s for s in samples.load_samples("00_orientation") if s.student in HONEST]
    shards = 2
    canaries = [root / "hostile-canary.txt", Path("/tmp") / "hostile-canary.txt"]
    for c in canaries:
        c.write_text("canary\n")
    watched = [REPO / d for d in ("source", "release", "autograder", "instructor", "nbgrader_config.py")] + canaries
    works = []
    for k in range(shards):
        work = root / f"shard{k}"
        incoming = work / "incoming"
        for s in corpus[k::shards] + honest:
            name, nb = samples.build_notebook(s)
            dest = incoming / s.student / s.assignment
            dest.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, dest / name)
        (work / "course").mkdir(parents=True)
        (work / "course" / "nbgrader_config.py").write_text(COURSE_CONFIG)
        works.append(work)
        watched.append(incoming)
    before = _hash_tree(watched)
    stop, hits = threading.Event(), []
    thread = threading.Thread(target=_listener, args=(stop, hits), daemon=True)
    thread.start()
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(w / "incoming"), "--workdir",
                               str(w / "course"), "--out", str(w), "--no-progress", "--jobs", "1"], cwd=REPO, env=env,
                              stdout=(w / "log.txt").open("w"), stderr=subprocess.STDOUT) for w in works]
    for p in procs:
        p.wait(timeout=1800)
    elapsed = time.time() - t0
    time.sleep(6)  # the detached writer strikes 4 s after it started: give it the chance
    stop.set()
    after = _hash_tree(watched)
    rows = {}
    for w in works:
        if not (w / "grades.csv").exists():
            pytest.fail(f"grading crashed:\n{(w / 'log.txt').read_text()[-4000:]}")
        with (w / "grades.csv").open() as f:
            for row in csv.DictReader(f):
                rows.setdefault(row["student"], []).append(row)
    feedback = {p.parts[-3]: p.read_text(encoding="utf-8")
                for w in works for p in (w / "course" / "feedback").glob("*/00_orientation/*.html")}
    sizes = {p.parts[-3]: p.stat().st_size
             for w in works for p in (w / "course" / "autograded").glob("*/00_orientation/*.ipynb")}
    return {"rows": rows, "before": before, "after": after, "hits": hits, "elapsed": elapsed, "feedback": feedback,
            "sizes": sizes,
            "logs": "\n".join((w / "log.txt").read_text()[-3000:] for w in works), "corpus": corpus}


def test_the_corpus_is_large_and_says_what_it_does():
    corpus = _hostile_samples()
    assert len(corpus) >= 25
    for s in corpus:
        assert s.about, f"{s.path.name}: say in '# about:' what this submission attacks"


@pytest.mark.parametrize("sample", _hostile_samples(), ids=lambda s: s.student)
def test_hostile_submission_gets_only_what_it_deserves(hostile_batch, sample):
    [row] = hostile_batch["rows"][sample.student]
    assert row["status"] == "graded", f"{sample.student}: {row['status']}\n{hostile_batch['logs']}"
    assert float(row["auto_score"]) == sample.expect_auto, (
        f"{sample.student} ({sample.about}): {row['auto_score']} points, expected {sample.expect_auto:g}\n"
        f"flags: {row['flags']}\nintegrity: {row['integrity']}")
    said = (row["flags"] + " | " + row["integrity"]).lower()
    for flag in sample.expect_flags:
        wanted = "integrity" if flag == "integrity" else flag.lower()
        found = bool(row["integrity"]) if flag == "integrity" else wanted in said
        assert found, f"{sample.student}: expected a flag about '{flag}', got: {said}"
    assert float(row["autograde_seconds"]) <= WALL_SECONDS + 60, f"{sample.student} took {row['autograde_seconds']} s"


def test_honest_students_keep_their_scores(hostile_batch):
    for student, score in HONEST.items():
        rows = hostile_batch["rows"][student]
        assert len(rows) == 2  # one per shard, each next to half the corpus
        for row in rows:
            assert float(row["auto_score"]) == score, f"{student}: {row}"
            assert not row["integrity"], f"{student}: {row['integrity']}"


def test_no_file_outside_the_sandbox_changed(hostile_batch):
    before, after = hostile_batch["before"], hostile_batch["after"]
    changed = sorted(p for p in before if after.get(p) != before[p])
    added = sorted(set(after) - set(before))
    assert not changed and not added, f"changed: {changed[:10]}, added: {added[:10]}"


def test_no_submission_reached_the_network(hostile_batch):
    assert hostile_batch["hits"] == [], "a sandboxed notebook connected to the grader's loopback"


def test_feedback_shows_the_flags_and_never_the_hidden_part(hostile_batch):
    feedback = hostile_batch["feedback"]
    assert "Notes from the grader" in feedback["tamper_points"] and "metadata was edited" in feedback["tamper_points"]
    assert "Notes from the grader" in feedback["patch_checks"]  # the integrity note
    assert "Notes from the grader" not in feedback["ada"]
    for student, html in feedback.items():
        assert "BEGIN HIDDEN TESTS" not in html and "confirmed(" not in html, student
    assert "has the wrong shape" in feedback["ben"]  # the judge's message reaches the student


def test_root_files_stay_closed(hostile_batch):
    """Grading as root, the sandbox is an unprivileged host uid: /etc/shadow, ssh keys, pid 1's
    environment cannot be read (the control, where the sandbox user is host root, is in test_sandbox)."""
    from instructor.sandbox import drops_privileges

    if os.geteuid() == 0 and not drops_privileges():
        pytest.skip("this host does not let root run bubblewrap privileged: the sandbox is root outside "
                    "(python -m instructor.sandbox reports it)")
    html = hostile_batch["feedback"]["root_files"]
    assert "closed:" in html and "/etc/shadow" in html, "the reading cell did not run"
    import re

    leak = re.search(r"LEAKED /", html)  # an output line; the cell's source says "LEAKED", secret
    assert leak is None, html[leak.start() - 200:leak.start() + 300]


def test_the_disk_is_bounded_per_submission(hostile_batch):
    import re

    html = hostile_batch["feedback"]["disk_fill"]
    wrote = [int(n) for n in re.findall(r"WROTE (\d+) MiB", html)]
    assert len(wrote) == 3, "the filling cell did not run"
    from instructor.sandbox import can_bound_disk

    if can_bound_disk():  # the bound is a tmpfs the grader mounts (root with CAP_SYS_ADMIN)
        assert max(wrote) <= DISK_MB, f"{wrote} MiB written with a bound of {DISK_MB} MiB"


def test_outputs_are_bounded_per_notebook(hostile_batch):
    size = hostile_batch["sizes"]["output_flood"]
    assert size < NOTEBOOK_OUTPUT + (1 << 20), f"the autograded notebook is {size >> 20} MiB"
    assert len(hostile_batch["feedback"]["output_flood"]) < NOTEBOOK_OUTPUT + (2 << 20)
    assert "output cut by the grader" in hostile_batch["feedback"]["output_flood"]


# ---------------------------------------------------------------------------------------------------
# The control: the same attacks where nothing defends. A defence is proven only if the attack it
# stops works without it; graded here the way nbgrader alone grades (kernel unconfined, hidden
# checks inside it, no confirmation), each of these must score above what the pipeline gives it.
# Only attacks harmless to the machine running the tests are graded unguarded.

UNGUARDED = ("patch_checks", "sys_modules", "read_source", "reference_import", "behaves_differently",
             "allclose_patch")
#: Attacks that fail even in nbgrader's own kernel, stopped by the checks' design rather than by the sandbox:
#: a probe sends back plain data (an ``Anything`` list arrives as a list) and holds no expected value
#: (the judge computes it afterwards, elsewhere), so there is nothing to gain from ``__eq__`` or the stack.
#: (``allclose_patch`` once looked stopped here too: with ``torch.allclose`` always true, the loop that
#: redraws a function equal to the default never ended, and nbgrader's cell timed out. The draws are
#: bounded and compared in plain floats now; in nbgrader's kernel the judge's own comparisons are the
#: patched ones, so the attack works there, and only the trusted pipeline, judging elsewhere, stops it.)
STOPPED_BY_THE_CHECKS = ("eq_always_true", "stack_frames")


@pytest.fixture(scope="session")
def unguarded_scores(tmp_path_factory):
    from instructor.authoring import bench
    from instructor.batch import course

    root = tmp_path_factory.mktemp("unguarded")
    corpus = [s for s in _hostile_samples() if s.student in UNGUARDED + STOPPED_BY_THE_CHECKS]
    assert sorted(s.student for s in corpus) == sorted(UNGUARDED + STOPPED_BY_THE_CHECKS)
    for s in corpus:
        name, nb = samples.build_notebook(s)
        dest = root / "incoming" / s.student / s.assignment
        dest.mkdir(parents=True)
        nbformat.write(nb, dest / name)
    course.prepare_environment()
    bench.plain_nbgrader(root / "incoming", root / "course")
    api = course.nbgrader_api(root / "course")
    return {s.student: (s, sum(q.score or 0 for q in course.scores(api, s.assignment, s.student)
                               if q.kind == "auto")) for s in corpus}


@pytest.mark.parametrize("student", UNGUARDED)
def test_the_attack_works_where_nothing_defends(unguarded_scores, student):
    sample, score = unguarded_scores[student]
    assert score > sample.expect_auto, (
        f"{student} ({sample.about}) scores {score:g} with plain nbgrader, no more than the {sample.expect_auto:g} "
        "the trusted pipeline gives it: the attack does not work, so its hostile test proves nothing. "
        "Make the attack real.")


@pytest.mark.parametrize("student", STOPPED_BY_THE_CHECKS)
def test_the_checks_alone_stop_these_attacks(unguarded_scores, student):
    sample, score = unguarded_scores[student]
    assert score == sample.expect_auto, f"{student}: {score:g} unguarded, {sample.expect_auto:g} expected"


@pytest.mark.browser
def test_feedback_reads_at_a_glance_in_chromium(hostile_batch, tmp_path):
    """ben's feedback (the judge's messages, with their "try next" hints) at 1280 px: questions named in
    the summary, no text cut at the right edge (every <pre> wraps)."""
    from test_browser import CHROMIUM, CHROMIUM_ARGS, _require_browser

    _require_browser()
    from playwright.sync_api import sync_playwright

    html = hostile_batch["feedback"]["ben"]
    assert ">Test cell<" not in html and "question <span class=\"course-question\">cube_sum_grad</span>" in html
    page_file = tmp_path / "ben.html"
    page_file.write_text(html, encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(page_file.as_uri())
        cut = page.evaluate("""() => [...document.querySelectorAll('pre, code, .output_text, .output_error')]
            .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
            .map(e => e.innerText.slice(0, 80))""")
        hint = page.evaluate("() => document.body.innerText.includes('try next')")
        browser.close()
    assert hint, "the judge's hint is not in the page"
    assert not cut, f"text cut at the right edge at 1280 px: {cut[:3]}"
