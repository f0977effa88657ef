// Replay of a captured command list (kernels/capture.py): every recorded launch, fill and copy in order, from one
// native loop, so that a replayed simulation step costs no Python per launch. Kept in sync with `Command` there.
#include <cstdint>
#include <cstring>

namespace {

enum kind_t : int64_t { FORWARD = 0, BACKWARD = 1, ZERO = 2, COPY = 3, FILL = 4, HOST = 5 };

struct command_t {
    int64_t kind;
    void* fn;              // FORWARD/BACKWARD: kernel entry point; HOST: callback
    const void* bounds;    // launch bounds (wp::launch_bounds_t)
    const void* args;      // kernel arguments struct
    const void* adj_args;  // adjoint arguments struct (BACKWARD)
    int64_t threshold;     // launches of at least this many threads run in parallel; HOST: callback id
    void* dst;             // ZERO/COPY/FILL destination
    const void* src;       // COPY source; FILL: one element's bytes
    int64_t bytes;         // ZERO/COPY/FILL: bytes written
    int64_t pattern_bytes; // FILL: bytes of one element
};

typedef void (*forward_t)(const void*, const void*, int64_t);
typedef void (*backward_t)(const void*, const void*, const void*, int64_t);
typedef int32_t (*host_t)(int64_t);

void fill(char* dst, const void* pattern, int64_t pattern_bytes, int64_t bytes) {
    if (bytes <= 0) return;
    const int64_t first = pattern_bytes < bytes ? pattern_bytes : bytes;
    memcpy(dst, pattern, first);
    // double the filled prefix each round: log2(elements) memcpy calls instead of one per element
    for (int64_t done = first; done < bytes;) {
        const int64_t n = done < bytes - done ? done : bytes - done;
        memcpy(dst + done, dst, n);
        done += n;
    }
}

}  // namespace

// Runs commands [0, n); returns -1, or the index of a host callback that reported an error (replay stops there).
extern "C" __attribute__((visibility("default"))) int64_t wp_replay(const command_t* cmds, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const command_t& c = cmds[i];
        switch (c.kind) {
            case FORWARD: ((forward_t)c.fn)(c.bounds, c.args, c.threshold); break;
            case BACKWARD: ((backward_t)c.fn)(c.bounds, c.args, c.adj_args, c.threshold); break;
            case ZERO: memset(c.dst, 0, (size_t)c.bytes); break;
            case COPY: memmove(c.dst, c.src, (size_t)c.bytes); break;
            case FILL: fill((char*)c.dst, c.src, c.pattern_bytes, c.bytes); break;
            case HOST:
                if (((host_t)c.fn)(c.threshold) != 0) return i;
                break;
            default: return i;
        }
    }
    return -1;
}
