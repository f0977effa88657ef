"""bfloat16: host conversion (round to nearest even, NaN kept), arrays as uint16 bit patterns (Warp's convention
without ml_dtypes), kernel arithmetic and casts against numpy float32 rounded to bfloat16, atomics, struct fields,
gradients (gradcheck with a tolerance for a 8-bit mantissa) and the CUDA source (PTX)."""

import struct as pystruct

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck
from kernels.halfbits import bfloat16_bits_to_float32, float32_to_bfloat16_bits, round_to_bfloat16


def _f32(bits):
    return bfloat16_bits_to_float32(bits)


# ------------------------------------------------------------------------------------------------ host side

def test_conversion_rounds_to_nearest_even_and_keeps_specials():
    snan = pystruct.unpack("f", pystruct.pack("I", 0x7F800001))[0]
    x = np.array([1.0, 1.00390625, 1.01171875, 3.14, -2.5, np.inf, -np.inf, -0.0, snan, 3.4e38], np.float32)
    bits = float32_to_bfloat16_bits(x)
    # 1.00390625 is a tie between 1.0 and 1.0078125: to even (1.0); 1.01171875 is a tie rounding up to even
    assert bits.dtype == np.uint16
    assert bits.tolist()[:6] == [0x3F80, 0x3F80, 0x3F82, 0x4049, 0xC020, 0x7F80]
    assert bits[6] == 0xFF80 and bits[7] == 0x8000
    assert np.isnan(_f32(bits[8]))  # a signalling NaN whose kept mantissa bits are zero stays NaN
    assert np.isinf(_f32(bits[9]))  # above the largest bfloat16 by more than half a step: rounds to inf


def test_values_arrays_and_lists():
    v = wp.bfloat16(3.14)
    assert float(v) == 3.140625 and v.value == 3.140625 and isinstance(v, wp.bfloat16)
    assert not isinstance(np.uint16(3), wp.bfloat16)
    a = wp.array([1.0, 2.5, 3.14, -1.0], dtype=wp.bfloat16)
    assert a.dtype is wp.bfloat16 and a.numpy().dtype == np.uint16
    assert _f32(a.numpy()).tolist() == [1.0, 2.5, 3.140625, -1.0]
    assert [float(x) for x in a.list()] == [1.0, 2.5, 3.140625, -1.0]
    raw = wp.array(np.array([0x3F80, 0x4000], np.uint16), dtype=wp.bfloat16)  # uint16 data: bit patterns
    assert [float(x) for x in raw.list()] == [1.0, 2.0]
    z = wp.zeros(3, dtype=wp.bfloat16)
    z.fill_(2.5)
    assert _f32(z.numpy()).tolist() == [2.5] * 3
    assert _f32(wp.ones(2, dtype=wp.bfloat16).numpy()).tolist() == [1.0, 1.0]
    assert wp.full(2, wp.bfloat16(1.5)).dtype is wp.bfloat16
    vec3bf = wp.types.vector(3, wp.bfloat16)
    assert vec3bf.__name__ == "vec3bf" and list(vec3bf(1.0, 2.0, 3.14)) == [1.0, 2.0, 3.140625]


# ------------------------------------------------------------------------------------------------ kernels

@wp.kernel
def bf16_ops(a: wp.array(dtype=wp.bfloat16), b: wp.array(dtype=wp.bfloat16), s: wp.bfloat16,
             out: wp.array2d(dtype=wp.bfloat16), cmp: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = -x * s
    out[i, 5] = wp.sqrt(wp.abs(x))
    out[i, 6] = wp.min(x, y)
    out[i, 7] = wp.floor(x)
    out[i, 8] = wp.bfloat16(wp.float16(x))  # through float16 and back
    out[i, 9] = wp.bfloat16(wp.int32(x))
    cmp[i, 0] = wp.where(x < y, 1, 0)
    cmp[i, 1] = wp.where(x == y, 1, 0)
    cmp[i, 2] = wp.int32(x)


def test_arithmetic_matches_float32_rounded_to_bfloat16():
    xa = np.array([1.0, 2.5, -3.140625, 0.75], np.float32)
    xb = np.array([0.5, 2.5, 2.0, -0.3], np.float32)
    a, b = wp.array(xa, dtype=wp.bfloat16), wp.array(xb, dtype=wp.bfloat16)
    x, y = round_to_bfloat16(xa), round_to_bfloat16(xb)
    out = wp.zeros((4, 10), dtype=wp.bfloat16)
    cmp = wp.zeros((4, 3), dtype=wp.int32)
    wp.launch(bf16_ops, 4, [a, b, wp.bfloat16(1.5), out, cmp])
    got = _f32(out.numpy())
    expect = np.stack([x + y, x - y, x * y, x / y, -x * np.float32(1.5), np.sqrt(np.abs(x)), np.minimum(x, y),
                       np.floor(x), x.astype(np.float16).astype(np.float32), np.trunc(x)], axis=1)
    np.testing.assert_array_equal(got, round_to_bfloat16(expect.astype(np.float32)))
    np.testing.assert_array_equal(cmp.numpy(), np.stack([x < y, x == y, np.trunc(x)], axis=1).astype(np.int32))


@wp.kernel
def bf16_atomics(out: wp.array(dtype=wp.bfloat16), vals: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    wp.atomic_add(out, 0, wp.bfloat16(1.0))
    out[1] += wp.bfloat16(2.0)
    wp.atomic_sub(out, 2, wp.bfloat16(1.0))
    wp.atomic_min(out, 3, vals[i])
    wp.atomic_max(out, 4, vals[i])


def test_atomics():
    vals = wp.array(np.linspace(-4.0, 4.0, 64, dtype=np.float32), dtype=wp.bfloat16)
    out = wp.zeros(5, dtype=wp.bfloat16)
    wp.launch(bf16_atomics, 64, [out, vals])
    # every partial sum (up to 128) is a bfloat16, so the sums are exact whatever the order
    assert _f32(out.numpy()).tolist() == [64.0, 128.0, -64.0, -4.0, 4.0]


@wp.struct
class Bf16Params:
    scale: wp.bfloat16
    offset: wp.float32


@wp.kernel
def bf16_struct_kernel(p: Bf16Params, out: wp.array(dtype=wp.float32)):
    out[0] = wp.float32(p.scale) + p.offset


def test_struct_field():
    p = Bf16Params()
    p.scale = wp.bfloat16(3.14)
    p.offset = 1.0
    assert float(p.scale) == 3.140625
    out = wp.zeros(1, dtype=wp.float32)
    wp.launch(bf16_struct_kernel, 1, [p, out])
    assert out.numpy()[0] == np.float32(4.140625)


# ------------------------------------------------------------------------------------------------ gradients

@wp.kernel
def to_bf16_sq(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    b = wp.bfloat16(x[i])
    y[i] = b * b + wp.sin(b)


@wp.kernel
def from_bf16_scaled(y: wp.array(dtype=wp.bfloat16), z: wp.array(dtype=wp.float32)):
    i = wp.tid()
    z[i] = wp.float32(y[i] * wp.bfloat16(0.5)) + wp.float32(wp.div_approx(y[i], wp.bfloat16(4.0)))


def test_gradient_through_bfloat16_values_and_arrays():
    # inputs and steps are bfloat16 values (eps 2^-4, a multiple of the spacing in [1, 2)), so only the rounding of
    # the results perturbs the differences: at |y| ~ 4 the spacing is 2^-5, i.e. ~0.25 in a difference over 2 eps
    x = wp.array(np.array([1.0, 1.25, 1.5, 1.875], np.float32), dtype=wp.float32)

    def fn(x):
        y = wp.zeros(4, dtype=wp.bfloat16, requires_grad=True)
        z = wp.zeros(4, dtype=wp.float32, requires_grad=True)
        wp.launch(to_bf16_sq, 4, [x, y])
        wp.launch(from_bf16_scaled, 4, [y, z])
        return z

    gradcheck(fn, [x], eps=0.0625, atol=0.15, rtol=0.05)
    # and against the exact derivative 0.75 (2x + cos x)
    tape = Tape()
    with tape:
        z = fn(x)
    tape.backward(grads={z: np.ones(4, np.float32)})
    xs = x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), 0.75 * (2 * xs + np.cos(xs)), rtol=2e-2)


@wp.kernel
def bf16_loss(x: wp.array(dtype=wp.bfloat16), loss: wp.array(dtype=wp.float32)):
    i = wp.tid()
    v = wp.float32(x[i])
    wp.atomic_add(loss, 0, v * v)


def test_gradient_of_a_bfloat16_array_accumulates_in_bfloat16():
    x = wp.array([1.0, 2.0, 3.0], dtype=wp.bfloat16, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float32, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(bf16_loss, 3, [x, loss])
    tape.backward(loss)
    assert x.grad.dtype is wp.bfloat16
    assert _f32(x.grad.numpy()).tolist() == [2.0, 4.0, 6.0]


def test_div_approx_gradient_float32():
    a = wp.array(np.array([1.0, -2.0, 3.0], np.float32))
    b = wp.array(np.array([0.5, 1.5, -2.0], np.float32))

    def fn(a, b):
        out = wp.zeros(3, dtype=wp.float32, requires_grad=True)
        wp.launch(div_approx_kernel, 3, [a, b, out])
        return out

    gradcheck(fn, [a, b])


@wp.kernel
def div_approx_kernel(a: wp.array(dtype=wp.float32), b: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.div_approx(a[i], b[i])


# ------------------------------------------------------------------------------------------------ CUDA source

def test_cuda_source_compiles_to_ptx():
    for k in (bf16_ops, bf16_atomics, to_bf16_sq, from_bf16_scaled):
        ptx = wp.compile_ptx(k, arch=80)
        assert f"{k.key}_cuda_backward" in ptx or "_cuda_backward" in ptx


def test_floordiv_and_mod():
    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=wp.bfloat16)):
        out[0] = wp.floordiv(wp.bfloat16(-1.75), wp.bfloat16(2.0))
        out[1] = wp.mod(wp.bfloat16(-1.75), wp.bfloat16(1.0))

    out = wp.zeros(2, dtype=wp.bfloat16)
    wp.launch(k, 1, [out])
    assert _f32(out.numpy()).tolist() == [-1.0, -0.75]


@pytest.mark.parametrize("bad", ["int8", "uint16"])
def test_atomics_on_non_atomic_types_still_refused(bad):
    dtype = getattr(wp, bad)

    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=dtype)):
        wp.atomic_add(a, 0, dtype(1))

    with pytest.raises(Exception, match="bfloat16"):
        wp.launch(k, 1, [wp.zeros(1, dtype=dtype)])


def test_dlpack_export_is_refused_rather_than_typed_uint16():
    a = wp.array([1.0, 2.0], dtype=wp.bfloat16)
    with pytest.raises(TypeError, match="bfloat16 arrays cannot be exported through DLPack"):
        wp.to_dlpack(a)
