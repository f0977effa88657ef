// print(t) of a tile of scalars, in Warp's layout: numpy-style nested brackets, elements separated by spaces (floats
// as %g), then " = tile(shape=(...))". Once per block: lane 0 prints on CUDA, the only lane on the CPU.
#pragma once
#include "debug_print.h"
#include "tile.h"

namespace wp {

template <typename T, int R, int C>
CUDA_CALLABLE inline void tile_print(const tile_t<T, R, C>& t, const char* label, int32 n0, int32 n1, int32 n2,
                                     int32 n3, int32 ndim) {
#if defined(__CUDA_ARCH__)
    if (threadIdx.x != 0) return;
#endif
    const int n[4] = {n0, n1, n2, n3};
    for (int k = 0; k < R * C; ++k) {
        // how many axes start a new sub-array at element k (its trailing coordinates that are 0)
        int opened = 0, rest = k;
        for (int d = ndim - 1; d > 0 && rest % n[d] == 0; --d) {  // the outermost bracket opens at k == 0 only
            ++opened;
            rest /= n[d];
        }
        if (k == 0) {
            for (int i = 0; i < ndim; ++i) ::printf("[");
        } else if (opened > 0) {
            for (int i = 0; i < opened; ++i) ::printf("]");
            for (int i = 0; i < opened; ++i) ::printf("\n");
            for (int i = 0; i < ndim - opened; ++i) ::printf(" ");
            for (int i = 0; i < opened; ++i) ::printf("[");
        } else {
            ::printf(" ");
        }
        typedef typename print_spec<T>::arg_t A;
        ::printf(print_spec<T>::spec(), A(print_component(t.data[k])));
    }
    for (int i = 0; i < ndim; ++i) ::printf("]");
    ::printf("%s\n", label);
}
template <typename... Args> CUDA_CALLABLE inline void adj_tile_print(Args&&...) {}

}  // namespace wp
