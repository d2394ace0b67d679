"""What instructors and students touch: the command line, formgrader, the exchange, hand-ins, late
penalties, exports to an LMS, the class report, the course's JupyterHub.

* :mod:`.cli` — ``python -m autograder release|grade|selfgrade|demo|...``;
* :mod:`.formgrader` — nbgrader's formgrader grading through the course's pipeline;
* :mod:`.exchange`, :mod:`.late` — collect only what the named student handed in; the late penalty;
* :mod:`.handins` — hand-ins from an LMS download (zip/folders) and the roster;
* :mod:`.export`, :mod:`.report` — grades to Canvas/Moodle/Gradescope; the class report;
* :mod:`.hub` — the course's JupyterHub: accounts, folders, services.

It grades through :mod:`instructor.batch` and nothing lower of its own.
"""
