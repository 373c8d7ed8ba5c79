// nll_loss and cross_entropy (with label smoothing and class weights) and their backward: one
// thread per sample. Sample r's class c sits at (r / inner) * C * inner + r % inner + c * inner of
// a contiguous self ([C], [N, C] or [N, C, d1, ...]). Per-sample values are computed in float64
// like the CPU kernels; the mean's divisor D (the sum of w[t] over non-ignored samples) stays on
// the device. A target out of range is recorded on the device (device_errors.h).
#include <cmath>

#include "device_errors.h"
#include "launch.cuh"
#include "loss_kernels.h"

namespace tg::cuda::detail {
namespace {

template <typename T> struct LossBody {
  LossArgs a;
  const T* x;
  const T* w;  // null without weights
  double* loss;
  double* wt;
  ErrorRecord* err;
  int32_t op;
  __host__ __device__ double weight(int64_t c) const { return w ? static_cast<double>(w[c]) : 1.0; }
  __host__ __device__ void operator()(int64_t r) const {
    const int64_t t = a.target[r];
    loss[r] = 0;
    wt[r] = 0;
    if (t == a.ignore_index) return;
    if (t < 0 || t >= a.classes) {
      record_error(err, kTargetOutOfRange, op, t, a.classes, r, a.ignore_index);
      return;
    }
    const int64_t base = (r / a.inner) * a.classes * a.inner + r % a.inner;
    wt[r] = weight(t);
    if (!a.softmax) {
      loss[r] = -weight(t) * static_cast<double>(x[base + t * a.inner]);
      return;
    }
    T m = x[base];
    for (int64_t c = 1; c < a.classes; ++c)
      m = x[base + c * a.inner] > m ? x[base + c * a.inner] : m;
    double s = 0;
    for (int64_t c = 0; c < a.classes; ++c)
      s += std::exp(static_cast<double>(x[base + c * a.inner] - m));
    const T log_sum = static_cast<T>(std::log(s));
    double l = (1 - a.eps) * weight(t) * (log_sum - (x[base + t * a.inner] - m));
    if (a.eps > 0) {
      double wx = 0, wsum = 0;
      for (int64_t c = 0; c < a.classes; ++c) {
        wx += weight(c) * static_cast<double>(x[base + c * a.inner]);
        wsum += weight(c);
      }
      l += a.eps / static_cast<double>(a.classes) *
           (wsum * (static_cast<double>(log_sum) + static_cast<double>(m)) - wx);
    }
    loss[r] = l;
  }
};

template <typename T> struct LossBackwardBody {
  LossArgs a;
  const T* x;
  const T* w;
  const T* g;  // one value per sample ("none") or one value
  const double* divisor;
  T* out;  // zeroed by the caller
  __host__ __device__ double weight(int64_t c) const { return w ? static_cast<double>(w[c]) : 1.0; }
  __host__ __device__ void operator()(int64_t r) const {
    const int64_t t = a.target[r];
    if (t == a.ignore_index || t < 0 || t >= a.classes) return;
    const int64_t base = (r / a.inner) * a.classes * a.inner + r % a.inner;
    const double scale = static_cast<double>(g[a.per_sample ? r : 0]) / *divisor;
    if (!a.softmax) {
      out[base + t * a.inner] = static_cast<T>(-scale * weight(t));
      return;
    }
    T m = x[base];
    for (int64_t c = 1; c < a.classes; ++c)
      m = x[base + c * a.inner] > m ? x[base + c * a.inner] : m;
    double s = 0;
    for (int64_t c = 0; c < a.classes; ++c)
      s += std::exp(static_cast<double>(x[base + c * a.inner] - m));
    double wsum = 0;
    for (int64_t c = 0; c < a.classes; ++c) wsum += weight(c);
    const double target_part = scale * (1 - a.eps) * weight(t);
    const double smooth_part = scale * a.eps / static_cast<double>(a.classes);
    const T p_scale = static_cast<T>(target_part + smooth_part * wsum);
    for (int64_t c = 0; c < a.classes; ++c) {
      const T p = static_cast<T>(std::exp(static_cast<double>(x[base + c * a.inner] - m)) / s);
      T y = p_scale * p;
      if (a.eps > 0)
        y = static_cast<T>(y - static_cast<T>(smooth_part) * static_cast<T>(weight(c)));
      if (c == t) y = static_cast<T>(y - static_cast<T>(target_part));
      out[base + c * a.inner] = y;
    }
  }
};

}  // namespace

void launch_loss(const char* op, const LossArgs& a, DType dtype, const void* self,
                 const void* weight, double* loss, double* wt) {
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n(op, a.samples,
             LossBody<T>{a, static_cast<const T*>(self), static_cast<const T*>(weight), loss, wt,
                         error_record(), op_id(op)});
  });
}

void launch_loss_backward(const char* op, const LossArgs& a, DType dtype, const void* self,
                          const void* weight, const void* grad, const double* divisor, void* out) {
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n(op, a.samples,
             LossBackwardBody<T>{a, static_cast<const T*>(self), static_cast<const T*>(weight),
                                 static_cast<const T*>(grad), divisor, static_cast<T*>(out)});
  });
}

}  // namespace tg::cuda::detail
