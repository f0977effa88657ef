"""Kernel parameters and struct fields named like C++ keywords (`default`, `register`, `new`): valid Python
names, so valid kernel parameters and fields; the generated C++ and CUDA must compile and the values and gradients
be those of any other name (real Warp 1.19 fails to build such a kernel: a C++ error)."""

import numpy as np

import kernels as wp
from autodiff import gradcheck


@wp.kernel
def keyword_params(default: float, out: wp.array(dtype=float), register: int, new: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = default * new[i] * new[i] + float(register)


def test_keyword_named_parameters_compute_like_any_other(device):
    new = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, device=device)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(keyword_params, dim=3, inputs=[2.0, out, 5, new], device=device)
    np.testing.assert_allclose(out.numpy(), 2.0 * np.array([1.0, 4.0, 9.0]) + 5.0)


def test_keyword_named_array_parameter_gradient_matches_finite_differences(device):
    new = wp.array(np.array([0.5, 1.5, -2.0]), dtype=float, device=device, requires_grad=True)

    def fn(new):
        out = wp.zeros(3, dtype=float, device=device, requires_grad=True)
        wp.launch(keyword_params, dim=3, inputs=[1.5, out, 2, new], device=device)
        return out

    gradcheck(fn, [new])


def test_keyword_named_parameters_cuda_source_compiles():
    ptx = wp.compile_ptx(keyword_params, arch=90)
    assert "keyword_params" in ptx and "_backward" in ptx


@wp.struct
class KeywordFields:
    default: float
    new: wp.vec3
    delete: wp.array(dtype=float)


@wp.kernel
def keyword_fields(s: KeywordFields, out: wp.array(dtype=float)):
    i = wp.tid()
    t = s  # a struct value copied and changed field by field in the kernel
    t.default = s.default * 2.0
    out[i] = t.default * s.delete[i] + s.new[1] * s.delete[i] * s.delete[i]


def _keyword_struct(device, delete):
    s = KeywordFields()
    s.default = 1.5
    s.new = wp.vec3(0.0, 3.0, 0.0)
    s.delete = delete
    return s


def test_keyword_named_struct_fields_compute_like_any_other(device):
    delete = wp.array(np.array([1.0, 2.0, -1.0], dtype=np.float32), dtype=float, device=device)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(keyword_fields, dim=3, inputs=[_keyword_struct(device, delete), out], device=device)
    d = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(out.numpy(), 3.0 * d + 3.0 * d * d)


def test_keyword_named_struct_field_array_gradient_matches_finite_differences(device):
    delete = wp.array(np.array([0.5, 1.5, -2.0]), dtype=float, device=device, requires_grad=True)

    def fn(delete):
        out = wp.zeros(3, dtype=float, device=device, requires_grad=True)
        wp.launch(keyword_fields, dim=3, inputs=[_keyword_struct(device, delete), out], device=device)
        return out

    gradcheck(fn, [delete])


def test_keyword_named_struct_fields_cuda_source_compiles():
    ptx = wp.compile_ptx(keyword_fields, arch=90)
    assert "keyword_fields" in ptx and "_backward" in ptx
