#pragma once
// Staging for the depthwise stencils (conv_depthwise.cpp, the only file that includes this): a
// region of a plane copied with padding around it (or, for a stride of 2, split into its even and
// odd columns), in vector moves, noting on the way whether a value is inf or NaN.
#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace tg::cpu::depthwise {

// x / d rounded down (d > 0).
inline int64_t floor_div(int64_t x, int64_t d) { return x >= 0 ? x / d : -((-x + d - 1) / d); }

// The bits of a T; an inf or NaN has all its exponent bits set.
template <typename T> using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
template <typename T>
constexpr Bits<T> kExponentBits = static_cast<Bits<T>>(sizeof(T) == 4 ? 0x7f800000
                                                                      : 0x7ff0000000000000);

// Whether v is inf or NaN.
template <typename T> [[gnu::always_inline]] inline bool nonfinite_value(T v) {
  Bits<T> b;
  __builtin_memcpy(&b, &v, sizeof b);
  return (b & kExponentBits<T>) == kExponentBits<T>;
}

// Whether no value is inf or NaN, tested on the bits (a loop the compiler vectorises;
// std::isfinite per value stayed a compare and a branch each).
template <typename T> bool all_finite(const T* v, int64_t n) {
  bool bad = false;
  for (int64_t k = 0; k < n; ++k) bad |= nonfinite_value(v[k]);
  return !bad;
}

// A vector of those bits, as wide as the stencils' vectors.
template <typename T> struct BitsLanes { typedef Bits<T> Vec __attribute__((vector_size(32))); };

// Sets the lanes of nonfinite where v's lane is inf or NaN.
template <typename T, typename Vec>
[[gnu::always_inline]] inline void note_nonfinite(const Vec& v,
                                                  typename BitsLanes<T>::Vec& nonfinite) {
  typename BitsLanes<T>::Vec b;
  __builtin_memcpy(&b, &v, sizeof b);
  nonfinite |= (b & kExponentBits<T>) == kExponentBits<T>;
}

// even, odd = the even and the odd lanes of the pair (v0, v1), in order.
template <typename T, typename Vec>
[[gnu::always_inline]] inline void split_even_odd(const Vec& v0, const Vec& v1, Vec& even,
                                                  Vec& odd) {
  if constexpr (sizeof(Vec) / sizeof(T) == 8) {
    even = __builtin_shufflevector(v0, v1, 0, 2, 4, 6, 8, 10, 12, 14);
    odd = __builtin_shufflevector(v0, v1, 1, 3, 5, 7, 9, 11, 13, 15);
  } else {
    even = __builtin_shufflevector(v0, v1, 0, 2, 4, 6);
    odd = __builtin_shufflevector(v0, v1, 1, 3, 5, 7);
  }
}

// The inverse of split_even_odd: (lo, hi) = even[0], odd[0], even[1], odd[1], ...
template <typename T, typename Vec>
[[gnu::always_inline]] inline void join_even_odd(const Vec& even, const Vec& odd, Vec& lo,
                                                 Vec& hi) {
  if constexpr (sizeof(Vec) / sizeof(T) == 8) {
    lo = __builtin_shufflevector(even, odd, 0, 8, 1, 9, 2, 10, 3, 11);
    hi = __builtin_shufflevector(even, odd, 4, 12, 5, 13, 6, 14, 7, 15);
  } else {
    lo = __builtin_shufflevector(even, odd, 0, 4, 1, 5);
    hi = __builtin_shufflevector(even, odd, 2, 6, 3, 7);
  }
}

// Whether any lane of an integer vector is nonzero.
template <typename BitsVec> [[gnu::always_inline]] inline bool any_lane(const BitsVec& v) {
  bool any = false;
  for (size_t l = 0; l < sizeof(BitsVec) / sizeof(v[0]); ++l) any |= v[l] != 0;
  return any;
}

// dst[0, n) = pad, then dst[n, n + m) = src[0, m): a staged row's padding and values, in vector
// moves (the rows are short: std::fill and std::copy made a memset and a memmove call of a few
// dozen bytes each, a fifth of the stencils' time). Where `nonfinite` is given, its lanes also
// collect whether a copied value is inf or NaN (a test that costs little on values in registers,
// and a second pass over the source from memory a quarter of the weight gradient's time).
template <typename T>
[[gnu::always_inline]] inline void pad_then_copy(T* dst, int64_t n, T pad, const T* src, int64_t m,
                                                 typename BitsLanes<T>::Vec* nonfinite) {
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 32 / sizeof(T);
  // The value hidden from the optimiser: with a constant zero, GCC makes the fill loops memset
  // calls again.
  asm("" : "+m"(pad));
  const Vec pads = pad - Vec{};  // a broadcast (0 + pad would turn -0 into +0)
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) __builtin_memcpy(dst + k, &pads, sizeof pads);
  for (; k < n; ++k) dst[k] = pad;
  dst += n;
  if (m < kLanes) {
    for (k = 0; k < m; ++k) {
      dst[k] = src[k];
      if (nonfinite) (*nonfinite)[0] |= nonfinite_value(src[k]);
    }
    return;
  }
  // whole vectors, the last one overlapping the one before
  for (k = 0; k < m; k += kLanes) {
    const int64_t at = std::min(k, m - kLanes);
    Vec v;
    __builtin_memcpy(&v, src + at, sizeof v);
    __builtin_memcpy(dst + at, &v, sizeof v);
    if (nonfinite) note_nonfinite<T>(v, *nonfinite);
  }
}

// The region [r0, r0 + rows) x [c0, c0 + cols) of a [h, w] plane, values outside it `pad`;
// nonfinite (if given) as pad_then_copy's.
template <typename T>
[[gnu::always_inline]] inline void stage_region(const T* src, int64_t h, int64_t w, int64_t r0,
                                                int64_t rows, int64_t c0, int64_t cols, T pad,
                                                T* dst,
                                                typename BitsLanes<T>::Vec* nonfinite = nullptr) {
  const int64_t lo = std::clamp<int64_t>(-c0, 0, cols), hi = std::clamp<int64_t>(w - c0, lo, cols);
  for (int64_t r = 0; r < rows; ++r, dst += cols) {
    const int64_t sr = r0 + r;
    if (sr < 0 || sr >= h) {
      pad_then_copy(dst, cols, pad, src, 0, nonfinite);
      continue;
    }
    pad_then_copy(dst, lo, pad, src + sr * w + c0 + lo, hi - lo, nonfinite);
    pad_then_copy(dst + hi, cols - hi, pad, src, 0, nonfinite);
  }
}

// stage_phases for step 2: each row's inside split into even and odd columns a vector pair at a
// time, the last pair overlapping the one before (the scalar loop took more time than the
// stencil after it), the ends one column at a time.
template <typename T>
[[gnu::always_inline]] inline void stage_two_phases(const T* src, int64_t h, int64_t w, int64_t r0,
                                                    int64_t rows, int64_t c0, int64_t cols, T pad,
                                                    T* dst, typename BitsLanes<T>::Vec* nonfinite) {
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 32 / sizeof(T);
  // Vector pairs start at columns c in [first, last]: source c0 + 2c >= 0 and its 2 * kLanes
  // values inside the row, and c + kLanes <= cols.
  const int64_t first = c0 >= 0 ? 0 : (-c0 + 1) / 2;
  const int64_t last = std::min(floor_div(w - 2 * kLanes - c0, 2), cols - kLanes);
  const bool pairs = first <= last;
  const int64_t scalar_to = pairs ? first : cols, scalar_from = pairs ? last + kLanes : cols;
  bool bad = false;
  const auto one = [&](const T* row, int64_t c, T* even, T* odd) __attribute__((always_inline)) {
    const int64_t s = c0 + 2 * c;
    even[c] = s >= 0 && s < w ? row[s] : pad;
    odd[c] = s + 1 >= 0 && s + 1 < w ? row[s + 1] : pad;
    bad |= nonfinite_value(even[c]);
    bad |= nonfinite_value(odd[c]);
  };
  T* even = dst;
  T* odd = dst + rows * cols;
  for (int64_t r = 0; r < rows; ++r, even += cols, odd += cols) {
    const int64_t sr = r0 + r;
    if (sr < 0 || sr >= h) {
      for (int64_t c = 0; c < cols; ++c) even[c] = odd[c] = pad;
      continue;
    }
    const T* row = src + sr * w;
    for (int64_t c = 0; c < scalar_to; ++c) one(row, c, even, odd);
    for (int64_t k = first; pairs; k += kLanes) {  // the last pair at `last`
      const int64_t c = std::min(k, last);
      Vec v0, v1, e, o;
      __builtin_memcpy(&v0, row + c0 + 2 * c, sizeof v0);
      __builtin_memcpy(&v1, row + c0 + 2 * c + kLanes, sizeof v1);
      split_even_odd<T>(v0, v1, e, o);
      __builtin_memcpy(even + c, &e, sizeof e);
      __builtin_memcpy(odd + c, &o, sizeof o);
      if (nonfinite) {
        note_nonfinite<T>(v0, *nonfinite);
        note_nonfinite<T>(v1, *nonfinite);
      }
      if (c == last) break;
    }
    for (int64_t c = scalar_from; c < cols; ++c) one(row, c, even, odd);
  }
  if (nonfinite) (*nonfinite)[0] |= bad;
}

// The region [r0, r0 + rows) x [c0, c0 + cols * step) of a [h, w] plane split by column phase,
// step 1 or 2 (the stencils' strides): phase q's rows (cols values each, at dst + q * rows * cols)
// hold columns c0 + q, c0 + q + step, ... (so that a stride-`step` conv reads each phase at unit
// stride); values outside `pad`. nonfinite (if given) as pad_then_copy's.
template <typename T>
[[gnu::always_inline]] inline void stage_phases(const T* src, int64_t h, int64_t w, int64_t r0,
                                                int64_t rows, int64_t c0, int64_t cols,
                                                int64_t step, T pad, T* dst,
                                                typename BitsLanes<T>::Vec* nonfinite = nullptr) {
  if (step == 1) return stage_region(src, h, w, r0, rows, c0, cols, pad, dst, nonfinite);
  stage_two_phases(src, h, w, r0, rows, c0, cols, pad, dst, nonfinite);
}

}  // namespace tg::cpu::depthwise
