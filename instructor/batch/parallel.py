"""Grading on every core: each worker grades a whole submission, the grading process keeps the batch.

A worker that sees the course folder (``--jobs`` on this machine; a Dask worker on it or on a shared
disk) grades the submission in place, exactly as ``--jobs 1`` does (:func:`instructor.engine.pipeline.grade_one`): the
confirmation, nbgrader's autograde with its kernel in the sandbox, the lower verdict, the feedback —
written to the course's own gradebook, which the workers share (SQLite serializes their short write
transactions; a writer waits for the other, :func:`instructor.engine.pipeline.prepare_environment`). How a worker knows
it sees the folder: the grading process writes a random token there for the batch (:func:`batch_token`)
and the worker reads it back (:func:`sees_course`).

A worker that does not see it (a Dask worker on another machine) gets the submission as bytes, grades
it in a private course folder of its own and sends back plain data — the judge's verdicts, the flags,
the executed notebooks; the grading process then records it (:func:`instructor.engine.pipeline.record`: nbgrader's
autograde on the worker's autograded notebook with only the gradebook-writing steps left,
:func:`instructor.engine.pipeline.replay_config`), so formgrader, ``generate_feedback`` and ``nbgrader export`` see what
a one-at-a-time run writes either way (tests/test_parallel.py compares them).

A worker that dies (the machine's OOM killer, a crash) takes only its submission with it: that
submission is tried again in a fresh worker, and a submission that kills workers twice is flagged
instead of tried forever.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver, get_context
from pathlib import Path

from ..layout import REPO
from ..engine import pipeline
from ..engine.pipeline import Result, Submission

MAX_WORKER_DEATHS = 2


class WorkerDied(Exception):
    """The worker grading a submission died under it (its pool broke, its Dask worker left)."""


class DeadWorkerRule:
    """The dead-worker rule, the one copy of it (every runner applies it: the local pool, Dask, the grading
    service): a submission whose worker died *beside others* is not blamed, it is graded again in a worker
    of its own; one whose worker died while it was alone there is charged with the death, and once it has
    killed :data:`MAX_WORKER_DEATHS` workers it is flagged (:meth:`~instructor.engine.pipeline.Outcome.failed`),
    not tried again."""

    def __init__(self):
        self.deaths: dict = {}

    def died_alone(self, key, student: str, assignment: str) -> "Result | None":
        """Its own worker died: None (grade it again, alone), or the outcome that flags it."""
        self.deaths[key] = self.deaths.get(key, 0) + 1
        if self.deaths[key] < MAX_WORKER_DEATHS:
            return None
        why = f"the submission killed its grading worker {self.deaths[key]} times; not retried"
        return Result.failed(student, assignment, why, flags=[why])

    def alone_until_graded(self, key, student: str, assignment: str, grade_alone):
        """Grade a submission whose worker died beside others in a worker of its own (``grade_alone()``,
        which raises :class:`WorkerDied` when that worker dies too) until it is graded (what ``grade_alone``
        returned) or flagged (the outcome that says so)."""
        while True:
            try:
                return grade_alone()
            except WorkerDied:
                flagged = self.died_alone(key, student, assignment)
                if flagged is not None:
                    return flagged

_PRIVATE: dict = {}


def _private_course(assignment: str, course_config: str | None) -> tuple[Path, object]:
    """This worker's own course folder with ``assignment`` generated (made once per process)."""
    key = (assignment, course_config)
    if key in _PRIVATE:
        return _PRIVATE[key]
    root = Path(tempfile.mkdtemp(prefix=f"grading-worker-{os.getpid()}-"))
    if course_config:
        (root / "nbgrader_config.py").write_text(course_config)
    shutil.copytree(REPO / "source" / assignment, root / "source" / assignment,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    pipeline.check_ok(pipeline.nbgrader_api(root).generate_assignment(assignment, force=True, create=True),
                  f"nbgrader generate_assignment {assignment}")
    _PRIVATE[key] = (root, pipeline.nbgrader_api(root, sandboxed=True))
    return _PRIVATE[key]


BATCH_FILE = ".grading-batch"


def batch_token(workdir: Path) -> dict:
    """Mark ``workdir`` for this batch: what a worker needs to tell whether it sees this very folder."""
    import secrets

    token = secrets.token_hex(16)
    pipeline.write_atomically(Path(workdir) / BATCH_FILE, token)
    return {"workdir": str(workdir), "token": token}


def sees_course(shared: dict | None) -> Path | None:
    """The course folder of the batch, when this worker sees it (its token reads back); else None."""
    if not shared:
        return None
    folder = Path(shared["workdir"])
    try:
        return folder if (folder / BATCH_FILE).read_text() == shared["token"] else None
    except OSError:
        return None


_COURSE_APIS: dict = {}


def _in_course(course: Path, student: str, assignment: str, limits, feedback: bool) -> Result:
    """Grade the submission the grading process staged in ``course``, recording it there (as ``--jobs 1``)."""
    api = _COURSE_APIS.get(course)
    if api is None:
        api = _COURSE_APIS[course] = pipeline.nbgrader_api(course, sandboxed=True)
    staged = course / "submitted" / student / assignment
    sub = Submission(student, assignment, sorted(staged.glob("*.ipynb")))
    res = Result(student, assignment, ok=False, recorded=True)
    t0 = time.perf_counter()
    try:
        pipeline.grade_one(api, sub, course, res, limits, feedback)
    except Exception as err:  # noqa: BLE001 - reported, never raised into the pool
        res.ok, res.error = False, f"{type(err).__name__}: {err}"
    res.seconds = time.perf_counter() - t0
    return res


def execute(student: str, assignment: str, notebooks: dict, course_config: str | None,
            limits: dict, shared: dict | None = None, feedback: bool = False) -> Result:
    """A worker's whole job for one submission.

    Where the worker sees the batch's course folder (``shared``, :func:`sees_course`), the submission
    is graded and recorded there (the result comes back with ``recorded`` set). Elsewhere
    ``notebooks`` (file names to bytes) is graded in a private course folder and the result comes back
    with ``executed`` set, for the grading process to record: no shared disk needed.
    """
    from ..sandbox import Limits

    pipeline.prepare_environment()
    os.environ["_COURSE_SANDBOX_WARNED"] = "1"  # the grading process already said it, once
    _injected_fault(student)
    course = sees_course(shared)
    if course is not None:
        return _in_course(course, student, assignment, Limits(**limits), feedback)
    root, api = _private_course(assignment, course_config)
    res = Result(student, assignment, ok=False)
    target = root / "submitted" / student / assignment
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name, data in notebooks.items():
        (target / Path(name).name).write_bytes(data)
    sub = Submission(student, assignment, sorted(target.glob("*.ipynb")))
    t0 = time.perf_counter()
    try:
        pipeline.grade_one(api, sub, root, res, Limits(**limits), feedback=False, record=False)
    except Exception as err:  # noqa: BLE001 - reported, never raised into the pool
        res.ok, res.error = False, f"{type(err).__name__}: {err}"
    finally:
        for d in ("submitted", "autograded"):
            shutil.rmtree(root / d / student, ignore_errors=True)
    res.seconds = time.perf_counter() - t0
    return res


def _injected_fault(student: str) -> None:
    """Fault injection for the tests: ``COURSE_GRADING_FAULTS="ann:always,bob:once:/tmp/marker"``
    makes the worker die (as the OOM killer would kill it) when it picks up that student."""
    for item in filter(None, os.environ.get("COURSE_GRADING_FAULTS", "").split(",")):
        who, _, how = item.partition(":")
        if who != student:
            continue
        if how.startswith("once:"):
            marker = Path(how[len("once:"):])
            if marker.exists():
                return
            marker.write_text("died once\n")
        os._exit(137)


def _worker_init(limits: dict | None = None, environ: dict | None = None, grader: int | None = None,
                 assignments: list | None = None) -> None:
    """Worker initializer: the grading process's environment of now (``environ``: a worker forked
    from the fork server would otherwise have the server's, from when it started); when the grading
    process (``grader``) dies (a crash, a kill), its workers die too; a worker that is done ends at
    once; the grading code is imported and, given ``limits``, the pre-started sandbox started before
    the first submission comes (never raises: whatever fails here is done again, and reported, when
    the first submission is graded)."""
    import multiprocessing.util

    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    _die_with(grader or os.getppid())
    # After the last finalizer (its pre-started sandbox stopped, :mod:`instructor.sandbox.zygote`): no interpreter
    # teardown. Tearing down torch, nbgrader and the rest took 0.9-1.0 s of CPU per worker, at the
    # end of every batch, while the grading process waited for its workers to end.
    multiprocessing.util.Finalize(None, _end_now, exitpriority=-100)
    if limits is None:
        return
    try:
        from ..sandbox import zygote
        from ..sandbox import Limits

        # the sandbox imports torch and IPython in its process while this one imports the grading code
        prestarting = zygote.prestart_in_background(Limits(**limits))
        pipeline.prepare_environment()
        pipeline.warm_up()  # torch and the hidden checks: what every submission needs
        if prestarting is not None:
            prestarting.join(warm=None if assignments is None else pipeline.sandbox_warm(assignments))
    except Exception:  # noqa: BLE001 - see above
        pass


def _die_with(grader: int) -> None:
    """End this worker when the grading process ends. Its parent may not be the grading process (a fork
    server's children keep the server alive, and it them: neither would ever end), so the worker
    watches the grading process itself, through a pidfd, and kills itself when it is gone; its
    pre-started sandbox dies with it (bubblewrap's ``--die-with-parent``). Where there is no pidfd
    (not Linux, a kernel before 5.3), the parent's death is the signal (``PR_SET_PDEATHSIG``)."""
    import signal as _signal

    try:
        import ctypes

        parent = os.getppid()
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(_signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:   # the parent went before the signal was asked for
            os._exit(1)
    except Exception:  # noqa: BLE001 - not Linux: workers end when their queue closes
        pass
    try:
        pidfd = os.pidfd_open(grader)
    except ProcessLookupError:       # already gone
        os._exit(1)
    except (AttributeError, OSError):
        return

    def watch() -> None:
        import select

        select.select([pidfd], [], [])
        os.kill(os.getpid(), _signal.SIGKILL)

    threading.Thread(target=watch, name="grading-process-watch", daemon=True).start()


def _end_now() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _course_config(workdir: Path) -> str | None:
    local = workdir / "nbgrader_config.py"
    return local.read_text() if local.is_file() and local.resolve().parent != REPO.resolve() else None


def _payload(paths) -> dict:
    return {p.name: p.read_bytes() for p in paths}


def expected_cost(paths) -> int:
    """A rough size of a submission's work: the characters of its code cells (an assignment-4 notebook
    has about four times an orientation notebook's, and takes about four times as long)."""
    import json

    size = 0
    for p in paths:
        try:
            cells = json.loads(Path(p).read_bytes()).get("cells", [])
            size += sum(len("".join(c.get("source", ""))) for c in cells if c.get("cell_type") == "code")
        except (OSError, ValueError, AttributeError, TypeError):
            pass   # a broken file is reported by the grading itself
    return size


def longest_first(staged: dict) -> list[int]:
    """Submission indices, the longest expected first: the batch does not end waiting on one long
    notebook while the other workers are idle (a list scheduling classic: longest processing time first)."""
    return sorted(staged, key=lambda i: (-expected_cost(staged[i][1]), i))


#: What every worker imports before its first submission: the grading code, torch and the hidden checks
#: (2.2-2.6 s of CPU per process on the course's 2-core VM). Imported once, in multiprocessing's fork
#: server; each worker is a fork of it.
WORKER_PRELOAD = ("instructor.batch.parallel", "instructor.engine.confirm", "instructor.sandbox.zygote")


def worker_context():
    """How workers start: forked from a server that has imported :data:`WORKER_PRELOAD` (multiprocessing's
    ``forkserver``, started with this process's first workers and kept for its later ones), or spawned
    where there is no fork server. Spawned, every worker imported them itself, all at the start of a
    batch: the first submissions of ``--jobs 2`` began 6.7-7.8 s after the batch did; forked, 5.7-5.8 s
    (4.6-5.7 s when the server was already running; docs/performance.md, "Grading a class")."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(list(WORKER_PRELOAD))
    # numpy's BLAS starts a thread per core when imported, unless told one is enough: a fork keeps only
    # the forking thread (a lock another held would stay held), so the server must have just one.
    # The workers get this process's own environment back (_worker_init).
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        forkserver.ensure_running()
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    return ctx


def start_workers(workers: int, limits=None, assignments=None) -> ProcessPoolExecutor:
    """``workers`` grading processes, started now (:func:`worker_context`): each starts its pre-started
    sandbox (:mod:`instructor.sandbox.zygote`) before its first submission — while the grading process is still preparing
    the batch, when :func:`.course.grade` starts them first. ``assignments``: the batch's, so that each
    sandbox warms what their runs need (:func:`.pipeline.sandbox_warm`); None: everything."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=worker_context(), initializer=_worker_init,
                               initargs=(None if limits is None else dict(limits.__dict__), dict(os.environ),
                                         os.getpid(), None if assignments is None else sorted(set(assignments))))
    for _ in range(workers):   # a process is started per task submitted while none is idle
        pool.submit(os.getpid)
    return pool


def grade_parallel(subs: list[Submission], workdir: Path, *, jobs: int, feedback: bool, progress: bool,
                   limits, on_result=None, scheduler: str | None = None, shared_disk: bool = True,
                   pool: ProcessPoolExecutor | None = None, remote=None) -> list[Result]:
    """Grade ``subs`` with ``jobs`` worker processes (or on the Dask ``scheduler``); results in the order
    of ``subs``. ``shared_disk=False``: every worker grades in a private folder, as one on another
    machine would, and this process records. ``pool``: workers already started (:func:`start_workers`),
    used for the first round and shut down here. ``remote``: grades one submission elsewhere
    (``remote(student, assignment, {name: bytes}) -> Result``, :func:`instructor.service.submitter`: the root-owned
    grading service), ``jobs`` at once; this process records."""
    from nbgrader.apps import NbGraderAPI
    from tqdm.auto import tqdm

    try:
        workdir = Path(workdir).resolve()
        recorder = NbGraderAPI(config=pipeline.replay_config(workdir))
        config_text = _course_config(workdir)
        # Students are made before any submission reaches a worker: two workers grading one student's
        # two assignments would otherwise both create the row, and the second would fail on the unique name.
        with recorder.gradebook as gb:
            for student in sorted({sub.student for sub in subs}):
                gb.update_or_create_student(student)
        staged = {}
        for i, sub in enumerate(subs):
            res = Result(sub.student, sub.assignment, ok=False)
            pipeline.stage(sub, workdir / "submitted" / sub.student / sub.assignment, workdir, res)
            staged[i] = (res.notes, sorted((workdir / "submitted" / sub.student / sub.assignment).glob("*.ipynb")))
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    shared = batch_token(workdir) if shared_disk else None
    results: dict[int, Result] = {}
    bar = tqdm(total=len(subs), desc=f"autograding ({jobs} workers)", unit="notebook", disable=not progress,
               file=sys.stdout)

    def finish(i: int, res: Result) -> None:
        sub = subs[i]
        res.notes = staged[i][0] + res.notes
        if res.ok and not res.recorded:  # a worker that did not see the course folder: record it here
            t0 = time.perf_counter()
            try:
                pipeline.record(recorder, sub, workdir, res, feedback)
            except Exception as err:  # noqa: BLE001
                res.ok, res.error = False, f"recording failed: {type(err).__name__}: {err}"
            res.seconds += time.perf_counter() - t0
        results[i] = res
        if on_result is not None:
            on_result(i, res)
        bar.update(1)
        bar.set_postfix_str(f"{sub.student}/{sub.assignment}")
        if res.flags and progress:
            bar.write(f"flagged: {sub.student}/{sub.assignment}: {res.flags[0]}"
                      + (f" (+{len(res.flags) - 1} more)" if len(res.flags) > 1 else ""))

    if remote is not None:
        executor: Executor = ServiceExecutor(remote, subs, staged, jobs)
    elif scheduler:
        executor = DaskExecutor(scheduler, subs, staged, config_text, limits, shared=shared, feedback=feedback)
    else:
        executor = PoolExecutor(subs, staged, jobs, config_text, limits, shared=shared, feedback=feedback, pool=pool)
    if pool is not None and not isinstance(executor, PoolExecutor):
        pool.shutdown(wait=False, cancel_futures=True)
    try:
        executor.run(longest_first(staged), finish)
    finally:
        bar.close()
        executor.close()
        if shared:
            with contextlib.suppress(OSError):
                (workdir / BATCH_FILE).unlink()
    return [results[i] for i in range(len(subs))]


class Executor:
    """Where a batch's submissions are graded, one face for every place: :meth:`run` grades each index of
    ``order`` and calls ``finish(i, result)`` once for each, as results come, the dead-worker rule applied
    (:class:`DeadWorkerRule`). The places: :class:`PoolExecutor` (``--jobs``: worker processes of this
    machine), :class:`DaskExecutor` (a Dask cluster), :class:`ServiceExecutor` (the root-owned grading
    service, through its client: the service applies the rule to its own workers). ``--jobs 1`` grades in
    the grading process itself (:func:`instructor.batch.course.grade`), where a death is the whole
    process's: its ledger names the submission, which is not graded again without ``--force``."""

    def run(self, order: list[int], finish) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Let go of what it started (workers, a cluster's client)."""


class PoolExecutor(Executor):
    """Worker processes of this machine (:func:`start_workers`); ``pool``: workers already started, used for
    the first round. A death breaks the whole pool: each submission it left unfinished is graded again
    alone, so that only the one that kills its worker again is blamed."""

    def __init__(self, subs, staged, jobs: int, config_text, limits, *, shared=None, feedback: bool = False,
                 pool: ProcessPoolExecutor | None = None):
        self.subs, self.staged, self.jobs, self.config_text, self.limits = subs, staged, jobs, config_text, limits
        self.shared, self.feedback, self.pool = shared, feedback, pool

    def _round(self, indices: list[int], workers: int, finish) -> list[int]:
        """Grade ``indices``; return those whose worker died (the pool broke under them)."""
        if self.pool is None:  # the workers given to this batch serve its first round; retries start their own
            self.pool = start_workers(workers, self.limits, [self.subs[i].assignment for i in indices])
        subs = self.subs
        futures = {self.pool.submit(execute, subs[i].student, subs[i].assignment, _payload(self.staged[i][1]),
                                    self.config_text, self.limits.__dict__, self.shared, self.feedback): i
                   for i in indices}
        lost = []
        for fut in futures:
            i = futures[fut]
            try:
                res = fut.result()
            except BrokenProcessPool:
                lost.append(i)
                continue
            except Exception as err:  # noqa: BLE001
                res = Result.failed(subs[i].student, subs[i].assignment, f"{type(err).__name__}: {err}")
            finish(i, res)
        self.close()
        return lost

    def run(self, order: list[int], finish) -> None:
        suspects = self._round(order, min(self.jobs, len(order)), finish)
        rule = DeadWorkerRule()

        def alone(i: int):
            def grade() -> None:
                if self._round([i], 1, finish):
                    raise WorkerDied(i)
            return grade

        for i in suspects:
            flagged = rule.alone_until_graded(i, self.subs[i].student, self.subs[i].assignment, alone(i))
            if flagged is not None:
                finish(i, flagged)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class ServiceExecutor(Executor):
    """Each submission graded by ``remote`` (the root-owned grading service's client), ``jobs`` at once; each
    result recorded here, in this process, as it comes. A refusal (the service is not running, the
    assignment differs from its copy) is that submission's error, not the batch's."""

    def __init__(self, remote, subs, staged, jobs: int):
        self.remote, self.subs, self.staged, self.jobs = remote, subs, staged, jobs

    def run(self, order: list[int], finish) -> None:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        subs = self.subs

        def one(i: int) -> Result:
            try:
                return self.remote(subs[i].student, subs[i].assignment,
                                   {p.name: p.read_bytes() for p in self.staged[i][1]})
            except Exception as err:  # noqa: BLE001 - reported per submission
                return Result.failed(subs[i].student, subs[i].assignment, f"grading service: {err}")

        with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as threads:
            futures = {threads.submit(one, i): i for i in order}
            for fut in as_completed(futures):
                finish(futures[fut], fut.result())


class DaskExecutor(Executor):
    """Each submission a task on a ``dask.distributed`` cluster (:func:`_run_dask`: each pinned to a worker
    that holds no other, so that a death is charged to the one submission it held)."""

    def __init__(self, scheduler, subs, staged, config_text, limits, *, shared=None, feedback: bool = False):
        self.scheduler, self.subs, self.staged = scheduler, subs, staged
        self.config_text, self.limits, self.shared, self.feedback = config_text, limits, shared, feedback

    def run(self, order: list[int], finish) -> None:
        _run_dask(self.scheduler, self.subs, self.staged, self.config_text, self.limits, finish,
                  shared=self.shared, feedback=self.feedback, order=order)


def _run_dask(scheduler, subs, staged, config_text, limits, finish, poll: float = 0.5, *, shared: dict | None = None,
              feedback: bool = False, order: list[int] | None = None) -> None:
    """Each submission a task on a ``dask.distributed`` cluster; results recorded here as they come.

    The workers need the course installed (a clone of the repository, its venv, bubblewrap) and the
    repository on their ``PYTHONPATH``.

    Blame must be fair: a worker that dies takes every task it holds with it, and Dask's own
    ``allowed-failures`` counts the death against each of them. So placement is done here, not by the
    scheduler: each submission is pinned to a worker that holds no other submission of this batch (one
    per worker process; start workers with ``--nthreads 1``, ``--nworkers N`` for N at once on a
    machine). When a worker vanishes, the one submission it held is charged with the death and sent to
    another worker; one that has killed ``MAX_WORKER_DEATHS`` workers is flagged, not retried again.
    Workers that join later (a nanny restarting a dead one) are used as they appear.
    """
    import uuid

    from distributed import Client, KilledWorker, wait

    client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
    try:
        batch = uuid.uuid4().hex[:8]
        pending = list(order if order is not None else longest_first(staged))  # not yet placed, longest first
        rule = DeadWorkerRule()                # each submission is alone on its worker: a death is its own
        running = {}                           # future -> (index, worker address)
        attempt = 0

        def workers_now() -> set[str]:
            return set(client.run_on_scheduler(_worker_addresses))

        def charge(i: int) -> None:
            flagged = rule.died_alone(i, subs[i].student, subs[i].assignment)
            if flagged is not None:
                finish(i, flagged)
            else:
                pending.insert(0, i)

        def place(alive: set[str]) -> None:
            """Give each free worker the next submission."""
            nonlocal attempt
            busy = {addr for _, addr in running.values()}
            for addr in sorted(alive - busy):
                if not pending:
                    break
                i = pending.pop(0)
                attempt += 1
                fut = client.submit(execute, subs[i].student, subs[i].assignment, _payload(staged[i][1]),
                                    config_text, dict(limits.__dict__), shared, feedback, pure=False,
                                    workers=[addr], allow_other_workers=False,
                                    key=f"grade-{batch}-{attempt}-{subs[i].student}-{subs[i].assignment}")
                running[fut] = (i, addr)

        while pending or running:
            alive = workers_now()
            for fut, (i, addr) in list(running.items()):
                if addr not in alive and not fut.done():   # its worker died under it
                    del running[fut]
                    fut.cancel()
                    charge(i)
            place(alive)
            if not running:
                if pending and not alive:
                    time.sleep(poll)               # no worker yet: wait for one to join
                continue
            done = [fut for fut in running if fut.done()]
            if not done:
                try:
                    wait(list(running), timeout=poll, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    pass                           # nothing finished: look at the workers again
                continue
            finished = [(fut, running.pop(fut)) for fut in done]
            place(alive)  # the workers that finished get their next submission before these are recorded
            for fut, (i, _addr) in finished:
                try:
                    res = fut.result()
                except KilledWorker:               # the scheduler gave up on it first (allowed-failures 0)
                    charge(i)
                    continue
                except Exception as err:  # noqa: BLE001
                    res = Result.failed(subs[i].student, subs[i].assignment, f"{type(err).__name__}: {err}")
                finish(i, res)
    finally:
        if not isinstance(scheduler, Client):
            client.close()


def _worker_addresses(dask_scheduler=None) -> list[str]:
    """Runs on the scheduler: the workers that are connected now."""
    return list(dask_scheduler.workers)
