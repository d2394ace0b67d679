"""The instructor side of the course: never installed for students, never visible in a sandbox.

* the grader, in layers (each imports only those below it; ``tests/test_architecture.py``; the picture
  is in ``docs/authoring.md``, "The grader's layers"):
  :mod:`instructor.sandbox` (one submission's box: knows nothing of nbgrader, torch or checks) <
  :mod:`instructor.engine` (one submission graded) < :mod:`instructor.batch` (a class: collect, run on
  workers, record) < :mod:`instructor.service` (the root-owned grading service),
  :mod:`instructor.classroom` (the command line behind ``python -m autograder release|grade|selfgrade|demo``,
  formgrader, hand-ins, the hub) and :mod:`instructor.authoring` (the author's tools, sample submissions);
  :mod:`instructor.layout` (the course's folders and nbgrader's cell metadata) is below them all;
* :mod:`instructor.hidden`  — the hidden checks, one module per assignment
  (``a00_orientation`` ... ``a03_yolo_head``), each split into *probes* (what to run in the sandbox)
  and *judges* (what to compare, in the grader's own process), with the reference implementations.

Student notebooks import only :mod:`autograder`. ``pip install .`` (and Binder's ``postBuild``)
installs only that package; this folder exists in the repository and nowhere else.
"""

import sys as _sys

# jsonschema imports ``rfc3987_syntax`` eagerly when it is installed (it builds a Lark grammar: 0.9 s
# of every grading process's and worker's start, measured with ``python -X importtime``; jsonschema
# issue #1428) only to check the "iri" string formats. nbformat's schemas use no string format at
# all, so the instructor side goes without it: jsonschema skips that checker when the import fails.
if "jsonschema" not in _sys.modules:
    _sys.modules.setdefault("rfc3987_syntax", None)
