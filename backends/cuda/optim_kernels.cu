// The optimizers' fused updates: one launch per parameter, each index reading and writing only
// its own element of the parameter and its buffers. The formulas are nn/optim.cpp's CPU loops,
// term for term and in the parameter's type, so that a device step matches the CPU's (up to
// sqrt and the compiler's contraction into fused multiply-adds on a GPU).
#include <cmath>

#include "launch.cuh"
#include "optim_kernels.h"

namespace tg::cuda::detail {
namespace {

template <typename T> struct SgdBody {
  T* p;
  const T* g;
  T* buf;
  T lr, wd, mom, damp;
  bool nesterov, first;
  __host__ __device__ void operator()(int64_t k) const {
    const T d = g[k] + wd * p[k];
    if (buf == nullptr) {
      p[k] -= lr * d;
      return;
    }
    const T b = first ? d : mom * buf[k] + damp * d;
    buf[k] = b;
    p[k] -= lr * (nesterov ? d + mom * b : b);
  }
};

template <typename T> struct AdamBody {
  T* p;
  const T* g;
  T *m, *v, *vmax;
  T step, sqrt_bc2, shrink, l2, b1, one_b1, b2, one_b2, eps;
  __host__ __device__ void operator()(int64_t k) const {
    const T grad = g[k] + l2 * p[k];
    const T m_k = m[k] = b1 * m[k] + one_b1 * grad;
    T v_k = v[k] = b2 * v[k] + one_b2 * grad * grad;
    if (vmax != nullptr) v_k = vmax[k] = vmax[k] < v_k ? v_k : vmax[k];  // std::max
    const T denom = std::sqrt(v_k) / sqrt_bc2 + eps;
    p[k] = p[k] * shrink - step * m_k / denom;
  }
};

}  // namespace

void launch_sgd_step(DType dtype, void* param, const void* grad, void* buf, int64_t n,
                     const tg::detail::SgdStepArgs& a) {
  visit_floating("SGD", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("SGD", n,
             SgdBody<T>{static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(buf),
                        static_cast<T>(a.lr), static_cast<T>(a.weight_decay),
                        static_cast<T>(a.momentum), static_cast<T>(a.dampening_complement),
                        a.nesterov, a.first});
  });
}

void launch_adam_step(DType dtype, void* param, const void* grad, void* m, void* v, void* vmax,
                      int64_t n, const tg::detail::AdamStepArgs& a) {
  visit_floating("Adam", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("Adam", n,
             AdamBody<T>{static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(m),
                         static_cast<T*>(v), static_cast<T*>(vmax), static_cast<T>(a.step_size),
                         static_cast<T>(a.sqrt_bc2), static_cast<T>(a.shrink), static_cast<T>(a.l2),
                         static_cast<T>(a.beta1), static_cast<T>(1 - a.beta1),
                         static_cast<T>(a.beta2), static_cast<T>(1 - a.beta2),
                         static_cast<T>(a.eps)});
  });
}

}  // namespace tg::cuda::detail
