// tg::nn on the CUDA device, against the CPU: Module::to (parameters, buffers, gradients, in
// place), ops that mix devices, the optimizers' fused device steps, tg::save / tg::load of device
// tensors, and a short digits training run that must follow the CPU's step by step. Every case
// skips with a message when there is no device (a build without CUDA, or no GPU).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

namespace {

using tg::Tensor;

bool no_device() {
  if (tg::cuda::is_available()) return false;
  MESSAGE("no CUDA device: skipping");
  return true;
}

// Largest |a - b| / (1 + |b|) over the elements (a may live on any device).
double rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.cpu().to(tg::kFloat64).to_vector<double>();
  const std::vector<double> y = b.cpu().to(tg::kFloat64).to_vector<double>();
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t k = 0; k < x.size(); ++k)
    worst = std::max(worst, std::abs(x[k] - y[k]) / (1 + std::abs(y[k])));
  return worst;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return tg::save_to_bytes({{"t", a}}) == tg::save_to_bytes({{"t", b}});
}

}  // namespace

TEST_CASE("cuda nn: Module::to moves parameters, buffers and gradients in place") {
  if (no_device()) return;
  tg::manual_seed(3);
  auto lin = std::make_shared<tg::nn::Linear>(3, 4);
  auto bn = std::make_shared<tg::nn::BatchNorm1d>(4);
  const Tensor x = tg::randn({5, 3});
  (*bn)((*lin)(x)).sum().backward();  // gradients, and running statistics that are not 0 / 1
  const Tensor w_cpu = lin->weight.detach().clone(), g_cpu = lin->weight.grad().clone();
  const Tensor mean_cpu = bn->running_mean.clone();
  const Tensor y_cpu = (*lin)(x).detach();
  const Tensor handle = lin->weight;  // held elsewhere, e.g. by an optimizer

  lin->to(tg::kCUDA);
  bn->to(tg::kCUDA);
  // (No structured bindings here: doctest's INFO captures in a lambda, clang-14 rejects that.)
  for (const auto& entry : lin->named_parameters()) {
    INFO(entry.first);
    CHECK(entry.second.device().is_cuda());
    CHECK(entry.second.requires_grad());
    CHECK(entry.second.is_leaf());
  }
  for (const auto& entry : bn->named_buffers()) {
    INFO(entry.first);
    CHECK(entry.second.device().is_cuda());
  }
  CHECK(handle.is_same(lin->weight));
  CHECK(handle.device().is_cuda());
  CHECK(handle.name() == "weight");
  CHECK(same_bits(lin->weight, w_cpu));
  CHECK(lin->weight.grad().device().is_cuda());
  CHECK(same_bits(lin->weight.grad(), g_cpu));
  CHECK(same_bits(bn->running_mean, mean_cpu));

  // The moved module computes on the device, and its gradients stay there.
  const Tensor xd = x.to(tg::kCUDA);
  const Tensor y = (*lin)(xd);
  CHECK(y.device().is_cuda());
  CHECK(rel_diff(y, y_cpu) < 1e-6);
  lin->zero_grad();
  y.sum().backward();
  CHECK(lin->weight.grad().device().is_cuda());
  CHECK(lin->bias.grad().device().is_cuda());

  // BatchNorm's running statistics, moved, keep being updated in place on the device, as on
  // the CPU.
  auto bn_cpu = std::make_shared<tg::nn::BatchNorm1d>(4);
  bn_cpu->load_state_dict(bn->state_dict());
  const Tensor h = tg::randn({6, 4});
  (void)(*bn_cpu)(h);
  (void)(*bn)(h.to(tg::kCUDA));
  CHECK(bn->running_mean.device().is_cuda());
  CHECK(rel_diff(bn->running_mean, bn_cpu->running_mean) < 1e-6);
  CHECK(rel_diff(bn->running_var, bn_cpu->running_var) < 1e-6);
  CHECK(rel_diff(bn->num_batches_tracked, bn_cpu->num_batches_tracked) == 0);
  CHECK(rel_diff(bn->running_mean, mean_cpu) > 0);  // it did move

  // And back.
  lin->to(tg::kCPU);
  CHECK(lin->weight.device().is_cpu());
  CHECK(same_bits(lin->weight, w_cpu));
  CHECK(rel_diff((*lin)(x), y_cpu) == 0);
}

TEST_CASE("cuda nn: an op mixing devices is a typed [op] error that changes nothing") {
  if (no_device()) return;
  const Tensor a = tg::tensor({1.f, 2.f, 3.f});
  const Tensor b = tg::tensor({4.f, 5.f, 6.f}).to(tg::kCUDA);
  auto expect = [](const std::string& op, const std::function<void()>& fn) {
    const std::string msg = tg_test::error_of<tg::ValueError>(fn);
    INFO(op, ": ", msg);
    CHECK(msg.find("[" + op + "]") != std::string::npos);
    CHECK(msg.find("one device") != std::string::npos);
    CHECK(msg.find("cuda:0") != std::string::npos);
  };
  expect("add", [&] { (void)tg::add(a, b); });
  expect("add", [&] { (void)(b + a); });
  expect("add", [&] { (void)a.clone().add_(b); });
  expect("matmul", [&] { (void)tg::matmul(a.reshape({1, 3}), b.reshape({3, 1})); });
  expect("cat", [&] { (void)tg::cat({a, b}, 0); });
  // A module on the device fed a CPU tensor.
  auto lin = std::make_shared<tg::nn::Linear>(3, 2);
  lin->to(tg::kCUDA);
  expect("linear", [&] { (void)(*lin)(a.reshape({1, 3})); });
  const Tensor c = a.clone();
  (void)tg_test::error_of([&] { c.add_(b); });
  CHECK(c.to_vector<float>() == std::vector<float>{1.f, 2.f, 3.f});
}

namespace {

// Runs `steps` optimizer steps with the same gradients on a CPU and a device copy of the same
// parameters; returns the worst relative difference of parameters and optimizer state.
double optimizer_gap(tg::DType dtype,
                     const std::function<std::unique_ptr<tg::nn::Optimizer>(Tensor)>& make,
                     int steps = 4) {
  tg::manual_seed(11);
  const Tensor init = tg::randn({5, 7}).to(dtype);
  Tensor pc = init.clone().requires_grad_(true);
  Tensor pd = init.to(tg::kCUDA).requires_grad_(true);
  auto oc = make(pc), od = make(pd);
  double worst = 0;
  for (int s = 0; s < steps; ++s) {
    const Tensor g = tg::randn({5, 7}).to(dtype);
    pc.set_grad(g);
    pd.set_grad(g.to(tg::kCUDA));
    oc->step();
    od->step();
    CHECK(pd.device().is_cuda());
    worst = std::max(worst, rel_diff(pd, pc));
  }
  const tg::StateDict sc = oc->state_dict(), sd = od->state_dict();
  REQUIRE(sc.size() == sd.size());
  for (const auto& entry : sc) {
    INFO(entry.first);
    REQUIRE(sd.count(entry.first) == 1);
    const Tensor& got = sd.at(entry.first);
    if (entry.second.dim() > 0) CHECK(got.device().is_cuda());
    worst = std::max(worst, rel_diff(got, entry.second));
  }
  return worst;
}

template <typename Opt, typename Options> auto maker(Options o) {
  return [o](Tensor p) -> std::unique_ptr<tg::nn::Optimizer> {
    return std::make_unique<Opt>(std::vector<Tensor>{p}, o);
  };
}

}  // namespace

TEST_CASE("cuda nn: SGD, Adam and AdamW step device parameters as on the CPU") {
  if (no_device()) return;
  using tg::nn::AdamOptions;
  using tg::nn::SGDOptions;
  const std::vector<std::pair<std::string, SGDOptions>> sgd = {
      {"plain", {.lr = 0.1}},
      {"weight decay", {.lr = 0.1, .weight_decay = 0.05}},
      {"momentum", {.lr = 0.1, .momentum = 0.9, .dampening = 0.25, .weight_decay = 0.01}},
      {"nesterov", {.lr = 0.05, .momentum = 0.8, .nesterov = true}},
  };
  const std::vector<std::pair<std::string, AdamOptions>> adam = {
      {"default", {.lr = 1e-2}},
      {"l2", {.lr = 1e-2, .weight_decay = 0.1}},
      {"amsgrad", {.lr = 1e-2, .amsgrad = true}},
  };
  for (tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    // Same formulas in the same type; a GPU may contract to fused multiply-adds.
    const double tol = dtype == tg::kFloat32 ? 1e-5 : 1e-12;
    for (const auto& entry : sgd) {
      INFO("SGD ", entry.first, " ", std::string(tg::dtype_name(dtype)));
      CHECK(optimizer_gap(dtype, maker<tg::nn::SGD>(entry.second)) < tol);
    }
    for (const auto& entry : adam) {
      INFO("Adam ", entry.first, " ", std::string(tg::dtype_name(dtype)));
      CHECK(optimizer_gap(dtype, maker<tg::nn::Adam>(entry.second)) < tol);
      INFO("AdamW");
      CHECK(optimizer_gap(dtype, maker<tg::nn::AdamW>(entry.second)) < tol);
    }
  }
}

TEST_CASE("cuda nn: an optimizer's buffers follow a module moved after it was made") {
  if (no_device()) return;
  tg::manual_seed(5);
  auto a = std::make_shared<tg::nn::Linear>(4, 3), b = std::make_shared<tg::nn::Linear>(4, 3);
  b->load_state_dict(a->state_dict());
  tg::nn::Adam oa(a->parameters(), {.lr = 0.05}), ob(b->parameters(), {.lr = 0.05});
  const Tensor x = tg::randn({6, 4});
  auto step = [&](tg::nn::Module& m, tg::nn::Optimizer& opt, tg::Device device) {
    opt.zero_grad();
    (m(x.to(device)) * m(x.to(device))).sum().backward();
    opt.step();
  };
  step(*a, oa, tg::kCPU);
  step(*b, ob, tg::kCPU);
  b->to(tg::kCUDA);  // its Adam moments are still on the CPU
  for (int s = 0; s < 3; ++s) {
    step(*a, oa, tg::kCPU);
    step(*b, ob, tg::kCUDA);
  }
  CHECK(b->weight.device().is_cuda());
  CHECK(ob.state_dict().at("param.0.exp_avg").device().is_cuda());
  CHECK(rel_diff(b->weight, a->weight) < 1e-5);
  CHECK(rel_diff(b->bias, a->bias) < 1e-5);
  // Gradient clipping works on device gradients as on the CPU's.
  for (auto* m : {a.get(), b.get()}) {
    m->zero_grad();
    (*m)(x.to(m->weight.device())).sum().backward();
  }
  const double na = tg::nn::utils::clip_grad_norm_(a->parameters(), 0.5).item<double>();
  const double nb = tg::nn::utils::clip_grad_norm_(b->parameters(), 0.5).item<double>();
  CHECK(std::abs(na - nb) <= 1e-5 * na);
  CHECK(b->weight.grad().device().is_cuda());
  CHECK(rel_diff(b->weight.grad(), a->weight.grad()) < 1e-5);
  // A CPU state loaded into a device optimizer lands on the device too.
  ob.load_state_dict(oa.state_dict());
  CHECK(ob.state_dict().at("param.0.exp_avg_sq").device().is_cuda());
}

TEST_CASE("cuda nn: save writes device tensors' values, load can place them on the device") {
  if (no_device()) return;
  tg::manual_seed(8);
  auto cpu = std::make_shared<tg::nn::Linear>(5, 2);
  auto dev = std::make_shared<tg::nn::Linear>(5, 2);
  dev->load_state_dict(cpu->state_dict());
  dev->to(tg::kCUDA);
  // A strided device tensor too: save writes the values row-major, like the CPU's.
  const Tensor t = tg::randn({3, 4});
  const tg::StateDict on_cpu = {{"lin.weight", cpu->weight}, {"lin.bias", cpu->bias}, {"t", t.t()}};
  const tg::StateDict on_dev = {{"lin.weight", dev->weight},
                                {"lin.bias", dev->bias},
                                {"t", t.to(tg::kCUDA).t()}};
  CHECK(tg::save_to_bytes(on_dev, {{"k", "v"}}) == tg::save_to_bytes(on_cpu, {{"k", "v"}}));

  const std::string path = "cuda_nn_save_test.safetensors";
  tg::save(dev->state_dict(), path);
  const tg::StateDict host = tg::load(path), device = tg::load(path, tg::kCUDA);
  REQUIRE(device.size() == 2);
  for (const auto& entry : device) {
    INFO(entry.first);
    CHECK(entry.second.device().is_cuda());
    CHECK(host.at(entry.first).device().is_cpu());
    CHECK(same_bits(entry.second, host.at(entry.first)));
    CHECK(same_bits(entry.second, cpu->state_dict().at(entry.first)));
  }
  // A module on the device loads a CPU state into its device parameters.
  auto other = std::make_shared<tg::nn::Linear>(5, 2);
  other->to(tg::kCUDA);
  const Tensor before = other->weight;
  other->load_state_dict(host);
  CHECK(other->weight.is_same(before));
  CHECK(other->weight.device().is_cuda());
  CHECK(same_bits(other->weight, cpu->weight));
  std::remove(path.c_str());
}

TEST_CASE("cuda nn: a short digits training run on the device follows the CPU's") {
  if (no_device()) return;
  const Tensor table =
      tg::data::read_csv(std::string(TG_DATA_DIR) + "/digits.csv", {.header = false});
  const Tensor x = table.narrow(1, 0, 64) / 16.0, y = table.select(1, 64).to(tg::kInt64);
  auto run = [&](tg::Device device) {
    tg::manual_seed(0);
    auto model = tg::nn::MLP({64, 32, 10});
    model->to(device);
    tg::nn::AdamW opt(model->parameters(), {.lr = 1e-2});
    std::vector<double> losses;
    for (int64_t s = 0; s < 25; ++s) {
      const int64_t start = (s * 64) % (x.size(0) - 64);
      const Tensor xb = x.narrow(0, start, 64).to(device), yb = y.narrow(0, start, 64).to(device);
      const Tensor loss = tg::cross_entropy((*model)(xb), yb);
      opt.zero_grad();
      loss.backward();
      opt.step();
      losses.push_back(loss.item<double>());
    }
    return std::make_pair(losses, model->state_dict());
  };
  const auto cpu_run = run(tg::kCPU), dev_run = run(tg::kCUDA);
  const std::vector<double>&cpu_losses = cpu_run.first, &dev_losses = dev_run.first;
  const tg::StateDict &cpu_state = cpu_run.second, &dev_state = dev_run.second;
  CHECK(cpu_losses.back() < 0.5 * cpu_losses.front());  // it learned something
  for (size_t s = 0; s < cpu_losses.size(); ++s) {
    INFO("step ", s);
    CHECK(std::abs(dev_losses[s] - cpu_losses[s]) <= 1e-4 * (1 + cpu_losses[s]));
  }
  for (const auto& entry : cpu_state) {
    INFO(entry.first);
    CHECK(dev_state.at(entry.first).device().is_cuda());
    CHECK(rel_diff(dev_state.at(entry.first), entry.second) < 1e-4);
  }
}
