// wp.cast(a, dtype): the bytes of a value read as another type of the same size (a bit reinterpretation, not a
// conversion). Not differentiable: the compiler refuses a use that needs its gradient, so the adjoint adds nothing.
#pragma once

namespace wp {

template <typename R, typename T> CUDA_CALLABLE inline R bit_cast(const T& a) {
    static_assert(sizeof(R) == sizeof(T), "wp.cast: source and destination must have the same size");
    R r;
    const unsigned char* from = reinterpret_cast<const unsigned char*>(&a);
    unsigned char* to = reinterpret_cast<unsigned char*>(&r);
    for (unsigned k = 0; k < sizeof(T); ++k) to[k] = from[k];
    return r;
}
template <typename R, typename T> CUDA_CALLABLE inline void adj_bit_cast(const T&, T&, const R&) {}

} // namespace wp
