#include <tapegrad/nn/optim.h>

#include <cmath>
#include <numbers>
#include <set>
#include <type_traits>

#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/ops/factories.h>

namespace tg::nn {

namespace {

constexpr int64_t kGrain = 1 << 15;

// Runs body(p, g, buffers...) over typed contiguous data of one parameter, in parallel chunks.
template <typename Body> void for_each_element(const Tensor& param, const Tensor& grad,
                                               const std::vector<Tensor>& buffers, Body body) {
  const int64_t n = param.numel();
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    std::vector<T*> b;
    for (const Tensor& t : buffers) b.push_back(t.data<T>());
    parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) body(p, g, b.data(), i);
    });
  };
  if (param.dtype() == kFloat32)
    run(float{});
  else
    run(double{});
}

// The gradient an update reads: contiguous, of the parameter's dtype.
Tensor usable_grad(const Tensor& param, const char* op) {
  const Tensor& g = param.grad();
  TG_CHECK(g.shape() == param.shape(), ValueError, op, "gradient of shape ", g.shape(),
           " does not match its parameter's shape ", param.shape());
  return g.dtype() == param.dtype() ? g.contiguous() : g.to(param.dtype()).contiguous();
}

}  // namespace

// ---- Optimizer -------------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<Tensor> params, double lr, std::string name)
    : params_(std::move(params)), lr_(lr), name_(std::move(name)), buffers_(params_.size()) {
  TG_CHECK(lr >= 0, ValueError, name_.c_str(), "lr must be >= 0, got ", lr);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    TG_CHECK(p.defined() && p.is_leaf() && p.requires_grad(), ValueError, name_.c_str(),
             "parameter ", i, " must be a leaf tensor that requires grad");
    TG_CHECK(p.dtype() == kFloat32 || p.dtype() == kFloat64, TypeError, name_.c_str(), "parameter ",
             i, " must be float32 or float64, got ", dtype_name(p.dtype()));
    TG_CHECK(p.is_contiguous(), ValueError, name_.c_str(), "parameter ", i, " must be contiguous");
    // A device parameter is updated by the backend's fused kernel (core/cuda.h); any device
    // tensor that exists has one.
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      p.grad().zero_();
    }
  }
}

void Optimizer::set_lr(double lr) {
  TG_CHECK(lr >= 0, ValueError, name_.c_str(), "lr must be >= 0, got ", lr);
  lr_ = lr;
}

Tensor Optimizer::buffer(size_t i, const std::string& name) {
  const Device device = params_[i].device();
  for (auto& [n, t] : buffers_[i]) {
    // The buffers follow their parameter when a module moves after the optimizer was made
    // (nn::Module::to), as the stored tensors of a loaded state do.
    if (n == name && !(t.device() == device)) t = t.to(device);
    if (n == name) return t;
  }
  buffers_[i].emplace_back(name, zeros(params_[i].shape(), params_[i].dtype(), device));
  return buffers_[i].back().second;
}

bool Optimizer::has_buffer(size_t i, const std::string& name) const {
  for (const auto& [n, _] : buffers_[i])
    if (n == name) return true;
  return false;
}

std::vector<std::pair<std::string, const double*>> Optimizer::hyperparameters_const() const {
  std::vector<std::pair<std::string, const double*>> out;
  for (auto& [n, v] : const_cast<Optimizer*>(this)->hyperparameters()) out.emplace_back(n, v);
  return out;
}

StateDict Optimizer::state_dict() const {
  StateDict state;
  state.emplace("step", scalar_tensor(step_count_, kInt64));
  state.emplace("lr", scalar_tensor(lr_, kFloat64));
  for (auto& [name, value] : hyperparameters_const())
    state.emplace(name, scalar_tensor(*value, kFloat64));
  for (size_t i = 0; i < buffers_.size(); ++i)
    for (const auto& [name, t] : buffers_[i])
      state.emplace("param." + std::to_string(i) + "." + name, t.clone());
  return state;
}

void Optimizer::load_state_dict(const StateDict& state) {
  const char* op = "load_state_dict";
  auto scalar = [&](const std::string& key) {
    auto it = state.find(key);
    TG_CHECK(it != state.end(), ValueError, op, name_, " state has no '", key, "'");
    TG_CHECK(it->second.numel() == 1, ValueError, op, "'", key, "' must hold one value, got ",
             it->second.numel());
    return it->second;
  };
  std::set<std::string> known = {"step", "lr"};
  const Tensor step = scalar("step"), lr = scalar("lr");
  for (auto& [name, _] : hyperparameters_const()) known.insert((scalar(name), name));
  // Per-parameter buffers: "param.<i>.<name>", each with its parameter's shape.
  std::vector<std::vector<std::pair<std::string, Tensor>>> buffers(params_.size());
  for (const auto& [key, t] : state) {
    if (known.count(key)) continue;
    const size_t dot = key.find('.', 6);
    TG_CHECK(key.rfind("param.", 0) == 0 && dot != std::string::npos, ValueError, op,
             "unexpected key '", key, "' in ", name_, " state");
    size_t index = 0;
    try {
      index = std::stoul(key.substr(6, dot - 6));
    } catch (const std::exception&) {
      fail<ValueError>(op, "unexpected key '", key, "' in ", name_, " state");
    }
    TG_CHECK(index < params_.size(), ValueError, op, "'", key, "' refers to parameter ", index,
             " but the optimizer has ", params_.size());
    TG_CHECK(t.shape() == params_[index].shape(), ValueError, op, "'", key, "' has shape ",
             t.shape(), ", its parameter has ", params_[index].shape());
    const Tensor& param = params_[index];
    buffers[index].emplace_back(key.substr(dot + 1),
                                t.to(param.dtype()).to(param.device()).contiguous().clone());
  }
  // Everything checked: now change state.
  step_count_ = step.item<int64_t>();
  lr_ = lr.item<double>();
  for (auto& [name, value] : hyperparameters()) *value = state.at(name).item<double>();
  buffers_ = std::move(buffers);
}

// ---- SGD -------------------------------------------------------------------------------------

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o)
    : Optimizer(std::move(params), o.lr, "SGD"), options(o) {
  TG_CHECK(o.momentum >= 0 && o.weight_decay >= 0, ValueError, "SGD",
           "momentum and weight_decay must be >= 0, got ", o.momentum, " and ", o.weight_decay);
  TG_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ValueError, "SGD",
           "nesterov needs momentum > 0 and dampening = 0");
}

std::vector<std::pair<std::string, double*>> SGD::hyperparameters() {
  return {{"momentum", &options.momentum},
          {"dampening", &options.dampening},
          {"weight_decay", &options.weight_decay}};
}

void SGD::step() {
  NoGradGuard no_grad;
  ++step_count_;
  const double lr = lr_, wd = options.weight_decay, mom = options.momentum;
  const double damp = 1.0 - options.dampening;
  const bool nesterov = options.nesterov;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    const Tensor g = usable_grad(p, "SGD");
    if (p.device().is_cuda()) {
      const bool first = mom != 0 && !has_buffer(i, "momentum_buffer");
      const Tensor buf = mom != 0 ? buffer(i, "momentum_buffer") : Tensor();
      cuda::detail::sgd_step(p, g, buf, {lr, wd, mom, damp, nesterov, first});
      continue;
    }
    // Arithmetic in the parameter's own type T, so the loops vectorise.
    if (mom == 0) {
      for_each_element(p, g, {}, [=](auto* P, const auto* G, auto**, int64_t k) {
        using T = std::remove_reference_t<decltype(*P)>;
        P[k] -= static_cast<T>(lr) * (G[k] + static_cast<T>(wd) * P[k]);
      });
      continue;
    }
    // The buffer starts as the first step's gradient (no dampening then), as PyTorch.
    const bool first = !has_buffer(i, "momentum_buffer");
    const Tensor buf = buffer(i, "momentum_buffer");
    for_each_element(p, g, {buf}, [=](auto* P, const auto* G, auto** B, int64_t k) {
      using T = std::remove_reference_t<decltype(*P)>;
      const T d = G[k] + static_cast<T>(wd) * P[k];
      const T b = first ? d : static_cast<T>(mom) * B[0][k] + static_cast<T>(damp) * d;
      B[0][k] = b;
      P[k] -= static_cast<T>(lr) * (nesterov ? d + static_cast<T>(mom) * b : b);
    });
  }
}

// ---- Adam / AdamW ----------------------------------------------------------------------------

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o)
    : Adam(std::move(params), o, false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o, bool decoupled, std::string name)
    : Optimizer(std::move(params), o.lr, std::move(name)), options(o), decoupled_(decoupled) {
  TG_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, ValueError, name_.c_str(),
           "betas must be in [0, 1), got ", o.beta1, " and ", o.beta2);
  TG_CHECK(o.eps >= 0 && o.weight_decay >= 0, ValueError, name_.c_str(),
           "eps and weight_decay must be >= 0, got ", o.eps, " and ", o.weight_decay);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& o)
    : Adam(std::move(params), o, true, "AdamW") {}

std::vector<std::pair<std::string, double*>> Adam::hyperparameters() {
  return {{"beta1", &options.beta1},
          {"beta2", &options.beta2},
          {"eps", &options.eps},
          {"weight_decay", &options.weight_decay}};
}

namespace {

struct AdamConstants {
  double step_size, sqrt_bc2, shrink, l2, b1, b2, eps;
};

// One parameter chunk of Adam / AdamW: one fused pass, every array through its own restrict
// pointer and no amsgrad branch inside, so the loop vectorises. This file is built with
// -fno-math-errno (CMakeLists.txt): a sqrt that may set errno cannot be vectorised, and v is
// never negative here.
template <typename T, bool kAmsgrad>
void adam_chunk(T* __restrict P, const T* __restrict G, T* __restrict m, T* __restrict v,
                T* __restrict vmax, int64_t n, const AdamConstants& c) {
  const T l2 = static_cast<T>(c.l2), shrink = static_cast<T>(c.shrink);
  const T b1 = static_cast<T>(c.b1), one_b1 = static_cast<T>(1 - c.b1);
  const T b2 = static_cast<T>(c.b2), one_b2 = static_cast<T>(1 - c.b2);
  const T sqrt_bc2 = static_cast<T>(c.sqrt_bc2), eps = static_cast<T>(c.eps);
  const T step = static_cast<T>(c.step_size);
  for (int64_t k = 0; k < n; ++k) {
    const T grad = G[k] + l2 * P[k];
    const T m_k = m[k] = b1 * m[k] + one_b1 * grad;
    T v_k = v[k] = b2 * v[k] + one_b2 * grad * grad;
    if constexpr (kAmsgrad) v_k = vmax[k] = std::max(vmax[k], v_k);
    const T denom = std::sqrt(v_k) / sqrt_bc2 + eps;
    P[k] = P[k] * shrink - step * m_k / denom;
  }
}

}  // namespace

void Adam::step() {
  NoGradGuard no_grad;
  ++step_count_;
  const double lr = lr_, b1 = options.beta1, b2 = options.beta2, eps = options.eps;
  const double wd = options.weight_decay;
  const double t = static_cast<double>(step_count_);
  const double step_size = lr / (1.0 - std::pow(b1, t));
  const double sqrt_bc2 = std::sqrt(1.0 - std::pow(b2, t));
  const double shrink = decoupled_ ? 1.0 - lr * wd : 1.0;
  const double l2 = decoupled_ ? 0.0 : wd;
  const bool amsgrad = options.amsgrad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    const Tensor g = usable_grad(p, name_.c_str());
    std::vector<Tensor> bufs;
    for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
      if (amsgrad || name[0] != 'm') bufs.push_back(buffer(i, name));
    if (p.device().is_cuda()) {
      cuda::detail::adam_step(p, g, bufs[0], bufs[1], amsgrad ? bufs[2] : Tensor(),
                              {step_size, sqrt_bc2, shrink, l2, b1, b2, eps, amsgrad});
      continue;
    }
    const AdamConstants c{step_size, sqrt_bc2, shrink, l2, b1, b2, eps};
    const int64_t n = p.numel();
    auto run = [&](auto zero) {
      using T = decltype(zero);
      T* P = p.data<T>();
      const T* G = g.data<T>();
      T* m = bufs[0].data<T>();
      T* v = bufs[1].data<T>();
      T* vmax = amsgrad ? bufs[2].data<T>() : nullptr;
      parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
        if (amsgrad)
          adam_chunk<T, true>(P + lo, G + lo, m + lo, v + lo, vmax + lo, hi - lo, c);
        else
          adam_chunk<T, false>(P + lo, G + lo, m + lo, v + lo, nullptr, hi - lo, c);
      });
    };
    if (p.dtype() == kFloat32)
      run(float{});
    else
      run(double{});
  }
}

// ---- schedules -------------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer), base_lr_(optimizer.lr()) {}

void LRScheduler::step() {
  ++last_epoch_;
  optimizer_.set_lr(lr_at(last_epoch_));
}

StepLR::StepLR(Optimizer& optimizer, int64_t size, double g)
    : LRScheduler(optimizer), step_size(size), gamma(g) {
  TG_CHECK(size > 0, ValueError, "StepLR", "step_size must be > 0, got ", size);
}

double StepLR::lr_at(int64_t epoch) const {
  return base_lr_ * std::pow(gamma, static_cast<double>(epoch / step_size));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double min_lr)
    : LRScheduler(optimizer), T_max(t_max), eta_min(min_lr) {
  TG_CHECK(t_max > 0, ValueError, "CosineAnnealingLR", "T_max must be > 0, got ", t_max);
}

double CosineAnnealingLR::lr_at(int64_t epoch) const {
  const double phase = std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(T_max);
  return eta_min + (base_lr_ - eta_min) * (1.0 + std::cos(phase)) / 2.0;
}

}  // namespace tg::nn
