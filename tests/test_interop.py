"""Zero-copy interop: DLPack both ways (numpy as the other side) and the torch helpers, gradients included."""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape


@wp.kernel
def double(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0 * a[i]


@wp.kernel
def lengths(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(v[i])


@wp.kernel
def squares(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_from_dlpack_shares_numpy_memory_both_ways():
    host = np.arange(5, dtype=np.float32)
    a = wp.from_dlpack(host)
    assert a.dtype == wp.float32 and a.shape == (5,)
    wp.launch(double, 5, inputs=[a])
    np.testing.assert_array_equal(host, 2.0 * np.arange(5))
    host[0] = 7.0
    assert a.numpy()[0] == 7.0


def test_from_dlpack_reads_trailing_components_as_vectors():
    host = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], np.float32)
    v = wp.from_dlpack(host, dtype=wp.vec3)
    assert v.shape == (2,) and v.dtype == wp.vec3
    out = wp.zeros(2)
    wp.launch(lengths, 2, inputs=[v, out])
    np.testing.assert_allclose(out.numpy(), [5.0, 2.0])


def test_from_dlpack_refuses_what_it_would_have_to_copy():
    with pytest.raises(TypeError, match="float64.*convert it first"):
        wp.from_dlpack(np.zeros(3), dtype=wp.float32)
    with pytest.raises(ValueError, match=r"trailing dimensions \(3,\)"):
        wp.from_dlpack(np.zeros((4, 2), np.float32), dtype=wp.vec3)
    with pytest.raises(TypeError, match="needs an object with __dlpack__"):
        wp.from_dlpack([1.0, 2.0])


def test_to_dlpack_exports_without_a_copy():
    a = wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3)
    view = np.from_dlpack(a)
    assert view.shape == (1, 3)
    view[0, 1] = 9.0
    assert a.numpy()[0, 1] == 9.0
    capsule_view = np.from_dlpack(wp.from_dlpack(a))  # our own arrays go round the trip too
    assert capsule_view.ctypes.data == a.ptr
    assert type(wp.to_dlpack(a)).__name__ == "PyCapsule"


def test_torch_tensors_and_arrays_share_memory():
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.float32)
    a = wp.from_torch(t)
    wp.launch(double, 4, inputs=[a])
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0]
    back = wp.to_torch(a)
    back[1] = -1.0
    assert a.numpy()[1] == -1.0 and t[1].item() == -1.0
    v = wp.from_torch(torch.ones((3, 3)), dtype=wp.vec3)
    assert v.shape == (3,) and wp.to_torch(v).shape == (3, 3)
    assert wp.dtype_from_torch(torch.float64) is wp.float64
    assert wp.dtype_to_torch(wp.vec3) == torch.float32
    assert wp.device_from_torch(torch.device("cpu")) == "cpu" and wp.device_to_torch("cpu") == "cpu"
    with pytest.raises(TypeError, match="takes a torch.Tensor"):
        wp.from_torch(np.zeros(3))


def test_tape_gradients_land_in_the_tensors_grad_as_torch_autograd_computes():
    torch = pytest.importorskip("torch")
    x_t = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y_t = torch.zeros(3, requires_grad=True)
    x, y = wp.from_torch(x_t), wp.from_torch(y_t)
    assert x.requires_grad and x.grad is not None
    tape = Tape()
    with tape:
        wp.launch(squares, 3, inputs=[x, y])
    tape.backward(grads={y: wp.ones(3)})
    reference = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (reference * reference).sum().backward()
    torch.testing.assert_close(x_t.grad, reference.grad)
    t = wp.to_torch(x)
    assert t.requires_grad and t.grad.data_ptr() == x.grad.ptr


def test_a_tensor_without_requires_grad_gives_an_array_without_gradient():
    torch = pytest.importorskip("torch")
    a = wp.from_torch(torch.zeros(2))
    assert not a.requires_grad and a.grad is None
    assert not wp.to_torch(a).requires_grad


class _DeviceBuffer:
    """A DLPack producer that says its memory is on an OpenCL device (kDLOpenCL = 4)."""

    def __dlpack__(self, stream=None):
        raise AssertionError("not read: the device is checked first")

    def __dlpack_device__(self):
        return (4, 0)


def test_memory_off_the_cpu_is_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"DLPack device \(4, 0\); only CPU and CUDA memory"):
        wp.from_dlpack(_DeviceBuffer())
    with pytest.raises(TypeError, match="no kernel scalar type for elements of type complex64"):
        wp.from_dlpack(np.zeros(2, np.complex64))
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="tensor is on meta; only CPU and CUDA tensors"):
        wp.from_torch(torch.empty(3, device="meta"))
