#pragma once
// Row helpers shared by the softmax kernels (softmax.cpp) and the class-index losses
// (nll_loss.cpp). A tensor is read as a contiguous block [outer, size, inner]: a "row" is the
// `size` elements along one dim, element j of row (o, i) at o * size * inner + j * inner + i.
// With inner == 1 rows are contiguous and the helpers below run along them; with inner > 1 the
// kernels walk a block of adjacent rows together (softmax.cpp), so memory is read in order.
//
// The loops are written so that g++ vectorises them without -ffast-math: independent lanes
// instead of one running max or sum, selects through integer masks, and an exp for float32 made
// of plain arithmetic (std::exp is a scalar libm call, which does not vectorise).
#include <tapegrad/backends/shared/row_layout.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/core/shape.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tg::cpu {

using shared::row_layout;  // backends/shared/row_layout.h, also the CUDA sort's
using shared::RowLayout;

// Runs fn(begin, end) over [0, count) items of `work` elements each, split across threads when
// the total is large.
template <typename Fn> void parallel_items(int64_t count, int64_t work, Fn fn) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(work, 1));
  parallel_for(0, count, grain, fn);
}

// ---- elementwise pieces ----------------------------------------------------------------------

// c ? a : b through a bit mask: g++ if-converts (vectorises) this where a plain ?: on floats
// followed by arithmetic stays a branch under the default -ftrapping-math.
inline float select(bool c, float a, float b) {
  const uint32_t m = c ? ~0u : 0u;
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^x for float32 within 1 ulp (Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, a degree-6
// polynomial for e^r, then 2^n built in the exponent bits, in two halves so that denormal
// results and overflow to inf come out right); exp(-inf) = 0, exp(inf) = inf, exp(nan) = nan.
inline float fast_exp(float x) {
  constexpr float kLow = -104.0f, kHigh = 88.8f;  // e^x rounds to 0 below, to inf above
  constexpr float kRound = 12582912.0f;           // 1.5 * 2^23: adding it rounds to an integer
  const float xc = select(x > kHigh, kHigh, select(x < kLow, kLow, x));  // nan stays nan
  const float shifted = xc * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;                              // round(x / ln2)
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;  // x - n ln2 in two steps
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = p * r * r + r + 1.0f;
  const auto ni =
      static_cast<int32_t>(std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kRound));
  const int32_t half = ni >> 1;  // 2^n = 2^half * 2^(n - half), each a normal float
  const float scale_a = std::bit_cast<float>(static_cast<uint32_t>(half + 127) << 23);
  const float scale_b = std::bit_cast<float>(static_cast<uint32_t>(ni - half + 127) << 23);
  return select(x < kLow, 0.0f, e_r * scale_a * scale_b);
}
// float64's exp loops call SLEEF's vector exp instead (softmax.cpp); this is their fallback.
inline double fast_exp(double x) { return std::exp(x); }

// The exp loops are the hot spot of every kernel here. The library builds for baseline x86-64
// (SSE2), so their float32 versions are compiled twice, for AVX2 + FMA and for the baseline, and
// the loader picks one by the CPU (g++'s target_clones): AVX2 runs eight lanes to SSE2's four.
// out[j] = exp(x[j] - shift), j < n (out may be x).
void exp_minus(const float* x, float shift, float* out, int64_t n);
void exp_minus(const double* x, double shift, double* out, int64_t n);
// out[k] = exp(x[k] - shift[k]), k < n.
void exp_minus_each(const float* x, const float* shift, float* out, int64_t n);
void exp_minus_each(const double* x, const double* shift, double* out, int64_t n);

// ---- contiguous rows -------------------------------------------------------------------------

// The row loops are always inlined, so that the AVX2 entry points of the kernels (softmax.cpp,
// nll_loss.cpp: functions built with TG_ROWS_AVX2 and picked at run time by rows_have_avx2())
// vectorise them with 8-float vectors; inlined into baseline code they compile as before. They
// do the same operations in the same order either way, and AVX2 alone adds no fused
// multiply-adds, so the two give the same bits.
#define TG_ROW_INLINE __attribute__((always_inline)) inline
#if defined(__x86_64__) && defined(__GNUC__)
#define TG_ROWS_AVX2 __attribute__((target("avx2")))
bool rows_have_avx2();  // softmax.cpp
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The same loops with 16-float vectors (g++ only: clang has no per-function fp-contract). No
// contraction into fused multiply-adds (AVX-512 has them, AVX2 alone does not), so every lane
// does the same operations as the AVX2 build: the same bits, from wider instructions.
#define TG_ROWS_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), optimize("fp-contract=off")))
bool rows_have_avx512();  // softmax.cpp
#endif

inline constexpr int64_t kLanes = 16;  // independent accumulators per row loop

// The largest element of a row (-inf for an empty row). NaN need not win: it reaches every
// result through exp() anyway.
template <typename T> TG_ROW_INLINE T row_max(const T* x, int64_t n) {
  T lane[kLanes];
  std::fill(lane, lane + kLanes, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lane[k] = x[j + k] > lane[k] ? x[j + k] : lane[k];
  T m = lane[0];
  for (int64_t k = 1; k < kLanes; ++k) m = lane[k] > m ? lane[k] : m;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// sum over j of f(j), accumulated in double in kLanes lanes (f is inlined into the loop).
template <typename F> TG_ROW_INLINE double row_sum(int64_t n, F f) {
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lane[k] += static_cast<double>(f(j + k));
  double s = 0;
  for (int64_t k = 0; k < kLanes; ++k) s += lane[k];
  for (; j < n; ++j) s += static_cast<double>(f(j));
  return s;
}

// sum(exp(x[j] - shift)) over a row: the exps of a chunk at a time go to a small buffer (a loop
// that vectorises), then are summed in double lanes.
template <typename T> TG_ROW_INLINE double row_exp_sum(const T* x, int64_t n, T shift) {
  constexpr int64_t kChunk = 256;
  T e[kChunk];
  double total = 0;
  for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
    const int64_t len = std::min(kChunk, n - j0);
    exp_minus(x + j0, shift, e, len);
    total += row_sum(len, [&](int64_t k) { return e[k]; });
  }
  return total;
}

// The max m of a row and log(sum(exp(x - m))): log_softmax(x)[j] = (x[j] - m) - log_sum. The
// shift is the plain max, as in PyTorch's softmax: a row holding +inf or only -inf gives nan.
template <typename T> struct RowShift { T max, log_sum; };
template <typename T> TG_ROW_INLINE RowShift<T> row_shift(const T* x, int64_t n) {
  const T m = row_max(x, n);
  return {m, static_cast<T>(std::log(row_exp_sum(x, n, m)))};
}

// y = softmax(x) of one row: the exps are stored, then scaled by 1 / their sum.
template <typename T> TG_ROW_INLINE void softmax_row(const T* x, T* y, int64_t n) {
  exp_minus(x, row_max(x, n), y, n);
  const T inv = static_cast<T>(1.0 / row_sum(n, [&](int64_t j) { return y[j]; }));
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
}

// y = log_softmax(x) of one row.
template <typename T> TG_ROW_INLINE void log_softmax_row(const T* x, T* y, int64_t n) {
  const RowShift<T> s = row_shift(x, n);
  for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - s.max) - s.log_sum;
}

// log(sum(exp(x))) of a row, as PyTorch's logsumexp: shifted by the max unless that is +-inf
// (then by 0), so an all -inf row gives -inf, a row with +inf gives +inf, and an empty row -inf.
template <typename T> T row_logsumexp(const T* x, int64_t n) {
  T shift = row_max(x, n);
  if (std::isinf(shift)) shift = 0;
  return static_cast<T>(std::log(row_exp_sum(x, n, shift)) + shift);
}

}  // namespace tg::cpu
