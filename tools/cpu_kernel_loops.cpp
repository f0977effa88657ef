// Hand-written loops doing the arithmetic of sim/solvers/semi_implicit/kernels.py eval_triangle_forces (StVK
// membrane + strain-rate damping + aerodynamics, a third of the triangle's force on each vertex) on the kernel's own
// arrays, for tools/profile_cpu_kernels.py: what one core does with this arithmetic when nothing but the arithmetic
// is written, against what the kernel compiler generates (issue 37). Built with the CPU backend's flags
// (kernels/compiler/build.py cpu_flags): no fast-math, IEEE as the kernels.
//
// Arrays (contiguous, float32 unless said): x, v [particles][3] (m, m/s); tri [n][3] int32; pose [n][2][2] (Dm^-1,
// 1/m, row-major); area [n] (m^2); material [n][5] (mu, lambda, damping, drag, lift); f [particles][3] (N), added to.
//
// tri_forces_scalar: one triangle after another, as the generated loop (no function calls, no descriptors).
// tri_forces_blocked: blocks of kBlock triangles; the block's inputs gathered into lanes (structure of arrays), the
// arithmetic run lane by lane in a loop the C++ compiler vectorises (the aerodynamic early-out becomes a select),
// then the forces added into f triangle after triangle, in task order (the sums are the scalar loop's).
#include <cmath>
#include <cstdint>

#define EXPORT __attribute__((visibility("default")))  // the backend builds with -fvisibility=hidden

namespace {

struct V3 {
    float x, y, z;
};
inline V3 operator+(V3 a, V3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline V3 operator-(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline V3 operator*(V3 a, float s) { return {a.x * s, a.y * s, a.z * s}; }
inline V3 operator/(V3 a, float s) { return {a.x / s, a.y / s, a.z / s}; }
inline V3 neg(V3 a) { return {-a.x, -a.y, -a.z}; }
inline float dot(V3 a, V3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline V3 cross(V3 a, V3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
inline float length(V3 a) { return std::sqrt(dot(a, a)); }
inline V3 load(const float* p, int32_t i) { return {p[3 * i], p[3 * i + 1], p[3 * i + 2]}; }
inline void add_into(float* f, int32_t i, V3 a) {
    f[3 * i] += a.x;
    f[3 * i + 1] += a.y;
    f[3 * i + 2] += a.z;
}

// The three vertex forces of one triangle; `ok` replaces the kernel's aerodynamic early-out by selects (the same
// values), so the blocked loop has no branch.
struct Forces {
    V3 fi, fj, fk;
};

// always inline: the blocked loop is vectorised only once this body is in it
__attribute__((always_inline)) inline Forces triangle(V3 xi, V3 xj, V3 xk, V3 vi, V3 vj, V3 vk, float a00, float a01,
                                                      float a10, float a11, float area, float mu, float lam,
                                                      float kd, float drag, float lift) {
    V3 e1 = xj - xi, e2 = xk - xi;
    V3 f1 = e1 * a00 + e2 * a10, f2 = e1 * a01 + e2 * a11;
    V3 u1 = vj - vi, u2 = vk - vi;
    V3 g1 = u1 * a00 + u2 * a10, g2 = u1 * a01 + u2 * a11;
    // StVK: P = F (2 mu E + lambda tr(E) I)
    float e00 = 0.5f * (dot(f1, f1) - 1.0f), e11 = 0.5f * (dot(f2, f2) - 1.0f), e01 = 0.5f * dot(f1, f2);
    float tr = e00 + e11;
    float s00 = 2.0f * mu * e00 + lam * tr, s11 = 2.0f * mu * e11 + lam * tr, s01 = 2.0f * mu * e01;
    V3 p1 = f1 * s00 + f2 * s01, p2 = f1 * s01 + f2 * s11;
    // strain-rate damping
    float r00 = dot(f1, g1), r11 = dot(f2, g2), r01 = 0.5f * (dot(f1, g2) + dot(f2, g1));
    p1 = p1 + (f1 * r00 + f2 * r01) * kd;
    p2 = p2 + (f1 * r01 + f2 * r11) * kd;
    V3 fj = (p1 * a00 + p2 * a01) * (-area), fk = (p1 * a10 + p2 * a11) * (-area);
    V3 fi = neg(fj + fk);
    // aerodynamics on the mid velocity; zero for a degenerate triangle or a still one
    V3 vmid = (vi + vj + vk) / 3.0f;
    V3 c = cross(xj - xi, xk - xi);
    float cl = length(c), speed = length(vmid);
    bool ok = !(cl < 1.0e-12f || speed < 1.0e-9f);
    float cls = ok ? cl : 1.0f, sps = ok ? speed : 1.0f;  // selects: the lanes that are not ok divide by one
    V3 n = c / cls;
    float vn = dot(vmid, n);
    V3 drag_f = n * (-drag * std::fabs(vn) * vn);
    V3 lift_f = (n * sps - vmid * (vn / sps)) * (-lift * vn);
    V3 fa = (drag_f + lift_f) * (0.5f * cls);
    fa = ok ? fa / 3.0f : V3{0.0f, 0.0f, 0.0f};
    return {fi + fa, fj + fa, fk + fa};
}

constexpr int kBlock = 16;

}  // namespace

extern "C" EXPORT void tri_forces_scalar(int64_t n, const float* x, const float* v, const int32_t* tri,
                                         const float* pose,
                                  const float* area, const float* material, float* f) {
    for (int64_t t = 0; t < n; ++t) {
        const int32_t i = tri[3 * t], j = tri[3 * t + 1], k = tri[3 * t + 2];
        const float* p = pose + 4 * t;
        const float* m = material + 5 * t;
        Forces r = triangle(load(x, i), load(x, j), load(x, k), load(v, i), load(v, j), load(v, k), p[0], p[1], p[2],
                            p[3], area[t], m[0], m[1], m[2], m[3], m[4]);
        add_into(f, i, r.fi);
        add_into(f, j, r.fj);
        add_into(f, k, r.fk);
    }
}

extern "C" EXPORT void tri_forces_blocked(int64_t n, const float* x, const float* v, const int32_t* tri,
                                          const float* pose,
                                   const float* area, const float* material, float* f) {
    // lanes: inputs (18 position/velocity components, 4 pose, 6 material) and outputs (9 force components)
    alignas(64) float in[34][kBlock];
    alignas(64) float out[9][kBlock];
    for (int64_t t0 = 0; t0 < n; t0 += kBlock) {
        const int count = int(n - t0 < kBlock ? n - t0 : kBlock);
        for (int l = 0; l < kBlock; ++l) {
            const int64_t t = t0 + (l < count ? l : 0);  // a short last block repeats its first triangle
            const int32_t id[3] = {tri[3 * t], tri[3 * t + 1], tri[3 * t + 2]};
            for (int c = 0; c < 3; ++c)
                for (int d = 0; d < 3; ++d) {
                    in[3 * c + d][l] = x[3 * id[c] + d];
                    in[9 + 3 * c + d][l] = v[3 * id[c] + d];
                }
            for (int c = 0; c < 4; ++c) in[18 + c][l] = pose[4 * t + c];
            in[22][l] = area[t];
            for (int c = 0; c < 5; ++c) in[23 + c][l] = material[5 * t + c];
        }
        for (int l = 0; l < kBlock; ++l) {  // straight-line arithmetic over lanes: vectorised
            auto g = [&](int r) { return V3{in[r][l], in[r + 1][l], in[r + 2][l]}; };
            Forces r = triangle(g(0), g(3), g(6), g(9), g(12), g(15), in[18][l], in[19][l], in[20][l], in[21][l],
                                in[22][l], in[23][l], in[24][l], in[25][l], in[26][l], in[27][l]);
            out[0][l] = r.fi.x; out[1][l] = r.fi.y; out[2][l] = r.fi.z;
            out[3][l] = r.fj.x; out[4][l] = r.fj.y; out[5][l] = r.fj.z;
            out[6][l] = r.fk.x; out[7][l] = r.fk.y; out[8][l] = r.fk.z;
        }
        for (int l = 0; l < count; ++l) {  // scatter in task order
            const int64_t t = t0 + l;
            for (int c = 0; c < 3; ++c)
                add_into(f, tri[3 * t + c], V3{out[3 * c][l], out[3 * c + 1][l], out[3 * c + 2][l]});
        }
    }
}
