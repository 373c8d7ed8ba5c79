#pragma once
// Normalisation layers: BatchNorm1d, BatchNorm2d and GroupNorm, with PyTorch's parameter and
// buffer names (weight, bias, running_mean, running_var, num_batches_tracked), so that their
// state_dict entries match torch.nn's one to one.
#include <cstdint>
#include <optional>
#include <string>

#include <tapegrad/nn/module.h>

namespace tg::nn {

struct BatchNormOptions {
  double eps = 1e-5;
  // Weight of the new batch statistic in the running ones; none: their cumulative average
  // (1 / num_batches_tracked), as PyTorch's momentum=None.
  std::optional<double> momentum = 0.1;
  bool affine = true;               // learn weight (ones) and bias (zeros)
  bool track_running_stats = true;  // keep the buffers; without them eval uses batch statistics
  DType dtype = kFloat32;
};

// Normalises each channel (dim 1) with the batch's statistics in training mode, updating the
// running ones (running_var with the unbiased variance), and with the running ones in eval mode.
class BatchNormNd : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  Tensor weight, bias;                                    // undefined without affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined without track_running_stats
  int64_t num_features;
  double eps;
  std::optional<double> momentum;

 protected:
  BatchNormNd(const char* type_name, int64_t num_features, const BatchNormOptions& options);
  virtual void check_input(const Tensor& x) const = 0;
};

// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNormNd {
 public:
  explicit BatchNorm1d(int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormNd("BatchNorm1d", num_features, options) {}

 protected:
  void check_input(const Tensor& x) const override;
};

// Input [N, C, H, W].
class BatchNorm2d : public BatchNormNd {
 public:
  explicit BatchNorm2d(int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormNd("BatchNorm2d", num_features, options) {}

 protected:
  void check_input(const Tensor& x) const override;
};

// Normalises each of num_groups groups of channels per sample (independent of the batch, the
// same in training and eval); weight (ones) and bias (zeros) per channel when affine.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true,
            DType dtype = kFloat32);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  Tensor weight, bias;
  int64_t num_groups, num_channels;
  double eps;
};

}  // namespace tg::nn
