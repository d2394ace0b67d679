"""The instructor side of the course: never installed for students, never visible in a sandbox.

* :mod:`instructor.grading` — nbgrader plumbing, the sandbox, the confirmation run (probes and judges),
  sample submissions, the command line behind ``python -m autograder release|grade|selfgrade|demo``;
* :mod:`instructor.hidden`  — the hidden checks, one module per assignment
  (``a00_orientation`` ... ``a03_yolo_head``), each split into *probes* (what to run in the sandbox)
  and *judges* (what to compare, in the grader's own process), with the reference implementations.

Student notebooks import only :mod:`autograder`. ``pip install .`` (and Binder's ``postBuild``)
installs only that package; this folder exists in the repository and nowhere else.
"""
