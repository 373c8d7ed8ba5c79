#include <tapegrad/nn/init.h>

#include <cmath>

#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::nn::init {

namespace {

int64_t receptive_field(const Tensor& w) {
  int64_t r = 1;
  for (int64_t d = 2; d < w.dim(); ++d) r *= w.size(d);
  return r;
}

void check_floating(const Tensor& t, const char* op) {
  TG_CHECK(t.defined() && is_floating(t.dtype()), TypeError, op,
           "expected a defined floating tensor");
}

}  // namespace

int64_t fan_in(const Tensor& w) {
  TG_CHECK(w.dim() >= 2, ValueError, "init", "fan_in needs a tensor with at least 2 dims, got ",
           w.dim());
  return w.size(1) * receptive_field(w);
}

int64_t fan_out(const Tensor& w) {
  TG_CHECK(w.dim() >= 2, ValueError, "init", "fan_out needs a tensor with at least 2 dims, got ",
           w.dim());
  return w.size(0) * receptive_field(w);
}

const Tensor& uniform_(const Tensor& t, double low, double high) {
  check_floating(t, "uniform_");
  NoGradGuard no_grad;
  return t.copy_(rand(t.shape(), t.dtype()) * (high - low) + low);
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  check_floating(t, "normal_");
  NoGradGuard no_grad;
  return t.copy_(randn(t.shape(), t.dtype()) * std + mean);
}

const Tensor& constant_(const Tensor& t, double value) {
  NoGradGuard no_grad;
  return t.fill_(value);
}
const Tensor& zeros_(const Tensor& t) { return constant_(t, 0.0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1.0); }

const Tensor& kaiming_uniform_(const Tensor& t, double a) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in(t)));
  return uniform_(t, -bound, bound);
}

const Tensor& kaiming_normal_(const Tensor& t, double a) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  return normal_(t, 0.0, gain / std::sqrt(static_cast<double>(fan_in(t))));
}

const Tensor& xavier_uniform_(const Tensor& t, double gain) {
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in(t) + fan_out(t)));
  return uniform_(t, -bound, bound);
}

}  // namespace tg::nn::init
