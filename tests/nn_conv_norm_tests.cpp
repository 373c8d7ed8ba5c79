// The conv, pooling and normalisation modules: parameter names and shapes, PyTorch's initial
// values, printing, running statistics, train / eval, state_dict, and a small CNN end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using namespace tg;

namespace {

std::vector<std::string> names(const nn::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [name, _] : named) out.push_back(name);
  return out;
}

double max_abs(const Tensor& t) { return amax(abs(t)).item<double>(); }

}  // namespace

TEST_CASE("Conv2d / Conv1d: parameters, PyTorch's init bounds, printing, forward") {
  manual_seed(0);
  nn::Conv2d conv(4, 6, {3, 2}, {.stride = {2, 1}, .padding = 1, .groups = 2});
  CHECK(names(conv.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(conv.weight.shape() == Shape{6, 2, 3, 2});
  CHECK(conv.bias.shape() == Shape{6});
  // U(-b, b) with b = 1 / sqrt(fan_in), fan_in = 2 * 3 * 2 = 12, for both.
  const double bound = 1 / std::sqrt(12.0);
  CHECK(max_abs(conv.weight) <= bound);
  CHECK(max_abs(conv.bias) <= bound);
  CHECK(max_abs(conv.weight) > 0.7 * bound);  // spread over the range, not all tiny
  CHECK(conv.to_string() ==
        "Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), groups=2)");
  CHECK(conv(randn({2, 4, 7, 5})).shape() == Shape{2, 6, 4, 6});
  CHECK(conv(randn({4, 7, 5})).shape() == Shape{6, 4, 6});

  nn::Conv2d same(3, 5, 4, {.padding = "same", .dilation = 2, .bias = false});
  CHECK(!same.bias.defined());
  CHECK(same.named_parameters().size() == 1);
  CHECK(same(randn({1, 3, 9, 8})).shape() == Shape{1, 5, 9, 8});
  CHECK(same.to_string() ==
        "Conv2d(3, 5, kernel_size=(4, 4), stride=(1, 1), padding=same, dilation=(2, 2), "
        "bias=false)");

  nn::Conv1d conv1(3, 2, 5, {.stride = 2, .padding = "valid", .dtype = kFloat64});
  CHECK(conv1.weight.shape() == Shape{2, 3, 5});
  CHECK(conv1.weight.dtype() == kFloat64);
  CHECK(conv1(randn({2, 3, 11}, kFloat64)).shape() == Shape{2, 2, 4});
  CHECK(conv1.to_string() == "Conv1d(3, 2, kernel_size=(5,), stride=(2,), padding=valid)");

  CHECK(tg_test::error_of<ValueError>([] {
          nn::Conv2d(3, 4, 3, {.groups = 2});
        }).find("[Conv2d] in_channels (3) and out_channels (4) must be divisible by groups (2)") ==
        0);
  CHECK(tg_test::error_of<ValueError>([] {
          nn::Conv2d(3, 4, 3, {.stride = 2, .padding = "same"});
        }).find("not supported for strided convolutions") != std::string::npos);
  CHECK(tg_test::error_of<ValueError>([] {
          nn::Conv1d(3, 4, {3, 3});
        }).find("[Conv1d] kernel_size must have 1 values, got 2") == 0);
  CHECK(tg_test::error_of<ValueError>([&] {
          conv(randn({2, 3, 7, 5}));
        })
            .find("[conv2d] given groups=2, weight of shape [6, 2, 3, 2], expected input "
                  "[2, 3, 7, 5] to have 4 channels, but got 3 channels") == 0);
}

TEST_CASE("pooling modules and Flatten") {
  const Tensor x = randn({2, 3, 6, 6});
  nn::MaxPool2d pool(2);
  CHECK(pool.to_string() ==
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false)");
  CHECK(pool(x).shape() == Shape{2, 3, 3, 3});
  CHECK(pool(x).to_vector<float>() == std::get<0>(max_pool2d(x, {2})).to_vector<float>());
  nn::MaxPool2d pool3(3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(pool3(x).shape() == Shape{2, 3, 4, 4});

  nn::AvgPool2d avg({2, 3}, {.stride = 1, .count_include_pad = false});
  CHECK(avg.to_string() == "AvgPool2d(kernel_size=(2, 3), stride=1, padding=0)");
  CHECK(avg(x).shape() == Shape{2, 3, 5, 4});
  nn::AdaptiveAvgPool2d gap(1);
  CHECK(gap.to_string() == "AdaptiveAvgPool2d(output_size=1)");
  CHECK(gap(x).shape() == Shape{2, 3, 1, 1});
  CHECK(max_abs(gap(x).flatten() - mean(x, {2, 3}).flatten()) < 1e-6);

  nn::Flatten flat;
  CHECK(flat.to_string() == "Flatten(start_dim=1, end_dim=-1)");
  CHECK(flat(x).shape() == Shape{2, 108});
  CHECK(nn::Flatten(0, 1)(x).shape() == Shape{6, 6, 6});
}

TEST_CASE("BatchNorm2d: buffers in state_dict, momentum, train and eval") {
  nn::BatchNorm2d bn(2);
  CHECK(bn.to_string() ==
        "BatchNorm2d(2, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  CHECK(names(bn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(names(bn.named_buffers()) ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  const StateDict state = bn.state_dict();
  CHECK(state.size() == 5);
  CHECK(state.at("num_batches_tracked").dtype() == kInt64);
  CHECK(state.at("num_batches_tracked").dim() == 0);
  CHECK(state.at("running_var").to_vector<float>() == std::vector<float>{1, 1});

  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, unbiased variance 5/3); channel 1 holds 0 everywhere.
  Tensor x = zeros({2, 2, 1, 2});
  x.select(1, 0).copy_(tensor(std::vector<float>{1, 2, 3, 4}, {2, 1, 2}));
  Tensor y = bn(x);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
  const std::vector<float> rm = bn.running_mean.to_vector<float>();
  const std::vector<float> rv = bn.running_var.to_vector<float>();
  CHECK(rm[0] == doctest::Approx(0.25));
  CHECK(rm[1] == doctest::Approx(0.0));
  CHECK(rv[0] == doctest::Approx(0.9 + 0.1 * 5.0 / 3.0));
  CHECK(rv[1] == doctest::Approx(0.9));
  // Training output: (x - 2.5) / sqrt(1.25 + eps) in channel 0.
  CHECK(y.select(1, 0).flatten().to_vector<float>()[0] ==
        doctest::Approx(-1.5 / std::sqrt(1.25 + 1e-5)));

  bn.eval();
  y = bn(x);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);  // eval leaves the buffers alone
  CHECK(y.select(1, 0).flatten().to_vector<float>()[3] ==
        doctest::Approx((4 - 0.25) / std::sqrt(rv[0] + 1e-5)));

  // momentum none: the running mean is the plain average of the batch means.
  nn::BatchNorm1d cumulative(1, {.momentum = std::nullopt});
  cumulative(full({4, 1}, 1.0));
  cumulative(full({4, 1}, 3.0));
  cumulative(full({4, 1}, 8.0));
  CHECK(cumulative.running_mean.item<float>() == doctest::Approx(4.0));
  CHECK(cumulative.num_batches_tracked.item<int64_t>() == 3);

  // Without running stats, eval still normalises with the batch's statistics.
  nn::BatchNorm1d untracked(1, {.affine = false, .track_running_stats = false});
  CHECK(untracked.named_buffers().empty());
  CHECK(untracked.named_parameters().empty());
  untracked.eval();
  CHECK(max_abs(untracked(tensor(std::vector<float>{1, 3}, {2, 1}))) ==
        doctest::Approx(1.0).epsilon(1e-4));

  CHECK(tg_test::error_of<ValueError>([&] {
          bn(zeros({2, 2, 3}));
        }).find("[BatchNorm2d] expected 4-D [N, C, H, W] input") == 0);
  CHECK(tg_test::error_of<ValueError>([&] {
          bn(zeros({2, 3, 2, 2}));
        }).find("[BatchNorm2d] expected input with 2 channels") == 0);
  CHECK(tg_test::error_of<ValueError>([&] {
          cumulative(zeros({2, 1, 1, 1}));
        }).find("[BatchNorm1d] expected 2-D [N, C] or 3-D [N, C, L] input") == 0);
}

TEST_CASE("BatchNorm: two training forwards, then one backward through both") {
  nn::BatchNorm1d bn(3);
  Tensor x = randn({4, 3}).requires_grad_();
  Tensor loss = sum(bn(x) * bn(x * 2.0));  // the running stats change between the two calls
  loss.backward();
  CHECK(x.grad().defined());
  CHECK(bn.num_batches_tracked.item<int64_t>() == 2);
}

TEST_CASE("GroupNorm: parameters and normalisation per group") {
  nn::GroupNorm gn(2, 4);
  CHECK(gn.to_string() == "GroupNorm(2, 4, eps=1e-05, affine=true)");
  CHECK(names(gn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  Tensor x = randn({3, 4, 5});
  Tensor y = gn(x).reshape({3, 2, 10});
  CHECK(max_abs(mean(y, {2})) < 1e-5);
  CHECK(max_abs(mean(y * y, {2}) - 1.0) < 1e-3);
  CHECK(tg_test::error_of<ValueError>([] {
          nn::GroupNorm(3, 4);
        }).find("[GroupNorm] num_channels (4) must be divisible by num_groups (3)") == 0);
}

TEST_CASE("a small CNN: forward, backward, a step that lowers the loss, state_dict round trip") {
  manual_seed(0);
  auto make = [] {
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Conv2d>(1, 4, 3, nn::ConvOptions{.padding = 1}),
        std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
        std::make_shared<nn::Linear>(16, 3)});
  };
  auto net = make();
  const Tensor x = randn({8, 1, 4, 4});
  const Tensor labels = tensor(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1});
  nn::SGD opt(net->parameters(), {.lr = 0.1});
  const double before = cross_entropy((*net)(x), labels).item<double>();
  for (int step = 0; step < 5; ++step) {
    Tensor loss = cross_entropy((*net)(x), labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  CHECK(cross_entropy((*net)(x), labels).item<double>() < before);
  const StateDict state = net->state_dict();
  CHECK(state.count("1.running_mean") == 1);
  CHECK(state.at("1.num_batches_tracked").item<int64_t>() == 7);

  const auto path = std::filesystem::temp_directory_path() / "tg_small_cnn.safetensors";
  save(state, path.string());
  auto copy = make();
  copy->load_state_dict(load(path.string()));
  std::filesystem::remove(path);
  net->eval();
  copy->eval();
  CHECK((*net)(x).to_vector<float>() == (*copy)(x).to_vector<float>());
}
