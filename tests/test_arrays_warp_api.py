"""Arrays from Python the way Warp's API has them: creation keywords, fills with scalars and structs, `list()`,
views (`transpose`, `view`, sub-arrays, pointers), struct arrays and their numpy dtype, and the refusal of index
arrays (Warp's indexed arrays)."""

import ctypes

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck


@wp.kernel
def square_2d(x: wp.array2d(dtype=wp.float64), y: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    y[i, j] = x[i, j] * x[i, j] * wp.float64(i + 2 * j + 1)


@wp.kernel
def cube_1d(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i] * x[i]


@wp.struct
class Particle:
    id: int
    mass: float
    pos: wp.vec3


@wp.kernel
def particle_energy(ps: wp.array(dtype=Particle), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, ps[i].mass * wp.dot(ps[i].pos, ps[i].pos))


def test_index_arrays_make_indexed_arrays_not_gathers():
    # regression: data[idx, idx] used to return numpy's gather (shape (4,)); Warp returns a (4, 4) indexed array
    data = wp.array(np.arange(16, dtype=np.float32).reshape(4, 4))
    idx = wp.array([3, 2, 1, 0], dtype=wp.int32)
    both = data[idx, idx]
    assert type(both) is wp.indexedarray and both.shape == (4, 4)
    np.testing.assert_array_equal(both.numpy(), data.numpy()[np.ix_([3, 2, 1, 0], [3, 2, 1, 0])])
    assert data[idx].shape == (4, 4)
    for key in (np.array([0, 1]), [0, 1]):  # numpy and list keys: neither Warp's rule nor a gather
        with pytest.raises(TypeError, match="index arrays"):
            data[key]


def test_sub_array_views_and_slices_share_memory():
    a = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    row = a[1]
    assert row.shape == (4,) and row.ndim == 1
    assert row.ptr == a.ptr + a.strides[0]
    row.fill_(7.0)
    np.testing.assert_array_equal(a.numpy()[1], np.full(4, 7.0))
    assert row.grad.shape == (4,)
    col = a[:, 2]
    assert col.shape == (3,) and not col.is_contiguous
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        a[::0]


def test_creation_keywords():
    assert wp.zeros(n=5).shape == (5,)
    assert wp.empty().shape == (0,)
    a = wp.zeros(3, dtype=float, requires_grad=True, retain_grad=True, pinned=False)
    assert a.retain_grad
    with pytest.raises(ValueError, match="requires_grad"):
        wp.zeros(3, retain_grad=True)
    a.requires_grad = False
    assert not a.retain_grad
    with pytest.raises(ValueError, match="Array shapes must be non-negative"):
        wp.zeros((2, -1))
    assert wp.clone(wp.ones(2), retain_grad=False).list() == [1.0, 1.0]


def test_full_infers_dtype_and_broadcasts_scalars():
    assert wp.full(3, 2).dtype == wp.int32
    assert wp.full(3, 2.5).dtype == wp.float32
    assert wp.full(3, True).dtype == wp.bool
    assert wp.full(2, wp.vec3(1, 2, 3)).dtype == wp.vec3
    assert wp.full(2, [1.0, 2.0]).dtype == wp.types.vector(2, wp.float64)
    assert wp.full(2, [[1, 2], [3, 4]]).dtype == wp.types.matrix((2, 2), wp.int64)
    m = wp.full((2, 3), 4, dtype=wp.mat22)
    np.testing.assert_array_equal(m.numpy(), np.full((2, 3, 2, 2), 4.0))
    v = wp.zeros(2, dtype=wp.vec3)
    v.fill_(1.5)
    np.testing.assert_array_equal(v.numpy(), np.full((2, 3), 1.5))
    with pytest.raises(ValueError, match="cannot fill"):
        v.fill_([1.0, 2.0])


def test_list_gives_python_and_kernel_values():
    assert wp.full((2, 2), 3, dtype=wp.int64).list() == [3, 3, 3, 3]
    assert all(type(x) is float for x in wp.full(3, 1.5).list())
    vs = wp.full(2, wp.vec2(1, 2)).list()
    assert len(vs) == 2 and isinstance(vs[0], wp.vec2) and vs[0] == wp.vec2(1, 2)
    assert wp.zeros((0, 3)).list() == []


def test_data_with_packed_elements_and_shape():
    assert wp.array(np.arange(12, dtype=np.float32), dtype=wp.vec3).shape == (4,)
    assert wp.array(np.arange(24, dtype=np.float32).reshape(4, 6), dtype=wp.vec3).shape == (4, 2)
    assert wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), dtype=wp.mat22).shape == (3,)
    a = wp.array(np.arange(16, dtype=np.float32).reshape(4, 4), dtype=wp.mat22, shape=(2, 2))
    assert a.shape == (2, 2)
    assert wp.array([], dtype=wp.vec2).shape == (0,)


def test_zero_size_arrays_have_no_pointer_and_warp_strides():
    a = wp.zeros((1, 0), dtype=wp.vec2f, requires_grad=True)
    assert a.ptr is None and a.grad.ptr is None and a.size == 0
    assert a.__array_interface__["data"][0] != 0
    assert np.asarray(a).strides == (0, 8, 4)
    a.fill_(wp.vec2f(1, 2))
    assert a.transpose().shape == (0, 1)


def test_pointer_wrapping_and_deleter():
    src = wp.array(np.arange(6, dtype=np.float32))
    freed = []
    alias = wp.array(ptr=src.ptr, shape=(2, 3), dtype=wp.float32, deleter=lambda p, n: freed.append((p, n)))
    np.testing.assert_array_equal(alias.numpy(), np.arange(6).reshape(2, 3))
    alias.numpy()[1, 2] = -1.0
    assert src.numpy()[5] == -1.0
    ptr = src.ptr
    del alias
    assert freed == [(ptr, 24)]
    columns = wp.array(ptr=src.ptr, shape=(3, 2), strides=(4, 12), dtype=wp.float32)
    np.testing.assert_array_equal(columns.numpy(), src.numpy().reshape(2, 3).T)


def test_transpose_view_and_its_gradient():
    x = wp.array(np.random.default_rng(0).uniform(-1, 1, (3, 2)), dtype=wp.float64)

    def fn(x):
        y = wp.zeros((2, 3), dtype=wp.float64)
        wp.launch(square_2d, dim=(2, 3), inputs=[x.transpose()], outputs=[y])
        return y

    np.testing.assert_allclose(fn(x).numpy(), (x.numpy().T ** 2) * (np.arange(2)[:, None] + 2 * np.arange(3) + 1))
    gradcheck(fn, [x])


def test_row_view_gradient():
    x = wp.array(np.random.default_rng(1).uniform(-1, 1, (3, 4)), dtype=wp.float64)

    def fn(x):
        y = wp.zeros(4, dtype=wp.float64)
        wp.launch(cube_1d, dim=4, inputs=[x[1]], outputs=[y])
        return y

    gradcheck(fn, [x])


def test_dtype_views():
    v = wp.array(np.arange(8, dtype=np.float32).reshape(2, 4), dtype=wp.vec4)
    assert v.view(wp.quat).dtype == wp.quat
    s = v.view(float)
    assert s.shape == (2, 4)
    assert s.view(wp.vec4).shape == (2,)
    assert wp.array(np.arange(4, dtype=np.float32)).view(wp.vec4).shape == (1,)
    with pytest.raises(TypeError, match="source dtype has size 4 bytes, but target dtype has size 2 bytes"):
        wp.zeros(3, dtype=wp.float32).view(wp.uint16)
    assert v.view(wp.mat22).shape == (2,)


def test_struct_arrays_from_instances_numpy_and_fill():
    ps = []
    for i in range(3):
        p = Particle()
        p.id, p.mass, p.pos = i, 0.5 * i, wp.vec3(i, 1.0, 2.0)
        ps.append(p)
    a = wp.array(ps, dtype=Particle)
    na = a.numpy()
    assert na.dtype == Particle.numpy_dtype()
    np.testing.assert_array_equal(na["id"], [0, 1, 2])
    back = a.list()
    assert back[2].id == 2 and back[2].mass == 1.0 and back[2].pos == wp.vec3(2, 1, 2)
    assert a.cptr()[1].id == 1

    rec = np.zeros(2, dtype=Particle.numpy_dtype())
    rec["mass"] = 3.0
    np.testing.assert_array_equal(wp.from_numpy(rec, Particle).numpy(), rec)

    full = wp.full(4, ps[1])
    assert full.dtype is Particle
    expected = np.zeros(4, dtype=Particle.numpy_dtype())
    expected.fill(ps[1].numpy_value())
    np.testing.assert_array_equal(full.numpy(), expected)


def test_struct_array_gradient_through_fields():
    ps = [Particle() for _ in range(3)]
    for i, p in enumerate(ps):
        p.mass, p.pos = 1.0 + i, wp.vec3(1.0, i, 0.5)
    a = wp.array(ps, dtype=Particle, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(particle_energy, dim=3, inputs=[a, out])
    tape.backward(out)
    g = a.grad.numpy()
    pos = a.numpy()["pos"]
    np.testing.assert_allclose(g["mass"], (pos * pos).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(g["pos"], 2.0 * a.numpy()["mass"][:, None] * pos, rtol=1e-6)


def test_cptr_of_scalar_array():
    a = wp.array([1, 2, 3], dtype=wp.int32)
    c = a.cptr()
    assert isinstance(c, ctypes.Array) and list(c) == [1, 2, 3]


@pytest.mark.parametrize("op, dtype", [("add", wp.int8), ("add", wp.vec3us), ("min", wp.float16),
                                       ("max", wp.uint16), ("sub", wp.uint8)])
def test_atomics_refuse_types_without_a_native_atomic(op, dtype):
    atomic = getattr(wp, f"atomic_{op}")
    scalar = wp.types.scalar_type(dtype)

    def body(a: wp.array(dtype=dtype)):
        atomic(a, 0, dtype(scalar(0)))

    k = wp.kernel(body, module="unique")
    with pytest.raises(wp.CompileError, match=rf"atomic_{op}\(\) operations only work on arrays with .* but got "
                                              rf"{wp.types.type_repr(dtype)} \(with scalar type "
                                              rf"{wp.types.type_repr(scalar)}\)$"):
        wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=dtype)])


def test_reshape_infers_one_dimension_and_names_sizes():
    a = wp.array(np.arange(6, dtype=np.float32))
    assert a.reshape((-1, 3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match=r"shape \(6,\) \(size 6\) into shape \(4, 2\) \(size 8\)"):
        a.reshape((4, 2))
