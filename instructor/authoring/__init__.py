"""The author's tools: writing ``source/`` notebooks, sample submissions and what checks them.

* :mod:`.authoring` — the cell constructors ``source/`` notebooks are written with;
* :mod:`.samples` — sample submissions (``# expect:`` lines) and the notebooks built from them;
* :mod:`.confirm` — ``python -m instructor.authoring.confirm --samples A``: every sample's verdicts;
* :mod:`.visible` — the visible tests against the samples;
* :mod:`.bench` — ``make bench``: the grader against plain nbgrader;
* :mod:`.gpu_check` — ``make gpu-check``: the hidden checks on CUDA.
"""
