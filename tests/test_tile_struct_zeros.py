"""Tiles of Warp structs made by wp.tile_zeros / wp.tile_empty, and Warp's refusals around struct tiles.

tile_zeros(shape, dtype=SomeStruct): every field zero, elements assigned and stored, the gradient through a struct
element by central differences, and the same arrays as real Warp's; tile_ones of a struct and bitwise in-place
operators on structs or struct tiles are refused with Warp's wording ("tile_ones ... Warp struct",
"bitwise inplace ... Warp struct")."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import gradcheck


@wp.struct
class Particle:
    mass: wp.float64
    position: wp.vec3d


@wp.kernel
def _through_struct_tile(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    p = Particle()
    p.mass = x[0] * x[1]
    p.position = wp.vec3d(x[2], x[2] * x[2], 1.0)
    t = wp.tile_zeros(shape=3, dtype=Particle)
    t[1] = p
    q = wp.tile_extract(t, 1)
    r = wp.tile_extract(t, 2)
    y[0] = q.mass * q.position[1] + r.mass


def test_zeros_hold_zero_fields_and_assigned_elements():
    @wp.kernel
    def fill(out: wp.array(dtype=Particle), empty: wp.array(dtype=Particle)):
        p = Particle()
        p.mass = wp.float64(2.5)
        p.position = wp.vec3d(1.0, 2.0, 3.0)
        t = wp.tile_zeros(shape=4, dtype=Particle, storage="shared")
        t[2] = p
        wp.tile_store(out, t)
        wp.tile_store(empty, wp.tile_empty(shape=4, dtype=Particle))

    out, empty = wp.zeros(4, dtype=Particle), wp.zeros(4, dtype=Particle)
    wp.launch_tiled(fill, [1], [out, empty], block_dim=1)
    values = out.numpy()
    assert values["mass"].tolist() == [0.0, 0.0, 2.5, 0.0]
    np.testing.assert_array_equal(values["position"][2], [1.0, 2.0, 3.0])
    assert not values["position"][[0, 1, 3]].any() and not empty.numpy()["mass"].any()


def test_gradient_through_a_struct_element():
    def run(x):
        y = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch_tiled(_through_struct_tile, [1], [x, y], block_dim=1)
        return y

    gradcheck(run, [wp.array([0.7, -1.3, 0.4], dtype=wp.float64, requires_grad=True)])


def test_tile_ones_of_a_struct_is_refused():
    @wp.kernel
    def ones(out: wp.array(dtype=Particle)):
        wp.tile_store(out, wp.tile_ones(4, dtype=Particle))

    with pytest.raises(TypeError, match="tile_ones.*Warp struct"):
        wp.launch_tiled(ones, [1], [wp.zeros(4, dtype=Particle)], block_dim=1)


@wp.struct
class Flags:
    bits: wp.int32


def _bitwise_kernel(form):
    if form == "tile":
        @wp.kernel
        def k(a: wp.array(dtype=Flags), out: wp.array(dtype=Flags)):
            t = wp.tile_load(a, shape=4)
            t |= t
            wp.tile_store(out, t)
    elif form == "element":
        @wp.kernel
        def k(a: wp.array(dtype=Flags), out: wp.array(dtype=Flags)):
            t = wp.tile_zeros(shape=1, dtype=Flags)
            t[0] &= a[0]
            out[0] = wp.tile_extract(t, 0)
    else:
        @wp.kernel
        def k(a: wp.array(dtype=Flags), out: wp.array(dtype=Flags)):
            v = a[0]
            v ^= a[1]
            out[0] = v
    return k


@pytest.mark.parametrize("form", ["tile", "element", "value"])
def test_bitwise_inplace_on_structs_is_refused(form):
    a = wp.zeros(4, dtype=Flags)
    with pytest.raises(TypeError, match="bitwise inplace.*Warp struct"):
        wp.launch_tiled(_bitwise_kernel(form), [1], [a, a], block_dim=1)


_PROGRAM = '''
import numpy as np


@wp.struct
class Body:
    mass: float
    velocity: wp.vec3


@wp.kernel
def place(src: wp.array(dtype=Body), out: wp.array(dtype=Body)):
    t = wp.tile_zeros(shape=5, dtype=Body, storage="shared")
    t[1] = src[3]
    t[4] = src[0]
    wp.tile_store(out, t)


def run(wp, Tape):
    raw = np.zeros(4, dtype=[("mass", "<f4"), ("velocity", "<f4", (3,))])
    raw["mass"] = [1.5, 2.5, 3.5, 4.5]
    raw["velocity"] = np.arange(12, dtype=np.float32).reshape(4, 3)
    src = wp.zeros(4, dtype=Body)
    for i in range(4):
        b = Body()
        b.mass = float(raw["mass"][i])
        b.velocity = wp.vec3(*raw["velocity"][i].tolist())
        wp.copy(src, wp.array([b], dtype=Body), dest_offset=i, count=1)
    out = wp.zeros(5, dtype=Body)
    wp.launch_tiled(place, dim=[1], inputs=[src, out], block_dim=8)
    values = out.numpy()
    return {"mass": np.array(values["mass"]), "velocity": np.array(values["velocity"])}
'''


def test_values_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_struct_zeros")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
