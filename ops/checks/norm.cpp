// Checks of batch_norm, batch_norm_backward, group_norm and group_norm_backward (kernels:
// backends/cpu/norm.cpp).
#include <utility>

#include <tapegrad/core/overlap.h>
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

namespace {

void check_self(const char* op, const Tensor& self) {
  TG_CHECK(self.dim() >= 2, ValueError, op,
           "expected self with at least 2 dims [N, C, ...], got shape ", self.shape());
}

// An optional per-channel tensor: [C] with self's dtype.
void check_channel_vector(const char* op, const char* name, const Tensor& t, const Tensor& self) {
  if (!t.defined()) return;
  TG_CHECK(t.dim() == 1 && t.size(0) == self.size(1), ValueError, op, name, " must have shape [",
           self.size(1), "] (the channels of self), got ", t.shape());
  dtype_of_self(op, name, t, self);
}

// What batch_norm and batch_norm_backward share: dims, the running stats given when needed, the
// per-channel shapes and dtypes.
void check_batch_norm(const char* op, const Tensor& self, const Tensor& running_mean,
                      const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                      bool training, double eps) {
  check_self(op, self);
  TG_CHECK(running_mean.defined() == running_var.defined(), ValueError, op,
           "running_mean and running_var must both be given or both be omitted");
  TG_CHECK(training || running_mean.defined(), ValueError, op,
           "running_mean and running_var must be given when training is false");
  check_channel_vector(op, "running_mean", running_mean, self);
  check_channel_vector(op, "running_var", running_var, self);
  check_channel_vector(op, "weight", weight, self);
  check_channel_vector(op, "bias", bias, self);
  TG_CHECK(eps >= 0, ValueError, op, "eps must be non-negative, got ", eps);
}

// What group_norm and group_norm_backward share.
void check_group_norm(const char* op, const Tensor& self, int64_t num_groups, const Tensor& weight,
                      const Tensor& bias, double eps) {
  check_self(op, self);
  TG_CHECK(num_groups >= 1, ValueError, op, "num_groups must be positive, got ", num_groups);
  TG_CHECK(self.size(1) % num_groups == 0, ValueError, op, "expected the number of channels ",
           self.size(1), " to be divisible by num_groups ", num_groups, " (self of shape ",
           self.shape(), ")");
  check_channel_vector(op, "weight", weight, self);
  check_channel_vector(op, "bias", bias, self);
  TG_CHECK(eps >= 0, ValueError, op, "eps must be non-negative, got ", eps);
}

}  // namespace

void batch_norm(const Tensor& self, const Tensor& running_mean, const Tensor& running_var,
                const Tensor& weight, const Tensor& bias, bool training, double /*momentum*/,
                double eps) {
  constexpr const char* op = "batch_norm";
  check_batch_norm(op, self, running_mean, running_var, weight, bias, training, eps);
  const int64_t channels = self.size(1);
  TG_CHECK(!training || channels == 0 || self.numel() / channels != 1, ValueError, op,
           "expected more than 1 value per channel when training, got self of shape ",
           self.shape());
  if (training && running_mean.defined()) {  // both then: updated in place, as in-place ops
    detail::check_inplace_overlap(op, running_mean);
    detail::check_inplace_overlap(op, running_var);
  }
}

void batch_norm_backward(const Tensor& grad_output, const Tensor& self, const Tensor& running_mean,
                         const Tensor& running_var, const Tensor& weight, bool training,
                         double eps) {
  constexpr const char* op = "batch_norm_backward";
  check_batch_norm(op, self, running_mean, running_var, weight, Tensor(), training, eps);
  TG_CHECK(grad_output.shape() == self.shape(), ValueError, op,
           "grad_output must have self's shape ", self.shape(), ", got ", grad_output.shape());
  dtype_of_self(op, "grad_output", grad_output, self);
}

void group_norm(const Tensor& self, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                double eps) {
  check_group_norm("group_norm", self, num_groups, weight, bias, eps);
}

void group_norm_backward(const Tensor& grad_output, const Tensor& self, int64_t num_groups,
                         const Tensor& weight, double eps, const Tensor& mean, const Tensor& rstd) {
  constexpr const char* op = "group_norm_backward";
  check_group_norm(op, self, num_groups, weight, Tensor(), eps);
  TG_CHECK(grad_output.shape() == self.shape(), ValueError, op,
           "grad_output must have self's shape ", self.shape(), ", got ", grad_output.shape());
  dtype_of_self(op, "grad_output", grad_output, self);
  TG_CHECK(mean.defined() == rstd.defined(), ValueError, op,
           "mean and rstd must both be given or both be omitted");
  if (!mean.defined()) return;
  const Shape stats{self.size(0), num_groups};
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"mean", &mean}, {"rstd", &rstd}}) {
    TG_CHECK(t->shape() == stats, ValueError, op, name, " must have shape ", stats,
             " ([N, num_groups]), got ", t->shape());
    dtype_of_self(op, name, *t, self);
  }
}

}  // namespace tg::checks
