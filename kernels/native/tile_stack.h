// wp.tile_stack: a block-local LIFO stack of at most CAP values (kernels/tile_stack_type.py). On the CPU a block
// runs as one lane, so each call acts for that lane alone. No gradient flows through a stack (the builtins are declared
// non-differentiable); the adjoints exist so that a backward kernel can replay the forward calls.
#pragma once
#include "core.h"

namespace wp {

template <typename T, int CAP> struct tile_stack_t {
    T data[CAP];
    int32 count;
    CUDA_CALLABLE tile_stack_t() : count(0) {}
};
template <typename T, int CAP>
CUDA_CALLABLE inline tile_stack_t<T, CAP> add(const tile_stack_t<T, CAP>& a, const tile_stack_t<T, CAP>&) {
    return a;
}

template <typename Stack> CUDA_CALLABLE inline Stack tile_stack() { return Stack(); }
template <typename Stack> CUDA_CALLABLE inline void adj_tile_stack(const Stack&) {}

// The slot `value` went to, or -1 when has_value is false or the stack is full.
template <typename T, int CAP>
CUDA_CALLABLE inline int32 tile_stack_push(tile_stack_t<T, CAP>& s, const T& value, bool has_value) {
    if (!has_value || s.count >= CAP)
        return -1;
    s.data[s.count] = value;
    return s.count++;
}
template <typename T, int CAP>
CUDA_CALLABLE inline void adj_tile_stack_push(const tile_stack_t<T, CAP>&, const T&, bool, tile_stack_t<T, CAP>&, T&,
                                              bool&, int32) {}

template <typename T> struct tile_stack_pop_t {
    T v0;      // the value (T() when the stack was empty)
    int32 v1;  // its slot, or -1 when the stack was empty
};
template <typename T, int CAP> CUDA_CALLABLE inline tile_stack_pop_t<T> tile_stack_pop(tile_stack_t<T, CAP>& s) {
    tile_stack_pop_t<T> r;
    if (s.count <= 0) {
        r.v0 = T();
        r.v1 = -1;
        return r;
    }
    --s.count;
    r.v0 = s.data[s.count];
    r.v1 = s.count;
    return r;
}

template <typename T, int CAP> CUDA_CALLABLE inline int32 tile_stack_count(const tile_stack_t<T, CAP>& s) {
    return s.count;
}
template <typename T, int CAP> CUDA_CALLABLE inline void tile_stack_clear(tile_stack_t<T, CAP>& s) { s.count = 0; }

}  // namespace wp
