"""The grader stands in layers (docs/authoring.md, "The grader's layers"): imports in ``instructor/`` go
one way — down the layers, never sideways between two packages of one floor — with no circle, no
module reaching into another's private names, and a sandbox that knows nothing of nbgrader, torch or
the checks.

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


def _import_nodes(name: str):
    """Every import statement of ``name`` outside a __main__ block."""
    tree = ast.parse(MODULES[name].read_text(), str(MODULES[name]))
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def _foreign_imports(name: str) -> set[str]:
    """The modules outside ``instructor`` that ``name`` imports (``nbgrader.api``, ``torch``, ...)."""
    found = set()
    for node in _import_nodes(name):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if not a.name.startswith("instructor")}
        elif node.level == 0 and node.module and not node.module.startswith("instructor"):
            found.add(node.module)
    return found


def _imports(name: str):
    """(target module, imported names, line) for every import of ``name`` outside a __main__ block."""
    for node in _import_nodes(name):
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


# --------------------------------------------------------------------------- the layers

#: Each package of the grader and its floor, lowest first. An import goes to a lower floor, or stays
#: in its own package: two packages on one floor do not import each other. A module directly in
#: ``instructor/`` other than ``layout`` is a tool on top of everything (``instructor.__main__``, ...).
LAYERS = {
    "instructor.layout": 0,       # the course's folders and nbgrader's cell metadata, read by all
    "instructor.sandbox": 1,      # one submission's box: bubblewrap, limits, the kernel's process
    "instructor.hidden": 1,       # the hidden checks: probes and judges (beside the sandbox, not on it)
    "instructor.engine": 2,       # one submission graded: canonical, confirm, execute, feedback
    "instructor.batch": 3,        # a class: collect, run on workers (and the service's client), record
    "instructor.service": 4,      # the root-owned grading service (its server)
    "instructor.authoring": 4,    # the author's tools: notebooks, samples, their checks, the bench
    "instructor.classroom": 5,    # what people touch: the commands (demo runs samples), formgrader, hub
}
TOOLS = 9

#: What the sandbox must not know: it runs a command in a box and says how it ended.
SANDBOX_MUST_NOT_IMPORT = ("nbgrader", "nbconvert", "nbclient", "torch", "autograder", "instructor.hidden",
                           "instructor.engine", "instructor.batch")
#: Sandbox modules that the grader never imports: run as a script inside the box, where they import
#: what the box's runs need (the pre-started server preloads torch and the student package).
RUN_INSIDE_THE_BOX = {"instructor.sandbox.zygote_server"}
#: The student package's rules of what a graded cell is, which ``instructor/layout.py`` (floor 0, which the sandbox
#: reads for nbgrader's configuration) reads too: standard library only, and importing it imports no torch,
#: nbgrader or checks (tests/test_student_package.py), so reaching it teaches the sandbox none of them.
SANDBOX_MAY_REACH = {"autograder.nbgrader_cells"}


def _unit(module: str) -> str:
    """The package a module belongs to (``instructor.engine.pipeline`` -> ``instructor.engine``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _floor(module: str) -> int:
    unit = _unit(module)
    if unit in LAYERS:
        return LAYERS[unit]
    if unit in MODULES and not _is_package(unit) or unit == "instructor":
        return TOOLS
    raise KeyError(f"{module}: its package {unit} is in no layer: give it a floor in LAYERS "
                   "(tests/test_architecture.py) and a line in docs/authoring.md")


def _upward(graph: dict[str, set[str]], floor=_floor) -> list[str]:
    """Every import of ``graph`` that does not go down a floor: up, or sideways into another package."""
    bad = []
    for m, targets in graph.items():
        for t in targets:
            if _unit(t) == _unit(m) or floor(m) == floor(t) == TOOLS:
                continue
            if floor(t) >= floor(m):
                bad.append(f"{m} (floor {floor(m)}) imports {t} (floor {floor(t)})")
    return sorted(bad)


def _leaks(graph: dict[str, set[str]], foreign: dict[str, set[str]], root: str, banned, exempt=()) -> list[str]:
    """What the modules of ``root`` reach that they must not: a banned module imported by one of them
    or by any module of ``instructor`` they import, directly or not."""
    def is_banned(name):
        return any(name == b or name.startswith(b + ".") for b in banned)

    bad = []
    for m in sorted(graph):
        if _unit(m) != root or m in exempt:
            continue
        seen, stack = {m}, [m]
        while stack:
            n = stack.pop()
            bad += [f"{m} imports {b}" + (f" (through {n})" if n != m else "")
                    for b in sorted(set(graph.get(n, ())) | foreign.get(n, set())) if is_banned(b)]
            for t in graph.get(n, ()):
                if t not in seen and not is_banned(t):
                    seen.add(t)
                    stack.append(t)
    return sorted(set(bad))


def test_every_package_of_instructor_has_a_floor():
    missing = []
    for m in MODULES:
        try:
            _floor(m)
        except KeyError as err:
            missing.append(str(err))
    assert not missing, missing
    assert {_unit(m) for m in MODULES if _unit(m) in LAYERS} == set(LAYERS), "a layer with no package"


def test_imports_go_down_the_layers():
    bad = _upward(_graph())
    assert not bad, "imports that do not go down a layer (docs/authoring.md, \"The grader's layers\"): " + "; ".join(bad)


def test_the_layer_rule_fails_on_an_upward_or_sideways_import():
    """The rule above can fail: fed a graph with an upward and a sideways import, it names both."""
    fake = {
        "instructor.sandbox.workspace": {"instructor.sandbox.limits", "instructor.layout"},   # fine: own package, down
        "instructor.engine.pipeline": {"instructor.sandbox", "instructor.batch.course"},     # up: engine -> batch
        "instructor.service": {"instructor.batch.client"},                                  # fine: down
        "instructor.authoring.samples": {"instructor.service"},                             # sideways: floor 4 -> 4
        "instructor.sandbox.limits": {"instructor.hidden"},                                 # sideways: floor 1 -> 1
        "instructor.__main__": {"instructor.classroom.cli"},                                # fine: a tool on top
    }
    assert _upward(fake) == [
        "instructor.authoring.samples (floor 4) imports instructor.service (floor 4)",
        "instructor.engine.pipeline (floor 2) imports instructor.batch.course (floor 3)",
        "instructor.sandbox.limits (floor 1) imports instructor.hidden (floor 1)",
    ]
    try:
        _floor("instructor.newpackage.thing")
    except KeyError as err:
        assert "in no layer" in str(err)
    else:
        raise AssertionError("a package in no layer was given a floor")


def test_the_sandbox_knows_nothing_of_nbgrader_torch_or_the_checks():
    graph = _graph()
    foreign = {m: _foreign_imports(m) for m in MODULES}
    leaks = _leaks(graph, foreign, "instructor.sandbox", SANDBOX_MUST_NOT_IMPORT, exempt=RUN_INSIDE_THE_BOX)
    leaks = [leak for leak in leaks if leak.split(" imports ")[1].split(" (through ")[0] not in SANDBOX_MAY_REACH]
    assert not leaks, leaks
    assert RUN_INSIDE_THE_BOX <= set(MODULES), "an exempt module that is no longer there"
    assert not any(m in graph[n] for n in graph for m in RUN_INSIDE_THE_BOX), \
        "a module run inside the box is imported by the grader"


def test_the_sandbox_rule_fails_on_a_leak_direct_or_through_a_module():
    graph = {"instructor.sandbox": {"instructor.sandbox.kernel"}, "instructor.sandbox.kernel": {"instructor.layout"},
             "instructor.layout": set(), "instructor.sandbox.limits": set(), "instructor.sandbox.runner": set()}
    foreign = {"instructor.sandbox.limits": {"torch"}, "instructor.layout": {"nbgrader.api", "nbformat"},
               "instructor.sandbox.runner": {"nbformat", "json"}}
    assert _leaks(graph, foreign, "instructor.sandbox", SANDBOX_MUST_NOT_IMPORT) == [
        "instructor.sandbox imports nbgrader.api (through instructor.layout)",
        "instructor.sandbox.kernel imports nbgrader.api (through instructor.layout)",
        "instructor.sandbox.limits imports torch"]
    assert _leaks(graph, foreign, "instructor.sandbox", SANDBOX_MUST_NOT_IMPORT,
                  exempt={"instructor.sandbox.limits", "instructor.sandbox", "instructor.sandbox.kernel"}) == []


def test_the_hidden_checks_do_not_depend_on_the_grader():
    graph = _graph()
    hidden = [m for m in graph if m.startswith("instructor.hidden")]
    leaks = sorted(f"{m} -> {t}" for m in hidden for t in graph[m]
                   if _unit(t) != "instructor.hidden" and t != "instructor.layout")
    assert not leaks, leaks


# --------------------------------------------------------------------------- the sandbox's face

def _face_misuses(source: str, where: str, current: str, package: str, face, submodules) -> list[str]:
    """Names of ``package`` that the code ``source`` (module ``current``, or a file outside ``instructor``
    when ``current`` is "") takes from the package itself that are neither in its face (``__all__``) nor
    one of its modules."""
    tree = ast.parse(source, where)
    allowed = set(face) | set(submodules)
    bad, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(current, node.level, node.module) if node.level else (node.module or "")
            for a in node.names:
                if target == package and a.name not in allowed:
                    bad.append(f"{where}:{node.lineno} imports {package}.{a.name}")
                elif target == package.rsplit(".", 1)[0] and a.name == package.rsplit(".", 1)[1]:
                    aliases.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == package and a.asname}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.attr not in allowed:
            bad.append(f"{where}:{node.lineno} uses {package}.{node.attr}")
    return bad


def _sandbox_face():
    import instructor.sandbox

    subs = {m.rsplit(".", 1)[1] for m in MODULES if m.startswith("instructor.sandbox.")}
    return list(instructor.sandbox.__all__) + ["_STATUS"], subs   # _STATUS: the bench resets the probe


def test_the_sandbox_is_used_through_its_face_or_its_modules():
    face, subs = _sandbox_face()
    assert len(face) <= 16, f"the sandbox's face has grown to {len(face)} names: {face}"
    bad = []
    for m, path in MODULES.items():
        if _unit(m) != "instructor.sandbox":
            bad += _face_misuses(path.read_text(), str(path.relative_to(REPO)), m, "instructor.sandbox", face, subs)
    for path in sorted([*(REPO / "tests").glob("*.py"), *(REPO / "scripts").glob("*.py")]):
        bad += _face_misuses(path.read_text(), str(path.relative_to(REPO)), "", "instructor.sandbox", face, subs)
    assert not bad, "names taken from the sandbox's face that it does not show: " + "; ".join(bad)


def test_the_face_rule_fails_on_a_name_the_face_does_not_show():
    source = ("from instructor import sandbox\nfrom instructor.sandbox import Limits, give_to, isolation\n"
              "sandbox.run([]); sandbox.sandbox_uid()\n")
    assert _face_misuses(source, "fake.py", "", "instructor.sandbox", ["Limits", "run"], {"isolation"}) == [
        "fake.py:2 imports instructor.sandbox.give_to", "fake.py:3 uses instructor.sandbox.sandbox_uid"]
    relative = "from .. import sandbox\nfrom ..sandbox import open_log\nsandbox.Limits()\n"
    assert _face_misuses(relative, "e.py", "instructor.engine.pipeline", "instructor.sandbox", ["Limits"], set()) == [
        "e.py:2 imports instructor.sandbox.open_log"]
