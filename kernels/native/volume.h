// Sparse volumes (wp.Volume): NanoVDB grids (float, double, int32, int64, uint32, vec3f/d, vec4f/d) read in place
// from the grid's buffer, whose address is the volume's id. The host (kernels/runtime/volume_check.py) checks the
// buffer's layout before any kernel sees it.
//
// NanoVDB layout (version 32): a 672-byte grid header (its index/world map at byte 296), a 64-byte tree header
// (byte offsets of the first leaf, lower, upper and root node from the tree), the root (a table of tiles keyed by
// the coordinate's top bits, each a child upper node or a value), upper nodes (32^3 entries), lower nodes (16^3)
// and leaves (8^3 values); the offsets inside each node depend on the value type (vdb::layout). An entry of an
// internal node is a child node (its bit in the child mask set; a byte offset from the node) or a tile value.
// Coordinates outside every root tile read as the grid's background value.
//
// Sampling follows Warp: CLOSEST rounds the index-space coordinate; LINEAR blends the 8 surrounding voxels with
// trilinear weights (corners in (0,0,0), (0,0,1), (0,1,0), ... order). Gradients: volume_sample and
// volume_world_to_index/index_to_world w.r.t. the coordinate (not the voxel values); volume_sample_grad w.r.t. the
// coordinate through both its value and its gradient (the field's mixed second derivatives).
#pragma once
#include "core.h"
#include "vec.h"

namespace wp {
namespace vdb {

static const uint64 MAGIC_0 = 0x304244566F6E614Eull;  // "NanoVDB0"
static const uint64 MAGIC_1 = 0x314244566F6E614Eull;  // "NanoVDB1"
static const uint64 MAGIC_2 = 0x324244566F6E614Eull;  // "NanoVDB2"
static const uint64 GRID_SIZE = 672, GRID_MAP = 296, GRID_TYPE = 636;
static const uint64 TREE_ROOT = 24;

// The value types a grid may hold: NanoVDB's grid type code, the scalar and the number of components.
template <typename V> struct value_traits;
#define WP_VDB_SCALAR(T, CODE) \
    template <> struct value_traits<T> { typedef T scalar; static constexpr uint32 code = CODE, n = 1; };
#define WP_VDB_VECTOR(N, T, CODE) \
    template <> struct value_traits<vec_t<N, T>> { typedef T scalar; static constexpr uint32 code = CODE, n = N; };
WP_VDB_SCALAR(float32, 1u)
WP_VDB_SCALAR(float64, 2u)
WP_VDB_SCALAR(int32, 4u)
WP_VDB_SCALAR(int64, 5u)
WP_VDB_SCALAR(uint32, 10u)
WP_VDB_SCALAR(uint64, 20u)  // OnIndex grids: uint64 tiles (their leaves hold no values; see volume_index.h)
WP_VDB_VECTOR(3, float32, 6u)
WP_VDB_VECTOR(3, float64, 7u)
WP_VDB_VECTOR(4, float32, 17u)
WP_VDB_VECTOR(4, float64, 18u)
#undef WP_VDB_SCALAR
#undef WP_VDB_VECTOR

CUDA_CALLABLE constexpr uint64 align_up(uint64 x, uint64 a) { return (x + a - 1) / a * a; }

// Byte layout of the nodes of a grid of V (NanoVDB 32.x; every node 32-byte aligned). Statistics are stored as
// double for 8-byte values, else as float; a tile of an internal node is a union of a value and an int64 offset.
template <typename V> struct layout {
    static constexpr uint64 size = sizeof(typename value_traits<V>::scalar) * value_traits<V>::n;
    static constexpr uint64 align = sizeof(typename value_traits<V>::scalar);
    static constexpr uint64 stats = size == 8 ? 8 : 4;
    static constexpr uint64 root_background = align_up(28, align);
    static constexpr uint64 root_size = align_up(root_background + 3 * size + 2 * stats, 32);
    static constexpr uint64 tile_child = 8, tile_value = align_up(20, align);
    static constexpr uint64 tile_size = align_up(tile_value + size, 32);
    static constexpr uint64 internal_stride = align_up(size > 8 ? size : 8, 8);
    static constexpr uint64 upper_child_mask = 32 + 4096;
    static constexpr uint64 upper_table = align_up(32 + 2 * 4096 + 2 * (size + stats), 32);
    static constexpr uint64 lower_child_mask = 32 + 512;
    static constexpr uint64 lower_table = align_up(32 + 2 * 512 + 2 * (size + stats), 32);
    static constexpr uint64 leaf_value_mask = 16, leaf_values = align_up(80 + 2 * (size + stats), 32);
};
static const uint64 ROOT_TABLE_SIZE = 24;

template <typename T> CUDA_CALLABLE inline T at(const uint8* base, uint64 offset) {
    return *reinterpret_cast<const T*>(base + offset);
}
CUDA_CALLABLE inline bool bit(const uint8* base, uint64 mask_offset, uint32 n) {
    return (at<uint64>(base, mask_offset + 8 * (n >> 6)) >> (n & 63u)) & 1u;
}

// The grid of id if it holds values of type V, else nullptr (sampling then gives zero, as Warp's does).
template <typename V> CUDA_CALLABLE inline const uint8* grid_of(uint64 id) {
    const uint8* g = reinterpret_cast<const uint8*>(id);
    if (g == nullptr) return nullptr;
    uint64 magic = at<uint64>(g, 0);
    if ((magic != MAGIC_0 && magic != MAGIC_1 && magic != MAGIC_2) || at<uint32>(g, GRID_TYPE) != value_traits<V>::code)
        return nullptr;
    return g;
}
CUDA_CALLABLE inline const uint8* float_grid(uint64 id) { return grid_of<float32>(id); }

// Where voxel (i, j, k) lives: the byte address of its value, and the leaf holding it (nullptr for a tile or the
// background). Down from the root to the node that holds it.
template <typename V> CUDA_CALLABLE inline const uint8* locate(const uint8* grid, int32 i, int32 j, int32 k,
                                                               const uint8** leaf_out = nullptr) {
    typedef layout<V> L;
    if (leaf_out) *leaf_out = nullptr;
    const uint8* root = grid + GRID_SIZE + at<uint64>(grid, GRID_SIZE + TREE_ROOT);
    const uint64 key = (uint64(uint32(k) >> 12) | (uint64(uint32(j) >> 12) << 21)) | (uint64(uint32(i) >> 12) << 42);
    const uint32 tiles = at<uint32>(root, ROOT_TABLE_SIZE);
    const uint8* tile = nullptr;
    for (uint32 t = 0; t < tiles; ++t) {
        const uint8* candidate = root + L::root_size + uint64(t) * L::tile_size;
        if (at<uint64>(candidate, 0) == key) {
            tile = candidate;
            break;
        }
    }
    if (tile == nullptr) return root + L::root_background;
    const int64 upper_offset = at<int64>(tile, L::tile_child);
    if (upper_offset == 0) return tile + L::tile_value;
    const uint8* upper = root + upper_offset;
    const uint32 n2 =
        (((uint32(i) & 4095u) >> 7) << 10) | (((uint32(j) & 4095u) >> 7) << 5) | ((uint32(k) & 4095u) >> 7);
    const uint64 e2 = L::upper_table + L::internal_stride * uint64(n2);
    if (!bit(upper, L::upper_child_mask, n2)) return upper + e2;
    const uint8* lower = upper + at<int64>(upper, e2);
    const uint32 n1 = (((uint32(i) & 127u) >> 3) << 8) | (((uint32(j) & 127u) >> 3) << 4) | ((uint32(k) & 127u) >> 3);
    const uint64 e1 = L::lower_table + L::internal_stride * uint64(n1);
    if (!bit(lower, L::lower_child_mask, n1)) return lower + e1;
    const uint8* leaf = lower + at<int64>(lower, e1);
    const uint32 n0 = ((uint32(i) & 7u) << 6) | ((uint32(j) & 7u) << 3) | (uint32(k) & 7u);
    if (leaf_out) *leaf_out = leaf;
    return leaf + L::leaf_values + L::size * uint64(n0);
}
template <typename V> CUDA_CALLABLE inline V value(const uint8* grid, int32 i, int32 j, int32 k) {
    return at<V>(locate<V>(grid, i, j, k), 0);
}

// The trilinear stencil around uvw: base corner and the weights along each axis.
struct Stencil {
    int32 base[3];
    float32 w[3][2];
};
CUDA_CALLABLE inline Stencil stencil(const vec_t<3, float32>& uvw) {
    Stencil s;
    for (int a = 0; a < 3; ++a) {
        float32 f = ::floorf(uvw.c[a]);
        float32 frac = uvw.c[a] - f;
        s.base[a] = int32(f);
        s.w[a][0] = 1.0f - frac;
        s.w[a][1] = frac;
    }
    return s;
}

// Component c of a value (a scalar has one).
template <typename V> CUDA_CALLABLE inline typename value_traits<V>::scalar& comp(V& v, uint32 c) {
    return reinterpret_cast<typename value_traits<V>::scalar*>(&v)[c];
}

// The value at index-space point uvw (CLOSEST rounds it; LINEAR blends the 8 surrounding voxels, corners in
// (0,0,0), (0,0,1), (0,1,0), ... order) and, when `grad` is given, d value[c] / d uvw[a] in grad[3 c + a].
template <typename V> CUDA_CALLABLE inline V sample(uint64 id, const vec_t<3, float32>& uvw, int32 mode,
                                                    typename value_traits<V>::scalar* grad) {
    typedef typename value_traits<V>::scalar S;
    const uint32 n = value_traits<V>::n;
    if (grad)
        for (uint32 c = 0; c < 3 * n; ++c) grad[c] = S(0);
    V result = V();
    const uint8* g = grid_of<V>(id);
    if (g == nullptr) return result;
    if (mode == 0)
        return value<V>(g, int32(::roundf(uvw.c[0])), int32(::roundf(uvw.c[1])), int32(::roundf(uvw.c[2])));
    if (mode != 1) return result;
    const Stencil s = stencil(uvw);
    for (int corner = 0; corner < 8; ++corner) {
        const int ox = (corner >> 2) & 1, oy = (corner >> 1) & 1, oz = corner & 1;
        V v = value<V>(g, s.base[0] + ox, s.base[1] + oy, s.base[2] + oz);
        const S wx = S(s.w[0][ox]), wy = S(s.w[1][oy]), wz = S(s.w[2][oz]);
        for (uint32 c = 0; c < n; ++c) {
            const S vc = comp(v, c);
            comp(result, c) += wx * wy * wz * vc;
            if (grad) {
                grad[3 * c + 0] += vc * (S(2 * ox - 1) * wy * wz);
                grad[3 * c + 1] += vc * (S(2 * oy - 1) * wx * wz);
                grad[3 * c + 2] += vc * (S(2 * oz - 1) * wx * wy);
            }
        }
    }
    return result;
}

// The adjoint of (value, d value / d uvw) = sample(uvw) w.r.t. uvw, given the adjoints of both (adj_ret: n values,
// adj_grad: 3 n): the gradient's part needs the trilinear field's mixed second derivatives (its pure ones are 0).
template <typename V> CUDA_CALLABLE inline void adj_sample_with_grad(uint64 id, const vec_t<3, float32>& uvw,
                                                                     int32 mode, const V& adj_ret,
                                                                     const typename value_traits<V>::scalar* adj_grad,
                                                                     vec_t<3, float32>& adj_uvw) {
    typedef typename value_traits<V>::scalar S;
    const uint32 n = value_traits<V>::n;
    const uint8* g = grid_of<V>(id);
    if (g == nullptr || mode != 1) return;
    const Stencil s = stencil(uvw);
    V r = adj_ret;
    for (int corner = 0; corner < 8; ++corner) {
        const int o[3] = {(corner >> 2) & 1, (corner >> 1) & 1, corner & 1};
        V v = value<V>(g, s.base[0] + o[0], s.base[1] + o[1], s.base[2] + o[2]);
        S w[3], d[3];
        for (int a = 0; a < 3; ++a) {
            w[a] = S(s.w[a][o[a]]);
            d[a] = S(2 * o[a] - 1);
        }
        for (uint32 c = 0; c < n; ++c) {
            const S vc = comp(v, c);
            for (int a = 0; a < 3; ++a) {
                const int b1 = (a + 1) % 3, b2 = (a + 2) % 3;
                S da = vc * d[a] * w[b1] * w[b2] * comp(r, c);  // d value / d uvw[a]
                if (adj_grad) {  // d grad[b] / d uvw[a] for b != a
                    da += adj_grad[3 * c + b1] * vc * d[a] * d[b1] * w[b2];
                    da += adj_grad[3 * c + b2] * vc * d[a] * d[b2] * w[b1];
                }
                adj_uvw.c[a] += float32(da);
            }
        }
    }
}

// The gradient type of a value type: vec3 of its scalar for a scalar, an N x 3 matrix (rows d v[c] / d uvw) for a
// vector of N.
template <typename V> struct grad_of { typedef vec_t<3, V> type; };
template <unsigned N, typename T> struct grad_of<vec_t<N, T>> { typedef mat_t<N, 3, T> type; };
template <typename G> struct value_of_grad;
template <typename T> struct value_of_grad<vec_t<3, T>> { typedef T type; };
template <unsigned N, typename T> struct value_of_grad<mat_t<N, 3, T>> { typedef vec_t<N, T> type; };

// dst = A (src - shift) (world to index, A the inverse map) or A src + shift (index to world), row by row; the
// float32 map at byte `matrix` (9 floats, row-major) and `shift` (3 floats) of the grid's map.
CUDA_CALLABLE inline vec_t<3, float32> map_apply(uint64 id, const vec_t<3, float32>& p, bool inverse, bool direction) {
    const uint8* g = reinterpret_cast<const uint8*>(id);
    vec_t<3, float32> r;
    if (g == nullptr) return r;
    const uint8* map = g + GRID_MAP;
    const uint64 matrix = inverse ? 36 : 0, shift = 72;
    float32 s[3];
    for (int a = 0; a < 3; ++a) s[a] = inverse && !direction ? p.c[a] - at<float32>(map, shift + 4 * a) : p.c[a];
    for (int row = 0; row < 3; ++row) {
        const uint64 m = matrix + 12 * row;
        r.c[row] = s[0] * at<float32>(map, m) + s[1] * at<float32>(map, m + 4) + s[2] * at<float32>(map, m + 8);
        if (!inverse && !direction) r.c[row] = r.c[row] + at<float32>(map, shift + 4 * row);
    }
    return r;
}
// adj_p += A^T adj (the map's linear part, whichever direction)
CUDA_CALLABLE inline void adj_map_apply(uint64 id, bool inverse, vec_t<3, float32>& adj_p,
                                        const vec_t<3, float32>& adj) {
    const uint8* g = reinterpret_cast<const uint8*>(id);
    if (g == nullptr) return;
    const uint8* map = g + GRID_MAP;
    const uint64 matrix = inverse ? 36 : 0;
    for (int col = 0; col < 3; ++col)
        for (int row = 0; row < 3; ++row) adj_p.c[col] += at<float32>(map, matrix + 12 * row + 4 * col) * adj.c[row];
}

}  // namespace vdb

// ---- typed entry points (the builtins volume_sample/_grad/lookup/store with a dtype render to these) ---------

template <typename V> CUDA_CALLABLE inline V volume_sample_t(uint64 id, vec_t<3, float32> uvw, int32 mode) {
    return vdb::sample<V>(id, uvw, mode, nullptr);
}
template <typename V> CUDA_CALLABLE inline void adj_volume_sample_t(uint64 id, vec_t<3, float32> uvw, int32 mode,
                                                                    uint64&, vec_t<3, float32>& adj_uvw, int32&,
                                                                    const V& adj_ret) {
    typedef typename vdb::value_traits<V>::scalar S;
    const uint32 n = vdb::value_traits<V>::n;
    if (mode != 1) return;  // CLOSEST is piecewise constant
    S grad[3 * n];
    vdb::sample<V>(id, uvw, mode, grad);
    V r = adj_ret;
    for (uint32 c = 0; c < n; ++c)
        for (int a = 0; a < 3; ++a) adj_uvw.c[a] += float32(grad[3 * c + a] * vdb::comp(r, c));
}

// The value type is deduced from the gradient's type (vdb::value_of_grad).
template <typename G> CUDA_CALLABLE inline typename vdb::value_of_grad<G>::type volume_sample_grad_t(
    uint64 id, vec_t<3, float32> uvw, int32 mode, G& grad) {
    typedef typename vdb::value_of_grad<G>::type V;
    return vdb::sample<V>(id, uvw, mode, reinterpret_cast<typename vdb::value_traits<V>::scalar*>(&grad));
}

template <typename G>
CUDA_CALLABLE inline void adj_volume_sample_grad_t(uint64 id, vec_t<3, float32> uvw, int32 mode, G&, uint64&,
                                                   vec_t<3, float32>& adj_uvw, int32&, G&,
                                                   const typename vdb::value_of_grad<G>::type& adj_ret,
                                                   const G& adj_grad) {
    typedef typename vdb::value_of_grad<G>::type V;
    vdb::adj_sample_with_grad<V>(id, uvw, mode, adj_ret,
                                 reinterpret_cast<const typename vdb::value_traits<V>::scalar*>(&adj_grad), adj_uvw);
}

template <typename V> CUDA_CALLABLE inline V volume_lookup_t(uint64 id, int32 i, int32 j, int32 k) {
    const uint8* g = vdb::grid_of<V>(id);
    return g ? vdb::value<V>(g, i, j, k) : V();
}

// Writes voxel (i, j, k) if a leaf holds it (allocated voxels); a tile or the background is not written, as in
// Warp. Non-differentiable.
template <typename V> CUDA_CALLABLE inline void volume_store_t(uint64 id, int32 i, int32 j, int32 k, V value) {
    const uint8* g = vdb::grid_of<V>(id);
    if (g == nullptr) return;
    const uint8* leaf = nullptr;
    uint8* where = const_cast<uint8*>(vdb::locate<V>(g, i, j, k, &leaf));
    if (leaf == nullptr) return;
    *reinterpret_cast<V*>(where) = value;
}

// ---- Warp's float-grid names --------------------------------------------------------------------------------

CUDA_CALLABLE inline float32 volume_sample_f(uint64 id, vec_t<3, float32> uvw, int32 mode) {
    return volume_sample_t<float32>(id, uvw, mode);
}
CUDA_CALLABLE inline void adj_volume_sample_f(uint64 id, vec_t<3, float32> uvw, int32 mode, uint64& adj_id,
                                              vec_t<3, float32>& adj_uvw, int32& adj_mode, const float32& adj_ret) {
    adj_volume_sample_t<float32>(id, uvw, mode, adj_id, adj_uvw, adj_mode, adj_ret);
}
CUDA_CALLABLE inline float32 volume_sample_grad_f(uint64 id, vec_t<3, float32> uvw, int32 mode,
                                                  vec_t<3, float32>& grad) {
    return volume_sample_grad_t(id, uvw, mode, grad);
}
CUDA_CALLABLE inline int32 volume_sample_closest_i(uint64 id, vec_t<3, float32> uvw) {
    return volume_sample_t<int32>(id, uvw, 0);
}
CUDA_CALLABLE inline void adj_volume_sample_grad_f(uint64 id, vec_t<3, float32> uvw, int32 mode,
                                                   vec_t<3, float32>& grad, uint64& adj_id, vec_t<3, float32>& adj_uvw,
                                                   int32& adj_mode, vec_t<3, float32>& adj_grad_in,
                                                   const float32& adj_ret, const vec_t<3, float32>& adj_grad) {
    adj_volume_sample_grad_t(id, uvw, mode, grad, adj_id, adj_uvw, adj_mode, adj_grad_in, adj_ret, adj_grad);
}
CUDA_CALLABLE inline float32 volume_lookup_f(uint64 id, int32 i, int32 j, int32 k) {
    return volume_lookup_t<float32>(id, i, j, k);
}

CUDA_CALLABLE inline vec_t<3, float32> volume_world_to_index(uint64 id, vec_t<3, float32> p) {
    return vdb::map_apply(id, p, true, false);
}
CUDA_CALLABLE inline void adj_volume_world_to_index(uint64 id, vec_t<3, float32>, uint64&, vec_t<3, float32>& adj_p,
                                                    const vec_t<3, float32>& adj_ret) {
    vdb::adj_map_apply(id, true, adj_p, adj_ret);
}
CUDA_CALLABLE inline vec_t<3, float32> volume_index_to_world(uint64 id, vec_t<3, float32> p) {
    return vdb::map_apply(id, p, false, false);
}
CUDA_CALLABLE inline void adj_volume_index_to_world(uint64 id, vec_t<3, float32>, uint64&, vec_t<3, float32>& adj_p,
                                                    const vec_t<3, float32>& adj_ret) {
    vdb::adj_map_apply(id, false, adj_p, adj_ret);
}
CUDA_CALLABLE inline vec_t<3, float32> volume_world_to_index_dir(uint64 id, vec_t<3, float32> p) {
    return vdb::map_apply(id, p, true, true);
}
CUDA_CALLABLE inline void adj_volume_world_to_index_dir(uint64 id, vec_t<3, float32>, uint64&,
                                                        vec_t<3, float32>& adj_p, const vec_t<3, float32>& adj_ret) {
    vdb::adj_map_apply(id, true, adj_p, adj_ret);
}
CUDA_CALLABLE inline vec_t<3, float32> volume_index_to_world_dir(uint64 id, vec_t<3, float32> p) {
    return vdb::map_apply(id, p, false, true);
}
CUDA_CALLABLE inline void adj_volume_index_to_world_dir(uint64 id, vec_t<3, float32>, uint64&,
                                                        vec_t<3, float32>& adj_p, const vec_t<3, float32>& adj_ret) {
    vdb::adj_map_apply(id, false, adj_p, adj_ret);
}

}  // namespace wp
#include "volume_index.h"
