"""The course's demonstration cells, which the confirmation run may leave out.

Some of the course's own cells only *show* something: the every-box attack on four images, the GAN's
400 training steps, a timing table. They call the student's functions, print, and plot. The kernel
run (nbgrader's) runs them, as the student did. The confirmation run (:mod:`.confirm`) re-runs the
notebook only to call each graded function on the hidden cases, and these cells were its slowest part
(assignment 3: 2.3 s of its 2.5 s of cells; assignment 4: 1.2 s of 1.4 s).

**Marked by the author.** A demonstration is a code cell of the source notebook with the metadata
``{"course": {"demonstration": true}}`` (nbgrader copies it into the released notebook). The grader
reads the marks from the *released* notebook, never from a submission. A cell is left out only when
its source is exactly the released one: a student who edits it has made it their own code.

**Left out only when nothing reads what it defines.** Each submission is checked again, because a
student's own code may use a demonstration's results (``fixed_model``, ``delta_all``...). A
demonstration runs after all when a name it binds is read by any cell that runs, by a function or
class any of them defines (read when called, so order does not matter), or named by a hidden check's
probe. The check repeats until nothing changes: a demonstration that another one which runs needs,
runs too. And nothing is left out of a notebook that reaches its namespace by other routes
(``globals()``, ``eval``, ``import __main__``, ``sys.modules``, frames, IPython magics...) or whose
code does not parse. :func:`names_read` and :func:`names_bound` use :mod:`symtable`, the compiler's
own scopes: a function's parameters and locals are not global reads.

**It cannot give a point.** The confirmation already leaves out the test cells, which draw random
numbers and bind names too, and the gradebook keeps the *lower* of the kernel's and the
confirmation's verdicts (:func:`.pipeline.keep_lower`). A notebook whose functions pass only when a
demonstration did not run fails in the kernel run, where it did.
"""
from __future__ import annotations

import ast
import functools
import symtable
from pathlib import Path

import nbformat

from ..layout import REPO, is_test_cell, nbgrader_meta

__all__ = ["MARK", "is_marked", "demonstration_sources", "names_bound", "names_read", "skippable",
           "PLACEHOLDER"]

#: the cell metadata that marks a demonstration (under ``metadata["course"]``)
MARK = "demonstration"

#: what the confirmation runs in a left-out demonstration's place (the cells keep their numbers)
PLACEHOLDER = "pass  # a demonstration of the course's: not run again by the confirmation"

#: names that reach a namespace without naming what they read
DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "eval", "exec", "compile", "get_ipython", "__import__",
                           "__builtins__", "breakpoint", "execfile", "runfile"})
#: attributes that do the same (``sys.modules["__main__"]``, frames, a function's globals, IPython's)
DYNAMIC_ATTRIBUTES = frozenset({"modules", "f_globals", "f_locals", "f_back", "f_builtins", "__globals__",
                                "user_ns", "user_global_ns", "get_referrers", "get_objects", "currentframe",
                                "_getframe", "stack", "import_module", "run_module", "run_path"})
#: modules whose import does
DYNAMIC_MODULES = frozenset({"__main__", "builtins", "inspect", "ctypes", "gc", "importlib", "runpy", "IPython"})


def is_marked(cell) -> bool:
    meta = cell.get("metadata", {}).get("course")
    return isinstance(meta, dict) and meta.get(MARK) is True


def course_cells(assignment: str, release_dir: Path | None = None) -> tuple[tuple[str, bool], ...]:
    """(source, marked as a demonstration) of each of the released notebooks' own code cells: not an
    answer, not a test."""
    paths = sorted(((release_dir or REPO / "release") / assignment).glob("*.ipynb"))
    return _course_cells(tuple((p, p.stat().st_mtime_ns) for p in paths))


@functools.lru_cache(maxsize=32)
def _course_cells(release: tuple) -> tuple[tuple[str, bool], ...]:
    """(read once per version of the release files: every submission of a class asks)"""
    return tuple((c.source, is_marked(c)) for path, _ in release for c in nbformat.read(path, as_version=4).cells
                 if c.cell_type == "code" and not is_test_cell(c) and not nbgrader_meta(c).get("solution"))


def demonstration_sources(assignment: str, release_dir: Path | None = None) -> frozenset[str]:
    """Sources of the released notebooks' marked demonstration cells (code, not an answer, not a test)."""
    return frozenset(src for src, marked in course_cells(assignment, release_dir) if marked)


@functools.lru_cache(maxsize=4096)
def _tables(source: str) -> tuple[symtable.SymbolTable, ast.Module] | None:
    """The cell's symbol tables and syntax tree; None when it does not parse as plain Python (IPython's
    magics and shell escapes, a syntax error)."""
    try:
        return symtable.symtable(source, "<cell>", "exec"), ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _scopes(table: symtable.SymbolTable):
    yield table
    for child in table.get_children():
        yield from _scopes(child)


def names_bound(source: str) -> frozenset[str] | None:
    """Global names a cell binds (assigns, imports, defines, deletes, declares ``global`` and assigns);
    None when that cannot be told."""
    parsed = _tables(source)
    if parsed is None:
        return None
    table, _ = parsed
    out = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    for scope in _scopes(table):
        if scope is not table:
            out |= {s.get_name() for s in scope.get_symbols() if s.is_declared_global() and s.is_assigned()}
    return frozenset(out)


def names_read(source: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """Global names a cell reads, as (``now``, ``later``): ``now`` at its top level, while the cell runs;
    ``later`` in the functions, classes, lambdas and comprehensions it defines, which may run at any
    time after (a function reads its globals when it is called, whenever that is). None when its
    reads cannot be told: it does not parse, or it reaches the namespace dynamically
    (:data:`DYNAMIC_NAMES` and the like), or it names the notebook's module in a string."""
    parsed = _tables(source)
    if parsed is None:
        return None
    table, tree = parsed
    now = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    later = set()
    for scope in _scopes(table):
        if scope is table:
            continue
        for s in scope.get_symbols():
            if s.is_referenced() and (s.is_global() or s.is_declared_global()
                                      or (scope.get_type() == "class" and not s.is_local())):
                later.add(s.get_name())
    now |= _augmented_globals(tree.body)   # x += 1 reads x: symtable counts it as a binding only
    declared = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
    later |= {node.target.id for node in ast.walk(tree)
              if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in declared}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRIBUTES:
            return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] in DYNAMIC_MODULES for m in mods):
                return None
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__main__" in node.value:
            return None
    if (now | later) & DYNAMIC_NAMES:
        return None
    return frozenset(now), frozenset(later)


def _augmented_globals(body) -> set[str]:
    """Names augmented-assigned (``x += 1``) at the top level of a cell, outside any function or class."""
    out, todo = set(), list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        todo.extend(ast.iter_child_nodes(node))
    return out


def probe_names(sources: list[str]) -> frozenset[str] | None:
    """The names hidden checks take from the notebook's namespace. A probe runs in globals of its own
    and is handed the namespace as the dict ``ns``: it reads ``student(ns, "decode")``, ``ns["x"]`` or
    ``ns.get("x")``, or hands ``ns`` to a helper of its own source (read the same way). None (it may
    read anything) when a probe uses ``ns`` any other way."""
    out = set()

    def const(node) -> str | None:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    def is_ns(node) -> bool:
        return isinstance(node, ast.Name) and node.id == "ns"

    for src in sources:
        tree = ast.parse(src)
        helpers = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        allowed = set()  # the `ns` Name nodes used in one of the ways above
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "student" \
                    and len(node.args) == 2 and is_ns(node.args[0]) and const(node.args[1]):
                allowed.add(id(node.args[0]))
                out.add(const(node.args[1]))
            elif isinstance(node, ast.Subscript) and is_ns(node.value) and const(node.slice):
                allowed.add(id(node.value))
                out.add(const(node.slice))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and is_ns(node.func.value) and node.args and const(node.args[0]):
                allowed.add(id(node.func.value))
                out.add(const(node.args[0]))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
                allowed |= {id(a) for a in node.args if is_ns(a)}
        if any(is_ns(n) and isinstance(n.ctx, ast.Load) and id(n) not in allowed for n in ast.walk(tree)):
            return None
    return frozenset(out)


def skippable(cells: list[str], demonstrations: frozenset[str], probe_reads: frozenset[str] = frozenset()) -> list[int]:
    """Indexes of ``cells`` (the confirmation's, in order) that are demonstrations nothing else needs.

    Start from every cell whose source is a marked demonstration; keep every other cell. A candidate
    is kept too while a name it binds is read by a probe, by a function or class of any kept cell, or
    at the top level of a kept cell that comes after it; and so on until nothing changes. Nothing is
    left out when a kept cell's reads cannot be told, or a candidate's bindings cannot."""
    candidates = {i for i, src in enumerate(cells) if src in demonstrations}
    if not candidates:
        return []
    binds = {i: names_bound(cells[i]) for i in candidates}
    if any(b is None for b in binds.values()):
        return []
    reads = {i: names_read(src) for i, src in enumerate(cells)}
    later = set(probe_reads)            # read at any time: by probes, and by the functions cells define
    now: list[tuple[int, frozenset[str]]] = []  # (cell, names its top level reads as it runs)
    kept = set(range(len(cells))) - candidates
    while True:
        for j in kept:
            if reads[j] is None:
                return []
            now.append((j, reads[j][0]))
            later |= reads[j][1]
        more = {i for i in candidates
                if binds[i] & later or any(j > i and binds[i] & names for j, names in now)}
        if not more:
            return sorted(candidates)
        candidates -= more
        kept = more
