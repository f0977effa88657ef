"""The order GCC's libstdc++ `std::sort` leaves elements in, equal ones included.

`std::sort` is not stable: elements that compare equal end up in an order that depends on the implementation
(libstdc++: introsort, median-of-three pivots, heapsort past a depth limit, insertion sort of runs of at most 16).
Warp's native code sorts with it (the GREEDY graph colouring orders nodes by degree), so reproducing Warp's
results needs that order, not Python's stable sort. This follows libstdc++'s published algorithm step by step.
"""

from __future__ import annotations

_THRESHOLD = 16  # runs this short are left to the final insertion sort


def stl_sort(items: list, less) -> None:
    """Sort `items` in place as libstdc++'s `std::sort(begin, end, less)` does; `less(a, b)` is the comparator."""
    n = len(items)
    if n < 2:
        return
    _introsort(items, 0, n, 2 * (n.bit_length() - 1), less)
    if n > _THRESHOLD:
        _insertion(items, 0, _THRESHOLD, less)
        for i in range(_THRESHOLD, n):
            _linear_insert(items, i, less)
    else:
        _insertion(items, 0, n, less)


def _introsort(a: list, first: int, last: int, depth: int, less) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: list, first: int, last: int, less) -> int:
    mid = first + (last - first) // 2
    _median_to_first(a, first, first + 1, mid, last - 1, less)
    return _partition(a, first + 1, last, first, less)


def _median_to_first(a: list, result: int, x: int, y: int, z: int, less) -> None:
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            pick = y
        elif less(a[x], a[z]):
            pick = z
        else:
            pick = x
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[result], a[pick] = a[pick], a[result]


def _partition(a: list, first: int, last: int, pivot: int, less) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _insertion(a: list, first: int, last: int, less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _linear_insert(a, i, less)


def _linear_insert(a: list, last: int, less) -> None:
    value = a[last]
    prev = last - 1
    while less(value, a[prev]):
        a[last] = a[prev]
        last = prev
        prev -= 1
    a[last] = value


def _adjust_heap(a: list, first: int, hole: int, length: int, value, less) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _heap_sort(a: list, first: int, last: int, less) -> None:
    length = last - first
    for parent in range((length - 2) // 2, -1, -1):  # make_heap
        _adjust_heap(a, first, parent, length, a[first + parent], less)
    while last - first > 1:  # sort_heap: pop the largest to the end, one at a time
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)
