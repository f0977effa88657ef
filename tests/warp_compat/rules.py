"""What the Warp-suite harness excludes, and the few type tables it lends Warp's tests.

The rule, applied identically to the warp-lang baseline and to our run: a test is excluded when its body (the test
function, or the kernel of an `add_kernel_test`) uses something that is not part of Warp's public API or that needs
a CUDA device:
- Warp internals: any `warp._src` attribute other than the type tables below, `wp.context`, the runtime object,
  module builders/hashers, native error-output switches, generated-source inspection, Warp's native memory layouts
  read through ctypes (a BVH's header at its id);
- CUDA-only features: streams, events, mempools, peer access, CUDA graphs, `__cuda_array_interface__`, `cuda:N`
  device strings, JAX/Paddle/Torch CUDA interop.
Type tables (`warp._src.types.int_types`, `float_types`, `scalar_types`, `np_dtype_to_warp_type`, ...) are plain
data listing Warp's public types; the harness provides them, built from `kernels.types`, so the tests that loop over
every dtype run.
"""

import inspect
import re
import types

import numpy as np

_TYPE_TABLES = ("int_types", "float_types", "scalar_types", "np_dtype_to_warp_type", "non_atomic_types",
                "vector_types", "vector", "matrix", "quaternion", "transformation", "array", "Reference")

INTERNAL = re.compile(
    r"_src\.(?!types\.(?:%s)\b)" % "|".join(_TYPE_TABLES)
    + r"|\bwp\.context\b|\bruntime\b|ModuleHasher|ModuleBuilder|get_module\(|\.module\.(?:load|unload|hash)"
    + r"|codegen\.|_logger\.|_get_live_kernels|\.adj\.|kernel\.adj|set_error_output|get_error_string"
    + r"|_codegen_cuda_source|_build_cuda_meta|get_mangled_name"
    + r"|_host_bvh_depth")  # reads Warp's native BVH header through ctypes at the object's id
CUDA_ONLY = re.compile(
    r"\bStream\(|ScopedStream|\bEvent\(|mempool|peer_access|capture_begin|ScopedCapture|__cuda_array_interface__"
    r"|[\"']cuda(?::\d)?[\"']|is_cuda_available\(\)|get_cuda_device|jax|paddle|torch|entry_point_abi")


def exclusion(test) -> str:
    """The reason `test` is excluded, or "" when it runs."""
    method = getattr(type(test), test._testMethodName)
    sources = []
    imported = {}
    for obj in _bodies(method):
        try:
            sources.append(inspect.getsource(obj))
        except (OSError, TypeError):
            continue
        imported.update(_internal_imports(inspect.getmodule(obj)))
    text = "\n".join(sources)
    m = INTERNAL.search(text)
    if m:
        return f"uses Warp internals ({m.group(0).strip()})"
    used = _uses_imported_internal(text, imported)
    if used:
        return f"uses Warp internals ({used})"
    m = CUDA_ONLY.search(text)
    if m:
        return f"CUDA-only feature ({m.group(0).strip()})"
    return ""


#: Names of `warp._src` that are not internals here: the public type tables (above), and what the harness lends
#: under Warp's module names because it is public API there too (install_type_tables): warp.autograd's module,
#: the logger, the geometry package, the version queries, the public codegen exception classes, wp.map's cache.
_NOT_INTERNAL = re.compile(
    r"warp\._src\.(?:types\.(?:%s)|autograd|logger|geometry|utils\.map_cache|codegen\.WarpCodegen\w*"
    r"|context\.(?:_verify_library_version|alloc_tracker_report_text|runtime\.core\.wp_alloc_tracker_\w+"
    r"|get_(?:host_compiler|libmathdx|llvm|nanovdb|nvrtc|warp_clang|warp)_version))(?:\.|$)" % "|".join(_TYPE_TABLES))

#: The test files whose imports of Warp internals the rule follows (see _internal_imports). About twenty other
#: files of the suite import internals by name too (docs/warp_compat.md, "The whole suite", lists them); following
#: their imports as well changes those files' rows and CI's known-failure lists, left to their own triage.
FOLLOW_IMPORTS = ("test_array_subclass.py", "test_subscript_types.py", "test_factory_style_array_annotations.py",
                  "test_types.py")

_import_cache = {}


def _internal_imports(module) -> dict:
    """{name bound at the top of `module`: the `warp._src` path it was imported from}.

    A test file that imports Warp's internals by name (`from warp._src.types import is_array`,
    `import warp._src.context as context`) uses them in its bodies as plain names, which the INTERNAL pattern (it
    looks for `_src.`) does not see: the rule follows those names to their source, in the files of FOLLOW_IMPORTS."""
    key = getattr(module, "__file__", None)
    if key is None or not key.replace("\\", "/").endswith(tuple("/tests/" + f for f in FOLLOW_IMPORTS)):
        return {}
    if key in _import_cache:
        return _import_cache[key]
    import ast

    found = {}
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        tree = None
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("warp._src") and node.level == 0:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("warp._src.") and alias.asname:
                    found[alias.asname] = alias.name
    _import_cache[key] = found
    return found


def _uses_imported_internal(text: str, imported: dict) -> str:
    """The first `name` or `name.attr...` in `text` that resolves, through `imported`, to a Warp internal."""
    for name, path in imported.items():
        # a keyword argument or a string of the same spelling is not the name (`f(context=...)`, `"context"`)
        for m in re.finditer(r"(?<![\w.\"'])%s((?:\.\w+)*)(?!\s*=[^=]|[\w\"'])" % re.escape(name), text):
            full = path + m.group(1)
            if not _NOT_INTERNAL.match(full):
                return name + m.group(1)
    return ""


def _bodies(method):
    """The functions whose source decides the rule: the wrapped test function, or an add_kernel_test's kernel."""
    seen = method
    while hasattr(seen, "__wrapped__"):
        seen = seen.__wrapped__
    kernel = getattr(method, "__wrapped_kernel__", None) or _closure_kernel(method)
    if kernel is not None:
        func = getattr(kernel, "func", None)
        return [func] if func is not None else []
    return [seen]


def _closure_kernel(method):
    """Warp's own add_kernel_test keeps the kernel in a closure cell of the registered wrapper."""
    for cell in getattr(method, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if callable(value) and getattr(value, "__closure__", None):
            for inner in value.__closure__:
                try:
                    v = inner.cell_contents
                except ValueError:
                    continue
                if hasattr(v, "func") and hasattr(v, "key"):
                    return v
    return None


def install_type_tables(wp) -> None:
    """Give the shim a `warp._src.types` holding only the public type tables (see the module docstring)."""
    import sys

    t = wp.types
    ints = (wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64)
    floats = (wp.float16, wp.bfloat16, wp.float32, wp.float64)
    numpy_floats = (wp.float16, wp.float32, wp.float64)  # bfloat16 has no numpy dtype (nor named vectors in Warp)
    # names of Warp's type module other than the tables are internals: they resolve (a file importing one at its
    # top loads) and fail when used, like the other internal modules below
    table = _InternalStub("warp._src.types")
    table.int_types = ints
    table.float_types = floats
    table.scalar_types = ints + floats
    table.non_atomic_types = (wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int64)
    table.np_dtype_to_warp_type = {np.dtype(s._np_): s for s in (*ints, *numpy_floats)}
    table.np_dtype_to_warp_type[np.dtype(np.bool_)] = wp.bool
    table.vector_types = tuple(t.vector(n, s) for n in (2, 3, 4) for s in ints + numpy_floats)
    # test_bf16.py imports Warp's array-wide bfloat16 conversions (and dtype_from_numpy) at its top: ours stand in
    table._np_float32_to_bfloat16_bits = wp.halfbits.float32_to_bfloat16_bits
    table._np_bfloat16_bits_to_float32 = wp.halfbits.bfloat16_bits_to_float32
    table.dtype_from_numpy = wp.dtype_from_numpy
    table.vector, table.matrix = t.vector, t.matrix
    table.quaternion, table.transformation = t.quaternion, t.transformation
    table.array = wp.array
    # the class of wp.ref[T] annotations, read by isinstance checks (not an internal of the compiler)
    table.Reference = wp.reference.Reference
    src = types.ModuleType("warp._src")
    src.__path__ = []
    src.types = table
    wp._src = src
    sys.modules["warp._src"] = src
    sys.modules["warp._src.types"] = table
    # warp.autograd's functions take a `metadata: FunctionMetadata` argument, a class Warp defines in
    # warp._src.autograd only: that module is lent as the shim's warp.autograd, which defines the class
    import warp_shim.autograd as autograd

    src.autograd = autograd
    sys.modules["warp._src.autograd"] = autograd
    # Some test files import internals at their top; those names exist so the file loads, and every test that
    # touches them is excluded by INTERNAL above.
    # warp._src.logger holds the logger API Warp's test_logger.py imports by name (LoggerBasic, log_warning, ...):
    # kernels.logger is that API, lent under Warp's module name
    import kernels.logger

    src.logger = kernels.logger
    sys.modules["warp._src.logger"] = kernels.logger
    # warp._src.geometry: the test files import Warp's geometry package by that name for its kernel functions
    # (signed_area, in_circle) and modules; kernels.geometry provides the same names
    import kernels.geometry

    src.geometry = kernels.geometry
    sys.modules["warp._src.geometry"] = kernels.geometry
    for name in ("codegen", "context", "deterministic", "build", "utils", "optim", "builtins"):
        stub = _InternalStub(f"warp._src.{name}")
        setattr(src, name, stub)
        sys.modules[stub.__name__] = stub
    # warp._src.context's version queries (test_version.py, test_diagnostics.py import them by name at the top):
    # kernels.diagnostics answers them for this toolkit; the rest of that module stays internal
    import kernels.compiler.library_version
    import kernels.diagnostics

    context = src.context
    for name in kernels.diagnostics.__all__:
        if name.startswith("get_"):
            setattr(context, name, getattr(kernels.diagnostics, name))
    context._verify_library_version = kernels.compiler.library_version.verify_library_version
    # test_allocation_tracker.py reads the allocation tracker's counters through Warp's native entry points
    # (helpers at the file's top, which the rule does not read): they are lent as views of kernels' tracker
    # (kernels/runtime/memory_tracker.py, the same counters wp.ScopedMemoryTracker reports); see _LENT
    from kernels.runtime import memory_tracker

    context.alloc_tracker_report_text = lambda sort_order, max_items: memory_tracker.report_text(
        "chronological" if sort_order == 1 else "size", max_items)
    # test_map.py reads wp.map's kernel cache through Warp's module (`from warp._src.utils import map_cache`): the
    # shim's wp.map keeps one with Warp's keys, lent here
    from kernels.runtime.array_map import map_cache

    src.utils.map_cache = map_cache
    # the code generator's exception classes are public (`wp.WarpCodegenError`, ...); test_ref.py imports them from
    # warp._src.codegen by name: lent as the same public classes
    for name in dir(wp):
        if name.startswith("WarpCodegen"):
            setattr(src.codegen, name, getattr(wp, name))
    # and any deeper internal module (`from warp._src.optim.linear import TiledDot`)
    if not any(isinstance(f, _InternalFinder) for f in sys.meta_path):
        sys.meta_path.append(_InternalFinder())


class _InternalFinder:
    """Finds every `warp._src.x.y` not otherwise provided as an _InternalStub (see install_type_tables)."""

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery

        if not fullname.startswith("warp._src."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _InternalStub(spec.name)

    def exec_module(self, module):
        pass


def install_out_of_scope(wp) -> None:
    """`warp.fem`, `warp.sparse`, `warp.render`: Warp libraries built on the kernel layer, not part of `kernels`.

    Some test files import one name from them at their top, or decorate a function with one (`@fem.integrand`);
    the stubs let those files load, and using a stubbed name or a function it decorated fails (it is listed among
    the known failures with this reason)."""
    import sys

    for name in ("fem", "sparse", "render"):
        stub = _OutOfScopeModule(f"warp.{name}")
        setattr(wp, name, stub)
        sys.modules[stub.__name__] = stub


class _OutOfScope:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _OutOfScope):
            # a decorator at a file's top (`@fem.integrand`): the file loads; calling the result fails
            return _OutOfScope(f"{self._name}({getattr(args[0], '__name__', '?')})")
        raise NotImplementedError(f"{self._name} is outside the kernel layer (not provided by the kernels shim)")

    def __repr__(self):
        return f"<out of scope: {self._name}>"


class _OutOfScopeModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _OutOfScope(f"{self.__name__}.{name}")


class _InternalStub(types.ModuleType):
    """A Warp-internal module: `from warp._src.x import name` works so that the file loads (tests using the name
    are excluded by INTERNAL); using the name raises."""

    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []  # a package: its internal submodules resolve too (_InternalFinder)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Internal(f"{self.__name__}.{name}")


class _Internal(_OutOfScope):
    """A name inside a Warp-internal module: its attributes are internals too (`wp._src.context.runtime.core.x`)
    so that a file reading one at its top loads; calling one raises, except the few capability queries in
    `_ANSWERS`, which a file asks at its top to pick its tests (answered for kernels, truthfully)."""

    def __getattr__(self, name):
        # dunders and the `_wp_*` hooks by which kernels recognises types (structs, vectors) are not answered: an
        # internal used in a kernel must not pass for a type (it would be constructed, its "fields" iterated)
        if name.startswith("__") or name.startswith("_wp_"):
            raise AttributeError(name)
        return _Internal(f"{self._name}.{name}")

    def __iter__(self):  # without it, iteration falls back to __getitem__(0), (1), ... without end
        raise TypeError(f"{self._name} is a Warp internal, not provided by the kernels shim")

    def __getitem__(self, key):  # a generic internal subscripted at a file's top (`_ArrayAnnotation[...]`)
        return _Internal(f"{self._name}[...]")

    def __call__(self, *args, **kwargs):
        if self._name in _ANSWERS:
            return _ANSWERS[self._name]
        if self._name in _LENT:
            return _LENT[self._name](*args, **kwargs)
        raise NotImplementedError(f"{self._name} is a Warp internal, not provided by the kernels shim")


#: Capability queries Warp's tile files make at import (`skipUnless` of a whole class): kernels links no MathDx
#: library and no CUDA toolkit, so both answers are "no"; either way Warp's condition runs the class.
_ANSWERS = {
    "warp._src.context.runtime.core.wp_is_mathdx_enabled": False,
    "warp._src.context.runtime.core.wp_cuda_toolkit_version": 0,
}


def _tracker_stat(key):
    def read():
        from kernels.runtime import memory_tracker

        return memory_tracker.stats()[key]
    return read


def _tracker_is_enabled():
    from kernels.runtime import memory_tracker

    return int(memory_tracker.is_enabled())


def _tracker_reset():
    from kernels.runtime import memory_tracker

    memory_tracker.reset()


def _run_solver_loop(*args, **kwargs):
    from warp_shim.linear_iterations import run_solver_loop

    return run_solver_loop(*args, **kwargs)


#: Warp's native allocation-tracker entry points that test_allocation_tracker.py calls, answered by kernels'
#: tracker (its public counters: memory_tracker.stats()).
_LENT = {f"warp._src.context.runtime.core.wp_alloc_tracker_{name}": fn for name, fn in (
    ("get_total_alloc_count", _tracker_stat("total_count")), ("get_total_alloc_bytes", _tracker_stat("total_bytes")),
    ("get_live_count", _tracker_stat("live_count")), ("get_current_bytes", _tracker_stat("current_bytes")),
    ("get_peak_bytes", _tracker_stat("peak_bytes")), ("is_enabled", _tracker_is_enabled),
    ("reset", _tracker_reset))}


def _resolve_launch_block_dim(device, block_dim):
    from kernels.runtime.cpu_blocks import resolve_launch_block_dim

    return resolve_launch_block_dim(device, block_dim)


def _launch_command(*args, **kwargs):
    import kernels

    return kernels.Launch(*args, **kwargs)


#: Warp's launch block_dim resolution (test_cpu_block_dim.py asks it directly): kernels' own, same rule; and
#: `warp._src.context.Launch`, the class Warp also exports as the public `wp.Launch` (test_cpu_block_codegen.py).
_LENT["warp._src.context._resolve_launch_block_dim"] = _resolve_launch_block_dim
_LENT["warp._src.context.Launch"] = _launch_command

#: warp.optim.linear's host loop, which test_linear_solvers.py drives directly with arrays of per-batch norms:
#: lent as the shim's loop (warp_shim/linear_iterations.py run_solver_loop, what its solvers run)
_LENT["warp._src.optim.linear._run_solver_loop"] = _run_solver_loop
