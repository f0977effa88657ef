"""Structs with Warp 1.19's rules and messages (issue 34; Warp's test_struct.py): a struct cannot derive from
another, a missing field and a wrong number of array indices are refused in Warp's words, one number (also a Warp
scalar) for a composite field is refused naming Warp's type (`vec3f`), `Struct.cls` is the instances' class and
`Struct.key` Warp's qualified name."""

import pytest

import kernels as wp


@wp.struct
class Foo:
    v: wp.vec3
    q: wp.quat


@wp.kernel(module="unique")
def _missing_field(foo: Foo):
    _ = foo.nonexisting


@wp.kernel(module="unique")
def _too_many_indices(out: wp.array2d(dtype=wp.mat44)):
    out[0][2, 2] = 6.0


def test_refusals_are_warps():
    with pytest.raises(AttributeError, match=r"`nonexisting` is not an attribute of 'foo' \([\w.]+\.Foo\)$"):
        wp.launch(_missing_field, dim=1, inputs=[Foo()])
    with pytest.raises(wp.CompileError, match="Incorrect number of indices specified for array indexing, got 2 "
                                              "indices for a 1 dimensional array"):
        wp.launch(_too_many_indices, dim=1, inputs=[wp.zeros((1, 1), dtype=wp.mat44)])
    with pytest.raises(RuntimeError, match="Warp structs must be defined as base classes$"):
        @wp.struct
        class Child(Foo):
            y: int
    s = Foo()
    for field, name in (("v", "vec3f"), ("q", "quatf")):
        for value in (123, 1.5, wp.float32(1.5), wp.int32(2)):
            with pytest.raises(TypeError, match=f"Struct field '{field}' expects {name} but got a single value"):
                setattr(s, field, value)


def test_struct_cls_is_the_class_of_its_instances():
    assert isinstance(Foo(), Foo.cls)


def test_struct_key_is_warps_qualified_name():
    @wp.struct
    class Local:
        key: int  # a field of that name keeps its own meaning

    assert Foo.key == "Foo"
    assert not hasattr(Local, "key") and Local(key=3).key == 3

    class Outer:
        @wp.struct
        class Inner:
            x: float

    assert Outer.Inner.key == "test_struct_key_is_warps_qualified_name__locals__Outer__Inner"


def test_fabric_field_refusals_name_fabric_as_warp():
    @wp.struct
    class Holder:
        values: wp.fabricarray[wp.int32]
        indexed: wp.indexedfabricarray[wp.int32]

    with pytest.raises(TypeError, match="Struct field 'values' expects a Warp Fabric array, got list"):
        Holder().values = [1, 2]
    with pytest.raises(TypeError, match="Struct field 'indexed' expects a Warp indexed Fabric array, got list"):
        Holder().indexed = [1, 2]
