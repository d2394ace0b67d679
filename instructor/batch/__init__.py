"""A class graded: collect the submissions, run them on workers, record them (the ledger).

* :mod:`.course` — releasing, collecting a class's submissions (and :func:`~.course.recognise`, which
  assignment a notebook is), grading the batch, the ledger;
* :mod:`.parallel` — the workers: a local pool, Dask, or the grading service, with the dead-worker rule;
* :mod:`.client` — the grading service's client (the service itself is :mod:`instructor.service`).

Below it: :mod:`instructor.engine` (one submission) and :mod:`instructor.sandbox`.
"""
