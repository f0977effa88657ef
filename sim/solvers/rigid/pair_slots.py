"""The pair list of the rigid-body contacts: each unordered pair of touching shapes is evaluated once (narrow phase
and contact law), by the row that owns it, into slots of that row; the other shape's row gathers its side from
there instead of evaluating the pair again.

A body-body pair is owned by its lower shape index; a pair with a static shape by the body shape (the static shape
has no row). The owner computes both bodies' wrenches of the pair (the same numbers the other row computed before:
the pair is evaluated in canonical order, collide.py, whichever row asks), and, when the coupled passes need it,
records the pair's contacts in its slots' columns; the gather copies them into the other row's own columns, so
every row still holds all its contacts for kernels.coupled_pass. The gather visits each row's partners in the order
a scan of the row would (kernels.scan_partners), so every body sums its wrenches in the same fixed order as before:
no float atomics, results that do not depend on thread timing, and an adjoint that only reads the slots.
"""

import kernels as wp

from .contact_law import MAX_PAIR_FEATURES, ContactRecord


#: scan_partners' ways of meeting a candidate: evaluate every pair (no pair list); evaluate only the body-body
#: pairs the row owns into its slots; gather the row's pairs (static ones evaluated, body-body ones from slots)
PAIRS_OFF = wp.constant(0)
PAIRS_OWN = wp.constant(1)
PAIRS_GATHER = wp.constant(2)


@wp.struct
class PairSlots:
    """The owned pairs of each contact row (a body shape), [rows, capacity]: the partner shape of slot i of row t
    is other[t, i] (slots filled in scan order), count[t] the owned touching pairs (more than the capacity when
    they did not fit: a pair not found in a full row's slots is evaluated by whoever needs it), w_self[t, i] the
    pair's wrench on row t's body and w_other[t, i] the wrench on the partner's body (torque about that body's
    centre of mass [N m], force [N]); record [rows, capacity MAX_PAIR_FEATURES]: the pair's time-constant contacts
    (column i MAX_PAIR_FEATURES + feature) when contacts are recorded. shape_row [shape_count]: each shape's row
    (-1: none)."""

    other: wp.array2d(dtype=wp.int32)
    count: wp.array(dtype=wp.int32)
    w_self: wp.array2d(dtype=wp.spatial_vector)
    w_other: wp.array2d(dtype=wp.spatial_vector)
    record: ContactRecord
    shape_row: wp.array(dtype=wp.int32)


@wp.func
def pair_owned(s: int, other: int, other_body: int):
    """Whether the row of shape s owns its pair with shape `other` (on body other_body, -1: static)."""
    return other_body < 0 or s < other


@wp.func
def find_slot(other: wp.array2d(dtype=wp.int32), count: wp.array(dtype=wp.int32), t: int, shape: int):
    """The slot of row t whose partner is `shape`, -1 when none of its filled slots is."""
    for i in range(wp.min(count[t], other.shape[1])):
        if other[t, i] == shape:
            return i
    return -1


@wp.func
def slots_overflowed(slots: PairSlots, t: int):
    """Whether row t owned more touching pairs than it has slots."""
    return slots.count[t] > slots.other.shape[1]


@wp.func
def copy_pair_record(source: ContactRecord, t_from: int, column_from: int, target: ContactRecord, t_to: int,
                     column_to: int):
    """Copy the MAX_PAIR_FEATURES columns of one pair's recorded contacts from row t_from of `source` into row t_to
    of `target` (those that hold a contact, as far as the target row has room)."""
    for f in range(MAX_PAIR_FEATURES):
        a = column_from + f
        b = column_to + f
        if a < source.x.shape[1] and b < target.x.shape[1]:
            if source.mass[t_from, a] > 0.0:
                target.x[t_to, b] = source.x[t_from, a]
                target.n[t_to, b] = source.n[t_from, a]
                target.vt[t_to, b] = source.vt[t_from, a]
                target.vn[t_to, b] = source.vn[t_from, a]
                target.impulse[t_to, b] = source.impulse[t_from, a]
                target.mass[t_to, b] = source.mass[t_from, a]
                target.mu[t_to, b] = source.mu[t_from, a]
                target.kf[t_to, b] = source.kf[t_from, a]
                target.body_a[t_to, b] = source.body_a[t_from, a]
                target.body_b[t_to, b] = source.body_b[t_from, a]
