"""wp.cast(a, dtype): the bits of a value read as another type of one size (scalars, vectors, structs), bit for
bit as real Warp; a size mismatch and a use that needs its gradient are refused at compile time."""

import numpy as np
import pytest

import _warp_reference

_PROGRAM = '''
@wp.struct
class Pun:
    f: wp.float16
    i: wp.int16


@wp.kernel
def casts(x: wp.array(dtype=wp.int32), f: wp.array(dtype=float), out_f: wp.array(dtype=float),
          out_i: wp.array(dtype=wp.int32), out_u: wp.array(dtype=wp.uint64), out_v: wp.array(dtype=wp.vec2h)):
    i = wp.tid()
    out_f[i] = wp.cast(x[i], wp.float32)
    out_i[i] = wp.cast(f[i], wp.int32)
    p = Pun()
    p.f = wp.float16(f[i])
    p.i = wp.int16(x[i] % 30000)
    out_i[i + 4] = wp.cast(p, wp.int32)
    out_u[i] = wp.cast(wp.float64(f[i]), wp.uint64)
    out_v[i] = wp.cast(out_i[i], wp.vec2h)


def run(wp, Tape):
    x = wp.array([0x3FA00000, 0x40000000, -1082130432, 123], dtype=wp.int32)
    f = wp.array([1.25, -2.0, 3.0e-3, 65504.0], dtype=float)
    out_f, out_i = wp.zeros(4, dtype=float), wp.zeros(8, dtype=wp.int32)
    out_u, out_v = wp.zeros(4, dtype=wp.uint64), wp.zeros(4, dtype=wp.vec2h)
    wp.launch(casts, dim=4, inputs=[x, f], outputs=[out_f, out_i, out_u, out_v])
    return {"f": out_f.numpy().view(np.uint32), "i": out_i.numpy(), "u": out_u.numpy(),
            "v": out_v.numpy().view(np.uint16)}
'''


def test_cast_matches_warp_bit_for_bit(tmp_path):
    warp, ours = _warp_reference.both("import numpy as np\n" + _PROGRAM, str(tmp_path), "bit_cast")
    for name in warp:
        np.testing.assert_array_equal(ours[name], warp[name], err_msg=name)
    # an independent route: numpy's views of the same bytes
    np.testing.assert_array_equal(ours["f"], np.array([0x3FA00000, 0x40000000, -1082130432, 123], np.int32).view(
        np.uint32))
    f = np.array([1.25, -2.0, 3.0e-3, 65504.0], np.float32)
    np.testing.assert_array_equal(ours["i"][:4], f.view(np.int32))
    np.testing.assert_array_equal(ours["u"], f.astype(np.float64).view(np.uint64))


def test_cast_refuses_types_of_different_sizes():
    import kernels as wp

    @wp.kernel
    def wrong_size(out: wp.array(dtype=wp.int64)):
        out[0] = wp.cast(wp.float32(1.0), wp.int64)

    with pytest.raises(Exception, match="same size, float32 has 4 bytes and int64 8"):
        wp.launch(wrong_size, 1, outputs=[wp.zeros(1, dtype=wp.int64)])


def test_cast_on_a_gradient_path_is_refused():
    import kernels as wp
    from autodiff import Tape

    @wp.kernel
    def through(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        y[0] = wp.cast(wp.vec2h(wp.float16(x[0]), wp.float16(0.0)), wp.float32)

    x = wp.array([1.0], dtype=float, requires_grad=True)
    y = wp.zeros(1, dtype=float, requires_grad=True)
    with pytest.raises(Exception, match="'bit_cast' has no gradient"):
        with Tape() as tape:
            wp.launch(through, 1, inputs=[x], outputs=[y])
        tape.backward(grads={y: wp.array([1.0], dtype=float)})


def test_cast_from_python_says_kernels_only():
    import kernels as wp

    with pytest.raises(RuntimeError, match="inside kernels"):
        wp.cast(1, wp.float32)
