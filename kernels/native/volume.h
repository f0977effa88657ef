// Sparse volumes (wp.Volume): NanoVDB float grids read in place from the grid's buffer, whose address is the
// volume's id. The host (kernels/volume.py) checks the buffer's layout before any kernel sees it.
//
// NanoVDB layout (version 32, float grids): a 672-byte grid header (its index/world map at byte 296), a 64-byte
// tree header (byte offsets of the first leaf, lower, upper and root node from the tree), the root (a table of
// 32-byte tiles keyed by the coordinate's top bits, each a child upper node or a value), upper nodes (32^3
// entries), lower nodes (16^3) and leaves (8^3 float values). An entry of an internal node is a child node
// (its bit in the child mask set; a byte offset from the node) or a tile value. Coordinates outside every root
// tile read as the grid's background value.
//
// Sampling follows Warp: CLOSEST rounds the index-space coordinate; LINEAR blends the 8 surrounding voxels with
// trilinear weights (corners in (0,0,0), (0,0,1), (0,1,0), ... order). Gradients: volume_sample_f and
// volume_world_to_index/index_to_world w.r.t. the coordinate (not the voxel values); volume_sample_grad_f has none.
#pragma once
#include "core.h"
#include "vec.h"

namespace wp {
namespace vdb {

static const uint64 MAGIC_0 = 0x304244566F6E614Eull;  // "NanoVDB0"
static const uint64 MAGIC_1 = 0x314244566F6E614Eull;  // "NanoVDB1"
static const uint32 GRID_TYPE_FLOAT = 1u;
// byte offsets (NanoVDB 32.x)
static const uint64 GRID_SIZE = 672, GRID_MAP = 296, GRID_TYPE = 636;
static const uint64 TREE_ROOT = 24;
static const uint64 ROOT_TABLE_SIZE = 24, ROOT_BACKGROUND = 28, ROOT_SIZE = 64, TILE_SIZE = 32;
static const uint64 TILE_CHILD = 8, TILE_VALUE = 20;
static const uint64 UPPER_CHILD_MASK = 4128, UPPER_TABLE = 8256;
static const uint64 LOWER_CHILD_MASK = 544, LOWER_TABLE = 1088;
static const uint64 LEAF_VALUES = 96;

template <typename T> CUDA_CALLABLE inline T at(const uint8* base, uint64 offset) {
    return *reinterpret_cast<const T*>(base + offset);
}
CUDA_CALLABLE inline bool bit(const uint8* base, uint64 mask_offset, uint32 n) {
    return (at<uint64>(base, mask_offset + 8 * (n >> 6)) >> (n & 63u)) & 1u;
}

// The grid of id, if it is a float grid (else nullptr: sampling gives 0, as Warp's for another value type).
CUDA_CALLABLE inline const uint8* float_grid(uint64 id) {
    const uint8* g = reinterpret_cast<const uint8*>(id);
    if (g == nullptr) return nullptr;
    uint64 magic = at<uint64>(g, 0);
    if ((magic != MAGIC_0 && magic != MAGIC_1) || at<uint32>(g, GRID_TYPE) != GRID_TYPE_FLOAT) return nullptr;
    return g;
}

// The value at integer coordinate (i, j, k): down from the root to the node that holds it.
CUDA_CALLABLE inline float32 value(const uint8* grid, int32 i, int32 j, int32 k) {
    const uint8* root = grid + GRID_SIZE + at<uint64>(grid, GRID_SIZE + TREE_ROOT);
    const uint64 key = (uint64(uint32(k) >> 12) | (uint64(uint32(j) >> 12) << 21)) | (uint64(uint32(i) >> 12) << 42);
    const uint32 tiles = at<uint32>(root, ROOT_TABLE_SIZE);
    const uint8* tile = nullptr;
    for (uint32 t = 0; t < tiles; ++t) {
        const uint8* candidate = root + ROOT_SIZE + uint64(t) * TILE_SIZE;
        if (at<uint64>(candidate, 0) == key) {
            tile = candidate;
            break;
        }
    }
    if (tile == nullptr) return at<float32>(root, ROOT_BACKGROUND);
    const int64 upper_offset = at<int64>(tile, TILE_CHILD);
    if (upper_offset == 0) return at<float32>(tile, TILE_VALUE);
    const uint8* upper = root + upper_offset;
    const uint32 n2 = (((uint32(i) & 4095u) >> 7) << 10) | (((uint32(j) & 4095u) >> 7) << 5) | ((uint32(k) & 4095u) >> 7);
    if (!bit(upper, UPPER_CHILD_MASK, n2)) return at<float32>(upper, UPPER_TABLE + 8 * uint64(n2));
    const uint8* lower = upper + at<int64>(upper, UPPER_TABLE + 8 * uint64(n2));
    const uint32 n1 = (((uint32(i) & 127u) >> 3) << 8) | (((uint32(j) & 127u) >> 3) << 4) | ((uint32(k) & 127u) >> 3);
    if (!bit(lower, LOWER_CHILD_MASK, n1)) return at<float32>(lower, LOWER_TABLE + 8 * uint64(n1));
    const uint8* leaf = lower + at<int64>(lower, LOWER_TABLE + 8 * uint64(n1));
    const uint32 n0 = ((uint32(i) & 7u) << 6) | ((uint32(j) & 7u) << 3) | (uint32(k) & 7u);
    return at<float32>(leaf, LEAF_VALUES + 4 * uint64(n0));
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

// sample and (optionally) its gradient w.r.t. uvw
CUDA_CALLABLE inline float32 sample(uint64 id, const vec_t<3, float32>& uvw, int32 mode, vec_t<3, float32>* grad) {
    if (grad) *grad = vec_t<3, float32>();
    const uint8* g = float_grid(id);
    if (g == nullptr) return 0.0f;
    if (mode == 0) {
        return value(g, int32(::roundf(uvw.c[0])), int32(::roundf(uvw.c[1])), int32(::roundf(uvw.c[2])));
    }
    if (mode != 1) return 0.0f;
    const Stencil s = stencil(uvw);
    float32 result = 0.0f;
    for (int corner = 0; corner < 8; ++corner) {
        const int ox = (corner >> 2) & 1, oy = (corner >> 1) & 1, oz = corner & 1;
        const float32 v = value(g, s.base[0] + ox, s.base[1] + oy, s.base[2] + oz);
        const float32 wx = s.w[0][ox], wy = s.w[1][oy], wz = s.w[2][oz];
        result = result + wx * wy * wz * v;
        if (grad) {
            const float32 sx = float32(2 * ox - 1), sy = float32(2 * oy - 1), sz = float32(2 * oz - 1);
            grad->c[0] += v * (sx * wy * wz);
            grad->c[1] += v * (sy * wx * wz);
            grad->c[2] += v * (sz * wx * wy);
        }
    }
    return result;
}

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

CUDA_CALLABLE inline float32 volume_sample_f(uint64 id, vec_t<3, float32> uvw, int32 mode) {
    return vdb::sample(id, uvw, mode, nullptr);
}
CUDA_CALLABLE inline void adj_volume_sample_f(uint64 id, vec_t<3, float32> uvw, int32 mode, uint64&,
                                              vec_t<3, float32>& adj_uvw, int32&, const float32& adj_ret) {
    if (mode != 1) return;  // CLOSEST is piecewise constant
    vec_t<3, float32> grad;
    vdb::sample(id, uvw, mode, &grad);
    for (int a = 0; a < 3; ++a) adj_uvw.c[a] += grad.c[a] * adj_ret;
}
CUDA_CALLABLE inline float32 volume_sample_grad_f(uint64 id, vec_t<3, float32> uvw, int32 mode,
                                                  vec_t<3, float32>& grad) {
    return vdb::sample(id, uvw, mode, &grad);
}
CUDA_CALLABLE inline float32 volume_lookup_f(uint64 id, int32 i, int32 j, int32 k) {
    const uint8* g = vdb::float_grid(id);
    return g ? vdb::value(g, i, j, k) : 0.0f;
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
