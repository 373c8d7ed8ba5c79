// softplus and the fused tanh/sigmoid backward kernels: exact values on small cases.
#include <doctest/doctest.h>

#include <cmath>

#include <tapegrad/tapegrad.h>

using namespace tg;

TEST_CASE("softplus is log(1 + e^x) without overflow") {
  auto v = softplus(tensor({-40.0, 0.0, 2.0, 40.0, 1000.0})).to_vector<double>();
  CHECK(v[0] == doctest::Approx(std::exp(-40.0)).epsilon(1e-12));
  CHECK(v[1] == doctest::Approx(std::log(2.0)));
  CHECK(v[2] == doctest::Approx(std::log1p(std::exp(2.0))));
  CHECK(v[3] == doctest::Approx(40.0));
  CHECK(v[4] == 1000.0);  // the naive formula gives inf here
  CHECK(softplus(tensor({1, 2})).dtype() == kFloat32);
  Tensor x = tensor({0.0, 3.0}).requires_grad_();
  sum(softplus(x)).backward();
  CHECK(x.grad().to_vector<double>()[0] == doctest::Approx(0.5));  // sigmoid(0)
}

TEST_CASE("tanh and sigmoid backward use the fused kernels") {
  Tensor y = tensor({0.5, -0.25});
  CHECK(tanh_backward(tensor({2.0, 1.0}), y).to_vector<double>() ==
        std::vector<double>{1.5, 0.9375});
  CHECK(sigmoid_backward(tensor({2.0, 1.0}), y).to_vector<double>() ==
        std::vector<double>{0.5, -0.3125});
  Tensor x = tensor({0.3}).requires_grad_();
  Tensor t = tanh(x);
  CHECK(std::string(t.grad_fn()->name()) == "TanhBackward");
  auto g = autograd::grad({t}, {x}, {}, true, true);
  double th = std::tanh(0.3);
  CHECK(g[0].item<double>() == doctest::Approx(1 - th * th));
  auto gg = autograd::grad({g[0]}, {x});  // d/dx (1 - tanh^2) = -2 tanh (1 - tanh^2)
  CHECK(gg[0].item<double>() == doctest::Approx(-2 * th * (1 - th * th)));
}
