"""The vertices and edges of cloth self-contact (sim/self_contact.py) that list pairs, in increasing order: the
solvers' pair passes run one thread per listed vertex or edge rather than one per vertex or edge (most of them
list none, even in a pile: two thirds of the edges of the 64 x 64 drop's heap, whose threads cost the passes
their reads and call before returning). Built after each search, in the order of the indices whatever the thread
timing: on a GPU by a blocked count, a scan of the block totals and a blocked fill; on the CPU by one thread over
both lists (list_active_serial: one launch where the blocked form takes six, each costing about what the whole
serial pass does on a cloth of a few thousand vertices). Integer data only: nothing here is differentiated."""

import kernels as wp

# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

ACTIVE_CHUNK = 256  # indices counted and filled by one thread


@wp.kernel
def count_listing(counts: wp.array(dtype=wp.int32), chunk_total: wp.array(dtype=wp.int32)):
    """chunk_total[c] = how many of indices c ACTIVE_CHUNK ... (c + 1) ACTIVE_CHUNK - 1 have counts > 0."""
    chunk = wp.tid()
    begin = chunk * ACTIVE_CHUNK
    total = int(0)
    for i in range(begin, wp.min(begin + ACTIVE_CHUNK, counts.shape[0])):
        if counts[i] > 0:
            total = total + 1
    chunk_total[chunk] = total


@wp.kernel
def scan_listing(chunk_total: wp.array(dtype=wp.int32), chunk_offset: wp.array(dtype=wp.int32),
                 active_count: wp.array(dtype=wp.int32), slot: int):
    """Exclusive prefix sum of the chunk totals (one thread: a few dozen chunks); the sum to active_count[slot]."""
    total = int(0)
    for k in range(chunk_total.shape[0]):
        chunk_offset[k] = total
        total = total + chunk_total[k]
    active_count[slot] = total


@wp.kernel
def fill_listing(counts: wp.array(dtype=wp.int32), chunk_offset: wp.array(dtype=wp.int32),
                 active: wp.array(dtype=wp.int32)):
    """The indices with counts > 0 of each chunk, in order, from its offset."""
    chunk = wp.tid()
    begin = chunk * ACTIVE_CHUNK
    k = chunk_offset[chunk]
    for i in range(begin, wp.min(begin + ACTIVE_CHUNK, counts.shape[0])):
        if counts[i] > 0:
            active[k] = i
            k = k + 1


@wp.kernel
def list_active_serial(vt_count: wp.array(dtype=wp.int32), ee_count: wp.array(dtype=wp.int32),
                       vt_active: wp.array(dtype=wp.int32), ee_active: wp.array(dtype=wp.int32),
                       active_count: wp.array(dtype=wp.int32)):
    """Both lists by one thread (dim 1): the indices with counts > 0 in order, and how many of each."""
    k = int(0)
    for i in range(vt_count.shape[0]):
        if vt_count[i] > 0:
            vt_active[k] = i
            k = k + 1
    active_count[0] = k
    k = 0
    for i in range(ee_count.shape[0]):
        if ee_count[i] > 0:
            ee_active[k] = i
            k = k + 1
    active_count[1] = k


class ActiveLists:
    """Builds SelfContactData.vt_active / ee_active and active_count from vt_count / ee_count (see the module
    docstring) for `vertex_count` vertices and `edge_count` edges on `device`."""

    def __init__(self, vertex_count: int, edge_count: int, device):
        self.device = device
        self.sizes = (vertex_count, max(edge_count, 1))
        self._scratch = [(wp.zeros(self._chunks(n), dtype=wp.int32, device=device),
                          wp.zeros(self._chunks(n), dtype=wp.int32, device=device)) for n in self.sizes]

    @staticmethod
    def _chunks(n: int) -> int:
        return max((n + ACTIVE_CHUNK - 1) // ACTIVE_CHUNK, 1)

    def build(self, data, *, serial: bool | None = None):
        """Fill data.vt_active, data.ee_active and data.active_count ([vertices, edges] listing pairs).
        `serial`: by one thread (list_active_serial) or blocked; None: one thread on the CPU."""
        if self.device.is_cpu if serial is None else serial:
            wp.launch(list_active_serial, dim=1, device=self.device, record_tape=False,
                      inputs=[data.vt_count, data.ee_count, data.vt_active, data.ee_active, data.active_count])
            return
        for slot, (counts, active) in enumerate(((data.vt_count, data.vt_active), (data.ee_count, data.ee_active))):
            total, offset = self._scratch[slot]
            chunks = total.shape[0]
            wp.launch(count_listing, dim=chunks, inputs=[counts, total], device=self.device, record_tape=False)
            wp.launch(scan_listing, dim=1, inputs=[total, offset, data.active_count, slot], device=self.device,
                      record_tape=False)
            wp.launch(fill_listing, dim=chunks, inputs=[counts, offset, active], device=self.device,
                      record_tape=False)
