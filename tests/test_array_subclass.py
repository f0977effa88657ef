"""Users' subclasses of the array classes, and what a launch says about values that are not arrays: an instance
of a subclass as an annotation is refused at decoration (Warp's rule), an annotation passed as a value names its
type, a dtype or dimension mismatch says which, a native descriptor (`a.__ctype__()`) is passed as it is."""

from typing import Any

import numpy as np
import pytest

import kernels as wp


class _Tagged(wp.array):
    def __init__(self, *args, tag, **kwargs):
        self.tag = tag
        super().__init__(*args, **kwargs)


@wp.kernel
def _double(a: wp.array[float], out: wp.array[float]):
    i = wp.tid()
    out[i] = a[i] * 2.0


@wp.kernel
def _double_indexed(a: wp.indexedarray[float], out: wp.array[float]):
    i = wp.tid()
    out[i] = a[i] * 2.0


@wp.kernel
def _read_or_default(a: wp.array[float], out: wp.array[float]):
    i = wp.tid()
    if a.shape[0] > 0:
        out[i] = a[i]
    else:
        out[i] = -1.0


def test_a_subclass_instance_is_no_annotation():
    instance = _Tagged([1.0, 2.0], tag="t", dtype=float)

    def as_kernel(a: instance):
        pass

    def as_function(a: float) -> instance:
        return a

    class AsStruct:
        field: instance

    for decorator, definition in ((wp.kernel, as_kernel), (wp.func, as_function), (wp.struct, AsStruct)):
        with pytest.raises(TypeError, match=r"array subclass instance \(_Tagged\) as an annotation; use the native "
                                            r"parent annotation wp.array\[dtype\]"):
            decorator(definition)


def test_subclass_instances_launch_as_their_family():
    a = _Tagged([1.0, 2.0], tag="in", dtype=float)
    out = _Tagged(shape=2, dtype=float, tag="out")
    wp.launch(_double, 2, inputs=[a], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
    assert out.tag == "out"


def test_annotations_are_not_values():
    out = wp.zeros(2, dtype=float)
    data = wp.array([1.0, 2.0], dtype=float)
    for kernel, annotation in ((_double, wp.array[float]), (_double_indexed, wp.indexedarray[float])):
        with pytest.raises(RuntimeError, match=f"argument 'a' expects an array of type .*passed value has type "
                                               f"{type(annotation).__name__}"):
            wp.launch(kernel, 2, inputs=[annotation], outputs=[out])
    command = wp.launch(_double, 2, inputs=[data], outputs=[out], record_cmd=True)
    for replace in (lambda: command.set_param_by_name("a", wp.array[float]),
                    lambda: command.set_param_at_index(0, wp.array[float])):
        with pytest.raises(RuntimeError, match="argument 'a' expects an array of type .*passed value has type "
                                               f"{type(wp.array[float]).__name__}"):
            replace()
    command.launch()  # the recorded argument was kept
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_mismatches_say_dtype_or_dimension():
    out = wp.zeros(2, dtype=float)
    with pytest.raises(RuntimeError, match="expects an array with dtype=float32, but the passed array has "
                                           "dtype=int32"):
        wp.launch(_double, 2, inputs=[wp.zeros(2, dtype=wp.int32)], outputs=[out])
    with pytest.raises(RuntimeError, match=r"with 1 dimension\(s\), but the passed array has 2 dimension\(s\)"):
        wp.launch(_double, 2, inputs=[wp.zeros((2, 2), dtype=float)], outputs=[out])


def test_null_arrays_and_native_descriptors():
    out = wp.zeros(2, dtype=float)
    wp.launch(_read_or_default, 2, inputs=[None], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [-1.0, -1.0])
    source = _Tagged([5.0, 6.0], tag="descriptor", dtype=float)
    wp.launch(_read_or_default, 2, inputs=[source.__ctype__()], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [5.0, 6.0])


@wp.struct
class _Holder:
    a: wp.array[float]


class _Redirected(_Tagged):
    """Gives the descriptor of another array (`redirect`): Warp's protocol passes what __ctype__ returns."""

    def __ctype__(self):
        return self.redirect.__ctype__()


class _Broken(_Tagged):
    def __ctype__(self):
        raise KeyError("descriptor failure")


class _WrongClass(_Tagged):
    def __ctype__(self):
        return wp.indexedarray(self, wp.array([0], dtype=wp.int32)).__ctype__()


def test_a_subclass_descriptor_is_checked_then_passed():
    source = _Redirected([1.0, 2.0], tag="own", dtype=float)
    source.redirect = wp.array([3.0, 4.0], dtype=float)
    out = wp.zeros(2, dtype=float)
    wp.launch(_double, 2, inputs=[source], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [6.0, 8.0])
    for bad, words in ((_Broken, "KeyError: 'descriptor failure'"), (_WrongClass, "must return ArrayDescriptor")):
        value = bad([1.0, 2.0], tag="bad", dtype=float)
        with pytest.raises(RuntimeError, match=f"argument 'a': .*{words}"):
            wp.launch(_double, 2, inputs=[value], outputs=[out])
        holder = _Holder()
        holder.a = original = wp.array([1.0], dtype=float)
        with pytest.raises(TypeError, match=f"Struct field 'a': .*{words}"):
            holder.a = value
        assert holder.a is original


_PROGRAM = '''
from typing import Any

import numpy as np


class Redirected(wp.array):
    def __ctype__(self):
        return self.redirect.__ctype__()


@wp.kernel
def double(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * 2.0


def run(wp, Tape):
    source = Redirected([1.0, 2.0], dtype=float, device="cpu")
    source.redirect = wp.array([3.0, 4.0], dtype=float, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(double, 2, inputs=[source], outputs=[out], device="cpu")
    return {"out": out.numpy()}
'''


def test_a_subclass_descriptor_gives_warps_numbers(tmp_path):
    pytest.importorskip("warp", reason="warp-lang (the reference, a test extra) is not installed")
    import _warp_reference

    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "array_subclass_descriptor")
    np.testing.assert_array_equal(ours["out"], warp["out"])


@wp.kernel
def _copy_generic(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = a[i]


def test_a_subclass_shares_its_parents_overload():
    explicit = wp.overload(_copy_generic, [wp.array[wp.float32], wp.array[wp.float32]])
    src = _Tagged([1.0, 2.0], tag="src", dtype=float)
    dst = _Tagged(shape=2, dtype=float, tag="dst")
    inferred = _copy_generic.infer_argument_types([src, dst])
    assert inferred == _copy_generic.infer_argument_types([wp.clone(src), wp.empty_like(dst)])
    assert _copy_generic.add_overload(inferred) is explicit
    wp.launch(_copy_generic, 2, inputs=[src], outputs=[dst])
    np.testing.assert_array_equal(dst.numpy(), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="Invalid number of arguments"):
        _copy_generic.infer_argument_types([src])
