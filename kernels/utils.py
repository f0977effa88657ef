"""Warp's `wp.utils` namespace: whole-array algorithms (kernels/runtime/array_algorithms.py)."""

from .runtime.array_algorithms import (array_cast, array_inner, array_scan, array_sum, radix_sort_pairs,
                                       runlength_encode, segmented_sort_pairs)

__all__ = ["array_cast", "array_inner", "array_scan", "array_sum", "radix_sort_pairs", "runlength_encode",
           "segmented_sort_pairs"]
