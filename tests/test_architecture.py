"""The grading engine reads top to bottom: imports in ``instructor/`` go one way, and no module
reaches into another's private names.

Every import counts — at module level and inside functions (a function-level import that closes a
cycle only hides it) — except under ``if __name__ == "__main__":``, which runs a module as a script.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "instructor"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(current: str, level: int, module: str | None) -> str:
    base = current.split(".")
    if not _is_package(current):
        base = base[:-1]
    if level:
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([module] if module else []))
    return module or ""


def _imports(name: str):
    """(target module, imported names, line) for every import of ``name`` outside a __main__ block."""
    tree = ast.parse(MODULES[name].read_text(), str(MODULES[name]))
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("instructor"):
                    yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, node.level, node.module)
            if not target.startswith("instructor"):
                continue
            names = [a.name for a in node.names]
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            if subs:
                for s in subs:
                    yield s, [], node.lineno
                rest = [n for n in names if f"{target}.{n}" not in MODULES]
                if rest:
                    yield target, rest, node.lineno
            else:
                yield target, names, node.lineno


def _graph() -> dict[str, set[str]]:
    graph = {m: set() for m in MODULES}
    for m in MODULES:
        for target, _, _ in _imports(m):
            # importing a.b.c imports the packages a.b and a too
            parts = target.split(".")
            for k in range(2, len(parts) + 1):
                t = ".".join(parts[:k])
                if t in MODULES and t != m and not m.startswith(t + ".") and not (t == "instructor"):
                    graph[m].add(t)
    return graph


def _cycles(graph):
    seen, stack, on, found = set(), [], set(), []

    def visit(n):
        seen.add(n)
        stack.append(n)
        on.add(n)
        for t in sorted(graph[n]):
            if t in on:
                found.append(stack[stack.index(t):] + [t])
            elif t not in seen:
                visit(t)
        stack.pop()
        on.discard(n)

    for n in sorted(graph):
        if n not in seen:
            visit(n)
    return found


def test_no_import_cycle_in_instructor():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles in instructor/: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_reaches_into_anothers_private_names():
    bad = []
    for m in MODULES:
        tree = ast.parse(MODULES[m].read_text())
        aliases = {}  # local name -> instructor module it stands for
        for target, names, line in _imports(m):
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{m}:{line} imports {target}.{n}")
            if not names:
                aliases[target.rsplit(".", 1)[-1]] = target
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != m:
                bad.append(f"{m}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert not bad, "private names used across modules: " + "; ".join(sorted(set(bad)))


def test_the_hidden_checks_do_not_depend_on_the_grading_pipeline():
    graph = _graph()
    hidden = [m for m in graph if m.startswith("instructor.hidden")]
    leaks = sorted(f"{m} -> {t}" for m in hidden for t in graph[m] if t.startswith("instructor.grading"))
    assert not leaks, leaks
