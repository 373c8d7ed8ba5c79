#pragma once
// The indexing kernels' vector code: 16-byte lanes (GCC's vector extension, SSE2 on x86-64) for
// counting the winners of amax/amin rows, and mean's (sum, count) pairs.
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "select.h"

namespace tg::cpu::indexing {

// 16-byte vectors of T (GCC's vector extension: 4 floats or 2 doubles), the mask type their
// comparisons give (all bits set where true), and T(1)'s bits in each lane.
template <typename T> struct Lanes {
  using U = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef T Vec __attribute__((vector_size(16)));
  typedef U Mask __attribute__((vector_size(16)));
  static constexpr int64_t kWidth = 16 / sizeof(T);
  static Vec load(const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, Vec v) { std::memcpy(p, &v, sizeof v); }
  static Vec broadcast(T a) { return Vec{} + a; }
  static Vec ones_where(Mask m) {  // 1 where m is set, else 0
    return reinterpret_cast<Vec>(m & (Mask{} + std::bit_cast<U>(T(1))));
  }
};

// Winners of a run, w[j] = [v[j] == r[j]], counted; with dst, dst[j] = g[j * g_step] * w[j]
// (grad / ties with ties 1), g_step 1, or 0 for one grad for the whole run. Vectorised (Lanes),
// the same arithmetic as the per-element formulas.
template <typename T> int64_t winners_of_row(const T* __restrict v, const T* __restrict r,
                                             const T* __restrict g, int64_t g_step,
                                             T* __restrict dst, int64_t n) {
  using L = Lanes<T>;
  typename L::Mask wins{};
  // n == 0 (rows of a 0-size inner dim): g may point at an empty buffer, so g[0] is not read.
  const typename L::Vec g0 = dst && n > 0 ? L::broadcast(g[0]) : typename L::Vec{};
  int64_t j = 0, winners = 0;
  for (; j + L::kWidth <= n; j += L::kWidth) {
    const typename L::Mask won = L::load(v + j) == L::load(r + j);
    wins -= won;  // -(-1) per winner
    if (dst) L::store(dst + j, (g_step == 0 ? g0 : L::load(g + j)) * L::ones_where(won));
  }
  for (int64_t lane = 0; lane < L::kWidth; ++lane) winners += wins[lane];
  for (; j < n; ++j) {
    const bool won = v[j] == r[j];
    winners += won;
    if (dst) dst[j] = static_cast<T>(g[j * g_step] * one_if<T>(won));
  }
  return winners;
}

// pair[0] += v, pair[1] += 1 as one two-lane add: a slot's running sum and count sit side by
// side, so each entry costs one load and one store (separate count and sum arrays cost two of
// each).
inline void add_to_pair(float* pair, float v) {
#if defined(__SSE2__)
  const __m128 add = _mm_unpacklo_ps(_mm_set_ss(v), _mm_set_ss(1.0f));  // (v, 1)
  auto* p = reinterpret_cast<__m64*>(pair);
  _mm_storel_pi(p, _mm_add_ps(_mm_loadl_pi(_mm_setzero_ps(), p), add));
#else
  pair[0] += v;
  pair[1] += 1.0f;
#endif
}
inline void add_to_pair(double* pair, double v) {
#if defined(__SSE2__)
  _mm_storeu_pd(pair, _mm_add_pd(_mm_loadu_pd(pair), _mm_set_pd(1.0, v)));
#else
  pair[0] += v;
  pair[1] += 1.0;
#endif
}

}  // namespace tg::cpu::indexing
