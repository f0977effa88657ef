"""Warp's `wp.utils` namespace: whole-array algorithms (kernels/runtime/array_algorithms.py) and graph colouring
(kernels/runtime/graph_coloring.py)."""

from .runtime.array_algorithms import (array_cast, array_inner, array_scan, array_sum, radix_sort_pairs,
                                       runlength_encode, segmented_sort_pairs)
from .runtime.graph_coloring import (GraphColoringAlgorithm, graph_coloring_assign, graph_coloring_balance,
                                     graph_coloring_get_groups)

__all__ = ["array_cast", "array_inner", "array_scan", "array_sum", "radix_sort_pairs", "runlength_encode",
           "segmented_sort_pairs", "GraphColoringAlgorithm", "graph_coloring_assign", "graph_coloring_balance",
           "graph_coloring_get_groups"]
