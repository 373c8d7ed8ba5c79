// gradcheck / gradgradcheck: pass on correct gradients, fail with a useful report on wrong ones.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

namespace {

using tg::Tensor;
using Inputs = std::vector<Tensor>;

Tensor leaf(const std::vector<double>& values, tg::IntArrayRef shape) {
  Tensor t = tg::tensor(values, shape);
  t.requires_grad_(true);
  return t;
}
Tensor leaf(const std::vector<double>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return leaf(values, {n});
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// y = 2x forward, but backward claims dy/dx = 3: a deliberately wrong gradient.
struct WrongDoubleNode final : tg::autograd::Node {
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override { return {grads[0] * 3.0}; }
  const char* name() const override { return "WrongDouble"; }
};

Tensor wrong_double(const Tensor& x) {
  Tensor out;
  {
    tg::NoGradGuard no_grad;
    out = x * 2.0;
  }
  if (tg::autograd::any_requires_grad({&x})) {
    auto node = std::make_shared<WrongDoubleNode>();
    tg::autograd::collect_inputs(*node, {&x});
    tg::autograd::set_history(node, {&out});
  }
  return out;
}

// y = x^2 with a first derivative that is right (2 x grad) but uses x detached, so its own
// derivative is lost: gradcheck passes, gradgradcheck must not.
struct DetachedSquareNode final : tg::autograd::Node {
  explicit DetachedSquareNode(Tensor x) : x_(x.detach()) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override { return {grads[0] * x_ * 2.0}; }
  const char* name() const override { return "DetachedSquare"; }
  Tensor x_;
};

Tensor detached_square(const Tensor& x) {
  Tensor out;
  {
    tg::NoGradGuard no_grad;
    out = x * x;
  }
  if (tg::autograd::any_requires_grad({&x})) {
    auto node = std::make_shared<DetachedSquareNode>(x);
    tg::autograd::collect_inputs(*node, {&x});
    tg::autograd::set_history(node, {&out});
  }
  return out;
}

}  // namespace

TEST_CASE("gradcheck passes on x * x") {
  Tensor x = leaf({0.5, -1.5, 2.0, 0.25}, {2, 2});
  auto r = tg::autograd::gradcheck([](const Inputs& in) { return in[0] * in[0]; }, {x});
  INFO(r.report);
  CHECK(r.ok);
  CHECK(r.max_error < 1e-6);
  CHECK(contains(r.report, "gradcheck passed"));
  CHECK(x.grad().defined() == false);  // gradcheck never touches .grad()
}

TEST_CASE("gradcheck passes on composites of mul, add and exp with two inputs and outputs") {
  Tensor x = leaf({0.3, -0.7, 1.1});
  Tensor y = leaf({-0.2, 0.4, 0.9});
  auto fn = [](const Inputs& in) {
    return Inputs{tg::exp(in[0] * in[1]) + in[0], in[0] * in[0] * in[1] + tg::exp(in[1])};
  };
  auto r = tg::autograd::gradcheck(fn, {x, y});
  INFO(r.report);
  CHECK(r.ok);
  auto rr = tg::autograd::gradgradcheck(fn, {x, y});
  INFO(rr.report);
  CHECK(rr.ok);
}

TEST_CASE("gradcheck differentiates only floating inputs that require grad") {
  Tensor x = leaf({1.0, 2.0});
  Tensor c = tg::tensor(std::vector<double>{3.0, 4.0});  // a constant: not differentiated
  auto r = tg::autograd::gradcheck([](const Inputs& in) { return in[0] * in[1]; }, {x, c});
  INFO(r.report);
  CHECK(r.ok);
  CHECK(contains(r.report, "1 input(s) x 1 output(s)"));
  auto none = tg::autograd::gradcheck([](const Inputs& in) { return in[0] * 2.0; }, {c});
  CHECK(none.ok);
  CHECK(contains(none.report, "nothing to check"));
}

TEST_CASE("gradcheck skips outputs that are not floating") {
  Tensor x = leaf({0.5, -1.0, 2.0});
  auto r = tg::autograd::gradcheck(
      [](const Inputs& in) {
        return Inputs{in[0] * in[0], tg::gt(in[0], tg::zeros_like(in[0]))};
      },
      {x});
  INFO(r.report);
  CHECK(r.ok);
  CHECK(contains(r.report, "x 1 output(s)"));
}

TEST_CASE("gradcheck fails on a wrong gradient and names input, output, element and values") {
  Tensor x = leaf({0.5, -1.0, 2.0, 3.0}, {2, 2});
  auto r = tg::autograd::gradcheck([](const Inputs& in) { return wrong_double(in[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK_FALSE(static_cast<bool>(r));
  CHECK(r.max_error == doctest::Approx(1.0));
  INFO(r.report);
  CHECK(contains(r.report,
                 "Jacobian mismatch for input 0 (float64[2, 2]) and output 0 (float64[2, 2])"));
  CHECK(contains(r.report, "4 of 16 entries differ, max error 1"));
  CHECK(contains(r.report, "d output 0[0, 0] / d input 0[0, 0]: numerical 2, analytical 3"));
  CHECK(contains(r.report, "d output 0[1, 1] / d input 0[1, 1]: numerical 2, analytical 3"));
  CHECK_FALSE(
      contains(r.report, "d output 0[0, 1] / d input 0[0, 0]"));  // off-diagonal entries agree
}

TEST_CASE("gradcheck reports only max_reported entries per pair") {
  Tensor x = leaf(std::vector<double>(8, 1.0));
  tg::autograd::GradcheckOptions options;
  options.max_reported = 2;
  auto r =
      tg::autograd::gradcheck([](const Inputs& in) { return wrong_double(in[0]); }, {x}, options);
  CHECK_FALSE(r.ok);
  INFO(r.report);
  CHECK(contains(r.report, "8 of 64 entries differ"));
  CHECK(contains(r.report, "... and 6 more"));
}

TEST_CASE("gradcheck fails on an input that influences the output but gets no gradient") {
  Tensor x = leaf({0.5, -1.0});
  Tensor y = leaf({2.0, 3.0});
  // y enters only through detach(): backward gives it no gradient, yet it moves the output.
  auto fn = [](const Inputs& in) { return in[0] * in[1].detach(); };
  auto r = tg::autograd::gradcheck(fn, {x, y});
  CHECK_FALSE(r.ok);
  INFO(r.report);
  CHECK(
      contains(r.report, "undefined gradient for input 1 (float64[2]) and output 0 (float64[2])"));
  CHECK(contains(r.report, "d output 0[0] / d input 1[0] = 0.5"));

  tg::autograd::GradcheckOptions options;
  options.check_undefined = false;  // undefined compared as zeros: still a mismatch
  auto r2 = tg::autograd::gradcheck(fn, {x, y}, options);
  CHECK_FALSE(r2.ok);
  CHECK(contains(r2.report, "Jacobian mismatch for input 1"));
}

TEST_CASE("gradcheck passes when an input truly has no influence") {
  Tensor x = leaf({0.5, -1.0});
  Tensor unused = leaf({7.0});
  auto r = tg::autograd::gradcheck([](const Inputs& in) { return in[0] * in[0]; }, {x, unused});
  INFO(r.report);
  CHECK(r.ok);
}

TEST_CASE("gradcheck reports a function that throws") {
  Tensor x = leaf({1.0, 2.0});
  auto r = tg::autograd::gradcheck(
      [](const Inputs& in) -> Tensor {
        tg::fail<tg::ValueError>("toy", "always fails, got ", in.size());
      },
      {x});
  CHECK_FALSE(r.ok);
  CHECK(contains(r.report, "calling fn threw: [toy] always fails, got 1"));
}

TEST_CASE("d2/dx2 of x^3 is 6x through autograd::grad with create_graph") {
  Tensor x = leaf({1.0, 2.0, -3.0});
  Tensor y = x * x * x;
  Tensor ones = tg::ones({3}, tg::kFloat64);
  Tensor dy = tg::autograd::grad({y}, {x}, {ones}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  CHECK(dy.to_vector<double>() == std::vector<double>{3.0, 12.0, 27.0});
  CHECK(dy.requires_grad());
  Tensor d2y = tg::autograd::grad({dy}, {x}, {ones})[0];
  CHECK(d2y.to_vector<double>() == std::vector<double>{6.0, 12.0, -18.0});
}

TEST_CASE("gradgradcheck passes on x^3 and catches a backward that is not differentiable") {
  Tensor x = leaf({0.5, -1.25, 2.0});
  auto cube =
      tg::autograd::gradgradcheck([](const Inputs& in) { return in[0] * in[0] * in[0]; }, {x});
  INFO(cube.report);
  CHECK(cube.ok);

  auto square = [](const Inputs& in) { return detached_square(in[0]); };
  auto first = tg::autograd::gradcheck(square, {x});
  INFO(first.report);
  CHECK(first.ok);  // the first derivative is right
  auto second = tg::autograd::gradgradcheck(square, {x});
  CHECK_FALSE(second.ok);
  INFO(second.report);
  CHECK(contains(second.report,
                 "gradgradcheck (inputs 0..0 are fn's inputs, inputs 1..1 the grad_outputs"));
  CHECK(contains(second.report, "undefined gradient for input 0 (float64[3]) and output 0"));
}

TEST_CASE("gradgradcheck is reproducible and does not touch its inputs") {
  Tensor x = leaf({0.1, 0.2});
  Tensor y = leaf({-0.3, 0.4});
  auto fn = [](const Inputs& in) { return tg::exp(in[0]) * in[1]; };
  auto a = tg::autograd::gradgradcheck(fn, {x, y});
  auto b = tg::autograd::gradgradcheck(fn, {x, y});
  CHECK(a.ok);
  CHECK(a.report == b.report);
  CHECK(x.to_vector<double>() == std::vector<double>{0.1, 0.2});
  CHECK_FALSE(x.grad().defined());
}
