#pragma once
// The per-slot arithmetic of the scatter ops, the same as the CPU's (backends/cpu/indexing/
// combine.h and slot_grads.h), as __host__ __device__ functions: how an entry combines into its
// slot, and the gradient rules of scatter_reduce / index_reduce.
//   sum   self: grad                      src: grad at the slot
//   mean  self: grad / n                  src: grad / n at the slot   (n: count, +1 with self)
//   amax  self: grad / ties * [self ties]  src: grad / ties * [src == result]   (amin alike)
//   prod  x != 0: grad * result / x;  x == 0: grad * (p if the slot has 1 zero, (s - x) * p if
//         2, else 0), with p the product of the slot's nonzero contributors, s the sum of zeros.
// With include_self false, self's gradient is 0 at every slot that received an entry, and self
// does not count among the ties.
#include <cstdint>
#include <type_traits>

#include <tapegrad/backends/shared/int_math.h>

#include "cuda_utils.h"
#include "math.cuh"

namespace tg::cuda::detail {

// a + b and a * b; integers wrap on overflow (math.cuh).
template <typename T> __host__ __device__ inline T plus(T a, T b) { return wrapping_add(a, b); }
template <typename T> __host__ __device__ inline T times(T a, T b) { return wrapping_mul(a, b); }

template <typename T> __host__ __device__ inline T reduce_identity(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::Prod: return T(1);
    case ScatterReduce::Amax: return lowest_value<T>();
    case ScatterReduce::Amin: return highest_value<T>();
    default: return T(0);
  }
}

// Slot value s combined with entry value v (Sum: s + v * scale). NaN wins amax / amin. bool
// only assigns.
template <typename T> __host__ __device__ inline T combine(ScatterReduce r, T s, T v, T scale) {
  if constexpr (std::is_same_v<T, bool>) {
    (void)r, (void)s, (void)scale;
    return v;
  } else {
    switch (r) {
      case ScatterReduce::Assign: return v;
      case ScatterReduce::Sum: return scale == T(1) ? plus(s, v) : plus(s, times(v, scale));
      case ScatterReduce::Mean: return plus(s, v);
      case ScatterReduce::Prod: return times(s, v);
      case ScatterReduce::Amax: return v != v ? v : (v > s ? v : s);
      case ScatterReduce::Amin: return v != v ? v : (v < s ? v : s);
    }
    return v;
  }
}

using ::tg::shared::mean_divide;  // one rule with the CPU (backends/shared/int_math.h)

template <typename T> __host__ __device__ inline T one_if(bool b) { return b ? T(1) : T(0); }

// The prod gradient factor of a zero contributor x of a slot with `zeros` zeros, nonzero product
// p and zero sum s.
template <typename T> __host__ __device__ inline T prod_at_zero(int64_t zeros, T p, T s, T x) {
  return zeros == 1 ? p : (zeros == 2 ? static_cast<T>((s - x) * p) : T(0));
}

// A slot's statistics, gathered from its entries in order.
template <typename T> struct SlotStats {
  int64_t count = 0, ties = 0, zeros = 0;
  T prod = T(1), zsum = T(0);
};

// Self's gradient at a slot: g, r, x the grad, result and self there.
template <typename T> __host__ __device__ inline T self_grad_at(ScatterReduce red,
                                                                const SlotStats<T>& st, T g, T r,
                                                                T x, bool include_self) {
  if (!include_self && st.count > 0) return T(0);
  switch (red) {
    case ScatterReduce::Mean: {
      const int64_t n = st.count + (include_self ? 1 : 0);
      return static_cast<T>(g / static_cast<T>(n == 0 ? 1 : n));
    }
    case ScatterReduce::Amax:
    case ScatterReduce::Amin: {
      const T is = one_if<T>(x == r);
      const T ties = include_self ? static_cast<T>(st.ties) : is;
      return static_cast<T>(static_cast<T>(g / ties) * is);
    }
    case ScatterReduce::Prod:
      if (!include_self) return g;
      if (x != T(0)) return static_cast<T>(g * static_cast<T>(r / x));
      return static_cast<T>(g * prod_at_zero(st.zeros, st.prod, st.zsum, x));
    default: return g;
  }
}

// src's gradient for one entry of value v at a slot (grad g, result r there).
template <typename T> __host__ __device__ inline T src_grad_at(ScatterReduce red,
                                                               const SlotStats<T>& st, T g, T r,
                                                               T v, bool include_self) {
  switch (red) {
    case ScatterReduce::Mean:
      return static_cast<T>(g / static_cast<T>(st.count + (include_self ? 1 : 0)));
    case ScatterReduce::Amax:
    case ScatterReduce::Amin:
      return static_cast<T>(static_cast<T>(g / static_cast<T>(st.ties)) * one_if<T>(v == r));
    case ScatterReduce::Prod:
      if (v != T(0)) return static_cast<T>(g * static_cast<T>(r / v));
      return static_cast<T>(g * prod_at_zero(st.zeros, st.prod, st.zsum, v));
    default: return g;
  }
}

}  // namespace tg::cuda::detail
