"""One submission graded: the engine. It knows nbgrader and the hidden checks; it is handed a sandbox.

* :mod:`.pipeline` — the stages of one submission (:func:`~.pipeline.grade_submission`): read, canonical,
  confirm, execute (nbgrader's autograde), keep the lower verdict, record, feedback;
* :mod:`.canonical` — the notebook as the course released it, whatever the student's file says
  about its own cells (undoes tampering);
* :mod:`.confirm` — every autograded point confirmed outside the student's kernel (probes and judges);
* :mod:`.execute` — nbgrader's Execute preprocessor with the grader in charge of the kernel;
* :mod:`.feedback`, :mod:`.sanitize` — the feedback page, made inert;

Imports only :mod:`instructor.sandbox`, :mod:`instructor.hidden` and :mod:`instructor.layout` of the
course's own code.
"""
