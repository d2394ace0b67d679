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

# The sandbox every submission runs in (instructor/grading/sandbox.py): bubblewrap, plus these
# limits. Memory and processes count for the whole sandbox (a cgroup when grading as root, else
# per-process rlimits); the wall-clock limit covers one submission: its confirmation run and its
# nbgrader run together. case_seconds bounds one call of a student's function by a hidden check.
c.Sandbox.memory_gb = 4
c.Sandbox.processes = 256
c.Sandbox.cpu_seconds = 900
c.Sandbox.wall_minutes = 15
c.Sandbox.case_seconds = 60
c.Sandbox.output_bytes = 1048576
