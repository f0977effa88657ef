// CPU launches in parallel: the module side of the process's thread pool (thread_pool.cpp). Each compiled module
// holds its own copy of the pool's entry points, set by the loader through wp_bind_runtime (kernels/runtime.py);
// a module that was never bound runs everything on the calling thread.
#pragma once
#if !defined(WP_CUDA)
#include <type_traits>
#if defined(WP_OPENMP_RUNTIME)
#include <omp.h>
#endif

#include "core.h"

namespace wp {

typedef void (*range_fn_t)(void* ctx, int64 begin, int64 end, int chunk);

// Layout shared with thread_pool.cpp: keep in sync.
struct runtime_api_t {
    void (*parallel_for)(int64 n, range_fn_t fn, void* ctx, int chunks, int max_runners);
    int (*threads)();
};

#if defined(WP_OPENMP_RUNTIME)
// config.cpu_runtime = "openmp" (the runtime before the pool, kept for comparison): OpenMP's team, static schedule.
inline int cpu_threads() { return omp_get_max_threads(); }
inline bool cpu_parallel() { return cpu_threads() > 1; }
template <typename Body> inline void parallel_for(int64 n, int chunks, int max_runners, Body&& body) {
    if (n <= 0) return;
    if (chunks < 1) chunks = 1;
    const int64 size = (n + chunks - 1) / chunks;
    const int count = int((n + size - 1) / size);
    #pragma omp parallel for schedule(static) num_threads(max_runners)
    for (int c = 0; c < count; ++c) body(int64(c) * size, int64(c) * size + size < n ? int64(c) * size + size : n, c);
}
#else
static runtime_api_t g_runtime = {nullptr, nullptr};

// Threads a parallel launch may use (the calling thread included).
inline int cpu_threads() { return g_runtime.threads ? g_runtime.threads() : 1; }

// Whether a CPU launch of at least the parallel threshold runs on more than one thread. When it does not, backward
// passes add into gradient arrays without atomics.
inline bool cpu_parallel() { return cpu_threads() > 1; }

// body(begin, end, chunk) over [0, n) in `chunks` ranges, each run once by some thread of the pool, at most
// `max_runners` threads at a time; all done on return. Chunk c always covers the same range, so work that keeps
// per-chunk state (private gradient copies) gives the same result whichever thread runs it.
template <typename Body> inline void parallel_for(int64 n, int chunks, int max_runners, Body&& body) {
    typedef typename std::remove_reference<Body>::type B;
    range_fn_t tramp = [](void* ctx, int64 begin, int64 end, int chunk) { (*(B*)ctx)(begin, end, chunk); };
    if (g_runtime.parallel_for) {
        g_runtime.parallel_for(n, tramp, (void*)&body, chunks, max_runners);
    } else {
        tramp((void*)&body, 0, n, 0);
    }
}
#endif

// Chunks per thread for launches without per-chunk state: small enough that threads that start late (or lose their
// core to another process) leave their share to the others.
constexpr int kChunksPerThread = 4;

}  // namespace wp

#if !defined(WP_OPENMP_RUNTIME)
// Defined here, not inline: the header is part of exactly one translation unit per module.
extern "C" __attribute__((visibility("default"), used)) void wp_bind_runtime(const wp::runtime_api_t* api) {
    wp::g_runtime = *api;
}
#endif
#endif
