"""The adjoint pass's second half: the replay and reverse regions of a differentiable function (an `ir.Adjoint`).

Expects: typed IR that passes/adjoint.py accepted (its loops carry attr "recompute"; every callee has its own
adjoint). Guarantees an `ir.Adjoint` whose regions the renderer prints as they are:
  - replay: the forward ops without side effects (stores, atomics, printing), the same Op objects (the same SSA
    values are computed again); `if`/`for`/`while` are copies over replayed regions. Every loop counts its
    iterations (attr "counter", op `count_iteration` ending its body) and, where its reverse restores carried values
    from slots, keeps those of the first iterations (`store_carried` at the top of each iteration). After a
    struct field or a view that is an array (or a struct holding arrays), `adj_field`/`adj_view` bind its gradient.
  - reverse: each op's adjoint, last op first. `adj_call` (attr "form", from the builtin table's `adjoint`
    property), `adj_if` (the branches reversed under the same condition), `adj_loop` (the iterations backwards:
    region 0 replays one iteration without counting, region 1 reverses it; attr "restore" says how the carried
    values of each iteration come back: "slots" or "replay"), `adj_add`/`adj_set`/`adj_zero` on accumulators,
    `adj_return` (a function's result adjoints).
Array values have no accumulator: their adjoint is the gradient array, bound once (adj_field, adj_view, params).
"""

from __future__ import annotations

from .. import ir
from ..access import array_access
from ..ir_ops import Opcode
from ...types import scalar_types
from ...typesys import ArrayType, has_native_value, is_differentiable_type, is_struct, is_tile


def differentiable_value(t) -> bool:
    """A run-time value with an adjoint accumulator (arrays have none: their adjoint is the gradient array)."""
    return has_native_value(t) and is_differentiable_type(t) and not isinstance(t, ArrayType)


def build_regions(fn: ir.Function, pure: bool) -> ir.Adjoint:
    adj = ir.Adjoint(pure=pure)
    for op in ir.walk(fn.body):
        if op.opcode in ("for", "while"):
            adj.counters[op] = len(adj.counters)
            restore = _restore(op)
            if restore is not None:
                adj.restore[op] = restore
    exclusive: dict = {}
    if fn.kind == "kernel":
        exclusive = _exclusive_arrays(fn)
        adj.private_arrays = _privatizable(fn, exclusive)
    b = _Builder(adj, frozenset(id(op) for ops in exclusive.values() for op in ops))
    adj.replay = ir.Block(ops=b.replay_ops(fn.body))
    adj.reverse = ir.Block(ops=b.reverse_ops(fn.body))
    return adj


def _carried_args(op) -> list:
    body = op.regions[-1]
    return body.args[1:] if op.opcode == "for" else body.args


def _restore(op):
    """How the reverse of loop `op` gets the carried values at the start of each iteration, or None (it needs none):
    "slots" (kept in the replay for the first iterations, the rest replayed from the last kept) or "replay" (all
    replayed from the initial values: tiles, which have no slots)."""
    if not op.attrs.get("recompute") or not _carried_args(op):
        return None
    carried = [r for r in op.results if has_native_value(r.type)]
    if carried and not any(is_tile(r.type) for r in carried):
        return "slots"
    return "replay"


def _new(opcode, operands=(), attrs=None, regions=(), loc=None) -> ir.Op:
    return ir.Op(opcode, list(operands), [], dict(attrs or {}), list(regions), loc)


def _copy_over(op: ir.Op, regions: list, extra: dict) -> ir.Op:
    """`op` over other regions: the same results (still owned by `op`, which defines them in the forward)."""
    new = ir.Op(op.opcode, list(op.operands), list(op.results), {**op.attrs, **extra}, regions, op.loc)
    for r in op.results:
        r.owner = op
    return new


class _Builder:
    def __init__(self, adj: ir.Adjoint, exclusive_loads: frozenset):
        self.adj = adj
        self.exclusive_loads = exclusive_loads

    # ---------------------------------------------------------------------------------------------- replay

    def replay_ops(self, block: ir.Block) -> list:
        out = []
        for op in block.ops:
            ov = op.attrs.get("overload")
            if ov is not None and ov.side_effect:
                continue  # stores, atomics and printing are not replayed
            if op.opcode == "if":
                then_b, else_b = op.regions
                has_else = bool(else_b.ops) or any(y is not None for y in else_b.yields)
                out.append(_copy_over(op, [self.replayed(then_b), self.replayed(else_b)], {"has_else": has_else}))
            elif op.opcode in ("for", "while"):
                out.append(self.replay_loop(op))
            else:
                out.append(op)
                out.extend(self.bind_gradient_arrays(op))
        return out

    def replayed(self, block: ir.Block, before=(), after=()) -> ir.Block:
        return ir.Block(ops=list(before) + self.replay_ops(block) + list(after), args=list(block.args),
                        yields=list(block.yields))

    def replay_loop(self, op: ir.Op) -> ir.Op:
        """A loop in the replay: counts its iterations and keeps the carried values of the first ones."""
        k = self.adj.counters[op]
        store = []
        if self.adj.restore.get(op) == "slots":
            top = op.regions[0].args if op.opcode == "while" else _carried_args(op)
            store = [_new(Opcode.STORE_CARRIED, [a for a, r in zip(top, op.results) if has_native_value(r.type)],
                          {"counter": k}, loc=op.loc)]
        count = [_new(Opcode.COUNT_ITERATION, attrs={"counter": k}, loc=op.loc)]
        if op.opcode == "for":
            regions = [self.replayed(op.regions[0], before=store, after=count)]
        else:
            regions = [self.replayed(op.regions[0], before=store), self.replayed(op.regions[1], after=count)]
        return _copy_over(op, regions, {"counter": k})

    @staticmethod
    def bind_gradient_arrays(op: ir.Op) -> list:
        ov = op.attrs.get("overload")
        if ov is None or "callee" in op.attrs or not op.results:
            return []
        r = op.results[0]
        if ov.props.forward == "field_get" and (isinstance(r.type, ArrayType) or is_struct(r.type)):
            # array members (also inside nested structs) take their gradient arrays from the adjoint struct
            return [_new(Opcode.ADJ_FIELD, [r, op.operands[0]], {"field": op.attrs["field"]}, loc=op.loc)]
        if ov.props.array_view:
            # the gradient of a sub-array is the same view of the parent's gradient array
            return [_new(Opcode.ADJ_VIEW, [r, *op.operands], {"view": op.attrs["name"]}, loc=op.loc)]
        return []

    # ---------------------------------------------------------------------------------------------- reverse

    def reverse_ops(self, block: ir.Block) -> list:
        out = []
        for op in reversed(block.ops):
            if op.opcode == "call":
                out.extend(self.reverse_call(op))
            elif op.opcode == "if":
                out.append(self.reverse_if(op))
            elif op.opcode in ("for", "while"):
                out.extend(self.reverse_loop(op))
            elif op.opcode == "return":
                keep = [k for k, v in enumerate(op.operands) if differentiable_value(v.type)]
                out.append(_new(Opcode.ADJ_RETURN, [op.operands[k] for k in keep], {"index": keep}, loc=op.loc))
        return out

    def reverse_call(self, op: ir.Op) -> list:
        if op.attrs.get("gradient"):
            return []  # wp.grad(f)(x): refused by the analysis where its arguments carry a gradient
        callee = op.attrs.get("callee")
        if callee is not None:
            results = [r for r in op.results if has_native_value(r.type)]
            # a pure function's adjoint is linear in its results' adjoints: all zero, nothing to add
            skip = bool(results) and callee.adjoint is not None and callee.adjoint.pure and all(_zero_testable(r.type) for r in results)
            return [self.adj_call(op, "callee", skip_if_zero=skip)]
        ov = op.attrs["overload"]
        form = ov.props.adjoint
        if form == "none" or not ov.differentiable:
            return []
        if form == "index_load":
            return [self.adj_call(op, form, exclusive=id(op) in self.exclusive_loads)]
        if form == "index_store" and op.attrs.get("overwrite"):
            return [self.adj_call(op, "index_overwrite")]
        if form in ("index_store", "index_accumulate", "index_accumulate_neg", "index_minmax", "tile_map",
                    "tile_reduce", "field_set"):
            return [self.adj_call(op, form)]
        if form == "field_get":
            return [] if isinstance(op.results[0].type, ArrayType) else [self.adj_call(op, form)]
        if not any(has_native_value(r.type) for r in op.results) and not ov.props.adjoint_without_result:
            return []  # nothing flows back (a store's gradient comes from the array, not from a result)
        return [self.adj_call(op, form)]

    @staticmethod
    def adj_call(op: ir.Op, form: str, **flags) -> ir.Op:
        return _new(Opcode.ADJ_CALL, op.operands, {"of": op, "form": form, **flags}, loc=op.loc)

    def reverse_if(self, op: ir.Op) -> ir.Op:
        regions = []
        for block in op.regions:
            ops = _adds(block.yields, op.results, op.loc) + self.reverse_ops(block)
            regions.append(ir.Block(ops=ops))
        return _new(Opcode.ADJ_IF, [op.operands[0]], {"of": op}, regions, op.loc)

    def reverse_loop(self, op: ir.Op) -> list:
        """The loop's iterations backwards (see the module docstring), then its initial values' adjoints."""
        body = op.regions[-1]
        args = _carried_args(op)
        inits = op.operands[3:] if op.opcode == "for" else op.operands
        replay_ops = (self.replay_ops(op.regions[0]) if op.opcode == "while" else []) + self.replay_ops(body)
        replay = ir.Block(ops=replay_ops, yields=list(body.yields))
        reverse = [_new(Opcode.ADJ_ZERO, _defined_in(body), loc=op.loc)]
        reverse += _adds(body.yields, op.results, op.loc) + self.reverse_ops(body)
        reverse += [_new(Opcode.ADJ_SET, [r, a], loc=op.loc) for r, a in zip(op.results, args)
                    if differentiable_value(r.type)]
        attrs = {"of": op, "counter": self.adj.counters[op]}
        if op in self.adj.restore:
            attrs["restore"] = self.adj.restore[op]
        loop = _new(Opcode.ADJ_LOOP, op.operands, attrs, [replay, ir.Block(ops=reverse)], op.loc)
        return [loop] + _adds(inits, op.results, op.loc)


def _adds(targets, sources, loc) -> list:
    """adj(target) += adj(source) for each pair whose source is a differentiable value."""
    return [_new(Opcode.ADJ_ADD, [t, s], loc=loc) for s, t in zip(sources, targets) if differentiable_value(s.type)]


def _defined_in(block: ir.Block) -> list:
    """The accumulators to reset per reverse iteration: values defined in `block` (nested too), then its args."""
    out = []
    for op in ir.walk(block):
        out.extend(v for v in list(op.results) + [a for region in op.regions for a in region.args]
                   if differentiable_value(v.type))
    out.extend(a for a in block.args if differentiable_value(a.type))
    return out


def _zero_testable(t) -> bool:
    """Whether native `wp::is_zero` takes values of type `t` (scalars, vectors, matrices, quaternions,
    transforms)."""
    return isinstance(t, type) and (t in scalar_types or getattr(t, "_shape_", None) is not None)


def _privatizable(fn: ir.Function, exclusive: dict):
    """Arrays whose gradients a parallel CPU backward may accumulate in per-thread copies: those the kernel reads
    and never writes (a written array's gradient is read by the backward, so it must stay shared), less those
    whose loads are exclusive. None when an array is both read and written: then its gradient is read and
    accumulated, and only atomics are safe."""
    access = array_access(fn, fn.param_names)
    if any(r and w for r, w in access.values()):
        return None
    paths = _array_paths(zip(fn.param_names, (p.type for p in fn.params)))
    if any(not t.plain for _, t in paths):  # gradients through index arrays or buckets: per-thread copies are
        return None                          # not laid out like them, and two threads may share an element
    names = {fn.param_names[fn.params.index(p)] for p in exclusive}
    return [(path, t) for path, t in paths
            if access.get(path, (False, False))[0] and path not in names]


def _exclusive_arrays(fn: ir.Function) -> dict:
    """Array parameters read only as a[i] with i = wp.tid() of a one-dimensional index (the flat thread index,
    unique per thread on the CPU, where a tiled block is one lane) and never written or passed on: in the backward
    each thread alone adds into its gradient element, so neither atomics nor per-thread copies are needed.
    Maps each such parameter to its loads."""
    tids = {op.results[0] for op in ir.walk(fn.body)
            if op.opcode == "call" and "callee" not in op.attrs and op.attrs["overload"].props.forward == "tid"
            and op.attrs.get("ndim") == 1 and len(op.results) == 1}
    if not tids:
        return {}
    # an indexed array's index arrays may repeat an element: never exclusive
    loads = {p: [] for p in fn.params if isinstance(p.type, ArrayType) and p.type.plain}
    for op in ir.walk(fn.body):
        for k, v in enumerate(op.operands):
            if v not in loads:
                continue
            ov = op.attrs.get("overload")
            exclusive_load = (op.opcode == "call" and "callee" not in op.attrs and ov is not None
                              and ov.props.forward == "index_load"
                              and k == 0 and len(op.operands) == 2 and op.operands[1] in tids)
            if exclusive_load and loads[v] is not None:
                loads[v].append(op)
            else:
                loads[v] = None
        for block in op.regions:
            if any(v in loads for v in block.yields):
                for v in block.yields:
                    if v in loads:
                        loads[v] = None
    return {p: ops for p, ops in loads.items() if ops}


def _array_paths(named_types, prefix: str = "") -> list:
    """(C++ member path, ArrayType) of every array reachable from kernel parameters, through struct members."""
    out = []
    for name, t in named_types:
        if isinstance(t, ArrayType):
            out.append((prefix + name, t))
        elif is_struct(t):
            out.extend(_array_paths(t._wp_struct_.fields.items(), f"{prefix}{name}."))
    return out
