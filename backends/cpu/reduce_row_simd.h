#pragma once
// The hand-written row kernels of the CPU reductions (reduce.cpp): the float32 sum and the
// floating max/min of one contiguous row, for AVX2 and, for the long rows of a full reduction,
// AVX-512. Each does exactly the additions or compare-and-selects of reduce.cpp's
// reduce_row_lanes (the same 32 lanes, blocks, tail and merge tree), so every instruction set
// gives the same bits. Included by reduce.cpp only.
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstdint>
#include <limits>

// Internal linkage, as when these lived in reduce.cpp: an exported inline function would be
// called through the PLT.
namespace tg::cpu {
namespace {
namespace row_simd {

// One overload per vector type, so that the kernel below is written once for both.
#define TG_AVX2 __attribute__((target("avx2"), always_inline)) inline
TG_AVX2 __m256 vload(const float* p) { return _mm256_loadu_ps(p); }
TG_AVX2 __m256d vload(const double* p) { return _mm256_loadu_pd(p); }
TG_AVX2 __m256 vfill(float x) { return _mm256_set1_ps(x); }
TG_AVX2 __m256d vfill(double x) { return _mm256_set1_pd(x); }
TG_AVX2 __m256 vmax(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
TG_AVX2 __m256d vmax(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
TG_AVX2 __m256 vmin(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
TG_AVX2 __m256d vmin(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
TG_AVX2 __m256 vunord(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
TG_AVX2 __m256d vunord(__m256d a, __m256d b) { return _mm256_cmp_pd(a, b, _CMP_UNORD_Q); }
TG_AVX2 __m256 vor(__m256 a, __m256 b) { return _mm256_or_ps(a, b); }
TG_AVX2 __m256d vor(__m256d a, __m256d b) { return _mm256_or_pd(a, b); }
TG_AVX2 int vmask(__m256 v) { return _mm256_movemask_ps(v); }
TG_AVX2 int vmask(__m256d v) { return _mm256_movemask_pd(v); }
#undef TG_AVX2

// A float32 row sum for AVX2, with intrinsics: the additions of reduce_row_lanes (the same lanes,
// blocks and tail) and the tree of merge_sum_lanes on whole vectors, so the results are
// bit-identical. acc[j] holds the double lanes 4j .. 4j + 3.
// acc[2k], acc[2k + 1] += the float lanes 8k .. 8k + 7 of v, in double.
__attribute__((target("avx2"), always_inline)) inline void add_lanes(__m256d* acc, int k,
                                                                     __m256 v) {
  acc[2 * k] = _mm256_add_pd(acc[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  acc[2 * k + 1] = _mm256_add_pd(acc[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
__attribute__((target("avx2"), always_inline)) inline double sum_row_avx2(const float* p,
                                                                          int64_t n) {
  __m256d acc[8];
  for (__m256d& a : acc) a = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    __m256 part[4];
    for (int k = 0; k < 4; ++k) part[k] = _mm256_loadu_ps(p + i + 8 * k);
    for (int b = 1; b < 8; ++b) {
      for (int k = 0; k < 4; ++k)
        part[k] = _mm256_add_ps(part[k], _mm256_loadu_ps(p + i + 32 * b + 8 * k));
      // Keeps the loads in address order: left free, the compiler emits each lane group's
      // chain whole, which reads the block's 16 lines out of order (every other line, twice),
      // and a row streamed from memory then arrives measurably slower. An empty asm changes no
      // arithmetic.
      asm volatile("" : "+x"(part[0]), "+x"(part[1]), "+x"(part[2]), "+x"(part[3]));
    }
    for (int k = 0; k < 4; ++k) add_lanes(acc, k, part[k]);
  }
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) add_lanes(acc, k, _mm256_loadu_ps(p + i + 8 * k));
  const __m256d u_lo = _mm256_add_pd(_mm256_add_pd(acc[0], acc[2]), _mm256_add_pd(acc[4], acc[6]));
  const __m256d u_hi = _mm256_add_pd(_mm256_add_pd(acc[1], acc[3]), _mm256_add_pd(acc[5], acc[7]));
  const __m256d v = _mm256_add_pd(u_lo, u_hi);
  const __m128d w = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  double result = _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
  for (; i < n; ++i) result += p[i];
  return result;
}

// The same row sum with AVX-512 vectors (the same lanes, blocks, tail and tree: the same bits),
// for the long rows of a full reduction. Streaming from memory, one load per line and fewer
// conversions let more lines be in flight; on rows of [m, 1024] read from the L3 it was no
// faster than AVX2, so those keep sum_row_avx2. part[k] holds the float lanes 16k .. 16k + 15,
// acc[j] the double lanes 8j .. 8j + 7.
#define TG_AVX512 __attribute__((target("avx512f,avx512dq"), always_inline)) inline
// The maskz forms with every lane set are the plain instructions; the plain intrinsics start from
// an "undefined" vector that GCC 12 reports as uninitialised.
TG_AVX512 __m512d to_double(__m256 v) { return _mm512_maskz_cvtps_pd(0xff, v); }
TG_AVX512 void add_lanes(__m512d* acc, int k, __m512 v) {
  acc[2 * k] = _mm512_add_pd(acc[2 * k], to_double(_mm512_maskz_extractf32x8_ps(0xff, v, 0)));
  acc[2 * k + 1] =
      _mm512_add_pd(acc[2 * k + 1], to_double(_mm512_maskz_extractf32x8_ps(0xff, v, 1)));
}
#undef TG_AVX512
__attribute__((target("avx512f,avx512dq"))) inline double sum_long_row_avx512(const float* p,
                                                                              int64_t n) {
  __m512d acc[4];
  for (__m512d& a : acc) a = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    __m512 part[2] = {_mm512_loadu_ps(p + i), _mm512_loadu_ps(p + i + 16)};
    for (int b = 1; b < 8; ++b) {
      for (int k = 0; k < 2; ++k)
        part[k] = _mm512_add_ps(part[k], _mm512_loadu_ps(p + i + 32 * b + 16 * k));
      asm volatile("" : "+v"(part[0]), "+v"(part[1]));  // address order, as in sum_row_avx2
    }
    for (int k = 0; k < 2; ++k) add_lanes(acc, k, part[k]);
  }
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 2; ++k) add_lanes(acc, k, _mm512_loadu_ps(p + i + 16 * k));
  // u[e] = (L[e] + L[8+e]) + (L[16+e] + L[24+e]), then merge_sum_lanes' v and its last two steps.
  const __m512d u = _mm512_add_pd(_mm512_add_pd(acc[0], acc[1]), _mm512_add_pd(acc[2], acc[3]));
  const __m256d v = _mm256_add_pd(_mm512_maskz_extractf64x4_pd(0xf, u, 0),
                                  _mm512_maskz_extractf64x4_pd(0xf, u, 1));
  const __m128d w = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  double result = _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
  for (; i < n; ++i) result += p[i];
  return result;
}

// The extreme of the lanes of v, the lowest lane winning ties: each step takes
// ext(higher lanes, lower lanes), which is `higher > lower ? higher : lower` (for max), so the
// result is the first lane (in lane order) holding the extreme, as a sequential merge finds it.
template <bool Greater>
__attribute__((target("avx2"), always_inline)) inline __m256 vext(__m256 hi, __m256 lo) {
  return Greater ? _mm256_max_ps(hi, lo) : _mm256_min_ps(hi, lo);
}
template <bool Greater>
__attribute__((target("avx2"), always_inline)) inline __m256d vext(__m256d hi, __m256d lo) {
  return Greater ? _mm256_max_pd(hi, lo) : _mm256_min_pd(hi, lo);
}
template <bool Greater>
__attribute__((target("avx2"), always_inline)) inline float lanes_extreme(__m256 v) {
  v = vext<Greater>(_mm256_permute_ps(v, 0xB1), v);  // lanes 2i + 1 against 2i
  v = vext<Greater>(_mm256_permute_ps(v, 0x4E), v);  // 4i + 2.. against 4i..
  v = vext<Greater>(_mm256_permute2f128_ps(v, v, 1), v);
  return _mm256_cvtss_f32(v);
}
template <bool Greater>
__attribute__((target("avx2"), always_inline)) inline double lanes_extreme(__m256d v) {
  v = vext<Greater>(_mm256_permute_pd(v, 0x5), v);
  v = vext<Greater>(_mm256_permute2f128_pd(v, v, 1), v);
  return _mm256_cvtsd_f64(v);
}

// The extreme of the lanes of the kVecs vectors acc (the lanes in order: acc[0]'s first). Its
// value does not depend on the order of the merge, only its bits when it is zero (-0 and +0
// compare equal, and the lanes' order decides which is kept). So the vectors are first merged in
// any order (the order-keeping tree cost about a sixth of a 1024-value row), and the tree runs
// only when that gives a zero: within each vector, then the vectors in pairs (kVecs is 4 or 8),
// lower lanes second.
template <bool Greater, int kVecs, typename V>
__attribute__((target("avx2"), always_inline)) inline auto merge_extreme_lanes(const V* acc) {
  V any = acc[0];
  for (int k = 1; k < kVecs; ++k) any = Greater ? vmax(any, acc[k]) : vmin(any, acc[k]);
  auto result = lanes_extreme<Greater>(any);
  if (result == 0) {
    decltype(result) ext[kVecs];
    for (int k = 0; k < kVecs; ++k) ext[k] = lanes_extreme<Greater>(acc[k]);
    for (int width = 1; width < kVecs; width *= 2)
      for (int k = 0; k + width < kVecs; k += 2 * width)
        ext[k] =
            (Greater ? ext[k + width] > ext[k] : ext[k + width] < ext[k]) ? ext[k + width] : ext[k];
    result = ext[0];
  }
  return result;
}

// The extreme of p[0, n) from `result`, the lanes' extreme of p[0, i): the tail p[i, n) in order,
// then, when any value was NaN, the first NaN.
template <bool Greater, typename T>
__attribute__((always_inline)) inline T finish_extreme(const T* p, int64_t i, int64_t n, T result,
                                                       bool any_nan) {
  for (; i < n; ++i) {
    result = (Greater ? p[i] > result : p[i] < result) ? p[i] : result;
    any_nan = any_nan || p[i] != p[i];
  }
  if (any_nan)
    for (int64_t j = 0; j < n; ++j)
      if (p[j] != p[j]) return p[j];
  return result;
}

// max/min of float32/float64 rows for AVX2, written with intrinsics: the same kLanes = 32 lanes
// and compare-and-selects as reduce_row_lanes (vmaxps(v, acc) is exactly `v > acc ? v : acc`,
// vminps likewise), so the results are bit-identical. The lanes are merged as a tree inside each
// vector and then across the vectors, each step keeping the lower lanes on ties (vext), which
// picks the same lane as the sequential merge: a chain of 32 dependent compare-and-selects cost
// about as much as the rest of a 1024-value row. Only the "NaN seen" flag differs: one unordered
// compare per pair of vectors (a lane is unordered when either vector has a NaN there), or-ed
// into the flag. The compare runs on the vector pipes the max needs, the or on any; one compare
// per vector (nan = unord(nan, v)) made the row 5-14 % slower than a sum of the same row. The
// compiler's flag from reduce_row_lanes costs a compare, a blend and an or per vector; detecting
// NaN with integer and/compare/or ((bits & 0x7fffffff) > 0x7f800000) was slower still.
template <bool Greater, typename T>
__attribute__((target("avx2"), always_inline)) inline T extreme_row_avx2(const T* p, int64_t n) {
  using V = decltype(vload(p));
  constexpr int kLanes = 32, kWidth = sizeof(V) / sizeof(T), kVecs = kLanes / kWidth;
  const T identity =
      Greater ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V acc[kVecs], nan[kVecs / 2];
  for (int k = 0; k < kVecs; ++k) acc[k] = vfill(identity);
  for (int k = 0; k < kVecs / 2; ++k) nan[k] = vfill(T(0));
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V v[kVecs];
    for (int k = 0; k < kVecs; ++k) {
      v[k] = vload(p + i + k * kWidth);
      acc[k] = Greater ? vmax(v[k], acc[k]) : vmin(v[k], acc[k]);
    }
    for (int k = 0; k < kVecs; k += 2) nan[k / 2] = vor(nan[k / 2], vunord(v[k], v[k + 1]));
  }
  bool any_nan = false;
  for (int k = 0; k < kVecs / 2; ++k) any_nan = any_nan || vmask(nan[k]) != 0;
  return finish_extreme<Greater>(p, i, n, merge_extreme_lanes<Greater, kVecs>(acc), any_nan);
}

// max/min of a long float32 row with AVX-512, for the same reason as sum_long_row_avx512: the same
// 32 lanes and compare-and-selects as extreme_row_avx2, one "NaN seen" mask per pair of vectors,
// and the four 8-lane quarters merged by that kernel's code, so the result has the same bits.
template <bool Greater>
__attribute__((target("avx512f,avx512dq"))) inline float extreme_long_row_avx512(const float* p,
                                                                                 int64_t n) {
  const float identity =
      Greater ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  __m512 acc[2] = {_mm512_set1_ps(identity), _mm512_set1_ps(identity)};
  constexpr __mmask16 kAll = 0xffff;  // maskz forms: see to_double
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v0 = _mm512_loadu_ps(p + i), v1 = _mm512_loadu_ps(p + i + 16);
    acc[0] =
        Greater ? _mm512_maskz_max_ps(kAll, v0, acc[0]) : _mm512_maskz_min_ps(kAll, v0, acc[0]);
    acc[1] =
        Greater ? _mm512_maskz_max_ps(kAll, v1, acc[1]) : _mm512_maskz_min_ps(kAll, v1, acc[1]);
    nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
  }
  __m256 quarter[4];  // lanes 0-7, 8-15, 16-23, 24-31: extreme_row_avx2's acc
  for (int k = 0; k < 4; ++k)
    quarter[k] = k % 2 ? _mm512_maskz_extractf32x8_ps(0xff, acc[k / 2], 1)
                       : _mm512_maskz_extractf32x8_ps(0xff, acc[k / 2], 0);
  return finish_extreme<Greater>(p, i, n, merge_extreme_lanes<Greater, 4>(quarter), nan != 0);
}

}  // namespace row_simd
}  // namespace
}  // namespace tg::cpu
#endif
