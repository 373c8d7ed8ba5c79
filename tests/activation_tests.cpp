// softplus and the fused tanh/sigmoid/leaky_relu backward kernels: exact values on small cases.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

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

TEST_CASE("leaky_relu backward: the fused kernel gives the composed where's bits") {
  // grad where x > 0, else grad * slope: NaN x takes the slope side, -0 and inf come through,
  // flat and broadcast, float32 and float64; then the node leaky_relu records.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor x = tensor({-2.0, -0.0, 0.0, 0.5, nan, inf, -inf, 3.0});
  const Tensor g = tensor({1.5, -0.0, 2.0, inf, 4.0, -1.0, nan, -0.0});
  for (const DType dtype : {kFloat32, kFloat64}) {
    CAPTURE(dtype);
    const Tensor xd = x.to_dtype(dtype), gd = g.to_dtype(dtype);
    for (const double slope : {0.01, -1.5, 0.0}) {
      CAPTURE(slope);
      const Tensor composed = where(gt(xd, zeros({1}, dtype)), gd, gd * slope);
      CHECK(tg_test::differs(leaky_relu_backward(gd, xd, slope), composed, 0) == "");
      const Tensor rows = leaky_relu_backward(gd.reshape({8, 1}), xd.reshape({1, 8}), slope);
      const Tensor rows_composed = where(gt(xd.reshape({1, 8}), zeros({1}, dtype)),
                                         gd.reshape({8, 1}), gd.reshape({8, 1}) * slope);
      CHECK(tg_test::differs(rows, rows_composed, 0) == "");
    }
  }
  Tensor a = tensor({-1.0, 2.0}).requires_grad_();
  Tensor y = leaky_relu(a, 0.2);
  CHECK(std::string(y.grad_fn()->name()) == "LeakyReluBackward");
  y.backward(tensor({3.0, 5.0}));
  CHECK(a.grad().to_vector<double>() == std::vector<double>{0.6000000000000001, 5.0});
}
