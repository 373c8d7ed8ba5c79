// rand's and randn's values (ops/random_draws.h): blocks of draws across the thread pool, the
// logarithm and cosine of a block in SLEEF's float64 kernels (1 ULP each, vec_math.h).
#include <tapegrad/ops/random_draws.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <tapegrad/backends/cpu/counter_random.h>
#include <tapegrad/backends/cpu/simd/vec_math.h>
#include <tapegrad/core/parallel.h>

namespace tg::cpu {

namespace {

constexpr int64_t kBlock = 256;      // draws per step: fits the stack, feeds whole vectors
constexpr int64_t kGrain = 1 << 14;  // values per task: a normal costs about 10 ns

// A float32 draw is the float64 one rounded, except that the draws within 2^-25 of 1 (which
// round up to 1) take the largest float below 1: U[0, 1) excludes 1.
template <typename T> void uniforms(uint64_t state, T* out, int64_t n) {
  constexpr T kBelowOne = T(1) - std::numeric_limits<T>::epsilon() / 2;
  parallel_for(0, n, kGrain * 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[i] = std::min(static_cast<T>(uniform_at(state, static_cast<uint64_t>(i))), kBelowOne);
  });
}

template <typename T> void normals(uint64_t state, T* out, int64_t n) {
  const vec::Isa* isa = vec::best();
  parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
    double radius[kBlock], angle[kBlock];
    for (int64_t i0 = b; i0 < e; i0 += kBlock) {
      const int64_t m = std::min(kBlock, e - i0);
      for (int64_t j = 0; j < m; ++j) {
        const auto k = static_cast<uint64_t>(i0 + j) * 2;
        radius[j] = 1.0 - uniform_at(state, k);  // in (0, 1]: its log is finite
        angle[j] = 2.0 * M_PI * uniform_at(state, k + 1);
      }
      if (isa) {
        isa->f64.unary[static_cast<int>(vec::Unary::log)](radius, radius, m);
        isa->f64.unary[static_cast<int>(vec::Unary::cos)](angle, angle, m);
        for (int64_t j = 0; j < m; ++j)
          out[i0 + j] = static_cast<T>(std::sqrt(-2.0 * radius[j]) * angle[j]);
      } else {  // without SLEEF: libm, one value at a time
        for (int64_t j = 0; j < m; ++j)
          out[i0 + j] = static_cast<T>(std::sqrt(-2.0 * std::log(radius[j])) * std::cos(angle[j]));
      }
    }
  });
}

}  // namespace

void uniform_draws(uint64_t state, double* out, int64_t n) { uniforms(state, out, n); }
void uniform_draws(uint64_t state, float* out, int64_t n) { uniforms(state, out, n); }
void normal_draws(uint64_t state, double* out, int64_t n) { normals(state, out, n); }
void normal_draws(uint64_t state, float* out, int64_t n) { normals(state, out, n); }

}  // namespace tg::cpu
