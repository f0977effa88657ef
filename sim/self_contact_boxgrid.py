"""The full search's edge-edge broad phase (sim/self_contact.py): edges binned by their own boxes in a hash grid,
each pair visited once.

Every edge's box, grown by half the query radius r_q, is inserted into each cell of width `cell_width` that it
covers (at most `CELLS_PER_AXIS` per axis for an edge up to the search's `typical` half length; longer edges are
searched from the search's list instead). Two edges within r_q of each other have overlapping grown boxes, so
they share every cell that holds the lower corner of the overlap: an edge e visits the cells of its own grown
box and tests a candidate f > e only in the one cell that holds that corner (a cell's entries are sorted by
edge index, so its scan starts at the first f > e, found by binary search: 15% off the pile's edge query).
Compared with a grid of midpoints queried over the cells that could hold a near edge's midpoint (reach r_q plus
the longest edge), a query visits the few cells its own box covers (1 to 8), not some 100 (in the 64 x 64 pile
the search is only 5% cheaper: the candidates each cell holds, not the cells, are its cost).

The build is that of sim/hashgrid.py (count, blocked prefix sum, scatter, each cell sorted by edge index so that
the result does not depend on thread timing), with several cells per edge; the capacity is fixed, so nothing
waits for the device. Integer data only: nothing here is differentiated.
"""

import kernels as wp

from .hashgrid import (SCAN_CHUNK, HashGridData, hash_grid_box_extent, hash_grid_cell_index, hash_grid_cell_of,
                       hash_grid_dims_for, hash_grid_finish_ranges, hash_grid_scan_chunks, hash_grid_scan_totals,
                       hash_grid_sort_cells)

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

#: cells per axis a typical edge's grown box may cover: the cell width is its largest extent / (this - 1). Measured
#: on the 64 x 64 pile (one thread): 2 (cells of the largest extent) 21.6 ms a query of every edge, 3: 22.1 ms,
#: 5: 59 ms (more cells per edge and more repeated candidates); at most 3, the smallest grid's cells per axis
CELLS_PER_AXIS = 2
#: hash grid cells per edge: a cell is some 2.5 edge lengths wide and a sheet crossing it holds ~20 edges, so
#: most cells stay empty even so; the build's passes over every cell cost with their number (8 per edge: 2.3
#: ms a build of the 64 x 64 pile, 2: 1.8 ms, the same query time and the same pairs in the same order)
CELLS_PER_EDGE = 2


@wp.struct
class BoxGridData:
    """An edge box grid as the query sees it.

    grid: cell ranges into the entries, by cell then by edge index (HashGridData; sorted_index holds edges).
    lower, upper: each entry's grown box [m], in the entries' order (the query reads them one after the other).
    first: the cell coordinates of each entry's grown lower corner (not wrapped): the overlap's lower corner of
        two grown boxes is in the cell max(first_e, first_f), per axis (floor is monotone).
    grow: how much each box was grown [m] (half the query radius).
    """

    grid: HashGridData
    lower: wp.array(dtype=wp.vec3)
    upper: wp.array(dtype=wp.vec3)
    first: wp.array(dtype=wp.vec3i)
    grow: float


@wp.func
def grown_box_cells(grid: HashGridData, lower: wp.vec3, upper: wp.vec3, grow: float):
    """First cell (coordinates) and cells per axis of the box [lower - grow, upper + grow] [m]."""
    g = wp.vec3(grow, grow, grow)
    first = hash_grid_cell_of(grid, lower - g)
    return first, hash_grid_box_extent(grid, first, hash_grid_cell_of(grid, upper + g))


@wp.func
def first_entry_above(grid: HashGridData, start: int, end: int, e: int):
    """The first entry k in [start, end) of a cell whose edge sorted_index[k] > e (end when none): a cell's
    entries are sorted by edge index (hash_grid_sort_cells), so a query that visits each pair once, from its lower
    edge, starts there and skips the half of the cell it would reject one by one (binary search)."""
    lo = start
    hi = end
    while lo < hi:
        mid = (lo + hi) // 2
        if grid.sorted_index[mid] <= e:
            lo = mid + 1
        else:
            hi = mid
    return lo


@wp.kernel
def box_grid_count(lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3), radius: wp.array(dtype=float),
                   typical: float, grow: float, grid: HashGridData, cell_count: wp.array(dtype=wp.int32)):
    """Count each typical edge (half length radius[e] <= typical [m]) in every cell its grown box covers."""
    e = wp.tid()
    if radius[e] > typical:
        return
    first, extent = grown_box_cells(grid, lower[e], upper[e], grow)
    for cz in range(extent[2]):
        for cy in range(extent[1]):
            for cx in range(extent[0]):
                wp.atomic_add(cell_count, hash_grid_cell_index(grid, first + wp.vec3i(cx, cy, cz)), 1)


@wp.kernel
def box_grid_scatter(lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3), radius: wp.array(dtype=float),
                     typical: float, grow: float, grid: HashGridData, cell_fill: wp.array(dtype=wp.int32)):
    """Write each typical edge into the entries of every cell its grown box covers (any order within a cell)."""
    e = wp.tid()
    if radius[e] > typical:
        return
    first, extent = grown_box_cells(grid, lower[e], upper[e], grow)
    for cz in range(extent[2]):
        for cy in range(extent[1]):
            for cx in range(extent[0]):
                slot = wp.atomic_add(cell_fill, hash_grid_cell_index(grid, first + wp.vec3i(cx, cy, cz)), 1)
                grid.sorted_index[slot] = e


@wp.kernel
def box_grid_boxes(lower: wp.array(dtype=wp.vec3), upper: wp.array(dtype=wp.vec3), entries: BoxGridData,
                   count: wp.array(dtype=wp.int32)):
    """The grown box of every entry, in the entries' order (count[0]: entries filled)."""
    k = wp.tid()
    if k >= count[0]:
        return
    e = entries.grid.sorted_index[k]
    g = wp.vec3(entries.grow, entries.grow, entries.grow)
    entries.lower[k] = lower[e] - g
    entries.upper[k] = upper[e] + g
    entries.first[k] = hash_grid_cell_of(entries.grid, lower[e] - g)


@wp.kernel
def box_grid_total(cell_end: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32)):
    """The number of entries (the last cell's end)."""
    count[0] = cell_end[cell_end.shape[0] - 1]


class BoxGrid:
    """A hash grid of edge boxes (see the module docstring), rebuilt by `build` at each full search.

    edge_count: edges; largest_extent: the largest extent [m] along an axis of a typical edge's box (twice the
    search's typical half length); grow: half the query radius [m].
    """

    def __init__(self, edge_count: int, largest_extent: float, grow: float, device):
        self.device = device
        dims = hash_grid_dims_for(CELLS_PER_EDGE * edge_count)
        self.cell_width = max((largest_extent + 2.0 * grow) / (CELLS_PER_AXIS - 1), 1.0e-6)
        self.grow = float(grow)
        self.edge_count = edge_count
        cells = dims ** 3
        capacity = max(edge_count, 1) * CELLS_PER_AXIS ** 3
        data = BoxGridData()
        grid = HashGridData()
        grid.dim_x = grid.dim_y = grid.dim_z = dims
        grid.cell_width = self.cell_width
        grid.inv_cell_width = 1.0 / self.cell_width
        grid.cell_start = wp.zeros(cells, dtype=wp.int32, device=device)
        grid.cell_end = wp.zeros(cells, dtype=wp.int32, device=device)
        grid.sorted_index = wp.zeros(capacity, dtype=wp.int32, device=device)
        data.grid = grid
        data.lower = wp.zeros(capacity, dtype=wp.vec3, device=device)
        data.upper = wp.zeros(capacity, dtype=wp.vec3, device=device)
        data.first = wp.zeros(capacity, dtype=wp.vec3i, device=device)
        data.grow = self.grow
        self.data = data
        self._count = wp.zeros(cells, dtype=wp.int32, device=device)
        self._fill = wp.zeros(cells, dtype=wp.int32, device=device)
        chunks = (cells + SCAN_CHUNK - 1) // SCAN_CHUNK
        self._chunk_total = wp.zeros(chunks, dtype=wp.int32, device=device)
        self._chunk_offset = wp.zeros(chunks, dtype=wp.int32, device=device)
        self._total = wp.zeros(1, dtype=wp.int32, device=device)

    def build(self, lower, upper, radius, typical: float) -> BoxGridData:
        """Bin the edges of half length radius <= typical [m] by their boxes [lower, upper] [m] (vec3
        [edge_count] each); the query arrays are refilled in place (the search is not taped)."""
        d, data, grid = self.device, self.data, self.data.grid
        cells = self._count.shape[0]

        def run(kernel, dim, inputs):
            wp.launch(kernel, dim=dim, inputs=inputs, device=d, record_tape=False)

        self._count.zero_()
        common = [lower, upper, radius, float(typical), self.grow, grid]
        run(box_grid_count, self.edge_count, common + [self._count])
        run(hash_grid_scan_chunks, self._chunk_total.shape[0], [self._count, grid.cell_start, self._chunk_total])
        run(hash_grid_scan_totals, 1, [self._chunk_total, self._chunk_offset])
        run(hash_grid_finish_ranges, cells, [self._count, self._chunk_offset, grid.cell_start, grid.cell_end,
                                             self._fill])
        run(box_grid_scatter, self.edge_count, common + [self._fill])
        run(hash_grid_sort_cells, cells, [grid.cell_start, grid.cell_end, grid.sorted_index])
        run(box_grid_total, 1, [grid.cell_end, self._total])
        run(box_grid_boxes, grid.sorted_index.shape[0], [lower, upper, data, self._total])
        return data
