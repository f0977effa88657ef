"""Control flow in kernels and functions: branches, loops, early exits, calls; forward results and gradients."""

import math

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

from _kernel_checks import LOOP_COUNT, _gradcheck, _inputs, _run

# ---------------------------------------------------------------------------------------------------------------
# Branches


@wp.kernel
def branch_if_elif_else(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    if v < -1.0:
        r = v * v
        s = wp.float64(2.0)
    elif v < 0.5:
        r = wp.sin(v)
        s = wp.float64(3.0)
    else:
        r = v * v * v
        s = wp.float64(-1.0)
    y[i] = r * s


def branch_if_elif_else_ref(x):
    return np.where(x < -1.0, 2.0 * x * x, np.where(x < 0.5, 3.0 * np.sin(x), -x ** 3))


@wp.kernel
def branch_nested(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    r = v
    if v > 0.0:
        if v > 1.0:
            r = v * 3.0
        else:
            r = v * v
    else:
        if v < -1.0:
            r = wp.exp(v)
        r = r + 1.0
    y[i] = r


def branch_nested_ref(x):
    pos = np.where(x > 1.0, 3.0 * x, x * x)
    neg = np.where(x < -1.0, np.exp(x), x) + 1.0
    return np.where(x > 0.0, pos, neg)


@wp.kernel
def branch_ternary(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    y[i] = v * v if v > 0.0 else -2.0 * v


@wp.kernel
def branch_one_sided(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    r = v * 2.0
    if v > 0.3:
        r = r * v
    y[i] = r


@pytest.mark.parametrize("kernel, reference", [
    (branch_if_elif_else, branch_if_elif_else_ref),
    (branch_nested, branch_nested_ref),
    (branch_ternary, lambda x: np.where(x > 0.0, x * x, -2.0 * x)),
    (branch_one_sided, lambda x: np.where(x > 0.3, 2.0 * x * x, 2.0 * x)),
], ids=["if_elif_else", "nested", "ternary", "one_sided"])
def test_branches_forward_and_gradient(device, kernel, reference):
    x = _inputs(seed=1)
    np.testing.assert_allclose(_run(kernel, x, device), reference(x), rtol=1e-12)
    _gradcheck(kernel, x, device)


@wp.kernel
def logic_ops(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.int32)):
    i = wp.tid()
    v = x[i]
    code = 0
    if 0.0 < v < 1.0:
        code = code + 1
    if v > 0.5 and v < 1.5:
        code = code + 2
    if v < -1.0 or v > 1.0:
        code = code + 4
    if not v > 0.0:
        code = code + 8
    if not (v > -0.5 and v < 0.5) and v != 0.0:
        code = code + 16
    y[i] = code


def test_logic_and_chained_comparisons(device):
    x_np = np.array([-2.0, -0.75, -0.25, 0.0, 0.25, 0.75, 1.0, 1.25, 2.0])
    x = wp.array(x_np, dtype=wp.float64, device=device)
    y = wp.zeros(len(x_np), dtype=wp.int32, device=device)
    wp.launch(logic_ops, dim=len(x_np), inputs=[x, y], device=device)
    expect = ((0.0 < x_np) & (x_np < 1.0)) * 1 + ((x_np > 0.5) & (x_np < 1.5)) * 2 + \
        ((x_np < -1.0) | (x_np > 1.0)) * 4 + (~(x_np > 0.0)) * 8 + \
        (~((x_np > -0.5) & (x_np < 0.5)) & (x_np != 0.0)) * 16
    np.testing.assert_array_equal(y.numpy(), expect)


@wp.kernel
def int_truthiness(a: wp.array(dtype=wp.int32), y: wp.array(dtype=wp.int32)):
    i = wp.tid()
    v = a[i]
    r = 0
    if v:
        r = 1
    if not v:
        r = r + 10
    y[i] = r


def test_int_truthiness(device):
    a = wp.array(np.array([0, 1, -3, 0, 7], dtype=np.int32), device=device)
    y = wp.zeros(5, dtype=wp.int32, device=device)
    wp.launch(int_truthiness, dim=5, inputs=[a, y], device=device)
    np.testing.assert_array_equal(y.numpy(), [10, 1, 1, 10, 1])


# ---------------------------------------------------------------------------------------------------------------
# Ranges, static and dynamic loops


@wp.kernel
def range_forms(n: int, out: wp.array(dtype=wp.int32)):
    s1 = 0
    for k in range(n):
        s1 += k
    s2 = 0
    for k in range(2, n):
        s2 += k * k
    s3 = 0
    for k in range(1, n, 3):
        s3 += k
    s4 = 0
    for k in range(n, 0, -1):
        s4 = s4 * 2 + k
    s5 = 0
    for k in range(n, -n, -3):
        s5 += k
    count_empty = 0
    for k in range(n, 0):
        count_empty += 1
    out[0] = s1
    out[1] = s2
    out[2] = s3
    out[3] = s4
    out[4] = s5
    out[5] = count_empty


def _range_forms_ref(n):
    s4 = 0
    for k in range(n, 0, -1):
        s4 = s4 * 2 + k
    return [sum(range(n)), sum(k * k for k in range(2, n)), sum(range(1, n, 3)), s4, sum(range(n, -n, -3)),
            len(range(n, 0))]


@pytest.mark.parametrize("n", [0, 1, 7])
def test_range_forms_dynamic(device, n):
    out = wp.zeros(6, dtype=wp.int32, device=device)
    wp.launch(range_forms, dim=1, inputs=[n, out], device=device)
    np.testing.assert_array_equal(out.numpy(), _range_forms_ref(n))


@wp.kernel
def range_forms_static(out: wp.array(dtype=wp.int32)):
    s1 = 0
    for k in range(5):
        s1 += k
    s2 = 0
    for k in range(2, 5):
        s2 += k * k
    s3 = 0
    for k in range(1, 5, 3):
        s3 += k
    s4 = 0
    for k in range(5, 0, -1):
        s4 = s4 * 2 + k
    s5 = 0
    for k in range(5, -5, -3):
        s5 += k
    count_empty = 0
    for k in range(5, 0):
        count_empty += 1
    s_big = 0
    for k in range(100):  # longer than config.max_unroll: stays a loop
        s_big += k
    s_static = 0
    for k in wp.static(range(LOOP_COUNT)):
        s_static += k * 10
    out[0] = s1
    out[1] = s2
    out[2] = s3
    out[3] = s4
    out[4] = s5
    out[5] = count_empty
    out[6] = s_big
    out[7] = s_static


def test_range_forms_static(device):
    out = wp.zeros(8, dtype=wp.int32, device=device)
    wp.launch(range_forms_static, dim=1, inputs=[out], device=device)
    expect = _range_forms_ref(5) + [sum(range(100)), 10 * sum(range(LOOP_COUNT))]
    np.testing.assert_array_equal(out.numpy(), expect)


@wp.kernel
def static_loop_poly(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = wp.float64(1.0)
    s = wp.float64(0.0)
    for k in range(4):
        s = s + p * wp.float64(k + 1)
        p = p * x[i]
    for k in wp.static(range(1, 3)):
        s = s + x[i] * wp.float64(k)
    y[i] = s


def test_static_loop_unrolled_result_and_gradient(device):
    x = _inputs(seed=2)
    expect = 1.0 + 2.0 * x + 3.0 * x ** 2 + 4.0 * x ** 3 + 3.0 * x
    np.testing.assert_allclose(_run(static_loop_poly, x, device), expect, rtol=1e-12)
    _gradcheck(static_loop_poly, x, device)


@wp.kernel
def dynamic_power_for(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = wp.float64(1.0)
    for j in range(n):
        p = p * x[i]
    y[i] = p


@wp.kernel
def dynamic_power_while(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = wp.float64(1.0)
    j = 0
    while j < n:
        p = p * x[i]
        j += 1
    y[i] = p


@wp.kernel
def dynamic_sum_squares(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.float64(0.0)
    for j in range(n):
        s += x[i] * x[i]
    y[i] = s


@wp.kernel
def dynamic_mixed_carried(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = x[i]
    b = wp.float64(1.0)
    for j in range(n):
        t = a * b + wp.sin(a)
        b = a
        a = t * 0.5
    y[i] = a + b


def _mixed_carried_ref(x, n):
    a, b = x.copy(), np.ones_like(x)
    for _ in range(n):
        t = a * b + np.sin(a)
        b = a
        a = t * 0.5
    return a + b


@wp.kernel
def dynamic_power_float32(x: wp.array(dtype=float), n: int, y: wp.array(dtype=float)):
    i = wp.tid()
    p = 1.0
    for j in range(n):
        p = p * x[i]
    y[i] = p


def test_dynamic_power_float32_literal_init(device):
    # the plain Warp spelling: `p = 1.0` is a float32 local
    x_np = np.array([0.5, -0.8, 1.2, 1.5, -1.3], dtype=np.float32)
    n = 4
    np.testing.assert_allclose(_run(dynamic_power_float32, x_np, device, n, dtype=wp.float32), x_np ** n, rtol=1e-6)
    x = wp.array(x_np, dtype=wp.float32, device=device)

    def fn(x):
        y = wp.zeros(x.shape, dtype=wp.float32, device=device)
        wp.launch(dynamic_power_float32, dim=x.shape[0], inputs=[x, n], outputs=[y], device=device)
        return y

    gradcheck(fn, [x])
    # and the exact gradient n x^(n-1), checked directly
    tape = Tape()
    x.grad.zero_()
    with tape:
        y = fn(x)
    tape.backward(grads={y: np.ones(len(x_np), dtype=np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), n * x_np ** (n - 1), rtol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 3, 5])
@pytest.mark.parametrize("kernel, reference", [
    (dynamic_power_for, lambda x, n: x ** n),
    (dynamic_power_while, lambda x, n: x ** n),
    (dynamic_sum_squares, lambda x, n: n * x * x),
    (dynamic_mixed_carried, _mixed_carried_ref),
], ids=["power_for", "power_while", "sum_squares", "mixed_carried"])
def test_dynamic_loop_forward_and_gradient(device, kernel, reference, n):
    x = _inputs(seed=3, n=8, low=-1.5, high=1.5)
    np.testing.assert_allclose(_run(kernel, x, device, n), reference(x, n), rtol=1e-12, atol=1e-14)
    _gradcheck(kernel, x, device, n)


@pytest.mark.parametrize("n", [63, 64, 65, 150])
@pytest.mark.parametrize("kernel", [dynamic_power_for, dynamic_power_while], ids=["for", "while"])
def test_long_dynamic_loop_gradient(device, kernel, n):
    # the reverse restores the carried product of the first iterations from slots kept in the replay (64 of them
    # for one float64) and replays the later ones from the last slot: both paths, and the boundary between them
    x = _inputs(seed=6, n=8, low=-1.02, high=1.02)
    np.testing.assert_allclose(_run(kernel, x, device, n), x ** n, rtol=1e-12)
    tape = Tape()
    xa = wp.array(x, dtype=wp.float64, device=device, requires_grad=True)
    y = wp.zeros(len(x), dtype=wp.float64, device=device, requires_grad=True)
    with tape:
        wp.launch(kernel, dim=len(x), inputs=[xa, n], outputs=[y], device=device)
    tape.backward(grads={y: np.ones(len(x))})
    np.testing.assert_allclose(xa.grad.numpy(), n * x ** (n - 1), rtol=1e-10)


@wp.kernel
def nested_carried_loops(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    # an inner product loop whose result the outer loop carries: the inner slots are refilled by the replay of
    # each outer iteration before its reverse
    i = wp.tid()
    s = wp.float64(1.0)
    for j in range(n):
        p = s
        for k in range(j % 4 + 1):
            p = p * x[i] + wp.float64(0.1)
        s = wp.sin(p)
    y[i] = s


def test_nested_carried_loops_gradient(device):
    x = _inputs(seed=7, n=6, low=-1.5, high=1.5)
    n = 80
    s = np.ones_like(x)
    for j in range(n):
        p = s
        for _ in range(j % 4 + 1):
            p = p * x + 0.1
        s = np.sin(p)
    np.testing.assert_allclose(_run(nested_carried_loops, x, device, n), s, rtol=1e-10)
    _gradcheck(nested_carried_loops, x, device, n)


@wp.kernel
def loop_over_array(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    # each thread: y[i] = sum_j x[j] * x[i]^(j mod 3); the bound comes from the array's shape
    i = wp.tid()
    s = wp.float64(0.0)
    for j in range(x.shape[0]):
        p = wp.float64(1.0)
        for k in range(j % 3):
            p = p * x[i]
        s += x[j] * p
    y[i] = s


def test_nested_dynamic_loops_gradient(device):
    x = _inputs(seed=4, n=6)
    expect = np.array([sum(x[j] * x[i] ** (j % 3) for j in range(6)) for i in range(6)])
    np.testing.assert_allclose(_run(loop_over_array, x, device), expect, rtol=1e-12)
    _gradcheck(loop_over_array, x, device)


# ---------------------------------------------------------------------------------------------------------------
# break / continue


@wp.kernel
def break_continue_for(n: int, limit: int, out: wp.array(dtype=wp.int32)):
    s = 0
    visited = 0
    for k in range(n):
        if k % 2 == 1:
            continue
        if k > limit:
            break
        s += k
        visited += 1
    out[0] = s
    out[1] = visited


@wp.kernel
def break_continue_while(n: int, limit: int, out: wp.array(dtype=wp.int32)):
    s = 0
    visited = 0
    k = -1
    while True:
        k += 1
        if k >= n:
            break
        if k % 2 == 1:
            continue
        if k > limit:
            break
        s += k
        visited += 1
    out[0] = s
    out[1] = visited


def _break_continue_ref(n, limit):
    s = visited = 0
    for k in range(n):
        if k % 2 == 1:
            continue
        if k > limit:
            break
        s += k
        visited += 1
    return [s, visited]


@pytest.mark.parametrize("kernel", [break_continue_for, break_continue_while], ids=["for", "while"])
@pytest.mark.parametrize("n, limit", [(0, 3), (10, 5), (10, 100), (7, -1)])
def test_break_continue(device, kernel, n, limit):
    out = wp.zeros(2, dtype=wp.int32, device=device)
    wp.launch(kernel, dim=1, inputs=[n, limit, out], device=device)
    np.testing.assert_array_equal(out.numpy(), _break_continue_ref(n, limit))


@wp.kernel
def break_static_loop(out: wp.array(dtype=wp.int32)):
    s = 0
    for k in range(10):
        if k == 3:
            continue
        if k == 6:
            break
        s += k
    out[0] = s


def test_break_in_static_loop(device):
    out = wp.zeros(1, dtype=wp.int32, device=device)
    wp.launch(break_static_loop, dim=1, inputs=[out], device=device)
    assert out.numpy()[0] == 0 + 1 + 2 + 4 + 5


def test_nested_loops_inner_break(device):
    # defined here: when a module-level kernel fails in C++, every kernel of the file is rebuilt alone (slow)
    @wp.kernel
    def nested_inner_break(n: int, out: wp.array(dtype=wp.int32)):
        # count pairs (a, b), b < a, until the first b with a*b > n in each row
        total = 0
        rows = 0
        for a in range(n):
            for b in range(a):
                if a * b > n:
                    break
                total += 1
            rows += 1
        out[0] = total
        out[1] = rows

    n = 12
    out = wp.zeros(2, dtype=wp.int32, device=device)
    wp.launch(nested_inner_break, dim=1, inputs=[n, out], device=device)
    total = 0
    for a in range(n):
        for b in range(a):
            if a * b > n:
                break
            total += 1
    np.testing.assert_array_equal(out.numpy(), [total, n])


@wp.kernel
def gradient_loop_break(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    # multiply by x until the product leaves [-3, 3] or n steps were taken
    i = wp.tid()
    p = wp.float64(1.0)
    for j in range(n):
        p = p * x[i]
        if wp.abs(p) > 3.0:
            break
    y[i] = p


@wp.kernel
def gradient_while_break(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = wp.float64(1.0)
    j = 0
    while j < n:
        p = p * x[i]
        j += 1
        if wp.abs(p) > 3.0:
            break
    y[i] = p


def _loop_break_ref(x, n):
    out = []
    for v in x:
        p = 1.0
        for _ in range(n):
            p *= v
            if abs(p) > 3.0:
                break
        out.append(p)
    return np.array(out)


@pytest.mark.parametrize("kernel", [gradient_loop_break, gradient_while_break], ids=["for", "while"])
def test_break_inside_gradient_loop(device, kernel):
    # away from the switching points so finite differences do not straddle a break
    x = np.array([0.5, -0.9, 1.3, -1.7, 2.2, 1.05, -2.5, 0.1])
    n = 6
    np.testing.assert_allclose(_run(kernel, x, device, n), _loop_break_ref(x, n), rtol=1e-12)
    _gradcheck(kernel, x, device, n)


@wp.kernel
def gradient_loop_continue(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.float64(0.0)
    for j in range(n):
        if j % 2 == 0:
            continue
        s = s * x[i] + wp.float64(j)
    y[i] = s


def test_continue_inside_gradient_loop(device):
    x = _inputs(seed=5, n=6)
    n = 7
    s = np.zeros_like(x)
    for j in range(n):
        if j % 2 == 0:
            continue
        s = s * x + j
    np.testing.assert_allclose(_run(gradient_loop_continue, x, device, n), s, rtol=1e-12)
    _gradcheck(gradient_loop_continue, x, device, n)


# ---------------------------------------------------------------------------------------------------------------
# Early return


@wp.kernel
def early_return_if(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    y[i] = -1.0
    if v < 0.0:
        return
    y[i] = v * v


def test_early_return_in_kernel(device):
    # defined here rather than at module level: a kernel that fails to build at render time leaves the rest of its
    # batch unbuilt (a CompileError at render time used to poison the whole batch)
    @wp.kernel
    def early_return_loop(x: wp.array(dtype=wp.float64), n: int, y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        p = wp.float64(1.0)
        for j in range(n):
            p = p * x[i]
            if p > 2.0:
                y[i] = p
                return
        y[i] = -p

    x = _inputs(seed=6)
    np.testing.assert_allclose(_run(early_return_if, x, device), np.where(x < 0.0, -1.0, x * x), rtol=1e-12)
    n = 5
    ref = []
    for v in x:
        p = 1.0
        val = None
        for _ in range(n):
            p *= v
            if p > 2.0:
                val = p
                break
        ref.append(val if val is not None else -p)
    np.testing.assert_allclose(_run(early_return_loop, x, device, n), ref, rtol=1e-12)
    x_safe = np.array([0.3, 1.1, 1.5, -0.7, 1.9, -1.6])  # no p within eps of the threshold
    _gradcheck(early_return_loop, x_safe, device, n)


@wp.func
def piecewise(v: wp.float64):
    if v < 0.0:
        return -v * 2.0
    elif v < 1.0:
        return v * v
    else:
        if v > 1.5:
            return wp.sqrt(v)
    return v * 3.0 - 2.0


@wp.func
def first_power_above(v: wp.float64, n: int, bound: wp.float64):
    p = wp.float64(1.0)
    found = False
    for k in range(n):
        p = p * v
        if p > bound:
            found = True
            break
    if found:
        return p
    return -p


@wp.kernel
def call_piecewise(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = piecewise(x[i]) + first_power_above(x[i], 4, wp.float64(1.2))


def _piecewise_ref(v):
    if v < 0.0:
        return -2.0 * v
    if v < 1.0:
        return v * v
    if v > 1.5:
        return math.sqrt(v)
    return 3.0 * v - 2.0


def _first_power_above_ref(v, n, bound):
    p = 1.0
    for _ in range(n):
        p *= v
        if p > bound:
            return p
    return -p


def test_func_early_returns(device):
    x = np.array([-1.5, -0.2, 0.3, 0.9, 1.25, 1.45, 1.7, 2.6])
    expect = [_piecewise_ref(v) + _first_power_above_ref(v, 4, 1.2) for v in x]
    np.testing.assert_allclose(_run(call_piecewise, x, device), expect, rtol=1e-12)
    _gradcheck(call_piecewise, x, device)
