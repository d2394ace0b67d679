"""nbgrader configuration for the course (read by nbgrader, JupyterLab's nbgrader panels and
``python -m autograder``). Run nbgrader from this folder so it finds this file."""
c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "inplace-autograd"
c.CourseDirectory.root = "."
# Keep the course's own data files (none today) and skip caches when copying assignments.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# A stub that fails loudly: a student who runs the tests before writing code learns what to do.
c.ClearSolutions.code_stub = {
    "python": "# YOUR CODE HERE\n"
              "raise NotImplementedError(\"Replace this line with your answer, run the cell, then run the tests below.\")",
}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Per-cell time limit. CPU torch is slow to import and a few cells train or attack for seconds;
# 180 s leaves a wide margin on a 2-core machine without letting an endless loop hang grading.
c.Execute.timeout = 180
c.Execute.interrupt_on_timeout = True
c.Execute.allow_errors = True

# A correct answer must not lose marks because PyTorch printed a warning: nbgrader zeroes a test
# cell with anything on stderr. Notebooks already route warnings to stdout
# (autograder.runtime.setup_notebook); this drops any warning that still reaches stderr
# ("file.py:12: UserWarning: ...") during autograding.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(?m)^.*:\d+: \w*Warning: "

# Restore graded and read-only cells a student deleted or edited, from the gradebook.
c.Autograde.create_student = True
c.Validator.validate_all = False
# A student who deletes a test cell gets it back (with a note) instead of a silently lower total.
c.OverwriteCells.add_missing_cells = True
# The kernel's own start-up chatter (e.g. "running over TCP without encryption") is not the
# student's output; keep the grading log readable.
c.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]

# The sandbox every submission runs in (instructor/sandbox/__init__.py): bubblewrap, plus these
# limits. Memory and processes count for the whole sandbox (a cgroup when grading as root, else
# per-process rlimits); the wall-clock limit covers one submission: its confirmation run and its
# nbgrader run together. case_seconds bounds one call of a student's function by a hidden check.
c.Sandbox.memory_gb = 4
c.Sandbox.processes = 256
c.Sandbox.cpu_seconds = 900
c.Sandbox.wall_minutes = 15
c.Sandbox.case_seconds = 60
c.Sandbox.output_bytes = 1048576
# The grading host: outputs per notebook, everything one submission writes (a tmpfs when grading as
# root), the confirmation's result files unpacked, and the first host uid the sandbox runs as.
c.Sandbox.notebook_output_bytes = 8388608
c.Sandbox.disk_mb = 512
c.Sandbox.result_mb = 64
c.Sandbox.host_uid = 61000
# One pre-started sandbox per grading worker (torch and IPython imported once), each run a fork of it
# (instructor/sandbox/zygote.py): when grading as root with privileged bubblewrap. Its server runs as
# host_uid + 1000 + (worker pid mod 1000), never as a run's uid. False: one sandbox per run.
c.Sandbox.zygote = True

# No live student HTML/JavaScript in the pages that show a submission. Formgrader renders the
# autograded notebook with nbconvert's HTMLExporter inside the instructor's authenticated Jupyter
# server, so a student's <script> (or <img onerror>, a javascript: link, an application/javascript
# output, raw HTML in a markdown cell) would run as the instructor; generate_feedback's page is the
# same template. Every HTMLExporter nbgrader makes from this file (formgrader's, generate_feedback's)
# therefore first makes the notebook inert (instructor/engine/sanitize.py: InertNotebook), even a
# notebook that never went through `python -m autograder grade`, and sanitizes the HTML outputs in
# the template (sanitize_html) with the course's allow-list (clean_html: nbconvert's own list would
# print tables and embedded plots as escaped text). The grading pipeline sets the same in
# instructor/engine/pipeline.py:sandboxed_config. A formgrader started elsewhere without the
# repository fails to render (ImportError) rather than render a submission unsanitized.
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

if (Path(__file__).resolve().parent / "instructor" / "engine" / "sanitize.py").is_file() and \
        str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # a Jupyter server does not have the repo on its path
c.HTMLExporter.preprocessors = ["instructor.engine.sanitize.InertNotebook"]
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {"clean_html": "instructor.engine.sanitize.clean_html"}

# The course's own exchange (release -> fetch -> submit -> collect from formgrader and the Assignments
# panel), inside the repository so it needs no root: grading/exchange (ignored by git; `make lab` and
# `make lab-instructor` create it, writable by every user as nbgrader's exchange must be).
c.Exchange.root = str(Path(__file__).resolve().parent / "grading" / "exchange")
# Collect accepts only what the named student handed in (instructor/classroom/exchange.py), for
# `nbgrader collect` and formgrader's Collect button alike: a folder in the exchange's inbound/ made by
# another account than the student it names, stamped in the future, with an edited timestamp.txt, or
# holding links is refused and logged as an error naming it (the collect then fails, the others are
# collected); plain nbgrader collects such a folder with a "cheating attempt?" warning.
# Only where the instructor's code is importable: a student's server (the Assignments list, whose
# ExchangeFactory resolves every class it names) reads this file too and has no `instructor/`.
import importlib.util  # noqa: E402

if importlib.util.find_spec("instructor") is not None:
    c.ExchangeFactory.collect = "instructor.classroom.exchange.CourseExchangeCollect"

# Late submissions (instructor/classroom/late.py): 10% of a notebook's points off per started day (24 h)
# after the assignment's due date, never more than its score. The due date is the gradebook's
# (`python -m instructor.classroom.hub due ASSIGNMENT "YYYY-MM-DD HH:MM [zone]"`, UTC unless a zone is
# given); the submission's time is its timestamp.txt. Where the instructor's code is importable only.
if importlib.util.find_spec("instructor") is not None:
    c.AssignLatePenalties.plugin_class = "instructor.classroom.late.PerDayPenalty"
    c.PerDayPenalty.percent_per_day = 10.0
    c.PerDayPenalty.grace_minutes = 0.0
