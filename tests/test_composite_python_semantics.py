"""Python-side vectors and matrices as Warp's are (kernels/types.py): a constructor copies its argument (a copy of
a vector never writes through to it), and an item set wraps integers like the C++ types, as constructors do."""

import numpy as np

import kernels as wp


def test_constructors_copy():
    v = wp.vec3(2, 4, 6)
    c = wp.vec3(v)
    c[0] = 123
    assert list(v) == [2, 4, 6] and list(c) == [123, 4, 6]
    source = np.ones(3, np.float32)
    w = wp.vec3(source)
    source[0] = 5
    assert list(w) == [1, 1, 1]
    m = wp.mat22(1, 2, 3, 4)
    m2 = wp.mat22(m)
    m2[0, 0] = 9
    assert m[0, 0] == 1 and m2[0, 0] == 9


def test_item_set_wraps_integers_like_constructors():
    v = wp.vec3ui(1, 2, 3)
    v[0] = -1
    assert v[0] == 2**32 - 1 == wp.vec3ui(-1, 0, 0)[0]
    b = wp.vec3ub(0, 0, 0)
    b[1] = 300
    assert b[1] == 300 - 256
    m = wp.mat22(1, 2, 3, 4)
    m[0] = wp.vec2(7, 8)
    assert m[0, 0] == 7 and m[0, 1] == 8 and m[1, 0] == 3


def test_bad_keys_and_values_say_what_warp_says():
    import pytest
    m = wp.mat22h(1, 2, 3, 4)
    with pytest.raises(KeyError, match="Invalid key None, expected int or pair of ints"):
        m[None]
    with pytest.raises(KeyError, match="Invalid key, expected one or two indices, got 3"):
        m[0, 1, 2] = 1
    with pytest.raises(KeyError, match="Invalid key None, expected int or slice"):
        wp.vec3(1, 2, 3)[None] = 0
    with pytest.raises(TypeError, match="Expected to assign a `float16` value but got `str` instead"):
        m[0, 0] = "123.0"
    assert list(m[:, 0]) == [1, 3] and m[1, 1] == 4  # slices and index pairs as before


def test_constant_takes_value_types_only():
    import pytest
    assert wp.constant(2) == 2 and wp.constant(wp.float16(1.5)) == 1.5 and wp.constant(wp.vec2(1, 2))[1] == 2
    with pytest.raises(TypeError, match=r"Invalid constant type: <class 'tuple'>"):
        wp.constant((1, 2, 3))
