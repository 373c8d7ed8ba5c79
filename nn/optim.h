#pragma once
// Optimizers (SGD, Adam, AdamW) and learning-rate schedules (StepLR, CosineAnnealingLR), with the
// update rules of torch.optim. Each step updates parameters in place outside autograd.
//
//   tg::nn::AdamW opt(model->parameters(), {.lr = 1e-3, .weight_decay = 1e-2});
//   opt.zero_grad(); loss.backward(); opt.step();
//
// state_dict() holds the step count, the hyperparameters and every per-parameter buffer as
// tensors ("param.3.exp_avg"), so tg::save writes it and load_state_dict resumes exactly.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tapegrad/generated/tensor.h>
#include <tapegrad/nn/state_dict.h>

namespace tg::nn {

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, double lr, std::string name);
  virtual ~Optimizer() = default;

  virtual void step() = 0;
  // Drops every gradient (set_to_none, PyTorch's default) or zeroes it in place.
  void zero_grad(bool set_to_none = true);

  double lr() const { return lr_; }
  void set_lr(double lr);
  int64_t steps() const { return step_count_; }
  const std::vector<Tensor>& params() const { return params_; }

  virtual StateDict state_dict() const;
  // Checks every entry (names, shapes, dtypes) before changing anything.
  virtual void load_state_dict(const StateDict& state);

 protected:
  // Per-parameter buffers by name ("momentum_buffer", "exp_avg", ...); created lazily.
  Tensor buffer(size_t param_index, const std::string& name);  // a handle to the stored tensor
  bool has_buffer(size_t param_index, const std::string& name) const;
  // Scalar hyperparameters stored in state_dict as 0-d float64 tensors.
  virtual std::vector<std::pair<std::string, double*>> hyperparameters() = 0;
  std::vector<std::pair<std::string, const double*>> hyperparameters_const() const;

  std::vector<Tensor> params_;
  double lr_;
  int64_t step_count_ = 0;
  std::string name_;

 private:
  std::vector<std::vector<std::pair<std::string, Tensor>>> buffers_;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// p -= lr * d, where g = grad + weight_decay * p, and with momentum
// b = momentum * b + (1 - dampening) * g (b = g on the first step), d = nesterov ? g + momentum * b
// : b.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options = {});
  void step() override;
  SGDOptions options;

 protected:
  std::vector<std::pair<std::string, double*>> hyperparameters() override;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
};

// Adam with bias correction. Adam adds weight_decay * p to the gradient (L2); AdamW instead
// shrinks p by lr * weight_decay before the update (decoupled weight decay).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  void step() override;
  AdamOptions options;

 protected:
  Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled, std::string name);
  std::vector<std::pair<std::string, double*>> hyperparameters() override;

 private:
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  // PyTorch's AdamW default weight_decay is 0.01.
  static AdamOptions defaults() {
    AdamOptions o;
    o.weight_decay = 1e-2;
    return o;
  }
  AdamW(std::vector<Tensor> params, const AdamOptions& options = defaults());
};

// Sets the optimizer's learning rate from the epoch count; call step() once per epoch.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  void step();
  int64_t last_epoch() const { return last_epoch_; }
  double base_lr() const { return base_lr_; }
  virtual double lr_at(int64_t epoch) const = 0;

 protected:
  Optimizer& optimizer_;
  double base_lr_;
  int64_t last_epoch_ = 0;
};

// lr = base_lr * gamma ^ floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch) const override;
  int64_t step_size;
  double gamma;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);
  double lr_at(int64_t epoch) const override;
  int64_t T_max;
  double eta_min;
};

}  // namespace tg::nn
