"""``autograder.check()``: your points per question, from inside the notebook.

In a cell of a course notebook::

    import autograder
    autograder.check()                      # every question, from the visible tests
    autograder.check("cube_sum_grad")       # one question (its answer's name or its test cell's id)
    autograder.check(hidden=True)           # also the hidden tests (a clone of the course only)

It reads the notebook *file* (the one this kernel was started for: ``JPY_SESSION_NAME``, set by
Jupyter; else pass ``notebook="..."``), finds its graded test cells (nbgrader's metadata) and runs each
one's visible tests on a copy of your notebook's variables, the way the cell itself would run: all
the points of a cell, or none, as nbgrader scores it. Written answers are graded by hand and listed as
such. The hidden tests run only when the notebook is graded: a question that passes here can still
fail there. ``hidden=True`` grades the saved file with them (``python -m autograder selfgrade``),
where the course's grading side (``instructor/``) is present.

Nothing here imports torch or the grading side: this module is part of the student package.
"""
from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .i18n import N_, _, label_lines, translate_message
from .nbgrader_cells import cell_kind, cell_source, checksum, is_answer_cell, is_test_cell, nbgrader_meta

__all__ = ["check", "CheckReport", "QuestionResult", "NotebookNotFound"]

HIDDEN_BLOCK = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)
#: what nbgrader_config.py's IgnorePattern drops from a test cell's stderr (a Python warning line)
WARNING_LINE = re.compile(r"(?m)^.*:\d+: \w*Warning: ")
HIDDEN_NOTE = N_("hidden tests run when the notebook is graded: a question that passes here may still fail there")
MAX_LINE = 200


class NotebookNotFound(FileNotFoundError):
    """check() cannot tell (or read) which notebook to check. Shown as its message alone."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


@dataclass
class QuestionResult:
    grade_id: str
    points: float
    earned: float | None          # None: graded by hand (a written answer), or not run
    kind: str = "auto"            # "auto": a test cell; "manual": graded by hand
    message: str = ""             # the failure as the cell would show it ("" when it passed)
    seconds: float = 0.0
    output: str = ""              # what the test cell printed
    answered: bool | None = None  # written answers: changed from the released text?
    hidden: str | None = None     # with hidden=True: the grader's score, e.g. "0 / 2"
    hidden_message: str = ""      # ... and its failure message

    @property
    def passed(self) -> bool | None:
        return None if self.earned is None else self.earned >= self.points

    @property
    def first_line(self) -> str:
        message = translate_message(self.message.strip())   # in the notebook's language
        line = message.splitlines()[0] if message else ""
        return line if len(line) <= MAX_LINE else line[:MAX_LINE - 3] + "..."

    @property
    def next_steps(self) -> list[str]:
        """The failure's "expected", "got" and "try next" lines (the course's message layout), in order."""
        return [line.strip() for line in translate_message(self.message).splitlines()
                if line.strip().startswith(("expected :", "got      :", "got :", "try next :") + label_lines())]

    def score_text(self) -> str:
        if self.kind == "manual":
            return (_(f"graded by hand ({self.points:g} pt)") if self.answered is not False
                    else _(f"graded by hand ({self.points:g} pt; not answered yet)"))
        if self.earned is None:
            return _("not run")
        return f"{self.earned:g} / {self.points:g}"


@dataclass
class CheckReport:
    """What :func:`check` found: one :class:`QuestionResult` per graded cell, in notebook order."""
    notebook: Path
    questions: list[QuestionResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    hidden_total: str | None = None   # with hidden=True: the grader's "autograded total" line

    def __getitem__(self, grade_id: str) -> QuestionResult:
        for q in self.questions:
            if q.grade_id == grade_id:
                return q
        raise KeyError(grade_id)

    @property
    def earned(self) -> float:
        return sum(q.earned or 0.0 for q in self.questions if q.kind == "auto")

    @property
    def possible(self) -> float:
        return sum(q.points for q in self.questions if q.kind == "auto")

    @property
    def by_hand(self) -> float:
        return sum(q.points for q in self.questions if q.kind == "manual")

    @property
    def all_passed(self) -> bool:
        return all(q.passed for q in self.questions if q.kind == "auto")

    def totals(self) -> str:
        text = _(f"visible tests: {self.earned:g} / {self.possible:g}")
        if self.by_hand:
            text += "  " + _(f"(+ {self.by_hand:g} point(s) graded by hand)")
        return text

    def __str__(self) -> str:
        width = max([len(q.grade_id) for q in self.questions] + [20])
        lines = [_(f"{self.notebook.name}: {len(self.questions)} graded question(s)")]
        for q in self.questions:
            row = f"  {q.grade_id:<{width}}  {q.score_text()}"
            if q.first_line:
                row += f"   {q.first_line}"
            lines.append(row)
            lines += [f"  {'':<{width}}    {step[:MAX_LINE]}" for step in (q.next_steps if q.passed is False else [])]
            if q.hidden is not None:
                lines.append(f"  {'':<{width}}  " + _(f"with hidden tests: {q.hidden}")
                             + (f"   {translate_message(q.hidden_message).splitlines()[0]}"
                                if q.hidden_message.strip() else ""))
        lines.append(self.totals())
        if self.hidden_total:
            lines.append(self.hidden_total)
        lines += [translate_message(N_(f"note: {n}")) for n in self.notes]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        e = html.escape
        hidden = any(q.hidden is not None for q in self.questions)
        head = (f"<tr><th style='text-align:left'>{e(_('question'))}</th><th>{e(_('visible tests'))}</th>"
                + (f"<th>{e(_('with hidden tests'))}</th>" if hidden else "")
                + f"<th style='text-align:left'>{e(_('first failure'))}</th></tr>")
        rows = []
        for q in self.questions:
            colour = {True: "#1a7f37", False: "#cf222e"}.get(q.passed, "#57606a")
            msg = e(q.first_line or (translate_message(q.hidden_message.strip()).splitlines() or [""])[0])
            more = translate_message(q.message.strip() or q.hidden_message.strip())
            if more and "\n" in more:
                msg = f"<details><summary>{msg}</summary><pre style='margin:0'>{e(more)}</pre></details>"
            rows.append(f"<tr><td style='text-align:left'><code>{e(q.grade_id)}</code></td>"
                        f"<td style='color:{colour}'>{e(q.score_text())}</td>"
                        + (f"<td>{e(q.hidden or '')}</td>" if hidden else "")
                        + f"<td style='text-align:left'>{msg}</td></tr>")
        foot = f"<p><b>{e(self.totals())}</b>" + (f"<br><b>{e(self.hidden_total)}</b>" if self.hidden_total else "") + \
               "".join(f"<br>{e(translate_message(N_(f'note: {n}')))}" for n in self.notes) + "</p>"
        return (f"<div><p><code>{e(self.notebook.name)}</code></p>"
                f"<table>{head}{''.join(rows)}</table>{foot}</div>")

    def _ipython_display_(self) -> None:
        # check() already showed this report in the cell that called it: returning it must not show it twice
        shell = _shell()
        if shell is not None and getattr(self, "_shown_in", None) == shell.execution_count:
            return
        _publish(self)


# --------------------------------------------------------------------------- the notebook

def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _publish(report: CheckReport) -> None:
    shell = _shell()
    if shell is not None and hasattr(shell, "display_pub"):
        from IPython.display import display

        display({"text/plain": str(report), "text/html": report._repr_html_()}, raw=True)
        report._shown_in = shell.execution_count
    else:
        print(report, flush=True)


def find_notebook(notebook: str | os.PathLike | None = None) -> Path:
    """The notebook file to check: ``notebook``, else the one Jupyter started this kernel for."""
    cwd = Path.cwd()
    if notebook is not None:
        path = Path(notebook).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not path.is_file():
            raise NotebookNotFound(_(f"no notebook file {path}: pass notebook=\"...\" with the path of your "
                                     f"notebook (from {cwd}, the folder this kernel runs in)"))
        return path
    named = os.environ.get("JPY_SESSION_NAME", "")
    if named:
        path = Path(named).expanduser()
        for candidate in ([path] if path.is_absolute() else [cwd / path, cwd / path.name]):
            if candidate.is_file() and candidate.suffix == ".ipynb":
                return candidate
        raise NotebookNotFound(_(f"the notebook this kernel was started for, {named}, is not there (renamed or "
                                 f"moved since?): pass notebook=\"{path.name}\" (its path from {cwd})"))
    raise NotebookNotFound(_("check() cannot tell which notebook this is (Jupyter did not say): pass "
                             f"notebook=\"your_notebook.ipynb\" (its path from {cwd}, the folder this kernel runs in)"))


@dataclass
class _Cell:
    grade_id: str
    points: float
    kind: str             # "auto" or "manual"
    source: str = ""
    answered: bool | None = None
    answer_of: str = ""   # test cells: the grade_id of the answer cell just above (the function's name)
    index: int = -1       # its position among the notebook's cells


def graded_cells(nb: dict) -> list[_Cell]:
    """The graded cells of a notebook (its JSON), in order (what is graded: :mod:`autograder.nbgrader_cells`):
    test cells ("auto") and written answers or tasks ("manual": check() lists both as graded by hand).

    The notebook is the student's, so unlike the grader's layout of the course's own notebooks, a graded
    cell without a ``grade_id`` is skipped and points that are no number count 0. An answer cell is
    "answered" when its text no longer has the checksum nbgrader stored at release."""
    out, last_answer = [], ""
    for index, cell in enumerate(nb.get("cells", [])):
        meta = nbgrader_meta(cell)
        gid = str(meta.get("grade_id", ""))
        if is_answer_cell(cell) and cell.get("cell_type") == "code":
            last_answer = gid
        kind = cell_kind(cell)
        if not gid or kind is None:
            continue
        try:
            points = float(meta.get("points", 0) or 0)
        except (TypeError, ValueError):
            points = 0.0
        if kind == "auto":
            out.append(_Cell(gid, points, "auto", HIDDEN_BLOCK.sub("", cell_source(cell)), answer_of=last_answer,
                             index=index))
        else:
            answered = None
            if is_answer_cell(cell) and "checksum" in meta:
                answered = meta["checksum"] != checksum(cell)
            out.append(_Cell(gid, points, "manual", answered=answered, index=index))
    return out


def _bound_names(source: str) -> set[str]:
    """The names a cell binds at its top level (``def``, ``class``, ``import``, assignments, ``for``,
    ``with ... as``, ``except ... as``), not those inside its functions and classes."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:   # %magics, !commands, or the student's typo: the plain patterns still tell
        return {n for pair in re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*=", source, re.M) for n in pair if n}
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        if not isinstance(node, ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return names


_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$", re.M)


class _Places:
    """Where a notebook defines each name, in words a student can find: the section (its ``##``
    heading) and the cell (an answer cell, or the cell's first line)."""

    def __init__(self, nb: dict):
        self.cells = []   # (index, names it binds, section, first line, is an answer cell)
        section = ""
        for index, cell in enumerate(nb.get("cells", [])):
            src = cell_source(cell)
            if cell.get("cell_type") == "markdown":
                for hashes, title in _HEADING.findall(src):
                    section = title if len(hashes) == 2 else section
                continue
            if cell.get("cell_type") != "code":
                continue
            if is_test_cell(cell):
                continue   # a test cell: check() runs it itself
            first = next((line.strip() for line in src.splitlines()
                          if line.strip() and not line.lstrip().startswith("#")), "")
            self.cells.append((index, _bound_names(src), section, first, is_answer_cell(cell)))

    @staticmethod
    def _section(title: str) -> str:
        if not title:
            return "at the top of the notebook"
        numbered = re.match(r"(\d+)\.\s", title)
        if numbered:
            return f"section {numbered.group(1)}"
        title = title.replace("`", "")
        return f"section \"{title if len(title) <= 40 else title[:39] + '…'}\""

    def where(self, name: str, before: int) -> str | None:
        """The cell that defines ``name`` (the last one above cell ``before``, else the first), in words."""
        found = [c for c in self.cells if name in c[1]]
        if not found:
            return None
        above = [c for c in found if c[0] < before]
        _, _, section, first, answer = above[-1] if above else found[0]
        first = first if len(first) <= 40 else first[:39] + "…"
        what = f"`{first}` under 'YOUR CODE HERE'" if answer else f"the cell starting `{first}`"
        return f"{self._section(section)}, {what}"


def _not_defined_message(name: str, places: "_Places | None", before: int) -> str:
    where = places.where(name, before) if places is not None else None
    if where is None:
        return N_(f"`{name}` is not defined: no cell of this notebook defines it; run the notebook from the "
                  "top (Run > Run All Cells), then call check() again\n"
                  f"  try next : if you renamed or deleted the cell that defined `{name}`, put it back")
    return N_(f"`{name}` is not defined yet: run the cell that defines it ({where}) and the cells above it, "
              "then call check() again\n"
              "  try next : select the cell where you call check() and use Run > Run All Above Selected Cell")


def _not_implemented_message(err: BaseException, places: "_Places | None", before: int) -> str:
    """A ``raise NotImplementedError`` stub reached from a test cell: named as nbgrader's Validate and
    the tests' own checks name it ("... is not implemented yet")."""
    import linecache

    function, line, tb = "", "", err.__traceback__
    while tb is not None:   # the innermost frame: the function that raised it
        code = tb.tb_frame.f_code
        function = getattr(code, "co_qualname", code.co_name)
        line = linecache.getline(code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    stub = "raise NotImplementedError" in line or "Replace this line with your answer" in str(err)
    where = places.where(function.split(".")[0], before) if places is not None and function and stub else None
    if where is None:   # raised by a library (an op PyTorch lacks for a device...), not a stub of this notebook
        return _message(err)
    return N_(f"{function} is not implemented yet: replace `raise NotImplementedError` in its cell ({where}), "
              "run that cell, then call check() again")


def _select(cells: list[_Cell], question: str | None) -> list[_Cell]:
    if question is None:
        return cells
    for match in (lambda c: c.grade_id == question, lambda c: c.grade_id == f"{question}_tests",
                  lambda c: c.kind == "auto" and c.answer_of == question):
        chosen = [c for c in cells if match(c)]
        if chosen:
            return chosen[:1]
    known = ", ".join(c.grade_id for c in cells) or "none"
    raise ValueError(_(f"no question {question!r} in this notebook; its graded cells: {known}"))


# --------------------------------------------------------------------------- running one test cell

@contextlib.contextmanager
def _captured(shell):
    """stdout, stderr (and IPython's displays) captured; every one restored afterwards, whatever happens."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    pub = getattr(shell, "display_pub", None)
    capture = None
    if pub is not None:
        from IPython.core.displaypub import CapturingDisplayPublisher

        capture = CapturingDisplayPublisher()
        shell.display_pub = capture
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved
        if pub is not None:
            shell.display_pub = pub


@contextlib.contextmanager
def _state_kept():
    """What a test cell (or the student code it calls) may switch globally, put back afterwards."""
    cwd = os.getcwd()
    torch = sys.modules.get("torch")
    grad = torch.is_grad_enabled() if torch is not None else None
    dtype = torch.get_default_dtype() if torch is not None else None
    anomaly = torch.is_anomaly_enabled() if torch is not None else None
    trace = sys.gettrace()
    with warnings.catch_warnings():  # filters and warnings.showwarning
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                if os.getcwd() != cwd:
                    os.chdir(cwd)
            if torch is not None:
                with contextlib.suppress(Exception):
                    torch.set_grad_enabled(grad)
                    torch.set_default_dtype(dtype)
                    torch.set_anomaly_enabled(anomaly)
            if sys.gettrace() is not trace:
                sys.settrace(trace)


def _message(err: BaseException) -> str:
    if isinstance(err, SystemExit):
        return N_(f"SystemExit: {err.code!r}: the code called exit() or sys.exit(), which ends the cell "
                  "with an error (nbgrader gives the cell 0)")
    text = str(err).strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _partial(value, points: float) -> float:
    """nbgrader's partial credit: a test cell whose last line shows a number scores that number."""
    try:
        grade = float(repr(value))
    except (TypeError, ValueError):
        return points
    return grade if 0.0 <= grade <= points else points


def _run_cell(cell: _Cell, ns: dict, shell, places: "_Places | None" = None) -> QuestionResult:
    import ast

    res = QuestionResult(cell.grade_id, cell.points, None)
    source = cell.source
    if shell is not None and hasattr(shell, "transform_cell"):
        with contextlib.suppress(Exception):
            source = shell.transform_cell(source)  # %magics and !commands, as the cell would run them
    t0 = time.perf_counter()
    value, shown = None, False
    with _captured(shell) as (out, err), _state_kept():
        try:
            tree = ast.parse(source, filename=f"<test cell {cell.grade_id}>")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, f"<test cell {cell.grade_id}>", "exec"), ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), f"<test cell {cell.grade_id}>", "eval"), ns)
                shown = value is not None and not source.rstrip().endswith(";")
        except KeyboardInterrupt:
            res.message = N_("KeyboardInterrupt: interrupted (the kernel's stop button, or the code raised it)")
        except NameError as e:  # the cells above were not run (yet): say which to run
            name = getattr(e, "name", None) or (re.findall(r"name '(\w+)' is not defined", str(e)) or [""])[0]
            res.message = _not_defined_message(name, places, cell.index) if name else _message(e)
        except NotImplementedError as e:
            res.message = _not_implemented_message(e, places, cell.index)
        except BaseException as e:  # noqa: BLE001 - SystemExit, GeneratorExit...: a failed cell, never a dead kernel
            res.message = _message(e)
    res.seconds = time.perf_counter() - t0
    res.output = out.getvalue()
    stderr = err.getvalue()
    if res.message:
        res.earned = 0.0
    elif stderr.strip() and not WARNING_LINE.search(stderr):
        res.earned = 0.0
        first = stderr.strip().splitlines()[0]
        res.message = N_(f"the test cell wrote to stderr (nbgrader gives such a cell 0): {first}")
    else:
        res.earned = _partial(value, cell.points) if shown else cell.points
    return res


# --------------------------------------------------------------------------- the hidden tests

def _being_graded() -> bool:
    return bool(os.environ.get("COURSE_VERDICTS") or os.environ.get("COURSE_SANDBOX_SCRATCH"))


class _Ticker:
    """An elapsed-time line, updated every second while the grader runs."""

    def __init__(self, label: str):
        import threading

        self.label, self.t0, self.done = label, time.monotonic(), threading.Event()
        shell = _shell()
        self.handle = None
        if shell is not None and hasattr(shell, "display_pub"):
            from IPython.display import display

            self.handle = display({"text/plain": self.text()}, raw=True, display_id=True)
        self.tty = self.handle is None and hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
        self.stream = sys.stdout
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def text(self, status: str = "") -> str:
        return f"{self.label}: {time.monotonic() - self.t0:.0f} s{status}"

    def show(self, status: str = "") -> None:
        with contextlib.suppress(Exception):
            if self.handle is not None:
                self.handle.update({"text/plain": self.text(status)}, raw=True)
            elif self.tty:
                self.stream.write("\r" + self.text(status))
                self.stream.flush()

    def _run(self) -> None:
        while not self.done.wait(1.0):
            self.show(" ...")

    def stop(self, status: str) -> None:
        self.done.set()
        self.thread.join(timeout=2)
        if self.handle is None and not self.tty:
            print(self.text(status), file=self.stream, flush=True)
        else:
            self.show(status)
            if self.tty:
                self.stream.write("\n")


def _selfgrade_command(path: Path) -> list[str]:
    return [sys.executable, "-m", "autograder", "selfgrade", str(path)]


def _run_hidden(report: CheckReport, path: Path) -> None:
    import subprocess
    import tempfile

    from .cli import REPO, instructor_available

    if not instructor_available():
        report.notes.append(N_("the hidden tests run only where the course's grader is (a clone of the repository, "
                               "with instructor/): this is a student install, so only the visible tests ran"))
        return
    age = time.time() - path.stat().st_mtime
    print(_(f"hidden tests: grading the notebook file as saved {age:.0f} s ago ({path.name}), not what the kernel "
            "holds: save it first (Ctrl+S) for your latest changes"), flush=True)
    with tempfile.TemporaryDirectory(prefix="check-") as tmp:
        result_file = Path(tmp) / "selfgrade.json"
        env = dict(os.environ, COURSE_SELFGRADE_JSON=str(result_file), PYTHONUNBUFFERED="1")
        env.pop("JPY_SESSION_NAME", None)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        ticker = _Ticker(_("grading with the hidden tests (python -m autograder selfgrade)"))
        proc = subprocess.Popen(_selfgrade_command(path), cwd=str(REPO), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        try:
            log = proc.communicate()[0] or ""
        except BaseException:  # Ctrl-C / the stop button: no grader left running
            with contextlib.suppress(Exception):
                os.killpg(proc.pid, 15)
                proc.wait(timeout=10)
            ticker.stop(" (stopped)")
            raise
        ticker.stop(f" (done, exit status {proc.returncode})")
        try:
            data = json.loads(result_file.read_text())
        except (OSError, ValueError):
            data = None
    if not data:
        tail = "\n".join(log.strip().splitlines()[-8:])
        report.notes.append(N_(f"the grader did not finish (exit status {proc.returncode}):") + f"\n{tail}")
        return
    report.notes.append(N_(f"the grader graded {path.name} as {data.get('assignment', '?')} "
                           f"({data.get('recognised', '')}), hidden tests included"))
    by_id = {q["grade_id"]: q for q in data.get("questions", [])}
    for q in report.questions:
        h = by_id.get(q.grade_id)
        if h is None:
            continue
        if h.get("score") is None:
            q.hidden = N_("pending (graded by hand)")
        else:
            q.hidden = f"{h['score']:g} / {h['max_score']:g}"
        q.hidden_message = h.get("message", "")
    report.hidden_total = (_(f"with hidden tests (the saved file): {data['auto_score']:g} / {data['auto_max']:g}")
                           + (_(f"  (+ {data['manual_pending']:g} point(s) graded by hand)")
                              if data.get("manual_pending") else ""))
    report.notes += [N_(f"grader: {n}") for n in data.get("notes", [])]


# --------------------------------------------------------------------------- check()

def check(question: str | None = None, *, notebook: str | os.PathLike | None = None, hidden: bool = False,
          namespace: dict | None = None, show: bool = True) -> CheckReport:
    """Points per question from the visible tests of this notebook; ``hidden=True`` also grades it.

    ``question``: one question, by its test cell's id (``"cube_sum_grad_tests"``) or its answer's
    (``"cube_sum_grad"``); default: all. ``notebook``: the notebook's path (default: the one this
    kernel was started for). ``namespace``: where the test cells look up your functions (default:
    the notebook's variables); they run on a copy of it, so nothing a test cell assigns lands in your
    notebook. ``hidden=True``: then grade the *saved* file with the hidden tests (needs the course's
    grader: a clone of the repository). Returns a :class:`CheckReport` (shown as a table).
    """
    t0 = time.perf_counter()
    if _being_graded():
        print(_("(autograder.check() does nothing while the notebook is being graded)"))
        return CheckReport(Path(str(notebook or "notebook")), notes=[N_("not run: the notebook is being graded")])
    path = find_notebook(notebook)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise NotebookNotFound(_(f"{path} cannot be read as a notebook ({err})")) from None
    cells = _select(graded_cells(nb), question)
    places = _Places(nb)
    shell = _shell()
    if namespace is None:
        namespace = shell.user_ns if shell is not None else sys._getframe(1).f_globals
    ns = dict(namespace)  # a copy: the test cells' own variables do not overwrite the student's
    report = CheckReport(path)
    stopped = False
    for cell in cells:
        if cell.kind == "manual":
            report.questions.append(QuestionResult(cell.grade_id, cell.points, None, "manual", answered=cell.answered))
            continue
        if stopped:
            report.questions.append(QuestionResult(cell.grade_id, cell.points, None,
                                                   message=N_("not run (interrupted)")))
            continue
        res = _run_cell(cell, ns, shell, places)
        stopped = res.message.startswith("KeyboardInterrupt")
        report.questions.append(res)
    if not cells:
        report.notes.append(N_("this notebook has no graded cells (is it a course notebook?)"))
    if any("is not defined yet: run the cell" in q.message for q in report.questions):
        report.notes.append(N_("check() runs the tests on what this kernel holds now: run the notebook's cells "
                               "first (select the cell where you call check(), then Run > Run All Above Selected Cell)"))
    if hidden:
        _run_hidden(report, path)
    else:
        report.notes.append(N_(HIDDEN_NOTE + " (check(hidden=True) grades the saved notebook with them)"))
    if any(q.kind == "manual" for q in report.questions):
        report.notes.append(N_("written answers are graded by hand, after you hand in: not counted here"))
    report.seconds = time.perf_counter() - t0
    if show:
        _publish(report)
    return report
