#pragma once
// The plain-data interface of norm_kernels.cu (layer_norm, group_norm, batch_norm and their
// backward). Tensors are contiguous device buffers of the floating `dtype` unless said otherwise;
// statistics are float64, as the CPU kernels compute them.
#include "cuda_utils.h"

namespace tg::cuda::detail {

// mean[r] and rstd[r] = 1 / sqrt(biased variance + eps) of each contiguous row of x [rows, n].
void launch_row_stats(DType dtype, const void* x, int64_t rows, int64_t n, double eps, double* mean,
                      double* rstd);
// mean[c] and the biased var[c] of channel c of x [n, channels, inner].
void launch_channel_stats(DType dtype, const void* x, int64_t n, int64_t channels, int64_t inner,
                          double* mean, double* var);

// layer_norm: out = (x - mean[r]) * rstd[r] (* w[j]) (+ b[j]) over x [rows, n]; w, b of dtype or
// null.
void launch_layer_norm(DType dtype, const void* x, const double* mean, const double* rstd,
                       const void* w, const void* b, int64_t rows, int64_t n, void* out);
// group_norm / batch_norm over x [n, channels, inner]: out = (x - center) * scale + shift with,
// per channel c, scale = w[c] * rstd and shift = b[c] (w, b float64 or null). group_norm
// (groups > 0): center / rstd from stats[n * groups] (mean, rstd); batch_norm (groups == 0): from
// stats[channels] (mean, var), rstd = 1 / sqrt(var + eps).
struct AffineNorm {
  int64_t n = 0, channels = 0, inner = 0, groups = 0;
  double eps = 0;
  const double* mean = nullptr;
  const double* spread = nullptr;  // rstd (group_norm) or var (batch_norm)
  const double* w = nullptr;
  const double* b = nullptr;
};
void launch_affine_norm(DType dtype, const void* x, const AffineNorm& a, void* out);

// running = (1 - momentum) running + momentum batch (var: times count / (count - 1)), float64.
void launch_running_stats(int64_t channels, double momentum, double unbias, const double* mean,
                          const double* var, double* running_mean, double* running_var);

// batch_norm_backward (the CPU's formulas; per-channel sums by segmented reduction): mean / var are
// the running statistics when not training (float64), ignored otherwise; w float64 or null.
struct BatchNormGrad {
  int64_t n = 0, channels = 0, inner = 0;
  bool training = false;
  double eps = 0;
  const double* mean = nullptr;
  const double* var = nullptr;
  const double* w = nullptr;
};
void launch_batch_norm_backward(DType dtype, const void* dy, const void* x, const BatchNormGrad& a,
                                void* grad_input, void* grad_weight, void* grad_bias);

// layer_norm_backward over [rows, n]: grad_input (one thread per row; mean and rstd of each row,
// of dtype, read from means / rstds when stats_given, else computed and kept there), then
// grad_weight and grad_bias (one thread per column, summing the rows in order). w of dtype or
// null.
void launch_layer_norm_backward(DType dtype, const void* dy, const void* x, const void* w,
                                int64_t rows, int64_t n, double eps, bool stats_given, void* means,
                                void* rstds, void* grad_input, void* grad_weight, void* grad_bias);

// group_norm_backward over x [n, channels, inner] in `groups` groups (the CPU's formulas): per
// (sample, group) the mean and rstd (given, float64 [n * groups], or computed when null), per
// (sample, channel) sum(dy) and sum(dy (x - mean)), then grad_input one thread per element and
// grad_weight / grad_bias one thread per channel (samples in order). w float64 or null.
void launch_group_norm_backward(DType dtype, const void* dy, const void* x, const double* w,
                                int64_t n, int64_t channels, int64_t inner, int64_t groups,
                                double eps, const double* mean, const double* rstd,
                                void* grad_input, void* grad_weight, void* grad_bias);

}  // namespace tg::cuda::detail
