"""`wp.vector(...)` and `wp.vecN(...)` inside kernels follow Warp's rules: zeros need length=, a copy takes another
vector's length and casts to dtype=, a fill needs length=, components of one type; each refusal in Warp's words.
Compared with real warp-lang."""

import numpy as np

import _warp_reference

_PROGRAM = '''
import numpy as np


@wp.kernel
def build(out: wp.array(dtype=wp.float32), x: wp.float64):
    a = wp.vec2(1.5, -2.0)
    b = wp.types.vector(a, dtype=wp.float16)
    c = wp.types.vector(a)
    d = wp.types.vector(a, length=2)
    e = wp.types.vector(1.0, 2.0, 3.0, dtype=float)
    f = wp.types.vector(2.5, length=3, dtype=wp.float64)
    g = wp.types.vector(length=4, dtype=wp.int32)
    h = wp.types.vector(x, x)
    out[0] = float(b[1]) + c[0] + d[1] + e[2] + float(f[2]) + float(g[3]) + float(h[0]) + float(len(f))


@wp.kernel(module="unique")
def copy_of_other_length():
    wp.types.vector(wp.types.vector(length=2, dtype=float), length=3, dtype=float)


@wp.kernel(module="unique")
def count_differs_from_length():
    wp.types.vector(1.0, 2.0, length=12345)


@wp.kernel(module="unique")
def zeros_without_length():
    wp.types.vector()


@wp.kernel(module="unique")
def fill_without_length():
    wp.types.vector(1.0)


@wp.kernel(module="unique")
def mixed_component_types():
    wp.types.vector(1.0, 2)


@wp.kernel(module="unique")
def typed_copy_of_other_length():
    wp.vec3(wp.vec2(1.0, 2.0))


@wp.kernel(module="unique")
def typed_components_of_other_type(x: wp.float64):
    wp.vec2(x, x)


@wp.kernel(module="unique")
def typed_fill_of_other_type(x: wp.float64):
    wp.vec3(x)


REFUSED = (copy_of_other_length, count_differs_from_length, zeros_without_length, fill_without_length,
           mixed_component_types, typed_copy_of_other_length, typed_components_of_other_type,
           typed_fill_of_other_type)


def run(wp, Tape):
    out = wp.zeros(1, dtype=wp.float32)
    wp.launch(build, dim=1, inputs=[out, wp.float64(0.25)])
    messages = []
    for kernel in REFUSED:
        try:
            takes_x = kernel in (typed_components_of_other_type, typed_fill_of_other_type)
            wp.launch(kernel, dim=1, inputs=[wp.float64(1.0)] if takes_x else [])
            messages.append("")
        except RuntimeError as e:
            messages.append(str(e).strip().splitlines()[-1].lstrip(";"))  # Warp ends with a ";message" line
    return {"built": out.numpy(), "refused": np.array(messages)}
'''


def test_anonymous_and_typed_vector_constructors_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "vector_constructors")
    np.testing.assert_array_equal(ours["built"], warp["built"])
    assert all(warp["refused"])  # every case is a refusal in Warp
    np.testing.assert_array_equal(ours["refused"], warp["refused"])
