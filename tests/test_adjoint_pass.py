"""The adjoint pass on IR: golden text of the replay and reverse regions it derives for a few kernels (a dynamic
loop, a branch, an in-place array update, a user function, a refused construct), its decisions, and the IR
verifier's schema checks.

After an intended change to the adjoint pass, regenerate the golden files and review their diff:

    UPDATE_GOLDEN=1 python -m pytest tests/test_adjoint_pass.py -q
"""

import importlib
import os

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck
from kernels.compiler import ir
from kernels.errors import CompileError
from kernels.compiler.ir_ops import SCHEMA, Opcode
from kernels.compiler.passes import PIPELINE, run_pipeline

verify_module = importlib.import_module("kernels.compiler.passes.verify")
IRVerifyError = verify_module.IRVerifyError

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


@wp.kernel
def power_loop(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    # p is carried through a dynamic loop and its product's adjoint needs each iteration's p: restored from slots
    i = wp.tid()
    p = float(1.0)
    for k in range(n):
        p = p * x[i]
    y[i] = p


@wp.kernel
def branch(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    if v > 0.0:
        v = wp.sin(v)
    else:
        v = v * v
    y[i] = v


@wp.kernel
def inplace_update(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    # y[i] += ... is an atomic add (not replayed); y[i] = y[i] + ... reads a value the reverse does not need
    i = wp.tid()
    y[i] += 2.0 * x[i]
    y[i] = y[i] + x[i]


@wp.func
def smooth_abs(v: float):
    return wp.sqrt(v * v + 0.01)


@wp.kernel
def calls_function(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = smooth_abs(x[i])


@wp.kernel
def refused_overwrite(x: wp.array(dtype=float)):
    # the replay would read x[i] after the store: its square's gradient would use the new value
    i = wp.tid()
    x[i] = x[i] * x[i]


GOLDEN = {"adjoint_power_loop": power_loop, "adjoint_branch": branch, "adjoint_inplace_update": inplace_update,
          "adjoint_calls_function": calls_function, "adjoint_refused_overwrite": refused_overwrite}


def _text(kernel) -> str:
    fn = kernel.compile_ir()
    parts = [ir.format_function(fn, adjoint=True)]
    for op in ir.walk(fn.body):  # the functions it calls, with their own adjoints
        callee = op.attrs.get("callee")
        if callee is not None:
            parts.append(ir.format_function(callee, adjoint=True))
    return "\n\n".join(parts) + "\n"


@pytest.mark.parametrize("stem", sorted(GOLDEN))
def test_adjoint_ir_matches_golden(stem):
    text = _text(GOLDEN[stem])
    path = os.path.join(GOLDEN_DIR, f"{stem}.ir")
    if UPDATE:
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        expected = f.read()
    assert text == expected, f"adjoint IR of {stem} changed; UPDATE_GOLDEN=1 to accept (see module docstring)"


def test_the_pipeline_ends_with_the_adjoint_pass():
    names = [name for name, _ in PIPELINE]
    assert names[0] == "typeinfer" and names[-1] == "adjoint"
    fn = branch.compile_ir()
    assert fn.adjoint is not None and fn.adjoint.error is None
    assert fn.adjoint.replay is not None and fn.adjoint.reverse is not None


def _ops(block):
    return list(ir.walk(block))


def test_replay_leaves_out_side_effects_and_recomputes_the_same_values():
    fn = inplace_update.compile_ir()
    replay = _ops(fn.adjoint.replay)
    assert not any(op.attrs.get("overload") is not None and op.attrs["overload"].side_effect for op in replay)
    primal = {id(op) for op in _ops(fn.body)}
    # plain ops are the forward's own (the same SSA values are computed again)
    assert all(id(op) in primal for op in replay if op.opcode == "call")


def test_reverse_runs_the_forward_backwards():
    fn = branch.compile_ir()
    forms = [(op.opcode, op.attrs.get("form")) for op in fn.adjoint.reverse.ops]
    # the store is reversed first, then the branch, then the load
    assert forms == [("adj_call", "index_store"), ("adj_if", None), ("adj_call", "index_load")]
    then_rev, else_rev = fn.adjoint.reverse.ops[1].regions
    assert [op.opcode for op in then_rev.ops] == ["adj_add", "adj_call"]  # adj(yield) += adj(result), then sin
    assert then_rev.ops[1].attrs["of"].attrs["name"] == "sin"


def test_loop_restore_decision():
    fn = power_loop.compile_ir()
    loop = next(op for op in _ops(fn.body) if op.opcode == "for")
    assert fn.adjoint.restore[loop] == "slots"
    adj_loop = next(op for op in fn.adjoint.reverse.ops if op.opcode == "adj_loop")
    assert adj_loop.attrs["restore"] == "slots" and adj_loop.attrs["of"] is loop
    counted = next(op for op in fn.adjoint.replay.ops if op.opcode == "for")
    body_ops = [op.opcode for op in counted.regions[0].ops]
    assert body_ops[0] == "store_carried" and body_ops[-1] == "count_iteration"
    # the uncounted replay of one iteration (inside the reverse loop) neither counts nor stores
    assert not any(op.opcode in ("store_carried", "count_iteration") for op in adj_loop.regions[0].ops)


def test_gradient_of_the_golden_loop():
    x = wp.array(np.linspace(0.5, 1.5, 6).astype(np.float32), dtype=float, requires_grad=True)

    def f(x):
        y = wp.zeros(6, dtype=float, requires_grad=True)
        wp.launch(power_loop, 6, inputs=[x, 3, y])
        return y

    gradcheck(f, [x])


def test_refusal_is_recorded_not_raised():
    fn = refused_overwrite.compile_ir()  # the forward compiles
    error = fn.adjoint.error
    assert isinstance(error, CompileError)
    assert error.loc.source.strip() == "x[i] = x[i] * x[i]" and "array 'x'" in error.message
    assert fn.adjoint.replay is None and fn.adjoint.reverse is None


def test_a_custom_adjoint_is_not_derived():
    @wp.func
    def clipped(v: float):
        return wp.min(v, 1.0)

    @wp.func_grad(clipped)
    def adj_clipped(v: float, adj_ret: float):
        wp.adjoint[v] += adj_ret

    @wp.kernel
    def uses_clipped(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = clipped(x[i])

    fn = uses_clipped.compile_ir()
    callee = next(op.attrs["callee"] for op in _ops(fn.body) if "callee" in op.attrs)
    assert callee.adjoint.custom and callee.adjoint.error is None and callee.adjoint.replay is None
    call = next(op for op in _ops(fn.adjoint.reverse) if op.attrs.get("form") == "callee")
    assert not call.attrs["skip_if_zero"]  # a custom adjoint is not known to be zero for zero result adjoints


# ------------------------------------------------------------------------------------------------ the verifier

def _typed(kernel=branch, check=False) -> ir.Function:
    """A fresh typed IR of `kernel` (the kernel's own is left alone)."""
    from kernels.compiler.frontend import lower_function
    from kernels.compiler.function import resolve_static
    fn = lower_function(kernel.source, "kernel", kernel.name, list(kernel.arg_types), resolve_static)
    return run_pipeline(fn, check=check)


def test_every_opcode_has_a_schema_and_no_other_opcode_exists():
    assert set(SCHEMA) == set(Opcode)
    with pytest.raises(ValueError):
        ir.Op("jump", [], [])


def test_verify_accepts_compiled_ir_with_its_adjoint():
    verify_module.verify(_typed(power_loop), "test")


@pytest.mark.parametrize("damage, message", [
    (lambda fn, op: op.attrs.__setitem__("bogus", 1), "attribute 'bogus' is not in its schema"),
    (lambda fn, op: op.attrs.__setitem__("ndim", "one"), "attribute 'ndim' is str, expected int"),
    (lambda fn, op: op.regions.append(ir.Block()), "1 regions, expected 0"),
    (lambda fn, op: setattr(op, "opcode", Opcode.GETATTR), "a frontend op left in typed IR"),
    (lambda fn, op: fn.body.ops.insert(0, ir.Op("adj_zero", [], [])), "an adjoint op outside"),
    (lambda fn, op: op.operands.append(ir.Value(type=wp.float32)), "before its definition"),
])
def test_verify_refuses_damaged_ir(damage, message):
    fn = _typed()
    tid = next(op for op in fn.body.ops if op.attrs.get("name") == "tid")
    damage(fn, tid)
    with pytest.raises(IRVerifyError, match=message):
        verify_module.verify(fn, "test")


def test_verify_checks_loop_shapes():
    fn = _typed(power_loop)
    loop = next(op for op in ir.walk(fn.body) if op.opcode == "for")
    loop.regions[0].yields.append(loop.regions[0].yields[0])
    with pytest.raises(IRVerifyError, match="a loop of 1 carried values"):
        verify_module.verify(fn, "test")


def test_verify_runs_after_every_pass(monkeypatch):
    """With config.verify_ir (on in the test suite), a pass that leaves bad IR is caught by name."""
    assert wp.config.verify_ir

    def damaging(fn):
        fn.body.ops[0].attrs["bogus"] = 1
        return fn

    import kernels.compiler.passes as passes
    monkeypatch.setattr(passes, "PIPELINE", passes.PIPELINE[:2] + (("damaging", damaging),) + passes.PIPELINE[2:])
    with pytest.raises(IRVerifyError, match="after damaging"):
        _typed(check=True)
    assert _typed(check=False).adjoint is not None  # unchecked, the damage goes unseen


def test_the_renderers_print_and_decide_nothing():
    """The renderers read the IR and the builtin table's properties: no analysis imported from the passes, no
    builtin tested by its name, no attribute cached on IR objects."""
    import ast
    import kernels.compiler.render as render
    import kernels.compiler.render_adjoint as render_adjoint
    import kernels.compiler.render_module as render_module
    for module in (render, render_adjoint, render_module):
        with open(module.__file__) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert "passes" not in (node.module or ""), f"{module.__name__} imports {node.module}"
            if isinstance(node, ast.Constant) and node.value == "name":
                raise AssertionError(f"{module.__name__}:{node.lineno} reads an op's builtin name")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("hasattr", "setattr"):
                raise AssertionError(f"{module.__name__}:{node.lineno} caches on objects ({node.func.id})")
