"""Forward launches that add into shared array elements on the CPU (`a[i] += v`, wp.atomic_add/atomic_sub).

On one thread those adds are plain adds; in parallel, a kernel that only adds into an array (never reads it, stores
to it or uses the old value an atomic returns) gives each chunk a private copy of that array, summed afterwards;
any other kernel keeps its atomics. Every path must give the exact sums: the addends are small integers, so every
partial sum is exact in float32 and a lost or doubled update shows. The analysis that picks the private arrays is
checked on its own (kernels.compiler.access.privatizable_accumulations).
"""

import numpy as np
import pytest

import kernels as wp
from kernels.compiler.access import privatizable_accumulations
from kernels.compiler.render import float_accumulable

SLOTS = 5  # elements shared by all threads; odd, so vec3 elements sit at every alignment
PARALLEL = 200000  # above config.cpu_parallel_threshold: runs on the thread pool
SERIAL = 100


@wp.struct
class Forces:
    f: wp.array(dtype=wp.vec3)
    total: wp.array(dtype=float)


@wp.func
def push(f: wp.array(dtype=wp.vec3), k: int, v: wp.vec3):
    f[k] += v


@wp.kernel
def scatter(forces: Forces, g: wp.array(dtype=wp.vec3), s: wp.array2d(dtype=float)):
    i = wp.tid()
    k = i % SLOTS
    w = float(i % 7)
    forces.f[k] += wp.vec3(1.0, 2.0, 3.0) * w
    wp.atomic_sub(forces.total, k, w)
    push(g, k, wp.vec3(w, 0.0, -w))
    row = s[k]
    row[1] += 2.0


@wp.kernel
def read_and_add(f: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = f[0] * 0.0
    f[i % SLOTS] += 1.0


@wp.kernel
def counter(count: wp.array(dtype=float), slot: wp.array(dtype=float), ints: wp.array(dtype=wp.int32)):
    i = wp.tid()
    slot[i] = wp.atomic_add(count, 0, 1.0)
    ints[i % SLOTS] += 1


@wp.kernel
def mixed(f: wp.array(dtype=float), count: wp.array(dtype=float), slot: wp.array(dtype=float)):
    i = wp.tid()
    f[i % SLOTS] += 1.0
    slot[i] = wp.atomic_add(count, 0, 1.0)


def _compiled(kernel):
    kernel.compile_ir()
    return privatizable_accumulations(kernel.ir, kernel.arg_names, float_accumulable)


def test_only_arrays_the_kernel_only_adds_into_are_private():
    paths = [path for path, _ in _compiled(scatter)]
    assert paths == ["forces.f", "forces.total", "g", "s"]
    assert _compiled(read_and_add) is None  # read and added: atomics
    assert _compiled(counter) is None  # the old value is used: atomics (an int array is never private)
    assert _compiled(mixed) is None  # one array's adds must stay atomic: so must the others (one template flag)


@pytest.mark.parametrize("count", [SERIAL, PARALLEL])
def test_scatter_sums_are_exact(count):
    forces = Forces()
    forces.f = wp.zeros(SLOTS, dtype=wp.vec3, device="cpu")
    forces.total = wp.full(SLOTS, 10.0, dtype=float, device="cpu")
    g = wp.zeros(SLOTS, dtype=wp.vec3, device="cpu")
    s = wp.zeros((SLOTS, 3), dtype=float, device="cpu")
    for _ in range(3):  # into what earlier launches left there
        wp.launch(scatter, dim=count, inputs=[forces, g, s], device="cpu")
    i = np.arange(count)
    w = 3 * np.bincount(i % SLOTS, weights=i % 7, minlength=SLOTS)
    hits = 3 * np.bincount(i % SLOTS, minlength=SLOTS)
    np.testing.assert_array_equal(forces.f.numpy(), w[:, None] * np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(forces.total.numpy(), 10.0 - w)
    np.testing.assert_array_equal(g.numpy(), w[:, None] * np.array([1.0, 0.0, -1.0]))
    expected_s = np.zeros((SLOTS, 3))
    expected_s[:, 1] = 2.0 * hits
    np.testing.assert_array_equal(s.numpy(), expected_s)


@pytest.mark.parametrize("count", [SERIAL, PARALLEL])
def test_atomics_whose_old_value_is_used_stay_atomic(count):
    total = wp.zeros(1, dtype=float, device="cpu")
    slot = wp.zeros(count, dtype=float, device="cpu")
    ints = wp.zeros(SLOTS, dtype=wp.int32, device="cpu")
    wp.launch(counter, dim=count, inputs=[total, slot, ints], device="cpu")
    assert total.numpy()[0] == count
    np.testing.assert_array_equal(np.sort(slot.numpy()), np.arange(count))  # every old value once
    np.testing.assert_array_equal(ints.numpy(), np.bincount(np.arange(count) % SLOTS, minlength=SLOTS))
    f = wp.zeros(SLOTS, dtype=float, device="cpu")
    out = wp.zeros(count, dtype=float, device="cpu")
    wp.launch(read_and_add, dim=count, inputs=[f, out], device="cpu")
    np.testing.assert_array_equal(f.numpy(), np.bincount(np.arange(count) % SLOTS, minlength=SLOTS))
    f.zero_()
    total.zero_()
    wp.launch(mixed, dim=count, inputs=[f, total, slot], device="cpu")
    np.testing.assert_array_equal(np.sort(slot.numpy()), np.arange(count))
    np.testing.assert_array_equal(f.numpy(), np.bincount(np.arange(count) % SLOTS, minlength=SLOTS))
