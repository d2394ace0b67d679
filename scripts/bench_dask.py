"""Is the Dask path as efficient per worker as ``--jobs``? Both grade the same class, one after the other.

    python scripts/bench_dask.py            # samples of assignments 0-2, --jobs 2 vs 2 Dask workers

A synthetic class (the bench's, one copy of each sample) is graded with ``grade --jobs 2`` and on a
``dask.distributed.LocalCluster`` of two single-thread worker processes, once as workers that see the
course folder (they record in place) and once as workers on other machines would (``shared_disk=False``:
bytes in, private folders, recorded by the grading process); prints the wall times, their ratios and
whether the scores agree.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")

from instructor.authoring import bench  # noqa: E402
from instructor.batch import course  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignments", nargs="*", default=["00_orientation", "01_version_counter",
                                                               "02_names_and_storage"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--remote-first", action="store_true", help="the no-shared-disk Dask run first")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    course.prepare_environment()
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        root = Path(tmp)
        n = bench.synthetic_class(root / "class", 1, args.assignments)
        subs, _ = course.collect_submissions(root / "class")
        t0 = time.perf_counter()
        by_jobs = course.grade(subs, root / "jobs", jobs=args.workers, progress=False)
        jobs = time.perf_counter() - t0
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            # The first batch on a fresh cluster also pays its workers' start (imports, pre-started
            # sandboxes); --remote-first swaps the order of the two Dask runs.
            def timed(folder: str, shared_disk: bool):
                """One Dask batch; ``shared_disk=False``: as workers on other machines (bytes in, a
                private folder, recorded here)."""
                t0 = time.perf_counter()
                out = course.grade(subs, root / folder, progress=False, scheduler=client, shared_disk=shared_disk)
                return out, time.perf_counter() - t0

            if args.remote_first:
                (by_remote, remote), (by_dask, dask) = timed("remote", False), timed("dask", True)
            else:
                (by_dask, dask), (by_remote, remote) = timed("dask", True), timed("remote", False)
    scores = [{(r.student, r.assignment): r.auto_score for r in rs} for rs in (by_jobs, by_dask, by_remote)]
    same = scores[0] == scores[1] == scores[2]
    print(f"{n} notebooks: --jobs {args.workers} {jobs:.0f} s ({60 * n / jobs:.1f}/min), "
          f"Dask {args.workers} workers {dask:.0f} s ({60 * n / dask:.1f}/min); Dask/--jobs wall {dask / jobs:.2f}; "
          f"Dask as on other machines (no shared disk) {remote:.0f} s, {remote / jobs:.2f}; same scores: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
