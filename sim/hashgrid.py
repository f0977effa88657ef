"""A uniform hash grid over points, built and queried in the kernel language (Warp's `wp.HashGrid`, without the
opaque query object).

Every point goes to the cell `floor(p / cell_width)`, wrapped modulo the grid's dimensions, so the grid covers
unbounded space with a fixed number of cells: far-apart points may share a cell (a hash collision), which costs
extra candidates but never misses a neighbour. Building is four kernels: hash and count (atomics), an exclusive
prefix sum over the counts (blocked: chunks in parallel, then the chunk totals), scatter, and a sort of each cell
by point index so that the result does not depend on thread timing.

A kernel queries through `HashGridData` and the @wp.func helpers below; every neighbour j of a point p within
`cell_width` is visited once:

    c = hash_grid_cell_of(grid, p)
    for n in range(27):
        cell = hash_grid_neighbor_cell(grid, c, n)
        if cell >= 0:
            for k in range(grid.cell_start[cell], grid.cell_end[cell]):
                j = grid.sorted_index[k]
                ...   # test the actual distance: a candidate is not necessarily a neighbour

Each build allocates new query arrays and a new `HashGridData`, so a tape that recorded a kernel reading an
earlier build's data replays it with that data, not with a later build's.
"""

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace (__import__('sim.hashgrid') is `sim`), where `wp` is not defined
import numpy as np

import kernels as wp

SCAN_CHUNK = 256  # cells summed serially by one thread of the prefix sum


@wp.struct
class HashGridData:
    """What a kernel needs to look up the points of a cell.

    cell_start, cell_end: the points of cell c are sorted_index[cell_start[c]:cell_end[c]], shape [cell_count],
        int32.
    sorted_index: point indices ordered by cell, then by index, shape [point_count], int32.
    dim_x, dim_y, dim_z: cells along each axis (the wrap-around period).
    cell_width: edge of a cell [m]; inv_cell_width is its inverse [1/m].
    """

    cell_start: wp.array(dtype=wp.int32)
    cell_end: wp.array(dtype=wp.int32)
    sorted_index: wp.array(dtype=wp.int32)
    dim_x: int
    dim_y: int
    dim_z: int
    cell_width: float
    inv_cell_width: float


# ------------------------------------------------------------------------------------------------------------
# Query helpers


@wp.func
def hash_grid_wrap(c: int, dim: int):
    """c modulo dim in [0, dim) (C's % keeps the sign of c)."""
    r = c % dim
    if r < 0:
        r = r + dim
    return r


@wp.func
def hash_grid_cell_of(grid: HashGridData, p: wp.vec3):
    """Integer cell coordinates of point p (not wrapped). Clamped so that a point far away (or a diverged
    simulation's) cannot overflow an int32 cell coordinate."""
    s = grid.inv_cell_width
    x = wp.clamp(p[0] * s, -1.0e9, 1.0e9)
    y = wp.clamp(p[1] * s, -1.0e9, 1.0e9)
    z = wp.clamp(p[2] * s, -1.0e9, 1.0e9)
    return wp.vec3i(int(wp.floor(x)), int(wp.floor(y)), int(wp.floor(z)))


@wp.func
def hash_grid_cell_index(grid: HashGridData, c: wp.vec3i):
    """Flat index of the cell at coordinates c, wrapped into the grid."""
    x = hash_grid_wrap(c[0], grid.dim_x)
    y = hash_grid_wrap(c[1], grid.dim_y)
    z = hash_grid_wrap(c[2], grid.dim_z)
    return (z * grid.dim_y + y) * grid.dim_x + x


@wp.func
def hash_grid_axis_offset_repeats(offset: int, dim: int):
    """Whether offset (-1, 0 or 1) wraps onto a cell an earlier offset already gave: along an axis of fewer
    than 3 cells, the 3 offsets name only `dim` distinct cells."""
    if dim == 1:
        return offset != 0
    if dim == 2:
        return offset == 1
    return False


@wp.func
def hash_grid_neighbor_cell(grid: HashGridData, center: wp.vec3i, n: int):
    """Flat index of neighbour n (0..26) of the cell at coordinates `center`, or -1 when it repeats an earlier
    neighbour (grids of fewer than 3 cells along an axis)."""
    dx = n % 3 - 1
    dy = (n // 3) % 3 - 1
    dz = n // 9 - 1
    if hash_grid_axis_offset_repeats(dx, grid.dim_x):
        return -1
    if hash_grid_axis_offset_repeats(dy, grid.dim_y):
        return -1
    if hash_grid_axis_offset_repeats(dz, grid.dim_z):
        return -1
    return hash_grid_cell_index(grid, center + wp.vec3i(dx, dy, dz))


@wp.func
def hash_grid_box_extent(grid: HashGridData, lower: wp.vec3i, upper: wp.vec3i):
    """Cells per axis of the box of cells lower..upper (coordinates from hash_grid_cell_of, inclusive), at most
    the grid's dimension along each axis, so that a query over the box visits no wrapped cell twice:

        lo = hash_grid_cell_of(grid, p - r); n = hash_grid_box_extent(grid, lo, hash_grid_cell_of(grid, p + r))
        for z in range(n[2]): for y in range(n[1]): for x in range(n[0]):
            cell = hash_grid_cell_index(grid, lo + wp.vec3i(x, y, z))

    visits every cell that holds a point within the box p +- r (r [m] may exceed the cell width)."""
    return wp.vec3i(wp.min(upper[0] - lower[0] + 1, grid.dim_x), wp.min(upper[1] - lower[1] + 1, grid.dim_y),
                    wp.min(upper[2] - lower[2] + 1, grid.dim_z))


# ------------------------------------------------------------------------------------------------------------
# Build kernels


@wp.kernel
def hash_grid_count(points: wp.array(dtype=wp.vec3), grid: HashGridData, point_cell: wp.array(dtype=wp.int32),
                    cell_count: wp.array(dtype=wp.int32)):
    i = wp.tid()
    cell = hash_grid_cell_index(grid, hash_grid_cell_of(grid, points[i]))
    point_cell[i] = cell
    wp.atomic_add(cell_count, cell, 1)


@wp.kernel
def hash_grid_scan_chunks(cell_count: wp.array(dtype=wp.int32), cell_start: wp.array(dtype=wp.int32),
                          chunk_total: wp.array(dtype=wp.int32)):
    """Exclusive prefix sum within each chunk of SCAN_CHUNK cells; the chunk's total into chunk_total."""
    chunk = wp.tid()
    begin = chunk * SCAN_CHUNK
    end = wp.min(begin + SCAN_CHUNK, cell_count.shape[0])
    total = int(0)
    for c in range(begin, end):
        cell_start[c] = total
        total = total + cell_count[c]
    chunk_total[chunk] = total


@wp.kernel
def hash_grid_scan_totals(chunk_total: wp.array(dtype=wp.int32), chunk_offset: wp.array(dtype=wp.int32)):
    """Exclusive prefix sum of the chunk totals (one thread: there are cell_count / SCAN_CHUNK of them)."""
    total = int(0)
    for k in range(chunk_total.shape[0]):
        chunk_offset[k] = total
        total = total + chunk_total[k]


@wp.kernel
def hash_grid_finish_ranges(cell_count: wp.array(dtype=wp.int32), chunk_offset: wp.array(dtype=wp.int32),
                            cell_start: wp.array(dtype=wp.int32), cell_end: wp.array(dtype=wp.int32),
                            cell_fill: wp.array(dtype=wp.int32)):
    c = wp.tid()
    start = cell_start[c] + chunk_offset[c // SCAN_CHUNK]
    cell_start[c] = start
    cell_end[c] = start + cell_count[c]
    cell_fill[c] = start


@wp.kernel
def hash_grid_scatter(point_cell: wp.array(dtype=wp.int32), cell_fill: wp.array(dtype=wp.int32),
                      sorted_index: wp.array(dtype=wp.int32)):
    i = wp.tid()
    slot = wp.atomic_add(cell_fill, point_cell[i], 1)
    sorted_index[slot] = i


@wp.kernel
def hash_grid_sort_cells(cell_start: wp.array(dtype=wp.int32), cell_end: wp.array(dtype=wp.int32),
                         sorted_index: wp.array(dtype=wp.int32)):
    """Insertion sort of each cell's points by index (cells hold few points): a result independent of the order
    in which the scatter's atomics ran."""
    c = wp.tid()
    begin = cell_start[c]
    for k in range(begin + 1, cell_end[c]):
        value = sorted_index[k]
        m = k - 1
        while m >= begin and sorted_index[m] > value:
            sorted_index[m + 1] = sorted_index[m]
            m = m - 1
        sorted_index[m + 1] = value


# ------------------------------------------------------------------------------------------------------------


class HashGrid:
    """A hash grid of dim_x * dim_y * dim_z cells on `device`. `build(points, radius)` sorts points into cells of
    width `radius`; `data` (a HashGridData) is what kernels query. Like Warp's, the build is not differentiated:
    it only produces integer data."""

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device=None):
        if min(dim_x, dim_y, dim_z) < 1:
            raise ValueError(f"hash grid dimensions must be positive, got ({dim_x}, {dim_y}, {dim_z})")
        self.dim_x, self.dim_y, self.dim_z = int(dim_x), int(dim_y), int(dim_z)
        self.device = wp.get_device(device)
        self.cell_count = self.dim_x * self.dim_y * self.dim_z
        self.chunk_count = (self.cell_count + SCAN_CHUNK - 1) // SCAN_CHUNK
        self.data = None
        self._data_width = None  # the cell width [m] of `data`
        self.point_count = 0
        # scratch reused between builds; the query arrays are new each build (see the module docstring)
        self._count = wp.zeros(self.cell_count, dtype=wp.int32, device=self.device)
        self._fill = wp.zeros(self.cell_count, dtype=wp.int32, device=self.device)
        self._chunk_total = wp.zeros(self.chunk_count, dtype=wp.int32, device=self.device)
        self._chunk_offset = wp.zeros(self.chunk_count, dtype=wp.int32, device=self.device)
        self._point_cell = None

    def build(self, points, radius: float, keep_arrays: bool = False):
        """Sort `points` (wp.array of vec3 [m], shape [point_count]) into cells of width `radius` [m]: the points
        within `radius` of a point lie in its cell's 27 neighbours. With `keep_arrays`, the previous build's
        query arrays are refilled (for callers whose readers no tape records) instead of new ones allocated."""
        if not radius > 0:
            raise ValueError(f"hash grid cell width must be positive, got {radius}")
        n = points.shape[0]
        d = self.device
        previous = self.data
        refill = keep_arrays and previous is not None and previous.sorted_index.shape[0] == n
        if refill and self._data_width == float(radius):
            # every cell's start and end and every point's slot are rewritten below; the same struct keeps its
            # packed form (a solver passes it at each step)
            data = previous
        else:
            data = HashGridData()
            data.dim_x, data.dim_y, data.dim_z = self.dim_x, self.dim_y, self.dim_z
            data.cell_width = float(radius)
            data.inv_cell_width = 1.0 / float(radius)
            if refill:
                data.cell_start, data.cell_end, data.sorted_index = \
                    previous.cell_start, previous.cell_end, previous.sorted_index
            else:
                data.cell_start = wp.zeros(self.cell_count, dtype=wp.int32, device=d)
                data.cell_end = wp.zeros(self.cell_count, dtype=wp.int32, device=d)
                data.sorted_index = wp.zeros(n, dtype=wp.int32, device=d)
        if self._point_cell is None or self._point_cell.shape[0] != n:
            self._point_cell = wp.zeros(n, dtype=wp.int32, device=d)
        self._count.zero_()

        def run(kernel, dim, inputs):
            wp.launch(kernel, dim=dim, inputs=inputs, device=d, record_tape=False)

        if n > 0:
            run(hash_grid_count, n, [points, data, self._point_cell, self._count])
        run(hash_grid_scan_chunks, self.chunk_count, [self._count, data.cell_start, self._chunk_total])
        run(hash_grid_scan_totals, 1, [self._chunk_total, self._chunk_offset])
        run(hash_grid_finish_ranges, self.cell_count,
            [self._count, self._chunk_offset, data.cell_start, data.cell_end, self._fill])
        if n > 0:
            run(hash_grid_scatter, n, [self._point_cell, self._fill, data.sorted_index])
            run(hash_grid_sort_cells, self.cell_count, [data.cell_start, data.cell_end, data.sorted_index])
        self.data = data
        self._data_width = float(radius)
        self.point_count = n
        return data


def hash_grid_dims_for(point_count: int, max_dim: int = 128) -> int:
    """A cubic grid's cells per axis for `point_count` points: about one cell per point, at least 3 per axis
    (so the 27 neighbours are distinct) and at most `max_dim`."""
    return int(np.clip(np.ceil(np.cbrt(max(point_count, 1))), 3, max_dim))
