// The host BVH builder of kernels/runtime/bvh.py (Bvh._build), in C++: the same tree, node for node.
//
// Nodes are numbered level by level: the root first_node, then the two children of each node of a level that
// splits, in the level's order. A node of more than leaf_size faces sorts its faces (stably) by centroid along
// the widest axis of their centroids' box (the first of equal extents) and splits at the half. numpy did this
// a level at a time in 11 ms for the 12,200 faces of Warp's bunny, sorting every node; here no node sorts (see
// Chain): 4 ms with a sort per node, 2 ms with a partition of (keys, face) records.

#include <algorithm>
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

struct ChainLess {
    const float* centroids;
    Chain chain;

    bool operator()(int64_t f, int64_t g) const {
        for (int k = 0; k < chain.count; ++k) {
            const float a = centroids[f * 3 + chain.axes[k]], b = centroids[g * 3 + chain.axes[k]];
            if (a < b)
                return true;
            if (b < a)
                return false;
        }
        return f < g;
    }
};

// A face with the coordinates of its node's chain, compared as ChainLess compares faces.
struct Item {
    float key[3];
    int64_t face;

    bool operator<(const Item& other) const {
        for (int k = 0; k < 3; ++k) {
            if (key[k] < other.key[k])
                return true;
            if (other.key[k] < key[k])
                return false;
        }
        return face < other.face;
    }
};

}  // namespace

// centroids: [faces, 3] float32, indexed by face id. order: the n face ids of this subtree in increasing order,
// rearranged in place into leaf order. left/right/start/end: room for 2n - 1 nodes, relative to first_node
// (node k of the subtree is written at index k); start/end are positions in the prims array (base + position
// in order). Returns the number of nodes written.
extern "C" __attribute__((visibility("default"))) int64_t wp_bvh_build(
    const float* centroids, int64_t* order, int64_t n, int64_t leaf_size, int64_t base, int64_t first_node,
    int64_t* left, int64_t* right, int64_t* start, int64_t* end) {
    if (n <= 0)
        return 0;
    for (int64_t k = 0; k < 2 * n - 1; ++k) {
        left[k] = -1;
        right[k] = -1;
        start[k] = 0;
        end[k] = 0;
    }
    std::vector<Pending> level{{0, 0, n, Chain{{0, 0, 0}, 0}}}, next;
    std::vector<Item> items;
    int64_t count = 1;
    while (!level.empty()) {
        next.clear();
        for (const Pending& p : level) {
            if (p.hi - p.lo <= leaf_size) {
                std::sort(order + p.lo, order + p.hi, ChainLess{centroids, p.chain});
                start[p.node] = base + p.lo;
                end[p.node] = base + p.hi;
                continue;
            }
            float lower[3], upper[3];
            for (int a = 0; a < 3; ++a)
                lower[a] = upper[a] = centroids[order[p.lo] * 3 + a];
            for (int64_t i = p.lo + 1; i < p.hi; ++i) {
                const float* c = centroids + order[i] * 3;
                for (int a = 0; a < 3; ++a) {
                    lower[a] = std::min(lower[a], c[a]);
                    upper[a] = std::max(upper[a], c[a]);
                }
            }
            int axis = 0;
            for (int a = 1; a < 3; ++a)
                if (upper[a] - lower[a] > upper[axis] - lower[axis])
                    axis = a;
            const Chain chain = p.chain.then(axis);
            const int64_t half = p.lo + (p.hi - p.lo) / 2;
            // partitioned as (keys, face) records side by side: no gather from the centroids per comparison
            items.resize(p.hi - p.lo);
            for (int64_t i = p.lo; i < p.hi; ++i) {
                Item& it = items[i - p.lo];
                const float* c = centroids + order[i] * 3;
                for (int k = 0; k < 3; ++k)
                    it.key[k] = k < chain.count ? c[chain.axes[k]] : 0.0f;
                it.face = order[i];
            }
            std::nth_element(items.begin(), items.begin() + (half - p.lo), items.end());
            for (int64_t i = p.lo; i < p.hi; ++i)
                order[i] = items[i - p.lo].face;
            const int64_t child = count;
            count += 2;
            left[p.node] = first_node + child;
            right[p.node] = first_node + child + 1;
            next.push_back({child, p.lo, half, chain});
            next.push_back({child + 1, half, p.hi, chain});
        }
        level.swap(next);
    }
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
