"""Branches, loops and early returns that bind a name to a value that already exists (issue 30).

Every way a path can rebind a name without computing anything new: a copy (`t = c` on both paths), an alias of a
parameter, a tuple of existing values, a struct or vector value, a component taken from one, a loop body that ends
with a copy, a @wp.func whose returns give back an argument. Each kernel is checked against numpy and, through the
one gradcheck helper, its gradient.
"""

import numpy as np
import pytest

import kernels as wp

from _kernel_checks import _gradcheck, _inputs, _run


@wp.struct
class Pair:
    a: wp.float64
    b: wp.float64


@wp.func
def same_return_both_paths(v: wp.float64, w: wp.float64):
    if v > 0.0:
        return w
    else:
        return w


@wp.func
def return_argument_early(v: wp.float64, w: wp.float64):
    if v > 0.5:
        return v
    r = w * 2.0
    if v < -0.5:
        return w
    return r


@wp.func
def return_from_loop(v: wp.float64, w: wp.float64, n: int):
    for k in range(n):
        if v > 0.0:
            return w
    return v


@wp.kernel
def copy_on_both_paths(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = v * v
    t = wp.float64(1.0)
    if v < 0.5:
        t = c
    else:
        t = c
    y[i] = t


@wp.kernel
def alias_of_parameter_value(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    t = v + 1.0
    if v > 0.0:
        t = v
    elif v > -1.0:
        t = v
    else:
        t = v
    y[i] = t * 3.0


@wp.kernel
def copy_in_nested_branch(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = wp.sin(v)
    t = wp.float64(0.0)
    if v > 0.0:
        if v > 1.0:
            t = c
        else:
            t = c
    else:
        t = c
    y[i] = t


@wp.kernel
def tuple_of_existing_values(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = v * 2.0
    d = v * v
    p, q = wp.float64(0.0), wp.float64(0.0)
    if v > 0.0:
        p, q = c, d
    else:
        p, q = c, d
    y[i] = p + 10.0 * q


@wp.kernel
def swap_on_one_path(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    p = v * 2.0
    q = v * v
    if v > 0.0:
        p, q = q, p
    y[i] = p + 10.0 * q


@wp.kernel
def vector_value_on_both_paths(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    u = wp.vector(v, v * v, wp.float64(2.0))
    w = wp.vector(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    if v > 0.0:
        w = u
    else:
        w = u
    y[i] = w[0] + 2.0 * w[1] + w[2]


@wp.kernel
def component_copy(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    u = wp.vector(v, v * v, wp.float64(2.0))
    s = wp.float64(0.0)
    if v > 0.0:
        s = u[1]
    else:
        s = u[1]
    u2 = u
    if v > 0.5:
        u2[0] = s
    y[i] = s + u2[0]


@wp.kernel
def struct_value_on_both_paths(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    p = Pair()
    p.a = v
    p.b = v * v
    q = Pair()
    if v > 0.0:
        q = p
    else:
        q = p
    y[i] = q.a + 3.0 * q.b


@wp.kernel
def ifexp_of_one_value(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = v * v
    y[i] = c if v > 0.0 else c


@wp.kernel
def loop_ends_with_copy(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = v * v
    t = wp.float64(1.0)
    for k in range(n):
        t = t * v
        t = c
    y[i] = t


@wp.kernel
def while_with_break_and_copies(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    c = v * 3.0
    t = v
    k = int(0)
    while k < n:
        k += 1
        if v > 0.0:
            t = c
            break
        t = c
    y[i] = t


@wp.kernel
def funcs_returning_existing_values(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    w = v * v
    y[i] = same_return_both_paths(v, w) + 2.0 * return_argument_early(v, w) + 5.0 * return_from_loop(v, w, n)


def _loop_ref(x, n):
    return x * x if n > 0 else np.ones_like(x)


def _early_ref(x):
    w = x * x
    return np.where(x > 0.5, x, np.where(x < -0.5, w, 2.0 * w))


CASES = [
    (copy_on_both_paths, (), lambda x: x * x),
    (alias_of_parameter_value, (), lambda x: 3.0 * x),
    (copy_in_nested_branch, (), np.sin),
    (tuple_of_existing_values, (), lambda x: 2.0 * x + 10.0 * x * x),
    (swap_on_one_path, (), lambda x: np.where(x > 0.0, x * x + 20.0 * x, 2.0 * x + 10.0 * x * x)),
    (vector_value_on_both_paths, (), lambda x: x + 2.0 * x * x + 2.0),
    (component_copy, (), lambda x: x * x + np.where(x > 0.5, x * x, x)),
    (struct_value_on_both_paths, (), lambda x: x + 3.0 * x * x),
    (ifexp_of_one_value, (), lambda x: x * x),
    (loop_ends_with_copy, (3,), lambda x: _loop_ref(x, 3)),
    (loop_ends_with_copy, (0,), lambda x: _loop_ref(x, 0)),
    (while_with_break_and_copies, (2,), lambda x: 3.0 * x),
    (while_with_break_and_copies, (0,), lambda x: x),
    (funcs_returning_existing_values, (2,),
     lambda x: x * x + 2.0 * _early_ref(x) + 5.0 * np.where(x > 0.0, x * x, x)),
    (funcs_returning_existing_values, (0,), lambda x: x * x + 2.0 * _early_ref(x) + 5.0 * x),
]


@pytest.mark.parametrize("kernel, extra, reference", CASES,
                         ids=[f"{c[0].key}-{'-'.join(map(str, c[1]))}" for c in CASES])
def test_rebinding_to_existing_value(kernel, extra, reference, device):
    x = _inputs(seed=3)
    np.testing.assert_allclose(_run(kernel, x, device, *extra), reference(x), rtol=1e-12)
    _gradcheck(kernel, x, device, *extra)


def test_issue_example_float32(device):
    """The issue's kernel: the branch copies an existing local."""

    @wp.kernel
    def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        a = x[0]
        c = x[1]
        t = 1.0
        if a < 0.5:
            t = c
        else:
            t = c
        y[0] = t

    x = wp.array(np.array([0.2, 0.7], dtype=np.float32), device=device)
    y = wp.zeros(1, dtype=float, device=device)
    wp.launch(k, dim=1, inputs=[x, y], device=device)
    assert y.numpy()[0] == np.float32(0.7)


def test_function_alias_differing_between_paths_is_refused():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        f = wp.sin
        if x[0] > 0.0:
            f = wp.cos
        x[0] = f(x[0])

    with pytest.raises(wp.errors.CompileError, match="compile-time objects"):
        k.compile_ir()
