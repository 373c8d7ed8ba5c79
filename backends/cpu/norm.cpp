// CPU kernels of batch_norm, batch_norm_backward and group_norm: statistics in double over
// contiguous data (mean first, then the variance around it: two exact passes), then one pass that
// writes (x - mean) * (rstd * weight) + bias.
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include <tapegrad/backends/cpu/double_sums.h>
#include <tapegrad/core/widest.h>
#include <tapegrad/backends/shared/norm_grads.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {

namespace {

// The sums of the statistics, in double, on the widest vectors (double_sums.h).
template <typename T> double sum_of(const T* p, int64_t n) {
  return sum_terms_widest(
      [p](int64_t i) __attribute__((always_inline)) { return static_cast<double>(p[i]); }, 0, n);
}

template <typename T> double squares_around(const T* p, int64_t n, double mean) {
  return sum_terms_widest(
      [ p, mean ](int64_t i) __attribute__((always_inline)) {
        const double d = static_cast<double>(p[i]) - mean;
        return d * d;
      },
      0, n);
}

// sum(dy * (x - mean)).
template <typename T> double products_around(const T* dy, const T* x, int64_t n, double mean) {
  return sum_terms_widest(
      [ dy, x, mean ](int64_t i) __attribute__((always_inline)) {
        return static_cast<double>(dy[i]) * (static_cast<double>(x[i]) - mean);
      },
      0, n);
}

// ---- group_norm: one (sample, group) at a time, its channels back to back -----------------------
// The bodies are always inlined into run_widest's baseline and AVX2 builds (core/widest.h), sums
// included (sum_terms, not sum_terms_widest): a group is a few L1-resident passes, compute-bound,
// and the baseline build converts and multiplies four floats per instruction, AVX2 eight. No FMA
// contraction in ISO C++ mode: both builds give the same bits.
#define TG_NORM_INLINE __attribute__((always_inline)) inline

// The group's mean and 1 / sqrt(biased variance + eps) in double (two exact passes).
template <typename T>
TG_NORM_INLINE std::pair<double, double> group_stats(const T* x, int64_t size, double eps) {
  const double count = static_cast<double>(size);
  const double sum = sum_terms(
      [x](int64_t i) __attribute__((always_inline)) { return static_cast<double>(x[i]); }, 0, size);
  const double m = sum / count;
  const double squares = sum_terms(
      [ x, m ](int64_t i) __attribute__((always_inline)) {
        const double d = static_cast<double>(x[i]) - m;
        return d * d;
      },
      0, size);
  return {m, 1 / std::sqrt(squares / count + eps)};
}

// The forward of one group: its statistics (saved in *mean, *rstd), then per channel k
// out = (x - mean) * (rstd * w[k]) + b[k]; w and b start at the group's first channel.
template <typename T> TG_NORM_INLINE void normalize_group(const T* x, T* __restrict out,
                                                          int64_t per_group, int64_t inner,
                                                          const double* w, const double* b,
                                                          double eps, T* mean, T* rstd) {
  const auto [m, r] = group_stats(x, per_group * inner, eps);
  *mean = static_cast<T>(m);
  *rstd = static_cast<T>(r);
  const T center = static_cast<T>(m);
  for (int64_t k = 0; k < per_group; ++k) {
    const T scale = static_cast<T>(r * w[k]), shift = static_cast<T>(b[k]);
    for (int64_t j = k * inner; j < (k + 1) * inner; ++j) out[j] = (x[j] - center) * scale + shift;
  }
}

// The backward of one group with g = dy w, x^ = (x - mean) rstd and <.> the mean over the
// group's M values: grad_input = rstd (g - <g> - x^ <g x^>)
//   = dy (w rstd) - (x - mean) rstd^3 sum(g (x - mean)) / M - rstd sum(g) / M,
// each factor computed in double and rounded once per channel. Per channel k it keeps sum(dy) and
// sum(dy (x - mean)) in sum_dy[k], sum_dy_xmu[k] (for grad_weight and grad_bias); w, sum_dy and
// sum_dy_xmu start at the group's first channel.
template <typename T>
TG_NORM_INLINE void group_input_grad(const T* x, const T* dy, T* __restrict gi, int64_t per_group,
                                     int64_t inner, const double* w, double m, double rstd,
                                     double* sum_dy, double* sum_dy_xmu) {
  double g_sum = 0, g_xmu_sum = 0;  // sum(g), sum(g (x - mean)) over the group
  for (int64_t k = 0; k < per_group; ++k) {
    const T* xk = x + k * inner;
    const T* dk = dy + k * inner;
    sum_dy[k] = sum_terms(
        [dk](int64_t i) __attribute__((always_inline)) { return static_cast<double>(dk[i]); }, 0,
        inner);
    sum_dy_xmu[k] = sum_terms(
        [ dk, xk, m ](int64_t i) __attribute__((always_inline)) {
          return static_cast<double>(dk[i]) * (static_cast<double>(xk[i]) - m);
        },
        0, inner);
    g_sum += w[k] * sum_dy[k];
    g_xmu_sum += w[k] * sum_dy_xmu[k];
  }
  const double count = static_cast<double>(per_group * inner);
  const T center = static_cast<T>(m);
  const T k_xmu = static_cast<T>(rstd * rstd * rstd * g_xmu_sum / count);
  const T shift = static_cast<T>(rstd * g_sum / count);
  for (int64_t k = 0; k < per_group; ++k) {
    const T scale = static_cast<T>(w[k] * rstd);
    for (int64_t j = k * inner; j < (k + 1) * inner; ++j)
      gi[j] = dy[j] * scale - (x[j] - center) * k_xmu - shift;
  }
}

// Channels per task of the per-channel passes: each channel is a few passes over count values,
// so half the elementwise grain already pays for a task (a small CNN's 16 or 32 channels of an
// [N, C, 8, 8] batch then still spread over two threads).
int64_t channel_grain(int64_t count) {
  return std::max<int64_t>(1, kElementwiseGrain / (2 * std::max<int64_t>(count, 1)));
}

// The elements of an optional per-channel tensor, as doubles (fill when undefined).
std::vector<double> channel_values(const Tensor& t, int64_t channels, double fill) {
  if (!t.defined()) return std::vector<double>(static_cast<size_t>(channels), fill);
  return t.to_vector<double>();
}

}  // namespace

Tensor batch_norm(const Tensor& self, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  if (self.numel() == 0) return out;  // no statistics: the running ones stay (as PyTorch)
  const int64_t n = self.size(0), channels = self.size(1), inner = self.numel() / (n * channels);
  const int64_t count = n * inner;  // values per channel
  std::vector<double> mean(static_cast<size_t>(channels)), var(mean.size());
  const Tensor x = self.contiguous();
  visit_floating("batch_norm", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    if (training) {
      parallel_for(0, channels, channel_grain(count), [&](int64_t lo, int64_t hi) {
        for (int64_t c = lo; c < hi; ++c) {
          double s = 0, q = 0;
          for (int64_t i = 0; i < n; ++i) s += sum_of(in + (i * channels + c) * inner, inner);
          const double m = s / static_cast<double>(count);
          for (int64_t i = 0; i < n; ++i)
            q += squares_around(in + (i * channels + c) * inner, inner, m);
          mean[static_cast<size_t>(c)] = m;
          var[static_cast<size_t>(c)] = q / static_cast<double>(count);
        }
      });
    } else {
      mean = running_mean.to_vector<double>();
      var = running_var.to_vector<double>();
    }
    const std::vector<double> w = channel_values(weight, channels, 1.0);
    const std::vector<double> b = channel_values(bias, channels, 0.0);
    std::vector<T> scale(mean.size()), shift(mean.size());
    for (size_t c = 0; c < mean.size(); ++c) {
      scale[c] = static_cast<T>(w[c] / std::sqrt(var[c] + eps));
      shift[c] = static_cast<T>(b[c]);
    }
    std::vector<T> center(mean.begin(), mean.end());
    T* o = out.data<T>();
    parallel_for(0, n * channels, std::max<int64_t>(1, kElementwiseGrain / inner),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const size_t c = static_cast<size_t>(r % channels);
                     const T* xr = in + r * inner;
                     T* orow = o + r * inner;
                     for (int64_t j = 0; j < inner; ++j)
                       orow[j] = (xr[j] - center[c]) * scale[c] + shift[c];
                   }
                 });
  });
  if (training && running_mean.defined()) {
    // running = (1 - momentum) * running + momentum * batch statistic, with the unbiased variance.
    // Written in place and, as in PyTorch, without a version bump: a graph recorded in training
    // mode never reads the running statistics.
    std::vector<double> rm = running_mean.to_vector<double>(), rv = running_var.to_vector<double>();
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    for (size_t c = 0; c < rm.size(); ++c) {
      rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
      rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * unbias;
    }
    copy_data(running_mean, tensor(rm, {channels}).to(running_mean.dtype()));
    copy_data(running_var, tensor(rv, {channels}).to(running_var.dtype()));
  }
  return out;
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad_output, const Tensor& self, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& weight, bool training, double eps) {
  const int64_t channels = self.size(1);
  const shared::NormGrads grads = shared::norm_grads(self, {channels});
  const Tensor &grad_input = grads.input, &grad_weight = grads.weight, &grad_bias = grads.bias;
  if (self.numel() == 0) return grads.all();
  const int64_t n = self.size(0), inner = self.numel() / (n * channels), count = n * inner;
  const Tensor x = self.contiguous(), dy = grad_output.contiguous();
  const std::vector<double> w = channel_values(weight, channels, 1.0);
  const std::vector<double> rm =
      running_mean.defined() ? running_mean.to_vector<double>() : std::vector<double>();
  const std::vector<double> rv =
      running_var.defined() ? running_var.to_vector<double>() : std::vector<double>();
  visit_floating("batch_norm_backward", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    const T* dp = dy.data<T>();
    T* gi = grad_input.data<T>();
    T* gw = grad_weight.data<T>();
    T* gb = grad_bias.data<T>();
    // Per channel, with x^ = (x - mean) * rstd: grad_bias = sum(dy), grad_weight = sum(dy x^),
    // and grad_input = w rstd (dy - [training] (sum(dy) + x^ sum(dy x^)) / count).
    parallel_for(0, channels, channel_grain(count), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        const size_t ci = static_cast<size_t>(c);
        double mean = 0, var = 0;
        if (training) {
          for (int64_t i = 0; i < n; ++i) mean += sum_of(xp + (i * channels + c) * inner, inner);
          mean /= static_cast<double>(count);
          for (int64_t i = 0; i < n; ++i)
            var += squares_around(xp + (i * channels + c) * inner, inner, mean);
          var /= static_cast<double>(count);
        } else {
          mean = rm[ci];
          var = rv[ci];
        }
        const double rstd = 1 / std::sqrt(var + eps);
        double sum_dy = 0, sum_dy_xmu = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T* xr = xp + (i * channels + c) * inner;
          const T* dr = dp + (i * channels + c) * inner;
          sum_dy += sum_of(dr, inner);
          sum_dy_xmu += products_around(dr, xr, inner, mean);
        }
        gb[c] = static_cast<T>(sum_dy);
        gw[c] = static_cast<T>(sum_dy_xmu * rstd);
        const T scale = static_cast<T>(w[ci] * rstd), center = static_cast<T>(mean);
        const T mean_dy = training ? static_cast<T>(sum_dy / static_cast<double>(count)) : T(0);
        const T k =
            training ? static_cast<T>(sum_dy_xmu * rstd * rstd / static_cast<double>(count)) : T(0);
        for (int64_t i = 0; i < n; ++i) {
          const T* xr = xp + (i * channels + c) * inner;
          const T* dr = dp + (i * channels + c) * inner;
          T* gr = gi + (i * channels + c) * inner;
          for (int64_t j = 0; j < inner; ++j)
            gr[j] = (dr[j] - mean_dy - (xr[j] - center) * k) * scale;
        }
      }
    });
  });
  return {grad_input, grad_weight, grad_bias};
}

std::tuple<Tensor, Tensor, Tensor> group_norm(const Tensor& self, int64_t num_groups,
                                              const Tensor& weight, const Tensor& bias,
                                              double eps) {
  const shared::NormOutputs outs = shared::group_norm_outputs(self, num_groups);
  if (self.numel() == 0) return outs.all();
  const int64_t n = self.size(0), channels = self.size(1), inner = self.numel() / (n * channels);
  const int64_t per_group = channels / num_groups, group_size = per_group * inner;
  const Tensor x = self.contiguous();
  const std::vector<double> w = channel_values(weight, channels, 1.0);
  const std::vector<double> b = channel_values(bias, channels, 0.0);
  visit_floating("group_norm", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = outs.out.data<T>();
    T* means = outs.mean.data<T>();
    T* rstds = outs.rstd.data<T>();
    // One task per (sample, group): its channels lie back to back.
    parallel_for(0, n * num_groups, std::max<int64_t>(1, kElementwiseGrain / group_size),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const double* wr = w.data() + (r % num_groups) * per_group;
                     const double* br = b.data() + (r % num_groups) * per_group;
                     run_widest([&]() __attribute__((always_inline)) {
                       normalize_group(in + r * group_size, o + r * group_size, per_group, inner,
                                       wr, br, eps, means + r, rstds + r);
                     });
                   }
                 });
  });
  return outs.all();
}

std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad_output,
                                                       const Tensor& self, int64_t num_groups,
                                                       const Tensor& weight, double eps,
                                                       const Tensor& saved_mean,
                                                       const Tensor& saved_rstd) {
  const int64_t channels = self.size(1);
  const shared::NormGrads grads = shared::norm_grads(self, {channels});
  if (self.numel() == 0) return grads.all();
  const int64_t n = self.size(0), inner = self.numel() / (n * channels);
  const int64_t per_group = channels / num_groups, group_size = per_group * inner;
  const Tensor x = self.contiguous(), dy = grad_output.contiguous();
  const std::vector<double> w = channel_values(weight, channels, 1.0);
  // The statistics group_norm saved, if given; recomputed per group otherwise.
  const bool saved = saved_mean.defined();
  const Tensor given_means = saved ? saved_mean.contiguous() : Tensor();
  const Tensor given_rstds = saved ? saved_rstd.contiguous() : Tensor();
  // Per (sample, channel): sum(dy) and sum(dy (x - mean)); per (sample, group): rstd. Kept for
  // the per-channel grad_weight and grad_bias, summed over the samples in order afterwards.
  std::vector<double> sum_dy(static_cast<size_t>(n * channels));
  std::vector<double> sum_dy_xmu(sum_dy.size()), rstds(static_cast<size_t>(n * num_groups));
  visit_floating("group_norm_backward", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    const T* dp = dy.data<T>();
    T* gi = grads.input.data<T>();
    const T* given_mean = saved ? given_means.data<T>() : nullptr;
    const T* given_rstd = saved ? given_rstds.data<T>() : nullptr;
    // One task per (sample, group), as the forward.
    parallel_for(0, n * num_groups, std::max<int64_t>(1, kElementwiseGrain / group_size),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const T* xr = xp + r * group_size;
                     const int64_t c0 = (r % num_groups) * per_group,
                                   at = (r / num_groups) * channels + c0;
                     run_widest([&]() __attribute__((always_inline)) {
                       const auto [m, rstd] =
                           saved ? std::pair<double, double>(given_mean[r], given_rstd[r])
                                 : group_stats(xr, group_size, eps);
                       rstds[static_cast<size_t>(r)] = rstd;
                       group_input_grad(xr, dp + r * group_size, gi + r * group_size, per_group,
                                        inner, w.data() + c0, m, rstd, sum_dy.data() + at,
                                        sum_dy_xmu.data() + at);
                     });
                   }
                 });
    T* gw = grads.weight.data<T>();
    T* gb = grads.bias.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      double weight_sum = 0, bias_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t si = static_cast<size_t>(i * channels + c);
        weight_sum += sum_dy_xmu[si] * rstds[static_cast<size_t>(i * num_groups + c / per_group)];
        bias_sum += sum_dy[si];
      }
      gw[c] = static_cast<T>(weight_sum);
      gb[c] = static_cast<T>(bias_sum);
    }
  });
  return grads.all();
}

}  // namespace tg::cpu
