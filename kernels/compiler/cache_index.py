"""Cache index: a key computed before code generation, so a process that finds a module built compiles no IR.

The library cache (build.py) is keyed by the generated C++, which costs the whole compiler pipeline to produce.
This index maps a *pre-key* -- a hash of everything that decides the generated code, read off the Python
objects -- to the library directory and the per-kernel facts that launches and tapes need (entry symbol,
number of thread indices, backward or the reason there is none, array parameter access).

The pre-key covers each kernel's source text, file, line and signature; every name its text references, resolved
the way the frontend resolves it (closure, module globals, Python builtins, attribute chains through modules and
plain classes): the source and signatures of each reachable `@wp.func` (all overloads, custom adjoint and
replay, recursively), the fields of each reachable `@wp.struct`, and the value of each constant. A referenced
object that cannot be described faithfully (an arbitrary Python object or function, e.g. the target of a
`wp.static(...)` call) makes the kernels of that batch unindexed: they always take the full build. The key also
covers the code-generating settings, the C++ compiler (path, size and modification time) and flags, and the
toolkit itself (version, and size and modification time of every file of the package, native headers included).

An entry is one small file, `<cache_dir>/<version>/index/<pre-key>.py`, holding a Python literal; it is written to
a temporary file and renamed into place, so a reader sees a whole entry or none. A missing, unreadable or stale
entry (its library gone) makes the caller fall back to the normal build, which rewrites it.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import types as py_types
import typing

from .. import config
from .. import types as T
from .build import NATIVE_DIR, VERSION, cache_root, compiler_stamp, cpu_flags, find_cxx
from ..errors import CompileError, ConsumedAtomicError, NativeCompileError
from .function import Func
from ..typesys import ArrayType, is_struct
from .cache_trust import make_private_dirs
from .ir import Loc

FORMAT = 3  # bump when the record layout or the key recipe changes
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the whole kernels package


class Unkeyable(Exception):
    """A referenced object whose effect on generated code the index cannot capture."""


# ---------------------------------------------------------------------------------------------------------------
# process-wide parts of the key


_toolkit_fingerprint = None


def toolkit_fingerprint() -> str:
    """Version plus (path, size, mtime) of every file of the package: the compiler's Python code and the native
    headers both shape the generated code. Stat only, computed once per process."""
    global _toolkit_fingerprint
    if _toolkit_fingerprint is None:
        entries = []
        stack = [PACKAGE_DIR]
        while stack:
            directory = stack.pop()
            with os.scandir(directory) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            stack.append(e.path)
                    elif e.name.endswith((".py", ".h", ".cuh", ".hpp")):
                        st = e.stat()
                        entries.append((e.path[len(PACKAGE_DIR):], st.st_size, st.st_mtime_ns))
        entries.sort()
        _toolkit_fingerprint = _digest(repr((VERSION, NATIVE_DIR, entries)))
    return _toolkit_fingerprint


def compiler_fingerprint(debug: bool, optimization_level=None, cpu_compiler_flags=None) -> tuple:
    """The C++ compiler (build.compiler_stamp: its path, and the size and mtime of the binary it resolves to) and
    the flags (with a module's `optimization_level` and `cpu_compiler_flags` options, build.cpu_flags)."""
    return compiler_stamp(find_cxx()) + tuple(cpu_flags(debug, optimization_level, cpu_compiler_flags))


# ---------------------------------------------------------------------------------------------------------------
# describing what a kernel's code depends on


def _toolkit_name(obj) -> tuple | None:
    """(module, qualified name) of a function or class that the kernels package defines (wp.static, wp.launch,
    wp.Mesh, ...), when that name finds the same object again; None otherwise. Named by where it is defined,
    not by the public namespace: the compiler does not import the package above it."""
    module, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qual, str) or not (module == "kernels"
                                                                       or module.startswith("kernels.")):
        return None
    found = sys.modules.get(module)  # the module that defined obj: loaded already
    for part in qual.split("."):
        found = getattr(found, part, None)
    return (module, qual) if found is obj else None


def _is_leaf(obj) -> bool:
    """Objects whose attributes the frontend does not look through: described as a whole."""
    return (isinstance(obj, (Func, T.Composite, int, float, complex, str, bytes, tuple, list))
            or obj is None or T.is_scalar(obj) or T.is_composite(obj) or is_struct(obj))


class Describer:
    """Builds a deterministic description of everything that shapes the generated code of some kernels.

    Reachable functions are described once, in the order they are first met, in `self.functions`.
    """

    def __init__(self):
        self.functions: list = []
        self._seen: dict = {}  # id of a Func -> its position in self.functions

    # -------------------------------------------------------------------------------------------- types and values

    def type_(self, t):
        if t is T.Any or t is typing.Any:
            return "Any"
        if isinstance(t, ArrayType):
            return (t.kind_name, self.type_(t.dtype), t.ndim)  # "array", "indexedarray", "fabricarray", ...
        if is_struct(t):
            info = t._wp_struct_
            return ("struct", info.cname, tuple((n, self.type_(ft)) for n, ft in info.fields.items()))
        if T.is_composite(t):
            return ("composite", t.__name__, t._category_, tuple(t._shape_), self.type_(t._wp_scalar_type_))
        if T.is_scalar(t):
            return ("scalar", t.__name__)
        if isinstance(t, type):
            return ("class", t.__module__, t.__qualname__)
        return self.value(t)

    def value(self, obj):
        if obj is typing.Any:
            return "Any"
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            return (type(obj).__name__, repr(obj))
        if isinstance(obj, Func):
            return self.func(obj)
        if isinstance(obj, type) or obj is T.Any or isinstance(obj, ArrayType):
            return self.type_(obj)
        if isinstance(obj, T.Composite):
            return ("value", self.type_(type(obj)), tuple(obj._data.tolist()))
        if isinstance(obj, (tuple, list)):
            return (type(obj).__name__, tuple(self.value(x) for x in obj))
        if isinstance(obj, py_types.ModuleType):
            return ("module", obj.__name__)
        if isinstance(obj, py_types.BuiltinFunctionType):
            return ("pybuiltin", getattr(obj, "__module__", None), obj.__qualname__)
        name = getattr(obj, "_wp_builtin_", None)
        if isinstance(name, str):
            return ("builtin", name)
        if type(obj).__module__ == "numpy" and hasattr(obj, "dtype") and getattr(obj, "ndim", None) == 0:
            return ("numpy", str(obj.dtype), repr(obj.item()))
        if getattr(obj, "_wp_adjoint_", False):
            return ("adjoint",)
        name = _toolkit_name(obj)
        if name is not None:
            return ("toolkit",) + name
        raise Unkeyable(f"{type(obj).__qualname__} object")

    # -------------------------------------------------------------------------------------------- functions

    def func(self, f: Func):
        # the position tells apart functions of one qualified name (each call of a factory makes one)
        position = self._seen.setdefault(id(f), len(self._seen))
        token = ("func", f.key, position)
        if position == len(self.functions):
            entry = [token, None]
            self.functions.append(entry)  # placed before its callees; filled after them (recursion is cut here)
            overloads = tuple(self.source(src, params) for src, params in f.overloads)
            grads = tuple(self.source(g, None) for g in getattr(f, "custom_grads", ()))
            replay = self.source(f.custom_replay, None) if f.custom_replay is not None else None
            # a @wp.func_native's C++ text, which its decorator may take from a variable
            native = tuple(getattr(f, a, None) for a in ("snippet", "adj_snippet", "replay_snippet"))
            entry[1] = (overloads, grads, replay, native, getattr(f, "inline_hint", None))
        return token

    def source(self, src, param_types):
        """A function's text, position, parameter types and the compile-time values its text references."""
        params = tuple(self.type_(t) for t in param_types) if param_types is not None else None
        # wp.static values taken when the decorator ran: the names they read may hold other values now
        early = tuple((k, self.value(v)) for k, v in sorted(getattr(src, "early_statics", {}).items()))
        return (src.file, src.first_line, "".join(src.lines), params, self.references(src), early)

    def references(self, src) -> tuple:
        local_params = {a.arg for a in src.fdef.args.args}
        out = []
        # the arguments of wp.static calls evaluated when the decorator ran are keyed by their values (see
        # `source`); reading their names again could run a side effect twice
        early = getattr(src, "early_statics", {})
        skip = {id(n) for n in ast.walk(src.fdef) if isinstance(n, ast.expr) and hasattr(n, "end_col_offset")
                and (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) in early} if early else set()
        for chain in sorted(_name_chains(src.fdef, skip)):
            root = chain[0]
            if root in local_params:
                continue
            try:
                obj = src.lookup(root)
            except KeyError:
                out.append((chain, "undefined"))
                continue
            attrs = chain[1:]
            while attrs and not _is_leaf(obj):
                try:
                    obj = getattr(obj, attrs[0])
                except Exception:
                    obj = _MISSING
                    break
                attrs = attrs[1:]
            if obj is _MISSING:
                out.append((chain, "missing"))
                continue
            out.append((chain, self.value(obj), attrs))
        return tuple(out)


_MISSING = object()


def _name_chains(fdef, skip=frozenset()) -> set:
    """Every name the function reads, as the longest dotted chain it heads (`wp.vec3` -> ("wp", "vec3")), except
    in the subtrees whose ids are in `skip`."""
    chains = set()
    stack = [fdef.args, *fdef.body] + ([fdef.returns] if fdef.returns is not None else [])  # not decorators
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, ast.Attribute):
            attrs = []
            base = node
            while isinstance(base, ast.Attribute):
                attrs.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                chains.add((base.id, *reversed(attrs)))
                continue
            stack.append(base)
            continue
        if isinstance(node, ast.Name):
            chains.add((node.id,))
            continue
        for field in node._fields:
            child = getattr(node, field, None)
            if isinstance(child, list):
                stack.extend(c for c in child if isinstance(c, ast.AST))
            elif isinstance(child, ast.AST):
                stack.append(child)
    return chains


def kernel_description(kernel, describer: Describer):
    src = kernel.source
    return ("kernel", kernel.key, kernel.name, kernel.enable_backward, describer.source(src, kernel.arg_types))


def module_key(module_name: str, kernels: list, debug: bool, optimization_level=None,
               cpu_compiler_flags=None) -> str | None:
    """The pre-key of a batch of kernels built into one library, or None when it cannot be computed.
    `optimization_level`, `cpu_compiler_flags`: the module's options (build.cpu_flags)."""
    describer = Describer()
    try:
        described = [kernel_description(k, describer) for k in kernels]
        compiler = compiler_fingerprint(debug, optimization_level, cpu_compiler_flags)
    except (Unkeyable, NativeCompileError, OSError, RecursionError):
        return None
    settings = (_code_settings(), debug)
    text = repr((FORMAT, module_name, toolkit_fingerprint(), compiler, settings, described,
                 [(t, d) for t, d in describer.functions]))
    return _digest(text)


# Settings that only act at run time; every other setting is assumed to shape the generated code.
_RUNTIME_SETTINGS = frozenset({"cache_dir", "verbose", "cpu_parallel_threshold", "cpu_threads", "overwrite_check",
                               "verify_autograd_array_access", "log_level", "LOG_DEBUG", "LOG_INFO", "LOG_WARNING",
                               "LOG_ERROR", "deterministic", "deterministic_max_records", "verbose_warnings",
                               "print_launches", "track_memory", "load_module_max_workers", "cache_kernels"})


def _code_settings() -> tuple:
    """config.mode, config.max_unroll, the compiler settings, and any setting added later (conservatively)."""
    return tuple(sorted((k, repr(v)) for k, v in vars(config).items()
                        if not k.startswith("_") and k not in _RUNTIME_SETTINGS
                        and isinstance(v, (str, int, float, bool, tuple, list, type(None)))))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# ---------------------------------------------------------------------------------------------------------------
# the index on disk


def index_dir() -> str:
    return os.path.join(cache_root(), "index")


def library_root() -> str:
    """Where build.py puts library entries; the index names them relative to this."""
    return cache_root()


def lookup(key: str) -> dict | None:
    """The record stored under `key`, or None when there is none, it cannot be read or config.cache_kernels is
    off."""
    if not config.cache_kernels:
        return None
    try:
        with open(os.path.join(index_dir(), key + ".py"), encoding="utf-8") as f:
            record = ast.literal_eval(f.read())
    except (OSError, ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    return record


def store(key: str, record: dict):
    """Write `record` under `key` atomically. Failing to write is not an error: the index is only a shortcut."""
    import tempfile
    directory = index_dir()
    record = dict(record, format=FORMAT)
    try:
        make_private_dirs(directory)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}_", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(repr(record))
            os.replace(tmp, os.path.join(directory, key + ".py"))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass


def kernel_record(kernel) -> dict:
    """What a later process needs of a built kernel to launch it (and tape it) without its IR."""
    err = kernel.adjoint_error
    return {
        "name": kernel.name,
        "entry": kernel.entry,
        "tid_ndim": kernel.tid_ndim,
        "backward": kernel.backward_fn is not None,
        "adjoint_error": None if err is None else error_record(err),
        "access": {n: tuple(v) for n, v in kernel.param_access().items()},
        "work": kernel.work,
    }


def error_record(e: CompileError) -> dict:
    loc = e.loc
    return {"message": e.message, "function": e.function,
            "loc": None if loc is None else (loc.file, loc.line, loc.source),
            "untracked_writes": bool(getattr(e, "untracked_writes", False)),
            "consumed_atomic": isinstance(e, ConsumedAtomicError)}


def error_from_record(r: dict) -> CompileError:
    loc = None if r["loc"] is None else Loc(*r["loc"])
    kind = ConsumedAtomicError if r.get("consumed_atomic") else CompileError  # the refusal's class survives
    error = kind(r["message"], loc, r["function"])
    if r.get("untracked_writes"):
        error.untracked_writes = True
    return error
