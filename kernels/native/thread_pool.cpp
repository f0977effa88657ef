// The CPU runtime's worker threads: one pool per process, shared by every compiled module (each module gets this
// library's entry points through wp_bind_runtime, see parallel.h). Built once and cached like a kernel module.
//
// Why not OpenMP: an OpenMP team ends each parallel loop at a barrier that waits for every thread of the team, and
// its idle threads spin. When more threads are runnable than there are cores (two simulations side by side, a
// sweep, `pytest -n`), a launch waits for a descheduled thread while the spinners of the other process burn the
// cores it needs: throughput collapses (17x on 2 cores). Here:
// - work is split into chunks that any thread claims with one compare-and-swap, and the launching thread works
//   too: a launch never waits for a worker that has not started, only for chunks already being run;
// - idle workers spin for a bounded time (so back-to-back launches start at once), then sleep on a futex;
// - the launching thread, waiting for the last chunks, yields its core instead of spinning on it;
// - a launch from a second thread while the pool is busy runs on its own thread (never blocks, never races).
//
// Job hand-over without locks: `state` packs (generation << 32 | next chunk). A job is published by writing its
// slot (two slots, by generation parity) and then `state`; a thread reads `state`, reads the slot, and claims a
// chunk by compare-and-swap of `state`. A successful swap proves the generation did not change since the read, and
// the slot of a generation is only rewritten two generations later, after every chunk of it has finished, so the
// slot fields it read were that job's.

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <new>

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WP_EXPORT extern "C" __attribute__((visibility("default")))

typedef void (*range_fn_t)(void* ctx, int64_t begin, int64_t end, int chunk);

namespace {

struct Job {
    std::atomic<range_fn_t> fn{nullptr};
    std::atomic<void*> ctx{nullptr};
    std::atomic<int64_t> n{0};
    std::atomic<int64_t> chunk_size{1};
    std::atomic<uint32_t> chunks{0};
    std::atomic<uint32_t> max_runners{0};  // threads with index >= this do not take part (caller's own limit)
    std::atomic<uint32_t> done{0};
    std::atomic<uint64_t> runners{0};      // bit r: thread r ran a chunk (for tests and diagnostics)
};

Job g_slots[2];
std::atomic<uint64_t> g_state{0};
std::atomic<uint32_t> g_wake{0};      // futex word: bumped when a job is published to sleeping workers
std::atomic<int> g_sleepers{0};
std::atomic<bool> g_stop{false};
std::atomic<int> g_threads{1};        // pool size including the launching thread
std::atomic<int64_t> g_spin_ns{20000};    // how long an idle worker spins on its core
std::atomic<int64_t> g_yield_ns{5000000};  // how long it polls, yielding its core, before it sleeps
std::atomic<uint64_t> g_last_runners{0};  // Job::runners of the last launch the pool ran
std::mutex g_launch;                  // held by the thread whose job the pool is running
pthread_t* g_workers = nullptr;
int g_worker_count = 0;
uint32_t g_generation = 0;  // written only under g_launch

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
    return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

int64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Run chunks of generation `gen` until none is left to claim. `runner` is the thread's index in the pool.
void run_chunks(uint32_t gen, uint32_t runner) {
    uint64_t s = g_state.load(std::memory_order_acquire);
    for (;;) {
        if (uint32_t(s >> 32) != gen) return;
        Job& job = g_slots[gen & 1];
        const uint32_t c = uint32_t(s);
        const uint32_t chunks = job.chunks.load(std::memory_order_relaxed);
        if (c >= chunks || runner >= job.max_runners.load(std::memory_order_relaxed)) return;
        range_fn_t fn = job.fn.load(std::memory_order_relaxed);
        void* ctx = job.ctx.load(std::memory_order_relaxed);
        const int64_t n = job.n.load(std::memory_order_relaxed);
        const int64_t size = job.chunk_size.load(std::memory_order_relaxed);
        if (!g_state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire))
            continue;  // s now holds the current state: try again (or see a new generation)
        const int64_t begin = int64_t(c) * size;
        const int64_t end = begin + size < n ? begin + size : n;
        fn(ctx, begin, end, int(c));
        if (runner < 64) job.runners.fetch_or(uint64_t(1) << runner, std::memory_order_relaxed);
        job.done.fetch_add(1, std::memory_order_acq_rel);
        s = g_state.load(std::memory_order_acquire);
    }
}

void* worker_main(void* arg) {
    const uint32_t runner = uint32_t(reinterpret_cast<intptr_t>(arg));
    uint32_t seen = uint32_t(g_state.load(std::memory_order_acquire) >> 32);
    for (;;) {
        // Bounded waiting, so that the launches of a simulation step find the worker awake: first a short spin,
        // then polling that yields the core at every turn (to a thread of another process, when one is waiting
        // for it: the worker costs nobody anything), then sleep.
        const int64_t start = now_ns();
        const int64_t spin_until = start + g_spin_ns.load(std::memory_order_relaxed);
        const int64_t yield_until = start + g_yield_ns.load(std::memory_order_relaxed);
        uint32_t gen = seen;
        for (int k = 0;; ++k) {
            gen = uint32_t(g_state.load(std::memory_order_acquire) >> 32);
            if (gen != seen || g_stop.load(std::memory_order_relaxed)) break;
            if ((k & 63) != 63) {
                cpu_relax();
                continue;
            }
            const int64_t t = now_ns();
            if (t > yield_until) break;
            if (t > spin_until) sched_yield();
        }
        if (g_stop.load(std::memory_order_relaxed)) return nullptr;
        if (gen == seen) {
            // sleep until a job is published (the re-check after announcing closes the lost-wake-up window)
            g_sleepers.fetch_add(1, std::memory_order_seq_cst);
            const uint32_t word = g_wake.load(std::memory_order_seq_cst);
            gen = uint32_t(g_state.load(std::memory_order_seq_cst) >> 32);
            if (gen == seen && !g_stop.load(std::memory_order_seq_cst))
                futex(&g_wake, FUTEX_WAIT_PRIVATE, word);
            g_sleepers.fetch_sub(1, std::memory_order_seq_cst);
            continue;
        }
        run_chunks(gen, runner);
        seen = gen;
    }
}

void stop_workers() {
    if (g_worker_count == 0) return;
    g_stop.store(true, std::memory_order_seq_cst);
    g_wake.fetch_add(1, std::memory_order_seq_cst);
    futex(&g_wake, FUTEX_WAKE_PRIVATE, INT_MAX);
    for (int i = 0; i < g_worker_count; ++i) pthread_join(g_workers[i], nullptr);
    delete[] g_workers;
    g_workers = nullptr;
    g_worker_count = 0;
    g_stop.store(false, std::memory_order_seq_cst);
}

// After fork() only the forking thread exists in the child: forget the workers (without joining threads that are
// not there) and let the next launch start new ones.
void after_fork_in_child() {
    g_workers = nullptr;  // the parent's array is leaked in the child, on purpose
    g_worker_count = 0;
    g_sleepers.store(0);
    g_stop.store(false);
    new (&g_launch) std::mutex();
}

bool start_workers(int threads) {
    g_workers = new pthread_t[threads > 1 ? threads - 1 : 1];
    for (int i = 1; i < threads; ++i) {
        if (pthread_create(&g_workers[g_worker_count], nullptr, worker_main,
                           reinterpret_cast<void*>(intptr_t(i))) != 0)
            return false;
        ++g_worker_count;
    }
    return true;
}

}  // namespace

// Set the number of threads (>= 1; the launching thread counts as one). Returns the number now in use, which is
// smaller when the system refused to start threads.
WP_EXPORT int wp_pool_set_threads(int threads) {
    static bool registered = false;
    std::lock_guard<std::mutex> lock(g_launch);
    if (!registered) {
        pthread_atfork(nullptr, nullptr, after_fork_in_child);
        registered = true;
    }
    if (threads < 1) threads = 1;
    if (threads == g_threads.load() && g_worker_count == threads - 1) return threads;
    stop_workers();
    start_workers(threads);
    g_threads.store(g_worker_count + 1);
    return g_worker_count + 1;
}

WP_EXPORT int wp_pool_threads() { return g_threads.load(std::memory_order_relaxed); }

// How long idle workers spin [ns], and how long they poll yielding their core [ns] before they sleep.
WP_EXPORT void wp_pool_set_wait_ns(int64_t spin_ns, int64_t yield_ns) {
    g_spin_ns.store(spin_ns < 0 ? 0 : spin_ns);
    g_yield_ns.store(yield_ns < spin_ns ? spin_ns : yield_ns);
}

// Run fn over [0, n) split into `chunks` ranges (chunk index c covers [c * size, min(n, (c + 1) * size))), on at most
// `max_runners` threads. Chunks run on any thread, each exactly once, and all have finished when this returns.
WP_EXPORT void wp_pool_parallel_for(int64_t n, range_fn_t fn, void* ctx, int chunks, int max_runners) {
    if (n <= 0) return;
    if (chunks < 1) chunks = 1;
    if (int64_t(chunks) > n) chunks = int(n);
    const int64_t size = (n + chunks - 1) / chunks;
    chunks = int((n + size - 1) / size);
    if (g_worker_count == 0 || max_runners < 2 || chunks < 2 || !g_launch.try_lock()) {
        // one thread (or the pool is running another thread's launch): the chunks in order, here
        for (int c = 0; c < chunks; ++c) {
            const int64_t begin = int64_t(c) * size;
            fn(ctx, begin, begin + size < n ? begin + size : n, c);
        }
        return;
    }
    const uint32_t gen = ++g_generation;
    Job& job = g_slots[gen & 1];
    job.fn.store(fn, std::memory_order_relaxed);
    job.ctx.store(ctx, std::memory_order_relaxed);
    job.n.store(n, std::memory_order_relaxed);
    job.chunk_size.store(size, std::memory_order_relaxed);
    job.chunks.store(uint32_t(chunks), std::memory_order_relaxed);
    job.max_runners.store(uint32_t(max_runners), std::memory_order_relaxed);
    job.done.store(0, std::memory_order_relaxed);
    job.runners.store(0, std::memory_order_relaxed);
    g_state.store(uint64_t(gen) << 32, std::memory_order_seq_cst);
    if (g_sleepers.load(std::memory_order_seq_cst) > 0) {
        g_wake.fetch_add(1, std::memory_order_seq_cst);
        futex(&g_wake, FUTEX_WAKE_PRIVATE, INT_MAX);
    }
    run_chunks(gen, 0);
    // the last chunks run on other threads: give them the core rather than spin against them
    for (int k = 0; job.done.load(std::memory_order_acquire) < uint32_t(chunks); ++k) {
        if (k < 64)
            cpu_relax();
        else
            sched_yield();
    }
    g_last_runners.store(job.runners.load(std::memory_order_relaxed), std::memory_order_relaxed);
    g_launch.unlock();
}

// Which pool threads (bit r: thread r, 0 the launching one) ran chunks of the last launch the pool ran.
WP_EXPORT uint64_t wp_pool_last_runners() { return g_last_runners.load(std::memory_order_relaxed); }

// The table a module binds to (parallel.h: runtime_api_t; keep in sync).
struct runtime_api_t {
    void (*parallel_for)(int64_t, range_fn_t, void*, int, int);
    int (*threads)();
};

WP_EXPORT const runtime_api_t* wp_runtime_api() {
    static const runtime_api_t api = {wp_pool_parallel_for, wp_pool_threads};
    return &api;
}
