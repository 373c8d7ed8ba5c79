// The README's first program, as a test: what the README shows must compile and be right.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.h>

#include <cmath>
#include <cstdio>

TEST_CASE("README: a first program") {
  tg::Tensor x = tg::tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();  // float64
  tg::Tensor w = tg::tensor({0.5, -1.0}).requires_grad_();
  tg::Tensor loss = tg::sum(tg::tanh(x * w + 1.0));  // w broadcasts over rows
  loss.backward();
  // d/dx = w * (1 - tanh(x*w + 1)^2); d/dw sums x * (1 - tanh^2) over rows.
  auto xs = std::vector<double>{1, 2, 3, 4}, ws = std::vector<double>{0.5, -1.0};
  std::vector<double> gx(4), gw(2, 0.0);
  for (int i = 0; i < 4; ++i) {
    double t = std::tanh(xs[i] * ws[i % 2] + 1.0), d = 1 - t * t;
    gx[i] = ws[i % 2] * d;
    gw[i % 2] += xs[i] * d;
  }
  auto got_x = x.grad().to_vector<double>(), got_w = w.grad().to_vector<double>();
  for (int i = 0; i < 4; ++i) CHECK(got_x[i] == doctest::Approx(gx[i]).epsilon(1e-12));
  for (int i = 0; i < 2; ++i) CHECK(got_w[i] == doctest::Approx(gw[i]).epsilon(1e-12));

  tg::Tensor z = tg::tensor({1.0, 2.0}).requires_grad_();
  auto dz = tg::autograd::grad({tg::sum(z * z * z)}, {z}, {}, true, /*create_graph=*/true);
  auto d2z = tg::autograd::grad({tg::sum(dz[0])}, {z});
  CHECK(d2z[0].to_vector<double>() == std::vector<double>{6, 12});

  auto r = tg::autograd::gradcheck(
      [](const std::vector<tg::Tensor>& in) { return tg::exp(in[0]) * in[0]; }, {z});
  CHECK_MESSAGE(r.ok, r.report);
}

TEST_CASE("README: scalars through operators and pow") {
  tg::Tensor x = tg::tensor({1.0, 2.0});
  CHECK((x + 2).to_vector<double>() == std::vector<double>{3, 4});
  CHECK((2.0 - x).to_vector<double>() == std::vector<double>{1, 0});
  CHECK(tg::pow(x, 2.0).to_vector<double>() == std::vector<double>{1, 4});
  CHECK(tg::add(x, tg::scalar_to_tensor(2)).to_vector<double>() == std::vector<double>{3, 4});
}

TEST_CASE("README: small models (train, save, load, picture)") {
  // Two well-separated blobs in 64 dims, labels 0/1: the README's loop must learn them.
  tg::manual_seed(0);
  const tg::Tensor y = tg::randint(0, 2, {128});
  const tg::Tensor x = tg::randn({128, 64}) + y.to(tg::kFloat32).unsqueeze(1) * 2.0;
  auto model = tg::nn::MLP({64, 128, 10});
  tg::nn::AdamW opt(model->parameters(), {.lr = 2e-3});
  tg::data::DataLoader loader(tg::data::TensorDataset({x, y}), 32, {.shuffle = true, .seed = 0});
  tg::Tensor loss;
  for (int epoch = 0; epoch < 5; ++epoch)
    for (const auto& batch : loader) {
      loss = tg::cross_entropy((*model)(batch[0]), batch[1]);
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
  const double accuracy =
      tg::mean((tg::argmax((*model)(x), 1) == y).to(tg::kFloat64)).item<double>();
  CHECK(accuracy > 0.95);

  const std::string path = "readme_small_model.safetensors";
  tg::save(model->state_dict(), path);
  auto other = tg::nn::MLP({64, 128, 10});
  other->load_state_dict(tg::load(path));
  CHECK((*other)(x).to_vector<float>() == (*model)(x).to_vector<float>());
  std::remove(path.c_str());
  CHECK(tg::autograd::to_dot(loss).find("CrossEntropy") != std::string::npos);
}
