// scaled_dot_product_attention's row pass (one thread per row of scores: scale, mask, causal
// mask, softmax, dropout, in place, as backends/cpu/attention.cpp does it) and the elementwise
// loss of binary_cross_entropy_with_logits (the CPU's formula, over broadcast strides).
#include <cmath>

#include "elementwise.cuh"
#include "math.cuh"
#include "nn_ops_kernels.h"

namespace tg::cuda::detail {
namespace {

template <typename T> struct AttentionRowBody {
  T* scores;
  AttentionRows a;
  __host__ __device__ void operator()(int64_t r) const {
    T* x = scores + r * a.S;
    const T* fmask = a.float_mask ? static_cast<const T*>(a.float_mask) + r * a.S : nullptr;
    const bool* bmask = a.bool_mask ? a.bool_mask + r * a.S : nullptr;
    const int64_t i = r % a.L;
    const T s = static_cast<T>(a.scale), neg_inf = lowest_value<T>();
    T m = neg_inf;
    for (int64_t j = 0; j < a.S; ++j) {
      T v = x[j] * s;
      if (fmask) v += fmask[j];
      if (bmask && !bmask[j]) v = neg_inf;
      if (a.causal && j > i) v = neg_inf;  // keys after the query (top-left aligned)
      x[j] = v;
      m = v > m ? v : m;  // NaN need not win: it reaches every weight through exp anyway
    }
    double sum = 0;
    for (int64_t j = 0; j < a.S; ++j) {
      x[j] = static_cast<T>(std::exp(x[j] - m));
      sum += static_cast<double>(x[j]);
    }
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t j = 0; j < a.S; ++j) x[j] *= inv;
    if (a.dropout_p <= 0) return;
    const double keep = 1 - a.dropout_p;
    const T factor = a.dropout_p >= 1 ? T(0) : static_cast<T>(1 / keep);
    for (int64_t j = 0; j < a.S; ++j)
      x[j] = uniform_at(a.seed, static_cast<uint64_t>(r * a.S + j)) < keep ? x[j] * factor : T(0);
  }
};

template <typename T> struct BceOp {
  T* loss;
  const T* x;
  const T* t;
  const T* w;
  const T* pw;
  __host__ __device__ void operator()(const int64_t* off) const {
    const T xv = x[off[1]], tv = t[off[2]];
    const T log_weight = (pw[off[4]] - T(1)) * tv + T(1);
    const T neg = -xv;
    const T softplus_neg = (neg > T(0) ? neg : T(0)) + std::log1p(std::exp(-std::abs(xv)));
    loss[off[0]] = w[off[3]] * ((T(1) - tv) * xv + log_weight * softplus_neg);
  }
};

}  // namespace

void launch_attention_rows(DType dtype, void* scores, const AttentionRows& a) {
  visit_floating("scaled_dot_product_attention", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("scaled_dot_product_attention", a.rows,
             AttentionRowBody<T>{static_cast<T*>(scores), a});
  });
}

void launch_bce_with_logits(DType dtype, void* loss, const void* x, const void* t, const void* w,
                            const void* pw, int64_t n, const StridedLayout<5>& layout) {
  visit_floating("binary_cross_entropy_with_logits", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_elementwise("binary_cross_entropy_with_logits", n, layout,
                       BceOp<T>{static_cast<T*>(loss), static_cast<const T*>(x),
                                static_cast<const T*>(t), static_cast<const T*>(w),
                                static_cast<const T*>(pw)});
  });
}

}  // namespace tg::cuda::detail
