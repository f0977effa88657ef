// The host BVH builder of kernels/runtime/bvh.py (Bvh._build), in C++: the same tree, node for node.
//
// Nodes are numbered level by level: the root first_node, then the two children of each node of a level that
// splits, in the level's order. A node of more than leaf_size faces sorts its faces (stably) by centroid along
// the widest axis of their centroids' box (the first of equal extents) and splits at the half. numpy did this
// a level at a time in 11 ms for the 12,200 faces of Warp's bunny, sorting every node; here no node sorts (see
// Chain): 4 ms with a sort per node, 1.8 ms with std::nth_element over (keys, face) records, 1.45 ms with records
// moved instead of face ids and a selection that does not branch on its comparisons (select_nth). Compiled into
// the runtime library with the thread pool (kernels/compiler/build.py NATIVE_LIBRARIES).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

// The order of a node's faces after every stable sort above it, as one total order: by the coordinate of the
// node's latest sort axis, ties by the axis sorted before that one, and so on, then by face id (the order the
// root starts from). So a node needs no sort of its own: a partition at its half (nth_element, linear) gives the
// two halves the stable sort gives, and a leaf sorts its few faces.
struct Chain {
    int axes[3];
    int count;

    Chain then(int axis) const {  // the chain after a stable sort along `axis`
        Chain c{{axis, 0, 0}, 1};
        for (int k = 0; k < count; ++k)
            if (axes[k] != axis)
                c.axes[c.count++] = axes[k];
        return c;
    }
};

struct Pending {
    int64_t node, lo, hi;
    Chain chain;
};

// A face and its centroid: the builder moves these records (16 bytes) instead of gathering centroids by face id.
struct Item {
    float c[3];
    int32_t face;
};

// Compares records in a chain's total order.
struct ChainLess {
    Chain chain;

    bool operator()(const Item& f, const Item& g) const {
        for (int k = 0; k < chain.count; ++k) {
            const float a = f.c[chain.axes[k]], b = g.c[chain.axes[k]];
            if (a < b)
                return true;
            if (b < a)
                return false;
        }
        return f.face < g.face;
    }
};

// Rearranges [first, last) so that *nth is the record the chain's order puts there, the records before it
// precede it and those after follow it: std::nth_element's contract, whose halves are unique since the order is
// total. A quickselect whose partition writes without branching on the comparison (std::nth_element's
// mispredicted branches cost 1.8 ms for the bunny's 12,200 faces), its pivot the sample record of nth's rank
// among 31 spread over a large range (the first partition then leaves about a tenth of it, where a median of
// three leaves half), falling back to std::nth_element after too many unbalanced rounds.
void select_nth(Item* first, Item* nth, Item* last, const ChainLess& less, Item* scratch) {
    const int axis = less.chain.axes[0];
    int rounds = 0;
    while (last - first > 4) {
        if (++rounds > 64) {
            std::nth_element(first, nth, last, less);
            return;
        }
        const int64_t n = last - first;
        Item pivot;
        if (n > 256) {
            constexpr int kSample = 31;
            Item sample[kSample];
            for (int k = 0; k < kSample; ++k)
                sample[k] = first[(2 * k + 1) * n / (2 * kSample)];
            std::sort(sample, sample + kSample, less);
            pivot = sample[std::min<int64_t>(kSample - 1, (nth - first) * kSample / n)];
        } else {
            Item a = first[0], b = first[n / 2], c = last[-1];  // the median of three
            if (less(b, a))
                std::swap(a, b);
            if (less(c, b))
                std::swap(b, c);
            if (less(b, a))
                std::swap(a, b);
            pivot = b;
        }
        const float key = pivot.c[axis];
        // out of place, into scratch: each record is written at both ends and the end it belongs to advances
        // (swapping in place stalled on reading back its own stores: 3 times slower). The pivot (the one record
        // equal to itself) goes to the upper end; its slot is kept.
        Item* lo = scratch;
        Item* hi = scratch + n - 1;
        Item* pivot_slot = hi;
        for (Item* it = first; it != last; ++it) {
            const Item x = *it;
            const float v = x.c[axis];
            bool smaller = v < key;
            if (__builtin_expect(v == key, 0)) {
                smaller = less(x, pivot);
                if (x.face == pivot.face)
                    pivot_slot = hi;
            }
            *lo = x;
            *hi = x;
            lo += smaller;
            hi -= !smaller;
        }
        const int64_t below = lo - scratch;
        std::swap(scratch[below], *pivot_slot);  // the pivot, the least of the upper part, first in it
        std::copy(scratch, scratch + n, first);
        Item* store = first + below;
        if (store == nth)
            return;
        if (nth < store)
            last = store;
        else
            first = store + 1;
    }
    std::sort(first, last, less);
}

}  // namespace

// centroids: [faces, 3] float32, indexed by face id. order: the n face ids of this subtree in increasing order,
// rearranged in place into leaf order. left/right/start/end: room for 2n - 1 nodes, relative to first_node
// (node k of the subtree is written at index k); start/end are positions in the prims array (base + position
// in order). Returns the number of nodes written.
extern "C" __attribute__((visibility("default"))) int64_t wp_bvh_build(
    const float* centroids, int32_t* order, int64_t n, int64_t leaf_size, int64_t base, int64_t first_node,
    int32_t* left, int32_t* right, int32_t* start, int32_t* end) {
    if (n <= 0)
        return 0;
    // the subtree's faces as records, kept in the order being built (a node's faces are items[lo, hi))
    std::vector<Item> items(n);
    for (int64_t i = 0; i < n; ++i) {
        const float* c = centroids + order[i] * 3;
        items[i] = Item{{c[0], c[1], c[2]}, order[i]};
    }
    std::vector<Item> scratch(n);
    std::vector<Pending> level{{0, 0, n, Chain{{0, 0, 0}, 0}}}, next;
    int64_t count = 1;
    while (!level.empty()) {
        next.clear();
        for (const Pending& p : level) {
            Item* first = items.data() + p.lo;
            Item* last = items.data() + p.hi;
            if (p.hi - p.lo <= leaf_size) {
                std::sort(first, last, ChainLess{p.chain});
                left[p.node] = right[p.node] = -1;
                start[p.node] = int32_t(base + p.lo);
                end[p.node] = int32_t(base + p.hi);
                continue;
            }
            float lower[3], upper[3];
            for (int a = 0; a < 3; ++a)
                lower[a] = upper[a] = first->c[a];
            for (const Item* it = first + 1; it != last; ++it)
                for (int a = 0; a < 3; ++a) {
                    lower[a] = std::min(lower[a], it->c[a]);
                    upper[a] = std::max(upper[a], it->c[a]);
                }
            int axis = 0;
            for (int a = 1; a < 3; ++a)
                if (upper[a] - lower[a] > upper[axis] - lower[axis])
                    axis = a;
            const Chain chain = p.chain.then(axis);
            const int64_t half = p.lo + (p.hi - p.lo) / 2;
            select_nth(first, items.data() + half, last, ChainLess{chain}, scratch.data());
            const int64_t child = count;
            count += 2;
            left[p.node] = int32_t(first_node + child);
            right[p.node] = int32_t(first_node + child + 1);
            start[p.node] = end[p.node] = 0;
            next.push_back({child, p.lo, half, chain});
            next.push_back({child + 1, half, p.hi, chain});
        }
        level.swap(next);
    }
    for (int64_t i = 0; i < n; ++i)
        order[i] = items[i].face;
    return count;
}

namespace {

void refit_node(int32_t node, const float* corners, int64_t per_item, const int32_t* prims, const int32_t* left,
                const int32_t* right, const int32_t* start, const int32_t* end, float* lower, float* upper) {
    float* lo = lower + 3 * int64_t(node);
    float* hi = upper + 3 * int64_t(node);
    if (left[node] < 0) {
        for (int a = 0; a < 3; ++a) {
            lo[a] = corners[int64_t(prims[start[node]]) * per_item * 3 + a];
            hi[a] = lo[a];
        }
        for (int32_t i = start[node]; i < end[node]; ++i) {
            const float* face = corners + int64_t(prims[i]) * per_item * 3;
            for (int64_t k = 0; k < per_item; ++k)
                for (int a = 0; a < 3; ++a) {
                    lo[a] = std::min(lo[a], face[3 * k + a]);
                    hi[a] = std::max(hi[a], face[3 * k + a]);
                }
        }
        return;
    }
    refit_node(left[node], corners, per_item, prims, left, right, start, end, lower, upper);
    refit_node(right[node], corners, per_item, prims, left, right, start, end, lower, upper);
    const float* l0 = lower + 3 * int64_t(left[node]);
    const float* r0 = lower + 3 * int64_t(right[node]);
    const float* l1 = upper + 3 * int64_t(left[node]);
    const float* r1 = upper + 3 * int64_t(right[node]);
    for (int a = 0; a < 3; ++a) {
        lo[a] = std::min(l0[a], r0[a]);
        hi[a] = std::max(l1[a], r1[a]);
    }
}

}  // namespace

// Every node's box under `root` from the items' corners ([items, per_item, 3] float32: a triangle's 3 corners,
// a box's lower and upper): a leaf's is the box of its items, an inner node's the union of its children's (the
// tree is at most log2(items) + 2 deep). lower/upper: [nodes, 3] float32.
extern "C" __attribute__((visibility("default"))) void wp_bvh_refit(
    const float* corners, int64_t per_item, const int32_t* prims, const int32_t* left, const int32_t* right,
    const int32_t* start, const int32_t* end, int32_t root, float* lower, float* upper) {
    if (root >= 0)
        refit_node(root, corners, per_item, prims, left, right, start, end, lower, upper);
}

// Per item of [items, per_item, 3] float32 corners: the centroid (the corners summed in order, then divided by
// per_item, in float: numpy's corners.mean(axis=1) to the bit) and the box (lower, upper). Each output is
// [items, 3] float32.
extern "C" __attribute__((visibility("default"))) void wp_corner_stats(
    const float* corners, int64_t items, int64_t per_item, float* centroids, float* lower, float* upper) {
    const float count = float(per_item);
    for (int64_t i = 0; i < items; ++i) {
        const float* c = corners + i * per_item * 3;
        for (int a = 0; a < 3; ++a) {
            float sum = c[a], lo = c[a], hi = c[a];
            for (int64_t k = 1; k < per_item; ++k) {
                const float v = c[3 * k + a];
                sum += v;
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
            centroids[3 * i + a] = sum / count;
            lower[3 * i + a] = lo;
            upper[3 * i + a] = hi;
        }
    }
}

// A triangle mesh's face corners and their statistics in one pass: corners [faces, 3, 3] float32 gathered from
// points [num_points, 3] by indices [faces * 3] (int32), then centroids, lower and upper as wp_corner_stats gives
// them, and the mean length of the faces' three edges (Warp's average_edge_length) in *edge_length. Returns the
// position in `indices` of the first index outside [0, num_points), or -1 when all are inside (the outputs are
// then complete).
extern "C" __attribute__((visibility("default"))) int64_t wp_face_corners(
    const float* points, int64_t num_points, const int32_t* indices, int64_t faces, float* corners,
    float* centroids, float* lower, float* upper, float* edge_length) {
    for (int64_t i = 0; i < 3 * faces; ++i) {
        const int32_t v = indices[i];
        if (v < 0 || v >= num_points)
            return i;
        for (int a = 0; a < 3; ++a)
            corners[3 * i + a] = points[3 * int64_t(v) + a];
    }
    wp_corner_stats(corners, faces, 3, centroids, lower, upper);
    double sum = 0.0;
    for (int64_t f = 0; f < faces; ++f)
        for (int k = 0; k < 3; ++k) {
            const float* p = corners + 9 * f + 3 * k;
            const float* q = corners + 9 * f + 3 * ((k + 1) % 3);
            const double dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
            sum += std::sqrt(dx * dx + dy * dy + dz * dz);
        }
    *edge_length = faces ? float(sum / double(3 * faces)) : 0.0f;
    return -1;
}
