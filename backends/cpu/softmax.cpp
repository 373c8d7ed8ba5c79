// CPU kernels of softmax, log_softmax, their fused backward ops, and logsumexp. Each works on rows
// along the reduced dim (softmax_rows.h): contiguous rows one at a time with vectorised row loops,
// rows along an inner dim in blocks of adjacent rows (so memory is read in order), and rows split
// across threads when the tensor is large.
#include <tapegrad/backends/cpu/simd/vec_math.h>
#include <tapegrad/backends/cpu/softmax_rows.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace tg::cpu {

// x86-64-v4 (AVX-512) first: g++ builds that clone with 16-float vectors and mask registers for
// the selects, about 1.4x the speed of the AVX2 clone on an AMD EPYC (Zen 4); the formula and its
// fused multiply-adds are the same, so the clones give the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TG_AVX2_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TG_AVX2_CLONES
#endif

TG_AVX2_CLONES void exp_minus(const float* x, float shift, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = fast_exp(x[j] - shift);
}
// float64: the shifted values, then SLEEF's vector exp over them in place (simd/vec_math.h,
// within 1 ULP as libm's); libm's scalar exp where SLEEF is not built in or TG_SIMD=scalar.
namespace {
void exp_in_place(double* v, int64_t n) {
  static const auto kernel =
      vec::best() ? vec::best()->f64.unary[static_cast<int>(vec::Unary::exp)] : nullptr;
  if (kernel)
    kernel(v, v, n);
  else
    for (int64_t j = 0; j < n; ++j) v[j] = fast_exp(v[j]);
}
}  // namespace
void exp_minus(const double* x, double shift, double* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] - shift;
  exp_in_place(out, n);
}
TG_AVX2_CLONES void exp_minus_each(const float* x, const float* shift, float* out, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = fast_exp(x[k] - shift[k]);
}
void exp_minus_each(const double* x, const double* shift, double* out, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = x[k] - shift[k];
  exp_in_place(out, n);
}

#ifdef TG_ROWS_AVX2
bool rows_have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif
#ifdef TG_ROWS_AVX512
// TG_SIMD=avx2 (or weaker) keeps the AVX2 build, as it does for the other kernel sets.
bool rows_have_avx512() { return cpu_runs_avx512(); }
#endif

namespace {

constexpr int64_t kBlock = 256;  // adjacent rows walked together when rows are strided

// softmax (Log = false) or log_softmax (Log = true) of one contiguous row, with the row loops
// built for AVX2 where the CPU has it (softmax_rows.h).
template <bool Log, typename T> TG_ROW_INLINE void softmax_row_any(const T* x, T* y, int64_t n) {
  if constexpr (Log) {
    log_softmax_row(x, y, n);
  } else {
    softmax_row(x, y, n);
  }
}
#ifdef TG_ROWS_AVX2
template <bool Log, typename T> TG_ROWS_AVX2 void softmax_row_avx2(const T* x, T* y, int64_t n) {
  softmax_row_any<Log>(x, y, n);
}
#endif
#ifdef TG_ROWS_AVX512
template <bool Log, typename T>
TG_ROWS_AVX512 void softmax_row_avx512(const T* x, T* y, int64_t n) {
  softmax_row_any<Log>(x, y, n);
}
#endif
template <bool Log, typename T> void softmax_row_dispatch(const T* x, T* y, int64_t n) {
#ifdef TG_ROWS_AVX512
  if (rows_have_avx512()) return softmax_row_avx512<Log>(x, y, n);
#endif
#ifdef TG_ROWS_AVX2
  if (rows_have_avx2()) return softmax_row_avx2<Log>(x, y, n);
#endif
  softmax_row_any<Log>(x, y, n);
}

// One contiguous row of a fused backward (backward_impl), AVX2 where the CPU has it.
template <typename T, typename Reduce, typename Finish>
TG_ROW_INLINE void backward_row_any(const T* g, const T* y, T* o, int64_t n, Reduce reduce,
                                    Finish finish) {
  const double s = row_sum(n, [&](int64_t j) { return reduce(g[j], y[j]); });
  finish(g, y, o, n, static_cast<T>(s));
}
#ifdef TG_ROWS_AVX2
template <typename T, typename Reduce, typename Finish>
TG_ROWS_AVX2 void backward_row_avx2(const T* g, const T* y, T* o, int64_t n, Reduce reduce,
                                    Finish finish) {
  backward_row_any(g, y, o, n, reduce, finish);
}
#endif
#ifdef TG_ROWS_AVX512
template <typename T, typename Reduce, typename Finish>
TG_ROWS_AVX512 void backward_row_avx512(const T* g, const T* y, T* o, int64_t n, Reduce reduce,
                                        Finish finish) {
  backward_row_any(g, y, o, n, reduce, finish);
}
#endif
template <typename T, typename Reduce, typename Finish>
void backward_row_dispatch(const T* g, const T* y, T* o, int64_t n, Reduce reduce, Finish finish) {
#ifdef TG_ROWS_AVX512
  if (rows_have_avx512()) return backward_row_avx512(g, y, o, n, reduce, finish);
#endif
#ifdef TG_ROWS_AVX2
  if (rows_have_avx2()) return backward_row_avx2(g, y, o, n, reduce, finish);
#endif
  backward_row_any(g, y, o, n, reduce, finish);
}

// Calls row(o) for each contiguous row o (inner == 1), or block(o, i0, len) for the blocks of
// adjacent rows (o, i0 .. i0 + len) otherwise; element j of row (o, i) is at o*size*inner +
// j*inner + i. In parallel when the tensor is large.
template <typename Row, typename Block> void for_rows(const RowLayout& l, Row row, Block block) {
  // An empty tensor has nothing to write, but its other dims may still be huge: counting blocks
  // of 2^50 empty rows would run for hours (a fuzz finding).
  if (l.outer == 0 || l.size == 0 || l.inner == 0) return;
  if (l.inner == 1) {
    parallel_items(l.outer, l.size, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) row(o);
    });
    return;
  }
  const int64_t per_outer = (l.inner + kBlock - 1) / kBlock;
  parallel_items(l.outer * per_outer, l.size * std::min(kBlock, l.inner),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t t = begin; t < end; ++t) {
                     const int64_t i0 = (t % per_outer) * kBlock;
                     block(t / per_outer, i0, std::min(kBlock, l.inner - i0));
                   }
                 });
}

// softmax (Log = false) or log_softmax (Log = true) of `len` adjacent strided rows.
template <bool Log, typename T>
void softmax_block(const T* x, T* y, int64_t size, int64_t inner, int64_t len) {
  T m[kBlock];
  double sum[kBlock] = {};
  std::fill(m, m + len, -std::numeric_limits<T>::infinity());
  for (int64_t j = 0; j < size; ++j)
    for (int64_t k = 0; k < len; ++k) m[k] = x[j * inner + k] > m[k] ? x[j * inner + k] : m[k];
  for (int64_t j = 0; j < size; ++j) {
    T e[kBlock];  // the exps of line j (stored as the output for softmax), then summed
    T* exps = Log ? e : y + j * inner;
    exp_minus_each(x + j * inner, m, exps, len);
    for (int64_t k = 0; k < len; ++k) sum[k] += exps[k];
  }
  T factor[kBlock];  // log(sum) to subtract, or 1 / sum to multiply by
  for (int64_t k = 0; k < len; ++k)
    factor[k] = static_cast<T>(Log ? std::log(sum[k]) : 1.0 / sum[k]);
  for (int64_t j = 0; j < size; ++j)
    for (int64_t k = 0; k < len; ++k) {
      if constexpr (Log) {
        y[j * inner + k] = (x[j * inner + k] - m[k]) - factor[k];
      } else {
        y[j * inner + k] *= factor[k];
      }
    }
}

// softmax or log_softmax along dim into a fresh contiguous tensor.
template <bool Log> Tensor softmax_impl(const char* op, const Tensor& self, int64_t dim) {
  const RowLayout l = row_layout(self.shape(), wrap_dim(op, dim, self.dim()));
  const Tensor x = self.contiguous();
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* y = out.data<T>();
    for_rows(
        l, [&](int64_t o) { softmax_row_dispatch<Log>(in + o * l.size, y + o * l.size, l.size); },
        [&](int64_t o, int64_t i0, int64_t len) {
          const int64_t s = o * l.size * l.inner + i0;
          softmax_block<Log>(in + s, y + s, l.size, l.inner, len);
        });
  });
  return out;
}

// The inputs of a fused backward: same shape, one floating dtype, contiguous; and their rows.
struct BackwardInputs {
  Tensor grad_output, output;
  RowLayout rows;
};

BackwardInputs backward_inputs(const char* op, const Tensor& grad_output, const Tensor& output,
                               int64_t dim) {
  TG_ASSERT(grad_output.shape() == output.shape());  // checks::softmax_backward
  const RowLayout l = row_layout(output.shape(), wrap_dim(op, dim, output.dim()));
  const DType dtype = promote_types(grad_output.dtype(), output.dtype());
  return {grad_output.to(dtype).contiguous(), output.to(dtype).contiguous(), l};
}

// s as a single value (a contiguous row) or one value per element (a block of strided rows).
template <typename S> auto at(S s, int64_t k) {
  if constexpr (std::is_pointer_v<S>) {
    return s[k];
  } else {
    return s;
  }
}

// Runs a fused backward: per row, s = the sum of reduce(g, y) over the row, then
// finish(g, y, out, n, s) writes n elements of a line, reading s through at(s, k).
template <typename Reduce, typename Finish>
Tensor backward_impl(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim,
                     Reduce reduce, Finish finish) {
  const BackwardInputs in = backward_inputs(op, grad_output, output, dim);
  const RowLayout& l = in.rows;
  Tensor out = empty(in.output.shape(), in.output.dtype(), in.output.device());
  visit_floating(op, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = in.grad_output.data<T>();
    const T* y = in.output.data<T>();
    T* o = out.data<T>();
    for_rows(
        l,
        [&](int64_t row) {
          const int64_t s0 = row * l.size;
          backward_row_dispatch(g + s0, y + s0, o + s0, l.size, reduce, finish);
        },
        [&](int64_t row, int64_t i0, int64_t len) {
          const int64_t s0 = row * l.size * l.inner + i0;
          double acc[kBlock] = {};
          for (int64_t j = 0; j < l.size; ++j)
            for (int64_t k = 0; k < len; ++k)
              acc[k] += reduce(g[s0 + j * l.inner + k], y[s0 + j * l.inner + k]);
          T s[kBlock];
          for (int64_t k = 0; k < len; ++k) s[k] = static_cast<T>(acc[k]);
          for (int64_t j = 0; j < l.size; ++j) {
            const int64_t p = s0 + j * l.inner;
            finish(g + p, y + p, o + p, len, static_cast<const T*>(s));
          }
        });
  });
  return out;
}

// reduced[d] for each dim; an empty list reduces every dim. A 0-d tensor accepts dim 0 and -1.
// The dims were checked before dispatch (checks::logsumexp: in range, none twice).
std::vector<bool> reduced_dims(const char* op, int64_t ndim, IntArrayRef dims) {
  std::vector<bool> reduced(ndim, dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, ndim);
    if (ndim > 0) reduced[w] = true;
  }
  return reduced;
}

// logsumexp of `len` adjacent strided rows into out[0 .. len).
template <typename T>
void logsumexp_block(const T* x, T* out, int64_t size, int64_t inner, int64_t len) {
  T shift[kBlock];
  double sum[kBlock] = {};
  std::fill(shift, shift + len, -std::numeric_limits<T>::infinity());
  for (int64_t j = 0; j < size; ++j)
    for (int64_t k = 0; k < len; ++k)
      shift[k] = x[j * inner + k] > shift[k] ? x[j * inner + k] : shift[k];
  for (int64_t k = 0; k < len; ++k)
    if (std::isinf(shift[k])) shift[k] = 0;  // as row_logsumexp
  for (int64_t j = 0; j < size; ++j) {
    T e[kBlock];
    exp_minus_each(x + j * inner, shift, e, len);
    for (int64_t k = 0; k < len; ++k) sum[k] += e[k];
  }
  for (int64_t k = 0; k < len; ++k) out[k] = static_cast<T>(std::log(sum[k]) + shift[k]);
}

}  // namespace

Tensor softmax(const Tensor& self, int64_t dim) {
  return softmax_impl<false>("softmax", self, dim);
}

Tensor log_softmax(const Tensor& self, int64_t dim) {
  return softmax_impl<true>("log_softmax", self, dim);
}

// y * (g - s) with s = sum(g * y) over the row.
Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return backward_impl(
      "softmax_backward", grad_output, output, dim, [](auto g, auto y) { return g * y; },
      [](const auto* g, const auto* y, auto* o, int64_t n, auto s) {
        for (int64_t k = 0; k < n; ++k) o[k] = y[k] * (g[k] - at(s, k));
      });
}

// g - exp(y) * s with s = sum(g) over the row.
Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return backward_impl(
      "log_softmax_backward", grad_output, output, dim, [](auto g, auto) { return g; },
      [](const auto* g, const auto* y, auto* o, int64_t n, auto s) {
        exp_minus(y, std::remove_pointer_t<decltype(o)>(0), o, n);
        for (int64_t k = 0; k < n; ++k) o[k] = g[k] - o[k] * at(s, k);
      });
}

Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const char* op = "logsumexp";
  const int64_t ndim = self.dim();
  const std::vector<bool> reduced = reduced_dims(op, ndim, dim);
  // The result's shape: kept dims, and size-1 reduced dims when keepdim.
  Shape out_shape;
  for (int64_t d = 0; d < ndim; ++d)
    if (!reduced[d] || keepdim) out_shape.push_back(reduced[d] ? 1 : self.shape()[d]);
  // Rows need the reduced dims adjacent: when a kept dim sits between two of them, move every
  // reduced dim last (the kept dims keep their order, so the result stays row-major).
  int64_t first = ndim, last = -1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d]) continue;
    first = std::min(first, d);
    last = d;
  }
  bool adjacent = true;
  for (int64_t d = first; d <= last; ++d) adjacent = adjacent && reduced[d];
  Tensor x = is_floating(self.dtype()) ? self : self.to(kFloat32);
  if (!adjacent) {
    std::vector<int64_t> perm;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t d = 0; d < ndim; ++d)
        if (reduced[d] == (pass == 1)) perm.push_back(d);
    x = x.permute(perm);
    first = ndim - std::count(reduced.begin(), reduced.end(), true);
    last = ndim - 1;
  }
  x = x.contiguous();
  RowLayout l;  // outer: kept dims before the reduced block, size: the block, inner: after it
  for (int64_t d = 0; d < ndim; ++d)
    (d < first ? l.outer : d <= last ? l.size : l.inner) *= x.shape()[d];
  Tensor out = empty(out_shape, x.dtype(), self.device());
  visit_floating(op, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* y = out.data<T>();
    // Empty rows (size 0, outer * inner > 0): for_rows skips every empty input, so the -inf
    // of an empty logsumexp is written here.
    if (l.size == 0) {
      std::fill(y, y + out.numel(), -std::numeric_limits<T>::infinity());
      return;
    }
    for_rows(
        l, [&](int64_t o) { y[o] = row_logsumexp(in + o * l.size, l.size); },
        [&](int64_t o, int64_t i0, int64_t len) {
          logsumexp_block(in + o * l.size * l.inner + i0, y + o * l.inner + i0, l.size, l.inner,
                          len);
        });
  });
  return out;
}

}  // namespace tg::cpu
