"""The shape of the code, read statically (ast; nothing is imported): layers import only downward, no package has
an import circle (neither among the imports that run at import time nor counting the imports inside functions),
inside `kernels` the base modules, the compiler, the runtime and the public surface import only downward,
`autodiff` reaches `kernels` only through its public names, no Python file is over 800 lines, and importing
`kernels` changes nothing process-wide."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: layer of each package: a module may import its own layer and those below, never one above
LAYERS = {"kernels": 0, "autodiff": 1, "sim": 2, "tools": 3, "warp_shim": 3}
MAX_LINES = 800


def module_name(path: str) -> str:
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def package_files(package: str) -> dict:
    """Module name -> file of every .py file of `package`."""
    out = {}
    for directory, _, files in os.walk(os.path.join(ROOT, package)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(directory, f)
                out[module_name(path)] = path
    return out


MODULES = {name: path for package in LAYERS for name, path in package_files(package).items()}


def _is_type_checking(node) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class Import:
    """One imported module: `target` (a module name), the `names` taken from it (for `from X import a`: the names
    that are not submodules), whether it runs at import time (`eager`: not inside a function body, nor under
    `if TYPE_CHECKING:`), and where (`line`)."""

    def __init__(self, target, names, eager, line):
        self.target, self.names, self.eager, self.line = target, names, eager, line


def imports_of(module: str, path: str) -> list:
    """The Imports of a module file, relative imports resolved."""
    is_package = path.endswith("__init__.py")
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = []

    def absolute(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        return ".".join(parts + ([node.module] if node.module else []))

    def visit(node, eager: bool):
        for child in ast.iter_child_nodes(node):
            child_eager = eager and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), False)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), child_eager)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(alias.name, (), child_eager, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = absolute(child)
                plain = []
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    if sub in MODULES:
                        found.append(Import(sub, (), child_eager, child.lineno))
                    else:
                        plain.append(alias.name)
                if plain:
                    found.append(Import(base, tuple(plain), child_eager, child.lineno))
            visit(child, child_eager)

    visit(tree, True)
    return found


IMPORTS = {name: imports_of(name, path) for name, path in MODULES.items()}


def _internal(target: str) -> str | None:
    """The module of ours that importing `target` names (the longest known prefix), or None for a third party."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in MODULES:
            return name
        parts.pop()
    return None


def eager_graph(package: str) -> dict:
    """module -> modules of the same package it imports at import time. Importing `a.b.c` runs `a.b` first, so
    the packages between count too, except the importer's own ancestors: they have started already when it runs.
    An ancestor named as the target itself (`import kernels` or `from . import name` for a name its __init__
    defines) does count: the importer needs that __init__ to have got that far."""
    graph = {}
    for module in MODULES:
        if module.split(".")[0] != package:
            continue
        edges = set()
        for imp in IMPORTS[module]:
            target = _internal(imp.target) if imp.eager else None
            if target is None or target.split(".")[0] != package or target == module:
                continue
            edges.add(target)
            parts = target.split(".")
            edges.update(p for p in (".".join(parts[:k]) for k in range(1, len(parts)))
                         if p != module and not module.startswith(p + "."))
        graph[module] = edges
    return graph


def find_cycle(graph: dict) -> list | None:
    """One import circle of `graph` as a list of modules (first == last), or None."""
    state: dict = {}
    stack: list = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_import_circle_inside_a_package(package):
    cycle = find_cycle(eager_graph(package))
    assert cycle is None, "import circle (imports that run at import time): " + " -> ".join(cycle)


def full_graph(package: str) -> dict:
    """module -> modules of the same package it imports anywhere: at import time (eager_graph's edges) and inside
    functions or under TYPE_CHECKING (the target module itself: its packages have been imported by then). A
    circle here is a circle whatever the import's place: an import moved into a function to dodge one still
    ties the two modules together."""
    graph = eager_graph(package)
    for module in graph:
        for imp in IMPORTS[module]:
            target = _internal(imp.target)
            if not imp.eager and target is not None and target.split(".")[0] == package and target != module:
                graph[module].add(target)
    return graph


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_import_circle_counting_imports_inside_functions(package):
    cycle = find_cycle(full_graph(package))
    assert cycle is None, "import circle (imports inside functions included): " + " -> ".join(cycle)


#: the parts of `kernels`, bottom up (see kernels/compiler/__init__.py): a module imports its own part and those
#: below, at import time or inside functions
KERNELS_PARTS = (
    ("base", ("kernels.config", "kernels.errors", "kernels.types", "kernels.typesys", "kernels.halfbits",
              "kernels.builtins", "kernels.logger", "kernels.reference", "kernels.composite_access",
              "kernels.composite_math")),
    ("compiler", ("kernels.compiler",)),
    ("runtime", ("kernels.runtime",)),
    ("surface", ("kernels", "kernels.mathlib", "kernels.utils", "kernels.tape_interface")),
)


def kernels_part(module: str) -> int:
    """Index in KERNELS_PARTS of the part `module` of kernels belongs to (the longest matching prefix)."""
    best, rank = -1, None
    for k, (_, prefixes) in enumerate(KERNELS_PARTS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), k
    assert rank is not None, f"{module}: in no part of KERNELS_PARTS (add it where it belongs)"
    return rank


def test_kernels_parts_import_downward_only():
    """The compiler imports nothing of the runtime (it knows arrays and structs as typesys types), the runtime
    nothing of the public surface, the base modules neither: counting imports inside functions."""
    upward = []
    for module, imports in IMPORTS.items():
        if module.split(".")[0] != "kernels":
            continue
        own = kernels_part(module)
        for imp in imports:
            target = _internal(imp.target)
            if target is None or target.split(".")[0] != "kernels" or target == module:
                continue
            if kernels_part(target) > own:
                upward.append(f"{MODULES[module]}:{imp.line}: {module} ({KERNELS_PARTS[own][0]}) imports {target} "
                              f"({KERNELS_PARTS[kernels_part(target)][0]})")
    assert not upward, "imports up inside kernels (base <- compiler <- runtime <- surface):\n" + "\n".join(upward)


def test_imports_go_down_the_layers_only():
    upward = []
    for module, imports in IMPORTS.items():
        own = LAYERS[module.split(".")[0]]
        for imp in imports:  # deferred imports too: a layer below must not need one above at all
            top = imp.target.split(".")[0]
            if top in LAYERS and LAYERS[top] > own:
                upward.append(f"{MODULES[module]}:{imp.line}: {module} imports {imp.target}")
    assert not upward, "imports up a layer (tools -> sim -> autodiff -> kernels):\n" + "\n".join(upward)


def test_autodiff_uses_kernels_public_interface_only():
    """autodiff imports `kernels` (and its public tape_interface), never an underscore name, and sticks no
    attributes on kernel objects."""
    bad = []
    for module, imports in IMPORTS.items():
        if not module.startswith("autodiff"):
            continue
        for imp in imports:
            if imp.target.split(".")[0] != "kernels":
                continue
            if imp.target not in ("kernels", "kernels.tape_interface"):
                bad.append(f"{module}:{imp.line}: imports {imp.target}")
            bad += [f"{module}:{imp.line}: imports the private name {n}" for n in imp.names if n.startswith("_")]
        source = open(MODULES[module], encoding="utf-8").read()
        if re.search(r"\._tape_\w|[\"']_tape_\w", source):
            bad.append(f"{module}: reads or sets _tape_* attributes")
    assert not bad, "\n".join(bad)


def test_tape_interface_exports_what_it_lists():
    import kernels

    missing = [n for n in kernels.tape_interface.__all__ if not hasattr(kernels.tape_interface, n)]
    assert not missing


def _python_files():
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        files = out.stdout.split()
    else:  # not a git checkout: walk the tree
        files = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs
                 if f.endswith(".py") and ".git" not in d]
    return [f for f in files if os.path.exists(os.path.join(ROOT, f))]


def test_no_python_file_over_800_lines():
    long = []
    for rel in _python_files():
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            long.append(f"{rel}: {n} lines")
    assert not long, f"files over {MAX_LINES} lines (split them by concern):\n" + "\n".join(long)


def test_the_checks_see_a_circle_and_deferred_imports(tmp_path):
    """The graph walk itself: a made-up circle is found; imports in functions and under TYPE_CHECKING are seen
    and marked deferred, relative ones resolved."""
    assert find_cycle({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}}) == ["p.a", "p.b", "p.c", "p.a"]
    assert find_cycle({"p.a": {"p.b"}, "p.b": set()}) is None
    path = tmp_path / "probe.py"
    path.write_text("from typing import TYPE_CHECKING\nfrom .tape import Tape\nif TYPE_CHECKING:\n"
                    "    import tools\n\n\ndef f():\n    from sim import x\n")
    found = {(i.target, i.eager) for i in imports_of("autodiff.probe", str(path))}
    assert {("autodiff.tape", True), ("tools", False), ("sim", False)} <= found



def test_the_full_graph_counts_imports_inside_functions(monkeypatch):
    """A circle closed only by an import inside a function is found by the full graph, not by the eager one; a
    kernels module is placed in its part, and the compiler importing the runtime is an import up."""
    probe = {"p.a": [Import("p.b", (), True, 1)], "p.b": [Import("p.a", ("f",), False, 5)]}
    monkeypatch.setitem(LAYERS, "p", 9)
    for name, imports in probe.items():
        monkeypatch.setitem(MODULES, name, name)
        monkeypatch.setitem(IMPORTS, name, imports)
    assert find_cycle(eager_graph("p")) is None
    assert find_cycle(full_graph("p")) == ["p.a", "p.b", "p.a"]
    assert KERNELS_PARTS[kernels_part("kernels.compiler.passes.adjoint")][0] == "compiler"
    assert KERNELS_PARTS[kernels_part("kernels.builtins.geometry")][0] == "base"
    assert KERNELS_PARTS[kernels_part("kernels")][0] == "surface"
    assert kernels_part("kernels.runtime.array") > kernels_part("kernels.compiler.function")


MALLOC_PROBE = textwrap.dedent("""
    import ctypes, sys
    import kernels as wp
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]

    def from_heap():
        # a 30 MiB block: glibc serves it with mmap (outside [heap]) unless the mmap threshold was raised (its
        # dynamic threshold only rises when a larger mmapped block is freed, which importing kernels does not do)
        p = libc.malloc(30 << 20)
        for line in open("/proc/self/maps"):
            if line.rstrip().endswith("[heap]"):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if lo <= p < hi:
                    return True
        return False

    print(from_heap())
    print(wp.keep_freed_host_memory())
    print(from_heap())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc policy")
def test_import_kernels_leaves_malloc_alone():
    """`import kernels` does not change malloc's policy; wp.keep_freed_host_memory() does (checked through where
    glibc places a large block, not through our own flag)."""
    env = {k: v for k, v in os.environ.items() if k != "KERNELS_KEEP_FREED_MEMORY"}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", MALLOC_PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    after_import, applied, after_call = out.stdout.split()
    if applied != "True":
        pytest.skip("not glibc: no mallopt")
    assert after_import == "False"
    assert after_call == "True"
