#pragma once
// Elementwise ops on the vectorised SLEEF kernels of vec_math.h: the kernel runs on contiguous
// float32 / float64 arrays (other layouts and dtypes are made so first, which costs one copy and
// keeps every element on the same code), split across threads when large. Without SLEEF
// (TG_WITH_SLEEF off, or TG_SIMD=scalar) the op runs its scalar lambda on the elementwise engine
// instead.
#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/cpu/simd/vec_math.h>

namespace tg::cpu {

// Elements per thread chunk: a transcendental costs tens of cycles per element, so a chunk far
// smaller than a copy's (kElementwiseGrain) pays for the hand-off.
inline constexpr int64_t kMathGrain = 8192;

namespace vec_detail {

template <typename T> const vec::Kernels<T>& table_of(const vec::Isa& isa) {
  if constexpr (std::is_same_v<T, float>)
    return isa.f32;
  else
    return isa.f64;
}

// t as a contiguous tensor of `shape` and `dtype` (no copy when it already is one).
inline Tensor dense(const Tensor& t, const Shape& shape, DType dtype) {
  // The common case first: the chain below copies the handle three times, each copy an atomic
  // reference-count update.
  if (t.dtype() == dtype && t.shape() == shape && t.is_contiguous()) return t;
  const Tensor same_type = t.dtype() == dtype ? t : t.to(dtype);
  return (same_type.shape() == shape ? same_type : same_type.expand(shape)).contiguous();
}

template <typename Run> void split(int64_t n, const Run& run) {
  if (n <= kMathGrain) {
    run(0, n);
  } else {
    parallel_for(0, n, kMathGrain, run);
  }
}

}  // namespace vec_detail

// fn(x) in floating point (integer inputs give float32), through vec::Unary `f` when it can.
template <typename Fn>
Tensor unary_math_op(const char* op, const Tensor& self, vec::Unary f, const Fn& scalar) {
  const vec::Isa* isa = vec::best();
  const DType dtype = is_floating(self.dtype()) ? self.dtype() : kFloat32;
  if (!isa || (dtype != kFloat32 && dtype != kFloat64)) return unary_float_op(op, self, scalar);
  Tensor out = result_for(op, self.shape(), dtype, self.device());
  if (out.numel() == 0) return out;
  const Tensor x = vec_detail::dense(self, self.shape(), dtype);
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto kernel = vec_detail::table_of<T>(*isa).unary[static_cast<int>(f)];
    const T* in = x.data<T>();
    T* o = out.data<T>();
    vec_detail::split(out.numel(), [&](int64_t b, int64_t e) { kernel(in + b, o + b, e - b); });
  });
  return out;
}

// Whether the vector kernels run an op computed in `dtype` (float32 or float64, SLEEF built in
// and not turned off).
inline bool vec_runs(DType dtype) {
  return vec::best() && (dtype == kFloat32 || dtype == kFloat64);
}

// x[i] = f(x[i]) for n contiguous elements, through vec::Unary `f`; vec_runs holds. For a fused
// op that computes one transcendental of a value it made itself.
template <typename T> void unary_math_in_place(vec::Unary f, T* x, int64_t n) {
  const auto kernel = vec_detail::table_of<T>(*vec::best()).unary[static_cast<int>(f)];
  vec_detail::split(n, [&](int64_t b, int64_t e) { kernel(x + b, x + b, e - b); });
}

namespace vec_detail {

// out = kernel(a, b) elementwise, a and b made dense in out's shape and dtype (vec_runs holds);
// pick(table) names the kernel of the ISA's table for out's element type.
template <typename Pick> void run_pair(const char* op, const Tensor& out, const Tensor& a,
                                       const Tensor& b, const Pick& pick) {
  if (out.numel() == 0) return;
  const Tensor ad = dense(a, out.shape(), out.dtype()), bd = dense(b, out.shape(), out.dtype());
  visit_floating(op, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto kernel = pick(table_of<T>(*vec::best()));
    const T* ap = ad.data<T>();
    const T* bp = bd.data<T>();
    T* o = out.data<T>();
    split(out.numel(), [&](int64_t lo, int64_t hi) { kernel(ap + lo, bp + lo, o + lo, hi - lo); });
  });
}

}  // namespace vec_detail

// f(a, b) with broadcasting, computed in `dtype`, through vec::BinaryMath `f`; vec_runs(dtype)
// holds.
inline Tensor binary_math_op(const char* op, const Tensor& a, const Tensor& b, DType dtype,
                             vec::BinaryMath f) {
  Tensor out = result_for(op, broadcast_pair(op, a, b), dtype, a.device());
  vec_detail::run_pair(op, out, a, b,
                       [f](const auto& table) { return table.binary[static_cast<int>(f)]; });
  return out;
}

// f(a, b) for a number b, computed in `dtype`, through vec::BinaryMath `f`; vec_runs(dtype) holds.
inline Tensor binary_scalar_math_op(const char* op, const Tensor& a, const Scalar& b, DType dtype,
                                    vec::BinaryMath f) {
  Tensor out = result_for(op, a.shape(), dtype, a.device());
  if (out.numel() == 0) return out;
  const Tensor ad = vec_detail::dense(a, a.shape(), dtype);
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto kernel = vec_detail::table_of<T>(*vec::best()).binary_scalar[static_cast<int>(f)];
    const T* ap = ad.data<T>();
    const T bv = b.to<T>();
    T* o = out.data<T>();
    vec_detail::split(out.numel(),
                      [&](int64_t lo, int64_t hi) { kernel(ap + lo, bv, o + lo, hi - lo); });
  });
  return out;
}

// g * f'(x) with broadcasting, in result_type(g, x) (floating), through vec::Grad `f`.
template <typename Fn> Tensor grad_math_op(const char* op, const Tensor& g, const Tensor& x,
                                           vec::Grad f, const Fn& scalar) {
  const DType dtype = result_type(g, x);
  Tensor out = empty(broadcast_pair(op, g, x), dtype, g.device());
  if (vec_runs(dtype)) {
    vec_detail::run_pair(op, out, g, x,
                         [f](const auto& table) { return table.grad[static_cast<int>(f)]; });
    return out;
  }
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_into<T, T, T>(out, scalar, g, x);
  });
  return out;
}

}  // namespace tg::cpu
