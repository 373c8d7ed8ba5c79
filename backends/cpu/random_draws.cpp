// rand's, randn's and randint's values (ops/random_draws.h): blocks of draws across the thread
// pool, the logarithm and cosine of a block in SLEEF's float64 kernels (1 ULP each, vec_math.h).
#include <tapegrad/ops/random_draws.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <tapegrad/backends/cpu/counter_random.h>
#include <tapegrad/backends/cpu/simd/vec_math.h>
#include <tapegrad/core/parallel.h>

namespace tg::cpu {

namespace {

constexpr int64_t kDrawBlock = 256;      // draws per step: fits the stack, feeds whole vectors
constexpr int64_t kDrawGrain = 1 << 14;  // values per task: a normal costs about 10 ns

// A float32 draw is the float64 one rounded, except that the draws within 2^-25 of 1 (which
// round up to 1) take the largest float below 1: U[0, 1) excludes 1.
template <typename T> void fill_uniforms(uint64_t state, T* out, int64_t n) {
  constexpr T kBelowOne = T(1) - std::numeric_limits<T>::epsilon() / 2;
  parallel_for(0, n, kDrawGrain * 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[i] = std::min(static_cast<T>(uniform_at(state, static_cast<uint64_t>(i))), kBelowOne);
  });
}

template <typename T> void fill_normals(uint64_t state, T* out, int64_t n) {
  const vec::Isa* isa = vec::best();
  parallel_for(0, n, kDrawGrain, [&](int64_t b, int64_t e) {
    double radius[kDrawBlock], angle[kDrawBlock];
    for (int64_t i0 = b; i0 < e; i0 += kDrawBlock) {
      const int64_t m = std::min(kDrawBlock, e - i0);
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

// x % span without a division (a 64-bit one took most of a draw's time): the quotient from the
// high half of x * floor((2^64 - 1) / span), which is at most 2 short of x / span's, then the
// remainder corrected. low + r in unsigned arithmetic: with a span past 2^63 the signed sum
// would overflow on the way to a value in [low, high).
void integer_draws(uint64_t state, int64_t low, uint64_t span, int64_t* out, int64_t n) {
  const uint64_t inverse = ~uint64_t{0} / span;
  parallel_for(0, n, kDrawGrain * 4, [=](int64_t b, int64_t e) {  // by value: kept in registers
    for (int64_t i = b; i < e; ++i) {
      const uint64_t x = bits_at(state, static_cast<uint64_t>(i));
      const auto q = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * inverse) >> 64);
      uint64_t r = x - q * span;
      // masks, not branches: a quarter of the draws need a correction, unpredictably
      r -= span & (uint64_t{0} - static_cast<uint64_t>(r >= span));
      r -= span & (uint64_t{0} - static_cast<uint64_t>(r >= span));
      out[i] = static_cast<int64_t>(static_cast<uint64_t>(low) + r);  // in [low, high)
    }
  });
}

void uniform_draws(uint64_t state, double* out, int64_t n) { fill_uniforms(state, out, n); }
void uniform_draws(uint64_t state, float* out, int64_t n) { fill_uniforms(state, out, n); }
void normal_draws(uint64_t state, double* out, int64_t n) { fill_normals(state, out, n); }
void normal_draws(uint64_t state, float* out, int64_t n) { fill_normals(state, out, n); }

}  // namespace tg::cpu
