"""The displacement bound of cloth self-contact (sim/self_contact.py): kernels that keep each colliding vertex's
displacement since the last pair search, less its group's drift, within its bound, and that say when the pairs
must be searched again. The reasoning (why a common drift keeps the no-tunnelling guarantee, why a group with an
overrun keeps the last step's drift) is in sim/self_contact.py's docstring."""

import kernels as wp

from .self_contact_primitives import order_free_module

# Run-to-run deterministic (each kernel runs thread index by thread index on the CPU, in one order whatever the
# thread count): the drift is a float sum of per-block sums, added atomically, and with two threads the 64 x 64
# drop's positions differed from run to run.
wp.set_module_options({"deterministic": wp.DeterministicMode.RUN_TO_RUN})
# the kernels that write only their own elements (or integer flags and counts) run on every thread: all but the
# drift's tiled sum
ORDER_FREE = order_free_module(__name__)


# no `from __future__ import annotations`: kernels/runtime/struct.py evaluates string annotations in the top-level
# package's namespace

DRIFT_TILE = 64  # particles per block of the drift's sum
#: steps ahead at which a vertex that would pass its bound is searched along with the ones that ask now (a
#: partial search; without it, vertices about to ask would ask one after the other, each a search)
LOOKAHEAD = 4


@wp.func
def drift_term(weight: float, x: wp.vec3, x_search: wp.vec3):
    return (x - x_search) * weight


@wp.kernel
def sum_drift_tiled(x: wp.array(dtype=wp.vec3), x_search: wp.array(dtype=wp.vec3), weight: wp.array(dtype=float),
                    drift: wp.array(dtype=wp.vec3)):
    """drift[0] += sum_i weight_i (x_i - x_search_i) over a block of DRIFT_TILE particles [m] (weight: 1 / the
    number of colliding particles at those, 0 elsewhere, so that the sum is their mean displacement)."""
    block = wp.tid()
    w = wp.tile_load(weight, shape=DRIFT_TILE, offset=block * DRIFT_TILE)
    a = wp.tile_load(x, shape=DRIFT_TILE, offset=block * DRIFT_TILE)
    b = wp.tile_load(x_search, shape=DRIFT_TILE, offset=block * DRIFT_TILE)
    wp.tile_atomic_add(drift, wp.tile_sum(wp.tile_map(drift_term, w, a, b)))


@wp.kernel(module=ORDER_FREE)
def settle_world_drifts(x_search: wp.array(dtype=wp.vec3), x_end: wp.array(dtype=wp.vec3),
                        weight: wp.array(dtype=float), world_start: wp.array(dtype=wp.int32),
                        world_end: wp.array(dtype=wp.int32), first_group: int, bound: wp.array(dtype=float),
                        thickness: wp.array(dtype=float), drift_before: wp.array(dtype=wp.vec3),
                        drift: wp.array(dtype=wp.vec3)):
    """drift[g] for group g = first_group + w, one thread per world w of particles world_start[w] to
    world_end[w]: sum_i weight_i (x_end_i - x_search_i) [m], summed in index order (weight: 1 / the world's
    colliding particles at those, 0 elsewhere), or drift_before[g] when a colliding vertex of the world moved
    past its bound relative to that sum (find_drift_overrun and drop_overrun_drift in one pass, which say why).
    One launch where the parallel form takes three: on the CPU, where a launch costs about as much as the
    whole sum, it is used for a model of one world too."""
    w = wp.tid()
    g = first_group + w
    total = wp.vec3(0.0, 0.0, 0.0)
    for i in range(world_start[w], world_end[w]):
        total = total + drift_term(weight[i], x_end[i], x_search[i])
    for i in range(world_start[w], world_end[w]):
        if thickness[i] > 0.0 and wp.length(x_end[i] - x_search[i] - total) > bound[i]:
            total = drift_before[g]
            break
    drift[g] = total


@wp.kernel(module=ORDER_FREE)
def find_drift_overrun(x_search: wp.array(dtype=wp.vec3), x_end: wp.array(dtype=wp.vec3),
                       drift: wp.array(dtype=wp.vec3), group: wp.array(dtype=wp.int32),
                       bound: wp.array(dtype=float), thickness: wp.array(dtype=float),
                       overrun: wp.array(dtype=wp.int32)):
    """overrun[g] = 1 when a colliding vertex of group g moved, relative to the group's drift, past its bound."""
    i = wp.tid()
    if thickness[i] <= 0.0:
        return
    g = group[i]
    if wp.length(x_end[i] - x_search[i] - drift[g]) > bound[i]:
        wp.atomic_max(overrun, g, 1)


@wp.kernel(module=ORDER_FREE)
def drop_overrun_drift(overrun: wp.array(dtype=wp.int32), drift_before: wp.array(dtype=wp.vec3),
                       drift: wp.array(dtype=wp.vec3)):
    """A group with an overrun keeps the last step's drift (and the overrun flag is cleared for the next step).

    A vertex that a collider stopped while the rest of its cloth moved on (the edge a cloth stands on, the first
    vertices to land) is displaced against the new drift. The last step's drift is one under which every vertex
    of the group started this step within its bound (after a search it is 0, and a partial search resets its
    vertices under it), so a vertex that stopped is not clamped at all, and one that moved on is shortened along
    its own step (limit_displacement), between two positions the solver accepted: never into a collider. Any
    common translation keeps the no-tunnelling bound; the new drift would pull a stopped vertex along it, through
    the collider (centimetres into the ground in scenes/cloth_fold.yaml), and none (the search positions) would
    pull the whole falling cloth back to where it was searched."""
    g = wp.tid()
    if overrun[g] != 0:
        drift[g] = drift_before[g]
        overrun[g] = 0


@wp.func
def bounded_position(x_search: wp.vec3, x_start: wp.vec3, x_end: wp.vec3, c: wp.vec3, b: float):
    """x_end where the displacement since the search x_search, less the drift c, is at most the bound b [m].
    Else, when the step's start x_start is within it, the farthest point of the step x_start -> x_end that is
    (the step shortened along its own path: it stops short of where the solver sent it, never beside it); else
    x_search + c + that displacement shortened to the bound."""
    relative = x_end - x_search - c
    length = wp.length(relative)
    out = x_end
    if length > b:
        start = x_start - x_search - c
        step = x_end - x_start
        s2 = wp.dot(step, step)
        inside = b * b - wp.dot(start, start)
        if inside >= 0.0 and s2 > 0.0:
            # the larger root of |start + t step| = b, in [0, 1) as x_end is outside and x_start inside
            sd = wp.dot(start, step)
            t = (wp.sqrt(sd * sd + s2 * inside) - sd) / s2
            out = x_start + step * wp.clamp(t, 0.0, 1.0)
        else:
            out = x_search + c + relative * (b / length)
    return out


@wp.kernel(module=ORDER_FREE)
def limit_displacement(x_search: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3),
                       x_end: wp.array(dtype=wp.vec3), v_end: wp.array(dtype=wp.vec3),
                       drift: wp.array(dtype=wp.vec3), group: wp.array(dtype=wp.int32),
                       bound: wp.array(dtype=float), dt: float, x_out: wp.array(dtype=wp.vec3),
                       v_out: wp.array(dtype=wp.vec3)):
    """x_out = x_end bounded (bounded_position) with the drift c = drift[group[i]] of the vertex's group (its
    world's). When v_out is not empty, v_out = v_end + (x_out - x_end) / dt (semi-implicit Euler: the velocity
    that moves the vertex to x_out)."""
    i = wp.tid()
    out = bounded_position(x_search[i], x_start[i], x_end[i], drift[group[i]], bound[i])
    x_out[i] = out
    if v_out.shape[0] > 0:
        v_out[i] = v_end[i] + (out - x_end[i]) / dt


@wp.func
def budget_mark(x_start: wp.vec3, x_out: wp.vec3, relative: float, c: wp.vec3, c_before: wp.vec3, b: float,
                skin: float):
    """1 when a colliding vertex that moved from x_start to x_out this step, moving again as it moved (relative
    to the drift c, c_before at the step's start; `relative`: its offset |x_out - x_search - c|), would pass its bound b or the skin [m] in the next step: the
    pairs must then be searched again first (around the marked vertices only, when they are few:
    sim/self_contact_partial.py); 2 when it would within LOOKAHEAD steps; else 0. A vertex that stops dead while
    the rest drifts on (on a collider) needs no search beforehand: its group then keeps the last step's drift
    (drop_overrun_drift), so a cloth falling as a whole searches only once it lands."""
    motion = wp.length(x_out - x_start - (c - c_before))
    limit = wp.min(b, skin)
    mark = int(0)
    if relative + motion > limit:
        mark = 1
    elif relative + float(LOOKAHEAD) * motion > limit:
        # would ask within a few steps: searched along with the ones that ask now, if the search is partial
        mark = 2
    return mark


@wp.func
def record_mark(i: int, mark: int, marked: wp.array(dtype=wp.int32), search: wp.array(dtype=wp.int32),
                listed: wp.array(dtype=wp.int32)):
    """marked[i] = mark, counted in search[mark - 1], for a mark of budget_mark other than 0. A vertex marked for
    the first time since the marks were cleared is also listed: listed[search[2]++] = i (a partial search's
    begin_attempt takes S from the list, not from every vertex; no vertex is listed twice, as a marked vertex
    stays marked until the next search clears the marks and the list)."""
    if mark != 0:
        if marked[i] == 0:
            listed[wp.atomic_add(search, 2, 1)] = i
        marked[i] = mark
        wp.atomic_add(search, mark - 1, 1)


@wp.kernel(module=ORDER_FREE)
def check_budget(x_start: wp.array(dtype=wp.vec3), x_out: wp.array(dtype=wp.vec3),
                 x_search: wp.array(dtype=wp.vec3), drift: wp.array(dtype=wp.vec3),
                 drift_before: wp.array(dtype=wp.vec3), group: wp.array(dtype=wp.int32),
                 bound: wp.array(dtype=float),
                 thickness: wp.array(dtype=float), skin: float, marked: wp.array(dtype=wp.int32),
                 search: wp.array(dtype=wp.int32), listed: wp.array(dtype=wp.int32),
                 offset: wp.array(dtype=float)):
    """marked[i] = budget_mark(...) of colliding vertex i when not 0, counted in search[0] (1: asks now) or
    search[1] (2: about to) and listed when newly marked (record_mark); offset[i] = |x_out - x_search - c|, how
    far it is from its search position relative to the drift (SolverSemiImplicit skips the pairs that cannot
    touch by it)."""
    i = wp.tid()
    if thickness[i] <= 0.0:
        return
    g = group[i]
    relative = wp.length(x_out[i] - x_search[i] - drift[g])
    offset[i] = relative
    record_mark(i, budget_mark(x_start[i], x_out[i], relative, drift[g], drift_before[g], bound[i], skin),
                marked, search, listed)


@wp.kernel(module=ORDER_FREE)
def limit_and_check(x_search: wp.array(dtype=wp.vec3), x_start: wp.array(dtype=wp.vec3),
                    x_end: wp.array(dtype=wp.vec3), v_end: wp.array(dtype=wp.vec3),
                    drift: wp.array(dtype=wp.vec3), drift_before: wp.array(dtype=wp.vec3),
                    group: wp.array(dtype=wp.int32), bound: wp.array(dtype=float), thickness: wp.array(dtype=float),
                    skin: float, dt: float, x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3),
                    marked: wp.array(dtype=wp.int32), search: wp.array(dtype=wp.int32),
                    listed: wp.array(dtype=wp.int32), offset: wp.array(dtype=float)):
    """limit_displacement and check_budget in one launch, for a step that no Tape records (a launch costs
    about as much as either kernel's work on the 64 x 64 cloth)."""
    i = wp.tid()
    g = group[i]
    c = drift[g]
    out = bounded_position(x_search[i], x_start[i], x_end[i], c, bound[i])
    x_out[i] = out
    if v_out.shape[0] > 0:
        v_out[i] = v_end[i] + (out - x_end[i]) / dt
    if thickness[i] > 0.0:
        relative = wp.length(out - x_search[i] - c)
        offset[i] = relative
        record_mark(i, budget_mark(x_start[i], out, relative, c, drift_before[g], bound[i], skin), marked, search,
                    listed)
