// layer_norm, group_norm, batch_norm and their backward on the device. Statistics are exact
// two-pass sums in float64 (mean, then the squares around it), by one thread per row for the
// row norms and through the segmented reduction for batch_norm's channels, as the CPU kernels
// compute them (backends/cpu/nn_layers.cpp, norm.cpp); the normalisation
// itself is one thread per element with the CPU's rounding steps (centre, scale and shift
// rounded to the element type first), so results agree with the CPU to the last bits of the sums.
#include <cmath>

#include "launch.cuh"
#include "norm_kernels.h"

namespace tg::cuda::detail {
namespace {

// The mean of row[0, n), then the biased variance around it (two passes, exact), in double.
template <typename T> __host__ __device__ void row_stats(const T* row, int64_t n, double eps,
                                                         double& mean, double& rstd) {
  double s = 0, q = 0;
  for (int64_t j = 0; j < n; ++j) s += static_cast<double>(row[j]);
  mean = s / static_cast<double>(n);
  for (int64_t j = 0; j < n; ++j) {
    const double d = static_cast<double>(row[j]) - mean;
    q += d * d;
  }
  rstd = 1 / std::sqrt(q / static_cast<double>(n) + eps);
}

template <typename T> struct RowStatsBody {
  const T* x;
  int64_t n;
  double eps;
  double* mean;
  double* rstd;
  __host__ __device__ void operator()(int64_t r) const {
    row_stats(x + r * n, n, eps, mean[r], rstd[r]);
  }
};

// The per-channel sums of batch_norm go through the device-wide segmented reduction
// (launch_reduce_rows: CUB on the GPU), not one thread per channel (a few threads for a whole
// batch): the terms are first laid out channel-major, [channels, n * inner] in float64.

// terms[c * count + k] = f(element k of channel c) (k = i * inner + j over [n, inner]).
template <typename F> struct ChannelTermsBody {
  int64_t channels, inner, count;
  F f;
  double* terms;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t c = e / count, k = e % count;
    const int64_t at = ((k / inner) * channels + c) * inner + k % inner;
    terms[e] = f(at, c);
  }
};

template <typename T> struct ValueTerm {
  const T* x;
  __host__ __device__ double operator()(int64_t at, int64_t) const {
    return static_cast<double>(x[at]);
  }
};

template <typename T> struct SquareTerm {  // (x - mean[c])^2
  const T* x;
  const double* mean;
  __host__ __device__ double operator()(int64_t at, int64_t c) const {
    const double d = static_cast<double>(x[at]) - mean[c];
    return d * d;
  }
};

template <typename T> struct GradTerm {  // dy, or dy (x - mean[c]) when mean is given
  const T* dy;
  const T* x;
  const double* mean;
  __host__ __device__ double operator()(int64_t at, int64_t c) const {
    const double d = static_cast<double>(dy[at]);
    return mean ? d * (static_cast<double>(x[at]) - mean[c]) : d;
  }
};

// out[c] = the sum (or mean) over channel c of f(element), f a term functor above: the terms
// laid out channel-major, then the row reduction of reduce_kernels.cu (CUB's segmented reduce on
// the GPU, compiled once there).
template <typename F> void channel_sums(const char* op, int64_t n, int64_t channels, int64_t inner,
                                        F f, double* terms, double* out, bool mean = false) {
  const int64_t count = n * inner;
  launch_n(op, channels * count, ChannelTermsBody<F>{channels, inner, count, f, terms});
  launch_reduce_rows(mean ? ReduceKind::Mean : ReduceKind::Sum, terms, out, kFloat64, channels,
                     count);
}

// Per channel mean and biased variance (two exact passes), float64.
template <typename T> void channel_stats(const char* op, const T* x, int64_t n, int64_t channels,
                                         int64_t inner, double* mean, double* var) {
  const int64_t count = n * inner;
  DeviceBuffer terms(static_cast<size_t>(channels * count) * sizeof(double));
  double* t = static_cast<double*>(terms.get());
  channel_sums(op, n, channels, inner, ValueTerm<T>{x}, t, mean, true);
  channel_sums(op, n, channels, inner, SquareTerm<T>{x, mean}, t, var, true);
}

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
// grad_input = w rstd (dy - [training] (sum(dy) + x^ sum(dy x^)) / count), the sums given.
struct BatchNormSums {
  const double* mean;
  const double* var;
  const double* sum_dy;
  const double* sum_dy_xmu;
};

template <typename T> struct BatchNormParamGradBody {
  BatchNormSums s;
  double eps;
  T* gw;
  T* gb;
  __host__ __device__ void operator()(int64_t c) const {
    gb[c] = static_cast<T>(s.sum_dy[c]);
    gw[c] = static_cast<T>(s.sum_dy_xmu[c] * (1 / std::sqrt(s.var[c] + eps)));
  }
};

template <typename T> struct BatchNormInputGradBody {
  const T* dy;
  const T* x;
  BatchNormGrad a;
  BatchNormSums s;
  T* gi;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t c = (e / a.inner) % a.channels;
    const double count = static_cast<double>(a.n * a.inner);
    const double rstd = 1 / std::sqrt(s.var[c] + a.eps);
    const T scale = static_cast<T>((a.w ? a.w[c] : 1.0) * rstd), center = static_cast<T>(s.mean[c]);
    const T mean_dy = a.training ? static_cast<T>(s.sum_dy[c] / count) : T(0);
    const T k = a.training ? static_cast<T>(s.sum_dy_xmu[c] * rstd * rstd / count) : T(0);
    gi[e] = (dy[e] - mean_dy - (x[e] - center) * k) * scale;
  }
};

// One row of layer_norm_backward: grad_input = rstd (g - mean(g) - x^ mean(g x^)), g = dy * w.
template <typename T> struct LayerNormBackwardRowBody {
  const T* dy;
  const T* x;
  const T* w;
  int64_t n;
  double eps;
  bool stats_given;  // means / rstds hold the forward's; else computed here and kept there
  T* means;
  T* rstds;
  T* gi;
  __host__ __device__ void operator()(int64_t r) const {
    const T* xr = x + r * n;
    const T* dr = dy + r * n;
    if (!stats_given) {
      double mean = 0, rstd = 0;
      row_stats(xr, n, eps, mean, rstd);
      means[r] = static_cast<T>(mean);
      rstds[r] = static_cast<T>(rstd);
    }
    const T m = means[r], rstd = rstds[r];
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

// group_norm_backward's buffers (float64, device): mean / rstd per (sample, group), sum(dy) and
// sum(dy (x - mean)) per (sample, channel).
struct GroupNormGrad {
  int64_t n, channels, inner, groups;
  const double* w;
  const double* mean;
  const double* rstd;
  double* sum_dy;
  double* sum_dy_xmu;
};

// Per (sample, channel) e: the two sums over the channel's inner values.
template <typename T> struct GroupNormChannelSumsBody {
  const T* dy;
  const T* x;
  GroupNormGrad a;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t per_group = a.channels / a.groups;
    const double m = a.mean[(e / a.channels) * a.groups + (e % a.channels) / per_group];
    double s = 0, sx = 0;
    for (int64_t j = 0; j < a.inner; ++j) {
      const double d = static_cast<double>(dy[e * a.inner + j]);
      s += d;
      sx += d * (static_cast<double>(x[e * a.inner + j]) - m);
    }
    a.sum_dy[e] = s;
    a.sum_dy_xmu[e] = sx;
  }
};

// grad_input = dy (w rstd) - (x - mean) rstd^3 sum(g (x - mean)) / M - rstd sum(g) / M, g = dy w,
// M the group's size: the CPU's factors, each rounded once.
template <typename T> struct GroupNormInputGradBody {
  const T* dy;
  const T* x;
  GroupNormGrad a;
  T* gi;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t c = (e / a.inner) % a.channels, i = e / (a.inner * a.channels);
    const int64_t per_group = a.channels / a.groups, g0 = (c / per_group) * per_group;
    const int64_t r = i * a.groups + c / per_group;
    double g_sum = 0, g_xmu_sum = 0;
    for (int64_t k = g0; k < g0 + per_group; ++k) {
      const double wk = a.w ? a.w[k] : 1.0;
      g_sum += wk * a.sum_dy[i * a.channels + k];
      g_xmu_sum += wk * a.sum_dy_xmu[i * a.channels + k];
    }
    const double count = static_cast<double>(per_group * a.inner), rstd = a.rstd[r];
    const T center = static_cast<T>(a.mean[r]);
    const T k_xmu = static_cast<T>(rstd * rstd * rstd * g_xmu_sum / count);
    const T shift = static_cast<T>(rstd * g_sum / count);
    const T scale = static_cast<T>((a.w ? a.w[c] : 1.0) * rstd);
    gi[e] = dy[e] * scale - (x[e] - center) * k_xmu - shift;
  }
};

// Per channel c: grad_weight = sum over samples of sum(dy (x - mean)) rstd, grad_bias of sum(dy).
template <typename T> struct GroupNormParamGradBody {
  GroupNormGrad a;
  T* gw;
  T* gb;
  __host__ __device__ void operator()(int64_t c) const {
    const int64_t per_group = a.channels / a.groups;
    double sw = 0, sb = 0;
    for (int64_t i = 0; i < a.n; ++i) {
      sw += a.sum_dy_xmu[i * a.channels + c] * a.rstd[i * a.groups + c / per_group];
      sb += a.sum_dy[i * a.channels + c];
    }
    gw[c] = static_cast<T>(sw);
    gb[c] = static_cast<T>(sb);
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
    channel_stats("batch_norm", static_cast<const T*>(x), n, channels, inner, mean, var);
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
  constexpr const char* op = "batch_norm_backward";
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    const int64_t count = a.n * a.inner;
    // stats: mean, var (batch or running), sum_dy, sum_dy_xmu; terms: the reduced values.
    DeviceBuffer stats(static_cast<size_t>(4 * a.channels) * sizeof(double));
    DeviceBuffer terms(static_cast<size_t>(a.channels * count) * sizeof(double));
    double* st = static_cast<double*>(stats.get());
    double* t = static_cast<double*>(terms.get());
    BatchNormSums s{st, st + a.channels, st + 2 * a.channels, st + 3 * a.channels};
    if (a.training) {
      channel_stats(op, px, a.n, a.channels, a.inner, st, st + a.channels);
    } else {
      s.mean = a.mean;
      s.var = a.var;
    }
    channel_sums(op, a.n, a.channels, a.inner, GradTerm<T>{pdy, px, nullptr}, t,
                 st + 2 * a.channels);
    channel_sums(op, a.n, a.channels, a.inner, GradTerm<T>{pdy, px, s.mean}, t,
                 st + 3 * a.channels);
    launch_n(op, a.channels,
             BatchNormParamGradBody<T>{s, a.eps, static_cast<T*>(grad_weight),
                                       static_cast<T*>(grad_bias)});
    launch_n(op, a.n * a.channels * a.inner,
             BatchNormInputGradBody<T>{pdy, px, a, s, static_cast<T*>(grad_input)});
  });
}

void launch_group_norm_backward(DType dtype, const void* dy, const void* x, const double* w,
                                int64_t n, int64_t channels, int64_t inner, int64_t groups,
                                double eps, const double* mean, const double* rstd,
                                void* grad_input, void* grad_weight, void* grad_bias) {
  constexpr const char* op = "group_norm_backward";
  const int64_t rows = n * groups, group_size = channels / groups * inner;
  // The statistics (unless given), then the two per-channel sums.
  DeviceBuffer buffer(static_cast<size_t>(2 * rows + 2 * n * channels) * sizeof(double));
  double* b = static_cast<double*>(buffer.get());
  if (!mean) launch_row_stats(dtype, x, rows, group_size, eps, b, b + rows);
  const GroupNormGrad a{n,
                        channels,
                        inner,
                        groups,
                        w,
                        mean ? mean : b,
                        rstd ? rstd : b + rows,
                        b + 2 * rows,
                        b + 2 * rows + n * channels};
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    launch_n(op, n * channels, GroupNormChannelSumsBody<T>{pdy, px, a});
    launch_n(op, n * channels * inner,
             GroupNormInputGradBody<T>{pdy, px, a, static_cast<T*>(grad_input)});
    launch_n(op, channels,
             GroupNormParamGradBody<T>{a, static_cast<T*>(grad_weight),
                                       static_cast<T*>(grad_bias)});
  });
}

void launch_layer_norm_backward(DType dtype, const void* dy, const void* x, const void* w,
                                int64_t rows, int64_t n, double eps, bool stats_given, void* means,
                                void* rstds, void* grad_input, void* grad_weight, void* grad_bias) {
  visit_floating("layer_norm_backward", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    launch_n("layer_norm_backward", rows,
             LayerNormBackwardRowBody<T>{pdy, px, static_cast<const T*>(w), n, eps, stats_given,
                                         static_cast<T*>(means), static_cast<T*>(rstds),
                                         static_cast<T*>(grad_input)});
    launch_n("layer_norm_backward", n,
             LayerNormBackwardColBody<T>{pdy, px, static_cast<const T*>(means),
                                         static_cast<const T*>(rstds), rows, n,
                                         static_cast<T*>(grad_weight), static_cast<T*>(grad_bias)});
  });
}

}  // namespace tg::cuda::detail
