#include <tapegrad/nn/norm.h>

#include <sstream>

#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>

namespace tg::nn {

namespace {
const char* flag(bool b) { return b ? "true" : "false"; }
}  // namespace

// ---- BatchNorm1d / BatchNorm2d -----------------------------------------------------------------

BatchNormNd::BatchNormNd(const char* type_name, int64_t features, const BatchNormOptions& options)
    : Module(type_name), num_features(features), eps(options.eps), momentum(options.momentum) {
  TG_CHECK(features >= 1, ValueError, type_name, "num_features must be positive, got ", features);
  if (options.affine) {
    weight = register_parameter("weight", ones({features}, options.dtype));
    bias = register_parameter("bias", zeros({features}, options.dtype));
  }
  if (options.track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({features}, options.dtype));
    running_var = register_buffer("running_var", ones({features}, options.dtype));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

Tensor BatchNormNd::forward(const Tensor& x) {
  check_input(x);
  TG_CHECK(x.size(1) == num_features, ValueError, type_name().c_str(), "expected input with ",
           num_features, " channels (dim 1), got shape ", x.shape());
  double factor = momentum.value_or(0.0);
  if (is_training() && num_batches_tracked.defined()) {
    NoGradGuard no_grad;
    // The one on the buffer's device: a module moved with to(kCUDA) counts there.
    num_batches_tracked.add_(scalar_tensor(1, kInt64, num_batches_tracked.device()));
    if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  // As PyTorch: batch statistics in training, and in eval too when no running ones are kept.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  return batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, factor, eps);
}

std::string BatchNormNd::extra_repr() const {
  std::ostringstream os;
  os << num_features << ", eps=" << eps << ", momentum=";
  if (momentum) {
    os << *momentum;
  } else {
    os << "none";
  }
  os << ", affine=" << flag(weight.defined())
     << ", track_running_stats=" << flag(running_mean.defined());
  return os.str();
}

void BatchNorm1d::check_input(const Tensor& x) const {
  TG_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, "BatchNorm1d",
           "expected 2-D [N, C] or 3-D [N, C, L] input, got shape ", x.shape());
}

void BatchNorm2d::check_input(const Tensor& x) const {
  TG_CHECK(x.dim() == 4, ValueError, "BatchNorm2d", "expected 4-D [N, C, H, W] input, got shape ",
           x.shape());
}

// ---- GroupNorm ---------------------------------------------------------------------------------

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double epsilon, bool affine, DType dtype)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(epsilon) {
  TG_CHECK(groups >= 1 && channels % groups == 0, ValueError, "GroupNorm", "num_channels (",
           channels, ") must be divisible by num_groups (", groups, ")");
  if (affine) {
    weight = register_parameter("weight", ones({channels}, dtype));
    bias = register_parameter("bias", zeros({channels}, dtype));
  }
}

Tensor GroupNorm::forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }

std::string GroupNorm::extra_repr() const {
  std::ostringstream os;
  os << num_groups << ", " << num_channels << ", eps=" << eps
     << ", affine=" << flag(weight.defined());
  return os.str();
}

}  // namespace tg::nn
