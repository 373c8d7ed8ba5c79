#pragma once
// How the scatter ops combine an entry into its slot: the reductions (assign, sum, prod, mean,
// amax, amin), the value a slot starts from, and mean's division.
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <tapegrad/backends/cpu/wrapping.h>
#include <tapegrad/backends/shared/int_math.h>
#include <tapegrad/core/error.h>

namespace tg::cpu::indexing {

enum class Reduce { Assign, Sum, Prod, Mean, Amax, Amin };

// "sum" | "prod" | "mean" | "amax" | "amin" (the spec's `allowed` key has already checked it).
inline Reduce parse_reduce(const std::string& name) {
  if (name == "sum") return Reduce::Sum;
  if (name == "prod") return Reduce::Prod;
  if (name == "mean") return Reduce::Mean;
  if (name == "amax") return Reduce::Amax;
  if (name == "amin") return Reduce::Amin;
  fail<ValueError>("scatter", "unknown reduce '", name, "'");
}

// The value a slot starts from when include_self is false.
template <typename T> T identity(Reduce reduce) {
  switch (reduce) {
    case Reduce::Prod: return T(1);
    case Reduce::Amax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case Reduce::Amin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    default: return T(0);
  }
}

// One slot combined with one value. NaN wins amax/amin, as in PyTorch.
template <typename T> struct AssignOp {
  T operator()(T, T v) const { return v; }
};
template <typename T> struct SumOp {
  T operator()(T s, T v) const { return wrapping_add(s, v); }
};
template <typename T> struct ScaledSumOp {
  T alpha;
  T operator()(T s, T v) const { return wrapping_add(s, wrapping_mul(v, alpha)); }
};
template <typename T> struct ProdOp {
  T operator()(T s, T v) const { return wrapping_mul(s, v); }
};
// amax/amin: a NaN value wins through a branch that is (almost) never taken, kept a branch: GCC
// otherwise turns it into a select through integer registers, which lengthens each slot's
// read-modify-write chain. Then the larger value by a select (maxss, which keeps a NaN slot),
// not `v > s || v != v`, which compiles to a branch on a random comparison.
template <typename T> struct AmaxOp {
  T operator()(T s, T v) const {
    if (__builtin_expect(v != v, 0)) return v;
    return v > s ? v : s;
  }
};
template <typename T> struct AminOp {
  T operator()(T s, T v) const {
    if (__builtin_expect(v != v, 0)) return v;
    return v < s ? v : s;
  }
};

// Calls fn(op) with the combine functor of `reduce` (Mean combines as Sum). bool has Assign only.
template <typename T, typename Fn> void visit_reduce(Reduce reduce, Fn&& fn) {
  if constexpr (std::is_same_v<T, bool>) {
    fn(AssignOp<T>{});
  } else {
    switch (reduce) {
      case Reduce::Assign: return fn(AssignOp<T>{});
      case Reduce::Sum:
      case Reduce::Mean: return fn(SumOp<T>{});
      case Reduce::Prod: return fn(ProdOp<T>{});
      case Reduce::Amax: return fn(AmaxOp<T>{});
      case Reduce::Amin: return fn(AminOp<T>{});
    }
  }
}

using shared::mean_divide;  // one rule with the CUDA kernels (backends/shared/int_math.h)

}  // namespace tg::cpu::indexing
