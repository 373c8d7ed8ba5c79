// layer_norm, group_norm, batch_norm and their backward on the device. Statistics are exact
// two-pass sums in float64 (mean, then the squares around it) by one thread per row or channel,
// as the CPU kernels compute them (backends/cpu/nn_layers.cpp, norm.cpp); the normalisation
// itself is one thread per element with the CPU's rounding steps (centre, scale and shift
// rounded to the element type first), so results agree with the CPU to the last bits of the sums.
#include <cmath>

#include "launch.cuh"
#include "norm_kernels.h"

namespace tg::cuda::detail {
namespace {

template <typename T> struct RowStatsBody {
  const T* x;
  int64_t n;
  double eps;
  double* mean;
  double* rstd;
  __host__ __device__ void operator()(int64_t r) const {
    const T* row = x + r * n;
    double s = 0, q = 0;
    for (int64_t j = 0; j < n; ++j) s += static_cast<double>(row[j]);
    const double m = s / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(row[j]) - m;
      q += d * d;
    }
    mean[r] = m;
    rstd[r] = 1 / std::sqrt(q / static_cast<double>(n) + eps);
  }
};

template <typename T> struct ChannelStatsBody {
  const T* x;
  int64_t n, channels, inner;
  double* mean;
  double* var;
  __host__ __device__ void operator()(int64_t c) const {
    const double count = static_cast<double>(n * inner);
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j)
        s += static_cast<double>(x[(i * channels + c) * inner + j]);
    const double m = s / count;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        const double d = static_cast<double>(x[(i * channels + c) * inner + j]) - m;
        q += d * d;
      }
    mean[c] = m;
    var[c] = q / count;
  }
};

template <typename T> struct LayerNormBody {
  const T* x;
  const double* mean;
  const double* rstd;
  const T* w;
  const T* b;
  int64_t n;
  T* out;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t r = e / n, j = e % n;
    T y = (x[e] - static_cast<T>(mean[r])) * static_cast<T>(rstd[r]);
    if (w) y *= w[j];
    if (b) y += b[j];
    out[e] = y;
  }
};

template <typename T> struct AffineNormBody {
  const T* x;
  AffineNorm a;
  T* out;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t c = (e / a.inner) % a.channels;
    const double w = a.w ? a.w[c] : 1.0, b = a.b ? a.b[c] : 0.0;
    double m = 0, scale = 0;
    if (a.groups > 0) {
      const int64_t r = e / (a.channels / a.groups * a.inner);  // (sample, group)
      m = a.mean[r];
      scale = a.spread[r] * w;
    } else {
      m = a.mean[c];
      scale = w / std::sqrt(a.spread[c] + a.eps);
    }
    out[e] = (x[e] - static_cast<T>(m)) * static_cast<T>(scale) + static_cast<T>(b);
  }
};

struct RunningStatsBody {
  double momentum, unbias;
  const double* mean;
  const double* var;
  double* running_mean;
  double* running_var;
  __host__ __device__ void operator()(int64_t c) const {
    running_mean[c] = (1 - momentum) * running_mean[c] + momentum * mean[c];
    running_var[c] = (1 - momentum) * running_var[c] + momentum * var[c] * unbias;
  }
};

// Per channel, with x^ = (x - mean) * rstd: grad_bias = sum(dy), grad_weight = sum(dy x^), and
// grad_input = w rstd (dy - [training] (sum(dy) + x^ sum(dy x^)) / count).
template <typename T> struct BatchNormBackwardBody {
  const T* dy;
  const T* x;
  BatchNormGrad a;
  T* gi;
  T* gw;
  T* gb;
  __host__ __device__ void operator()(int64_t c) const {
    const int64_t count = a.n * a.inner;
    double mean = 0, var = 0;
    if (a.training) {
      for (int64_t i = 0; i < a.n; ++i)
        for (int64_t j = 0; j < a.inner; ++j)
          mean += static_cast<double>(x[(i * a.channels + c) * a.inner + j]);
      mean /= static_cast<double>(count);
      for (int64_t i = 0; i < a.n; ++i)
        for (int64_t j = 0; j < a.inner; ++j) {
          const double d = static_cast<double>(x[(i * a.channels + c) * a.inner + j]) - mean;
          var += d * d;
        }
      var /= static_cast<double>(count);
    } else {
      mean = a.mean[c];
      var = a.var[c];
    }
    const double rstd = 1 / std::sqrt(var + a.eps);
    double sum_dy = 0, sum_dy_xmu = 0;
    for (int64_t i = 0; i < a.n; ++i)
      for (int64_t j = 0; j < a.inner; ++j) {
        const int64_t k = (i * a.channels + c) * a.inner + j;
        sum_dy += static_cast<double>(dy[k]);
        sum_dy_xmu += static_cast<double>(dy[k]) * (static_cast<double>(x[k]) - mean);
      }
    gb[c] = static_cast<T>(sum_dy);
    gw[c] = static_cast<T>(sum_dy_xmu * rstd);
    const T scale = static_cast<T>((a.w ? a.w[c] : 1.0) * rstd), center = static_cast<T>(mean);
    const T mean_dy = a.training ? static_cast<T>(sum_dy / static_cast<double>(count)) : T(0);
    const T k =
        a.training ? static_cast<T>(sum_dy_xmu * rstd * rstd / static_cast<double>(count)) : T(0);
    for (int64_t i = 0; i < a.n; ++i)
      for (int64_t j = 0; j < a.inner; ++j) {
        const int64_t e = (i * a.channels + c) * a.inner + j;
        gi[e] = (dy[e] - mean_dy - (x[e] - center) * k) * scale;
      }
  }
};

// One row of layer_norm_backward: grad_input = rstd (g - mean(g) - x^ mean(g x^)), g = dy * w.
template <typename T> struct LayerNormBackwardRowBody {
  const T* dy;
  const T* x;
  const T* w;
  int64_t n;
  double eps;
  T* means;
  T* rstds;
  T* gi;
  __host__ __device__ void operator()(int64_t r) const {
    const T* xr = x + r * n;
    const T* dr = dy + r * n;
    double s = 0, q = 0;
    for (int64_t j = 0; j < n; ++j) s += static_cast<double>(xr[j]);
    const double mean = s / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(xr[j]) - mean;
      q += d * d;
    }
    const T m = static_cast<T>(mean);
    const T rstd = static_cast<T>(1 / std::sqrt(q / static_cast<double>(n) + eps));
    means[r] = m;
    rstds[r] = rstd;
    double a = 0, b = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T g = w ? dr[j] * w[j] : dr[j];
      a += static_cast<double>(g);
      b += static_cast<double>(g) * static_cast<double>((xr[j] - m) * rstd);
    }
    const T mean_g = static_cast<T>(a / static_cast<double>(n));
    const T mean_gx = static_cast<T>(b / static_cast<double>(n));
    for (int64_t j = 0; j < n; ++j) {
      const T g = w ? dr[j] * w[j] : dr[j];
      gi[r * n + j] = rstd * (g - mean_g - (xr[j] - m) * rstd * mean_gx);
    }
  }
};

// Column j of layer_norm_backward: grad_weight = sum(dy x^), grad_bias = sum(dy) over the rows.
template <typename T> struct LayerNormBackwardColBody {
  const T* dy;
  const T* x;
  const T* means;
  const T* rstds;
  int64_t rows, n;
  T* gw;
  T* gb;
  __host__ __device__ void operator()(int64_t j) const {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T d = dy[r * n + j];
      sw += static_cast<double>(d * ((x[r * n + j] - means[r]) * rstds[r]));
      sb += static_cast<double>(d);
    }
    gw[j] = static_cast<T>(sw);
    gb[j] = static_cast<T>(sb);
  }
};

}  // namespace

void launch_row_stats(DType dtype, const void* x, int64_t rows, int64_t n, double eps, double* mean,
                      double* rstd) {
  visit_floating("layer_norm", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("layer_norm", rows, RowStatsBody<T>{static_cast<const T*>(x), n, eps, mean, rstd});
  });
}

void launch_channel_stats(DType dtype, const void* x, int64_t n, int64_t channels, int64_t inner,
                          double* mean, double* var) {
  visit_floating("batch_norm", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("batch_norm", channels,
             ChannelStatsBody<T>{static_cast<const T*>(x), n, channels, inner, mean, var});
  });
}

void launch_layer_norm(DType dtype, const void* x, const double* mean, const double* rstd,
                       const void* w, const void* b, int64_t rows, int64_t n, void* out) {
  visit_floating("layer_norm", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("layer_norm", rows * n,
             LayerNormBody<T>{static_cast<const T*>(x), mean, rstd, static_cast<const T*>(w),
                              static_cast<const T*>(b), n, static_cast<T*>(out)});
  });
}

void launch_affine_norm(DType dtype, const void* x, const AffineNorm& a, void* out) {
  visit_floating("batch_norm", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("batch_norm", a.n * a.channels * a.inner,
             AffineNormBody<T>{static_cast<const T*>(x), a, static_cast<T*>(out)});
  });
}

void launch_running_stats(int64_t channels, double momentum, double unbias, const double* mean,
                          const double* var, double* running_mean, double* running_var) {
  launch_n("batch_norm", channels,
           RunningStatsBody{momentum, unbias, mean, var, running_mean, running_var});
}

void launch_batch_norm_backward(DType dtype, const void* dy, const void* x, const BatchNormGrad& a,
                                void* grad_input, void* grad_weight, void* grad_bias) {
  visit_floating("batch_norm_backward", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("batch_norm_backward", a.channels,
             BatchNormBackwardBody<T>{static_cast<const T*>(dy), static_cast<const T*>(x), a,
                                      static_cast<T*>(grad_input), static_cast<T*>(grad_weight),
                                      static_cast<T*>(grad_bias)});
  });
}

void launch_layer_norm_backward(DType dtype, const void* dy, const void* x, const void* w,
                                int64_t rows, int64_t n, double eps, void* means, void* rstds,
                                void* grad_input, void* grad_weight, void* grad_bias) {
  visit_floating("layer_norm_backward", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    launch_n("layer_norm_backward", rows,
             LayerNormBackwardRowBody<T>{pdy, px, static_cast<const T*>(w), n, eps,
                                         static_cast<T*>(means), static_cast<T*>(rstds),
                                         static_cast<T*>(grad_input)});
    launch_n("layer_norm_backward", n,
             LayerNormBackwardColBody<T>{pdy, px, static_cast<const T*>(means),
                                         static_cast<const T*>(rstds), rows, n,
                                         static_cast<T*>(grad_weight), static_cast<T*>(grad_bias)});
  });
}

}  // namespace tg::cuda::detail
