// Index-based volume access (Warp's volume_lookup_index, volume_sample_index, volume_sample_grad_index): a voxel's
// linear index (NanoVDB index grids: the index the grid stores; value grids: 512 per leaf in leaf order plus the
// voxel's place in its leaf), and sampling values kept in a user array at those indices, `background` elsewhere.
// Gradients of volume_sample_index and volume_sample_grad_index (through its gradient output too): w.r.t. uvw, the
// array's values (accumulated atomically) and the background.
#pragma once
#include "array.h"
#include "volume.h"

namespace wp {
namespace vdb {

static const uint32 GRID_TYPE_INDEX = 19u, GRID_TYPE_ON_INDEX = 20u;
static const uint64 INDEX_LEAF_OFFSET = 80, INDEX_LEAF_PREFIX = 88;

CUDA_CALLABLE inline uint32 popcount64(uint64 x) {
#if defined(__CUDA_ARCH__)
    return uint32(__popcll(x));
#else
    return uint32(__builtin_popcountll(x));
#endif
}

// 1 + the linear index of voxel (i, j, k) in a grid of value type V (0: not in a leaf).
template <typename V> CUDA_CALLABLE inline uint64 regular_index(const uint8* g, int32 i, int32 j, int32 k) {
    const uint8* leaf = nullptr;
    const uint8* where = locate<V>(g, i, j, k, &leaf);
    if (leaf == nullptr) return 0;
    const uint8* first = g + GRID_SIZE + at<uint64>(g, GRID_SIZE);
    const uint64 leaf_size = align_up(layout<V>::leaf_values + layout<V>::size * 512, 32);
    const uint64 n = uint64(where - (leaf + layout<V>::leaf_values)) / layout<V>::size;
    return uint64(leaf - first) / leaf_size * 512 + n + 1;
}

// 1 + the linear index of voxel (i, j, k) of an index grid (0: inactive or background): a leaf's first index plus
// the active voxels before it (9-bit prefix sums of the mask's 64-bit words, then the word's own bits).
CUDA_CALLABLE inline uint64 index_grid_index(const uint8* g, uint32 type, int32 i, int32 j, int32 k) {
    const uint8* leaf = nullptr;
    const uint8* where = locate<uint64>(g, i, j, k, &leaf);
    if (leaf == nullptr) return at<uint64>(where, 0);  // a tile's (or the background's) index
    const uint32 n = ((uint32(i) & 7u) << 6) | ((uint32(j) & 7u) << 3) | (uint32(k) & 7u);
    const uint64 offset = at<uint64>(leaf, INDEX_LEAF_OFFSET);
    if (type == GRID_TYPE_INDEX) return offset + n;
    const uint32 word = n >> 6;
    const uint64 bits = at<uint64>(leaf, 16 + 8 * word);
    if (!((bits >> (n & 63u)) & 1u)) return 0;
    uint64 index = offset + popcount64(bits & ((uint64(1) << (n & 63u)) - 1u));
    if (word) index += (at<uint64>(leaf, INDEX_LEAF_PREFIX) >> (9u * (word - 1u))) & 511u;
    return index;
}

CUDA_CALLABLE inline uint64 voxel_index(uint64 id, int32 i, int32 j, int32 k) {
    const uint8* g = reinterpret_cast<const uint8*>(id);
    if (g == nullptr) return 0;
    const uint32 type = at<uint32>(g, GRID_TYPE);
    switch (type) {
        case GRID_TYPE_INDEX:
        case GRID_TYPE_ON_INDEX: return index_grid_index(g, type, i, j, k);
        case 1u: return regular_index<float32>(g, i, j, k);
        case 2u: return regular_index<float64>(g, i, j, k);
        case 4u: return regular_index<int32>(g, i, j, k);
        case 5u: return regular_index<int64>(g, i, j, k);
        case 10u: return regular_index<uint32>(g, i, j, k);
        case 6u: return regular_index<vec_t<3, float32>>(g, i, j, k);
        case 7u: return regular_index<vec_t<3, float64>>(g, i, j, k);
        case 17u: return regular_index<vec_t<4, float32>>(g, i, j, k);
        case 18u: return regular_index<vec_t<4, float64>>(g, i, j, k);
        default: return 0;
    }
}

// The value of a corner: voxel_data[index - 1], or the background (index 0 or past the array).
template <typename T> CUDA_CALLABLE inline T* indexed_value(const array_t<T>& data, uint64 index) {
    if (index == 0 || data.data == nullptr || int64(index - 1) >= int64(data.shape[0])) return nullptr;
    return reinterpret_cast<T*>(reinterpret_cast<char*>(data.data) + int64(index - 1) * data.strides[0]);
}

// Sample values stored at voxel indices; with adj_ret, accumulate the adjoints instead (uvw, data, background).
template <typename T> CUDA_CALLABLE inline T sample_indexed(uint64 id, const vec_t<3, float32>& uvw, int32 mode,
                                                            const array_t<T>& data, const T& background,
                                                            typename value_traits<T>::scalar* grad,
                                                            const T* adj_ret = nullptr,
                                                            vec_t<3, float32>* adj_uvw = nullptr,
                                                            const array_t<T>* adj_data = nullptr,
                                                            T* adj_background = nullptr,
                                                            const void* adj_grad_bytes = nullptr) {
    const typename value_traits<T>::scalar* adj_grad =
        reinterpret_cast<const typename value_traits<T>::scalar*>(adj_grad_bytes);
    typedef typename value_traits<T>::scalar S;
    const uint32 n = value_traits<T>::n;
    if (grad)
        for (uint32 c = 0; c < 3 * n; ++c) grad[c] = S(0);
    T result = T();
    if (mode != 0 && mode != 1) return result;
    const Stencil s = stencil(uvw);
    const int corners = mode == 0 ? 1 : 8;
    for (int corner = 0; corner < corners; ++corner) {
        const int ox = (corner >> 2) & 1, oy = (corner >> 1) & 1, oz = corner & 1;
        int32 ijk[3];
        S w[3], dw[3];
        for (int a = 0; a < 3; ++a) {
            const int o = a == 0 ? ox : a == 1 ? oy : oz;
            ijk[a] = mode == 0 ? int32(::roundf(uvw.c[a])) : s.base[a] + o;
            w[a] = mode == 0 ? S(1) : S(s.w[a][o]);
            dw[a] = mode == 0 ? S(0) : S(2 * o - 1);
        }
        const uint64 index = voxel_index(id, ijk[0], ijk[1], ijk[2]);
        T* slot = indexed_value(data, index);
        T v = slot ? *slot : background;
        const S weight = w[0] * w[1] * w[2];
        for (uint32 c = 0; c < n; ++c) {
            const S vc = comp(v, c);
            comp(result, c) += weight * vc;
            if (grad) {
                // the same operations in the same order as vdb::sample, so both give the same bits
                grad[3 * c + 0] += vc * (dw[0] * w[1] * w[2]);
                grad[3 * c + 1] += vc * (dw[1] * w[0] * w[2]);
                grad[3 * c + 2] += vc * (dw[2] * w[0] * w[1]);
            }
        }
        if (adj_ret) {
            T r = *adj_ret;
            // D[a] = d weight / d uvw[a]; the gradient output is sum over corners of v D, its derivative w.r.t. uvw
            // the mixed terms v d[a] d[b] w[other] (pure second derivatives of trilinear weights are 0)
            const S D[3] = {dw[0] * w[1] * w[2], w[0] * dw[1] * w[2], w[0] * w[1] * dw[2]};
            for (uint32 c = 0; c < n; ++c) {
                const S rc = comp(r, c), vc = comp(v, c);
                S adj_v = weight * rc;
                for (int a = 0; a < 3; ++a) {
                    S da = rc * vc * D[a];
                    if (adj_grad) {
                        const int b1 = (a + 1) % 3, b2 = (a + 2) % 3;
                        adj_v += adj_grad[3 * c + a] * D[a];
                        da += adj_grad[3 * c + b1] * vc * dw[a] * dw[b1] * w[b2];
                        da += adj_grad[3 * c + b2] * vc * dw[a] * dw[b2] * w[b1];
                    }
                    if (adj_uvw) adj_uvw->c[a] += float32(da);
                }
                T* adj_slot = slot && adj_data ? indexed_value(*adj_data, index) : nullptr;
                if (adj_slot)
                    atomic_rmw_add(&comp(*adj_slot, c), adj_v);
                else if (!slot && adj_background)
                    comp(*adj_background, c) += adj_v;
            }
        }
    }
    return result;
}

}  // namespace vdb

// The number of indexable voxels: the tree's active voxel count (512 per leaf of a value grid; an index grid's
// active voxels).
CUDA_CALLABLE inline int32 volume_voxel_count(uint64 id) {
    const uint8* g = reinterpret_cast<const uint8*>(id);
    return g ? int32(vdb::at<uint64>(g, vdb::GRID_SIZE + 56)) : 0;
}

CUDA_CALLABLE inline int32 volume_lookup_index(uint64 id, int32 i, int32 j, int32 k) {
    return int32(vdb::voxel_index(id, i, j, k)) - 1;
}

template <typename T>
CUDA_CALLABLE inline T volume_sample_index(uint64 id, vec_t<3, float32> uvw, int32 mode, const array_t<T>& data,
                                           T background) {
    return vdb::sample_indexed<T>(id, uvw, mode, data, background, nullptr);
}
template <typename T>
CUDA_CALLABLE inline void adj_volume_sample_index(uint64 id, vec_t<3, float32> uvw, int32 mode,
                                                  const array_t<T>& data, T background, uint64&,
                                                  vec_t<3, float32>& adj_uvw, int32&, const array_t<T>& adj_data,
                                                  T& adj_background, const T& adj_ret) {
    vdb::sample_indexed<T>(id, uvw, mode, data, background, nullptr, &adj_ret, mode == 1 ? &adj_uvw : nullptr,
                           &adj_data, &adj_background);
}

template <typename T, typename G>
CUDA_CALLABLE inline T volume_sample_grad_index(uint64 id, vec_t<3, float32> uvw, int32 mode, const array_t<T>& data,
                                                T background, G& grad) {
    return vdb::sample_indexed<T>(id, uvw, mode, data, background,
                                  reinterpret_cast<typename vdb::value_traits<T>::scalar*>(&grad));
}
// Adjoints through the value and the gradient output: uvw (LINEAR only), the voxel values and the background.
template <typename T, typename G>
CUDA_CALLABLE inline void adj_volume_sample_grad_index(uint64 id, vec_t<3, float32> uvw, int32 mode,
                                                       const array_t<T>& data, T background, G&, uint64&,
                                                       vec_t<3, float32>& adj_uvw, int32&, const array_t<T>& adj_data,
                                                       T& adj_background, G&, const T& adj_ret, const G& adj_grad) {
    vdb::sample_indexed<T>(id, uvw, mode, data, background, nullptr, &adj_ret, mode == 1 ? &adj_uvw : nullptr,
                           &adj_data, &adj_background, &adj_grad);
}

}  // namespace wp
