// Elementwise ops: exact values on small hand-made inputs, broadcasting, type promotion,
// non-contiguous inputs, in-place forms, errors, and a few hand-checked gradients.
#include <doctest/doctest.h>
#include <tapegrad/ops/overloads.h>
#include <tapegrad/tapegrad.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_helpers.h"

using tg::Shape;
using tg::Tensor;
using V = std::vector<double>;

namespace {

using tg_test::error_of;

// Checks every value of t against expected, to a relative 1e-6 (float32 results).
void check_close(const Tensor& t, const V& expected) {
  const V got = t.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

// 0, 1, ..., n-1 as float64 in the given shape.
Tensor iota(int64_t n, tg::IntArrayRef shape, tg::DType dtype = tg::kFloat64) {
  return tg::arange(n, tg::kFloat64).reshape(shape).to(dtype);
}

}  // namespace

// ---- arithmetic
// ----------------------------------------------------------------------------------

TEST_CASE("elementwise: add, sub, mul, div exact values") {
  Tensor a = tg::tensor(V{1, 2, 3, 4}, {2, 2});
  Tensor b = tg::tensor(V{10, 20, 30, 40}, {2, 2});
  CHECK(tg::add(a, b).to_vector<double>() == V{11, 22, 33, 44});
  CHECK(tg::add(a, b, 2).to_vector<double>() == V{21, 42, 63, 84});
  CHECK(tg::add(a, b, 0.5).to_vector<double>() == V{6, 12, 18, 24});
  CHECK(tg::sub(b, a).to_vector<double>() == V{9, 18, 27, 36});
  CHECK(tg::sub(b, a, 3).to_vector<double>() == V{7, 14, 21, 28});
  CHECK((a * b).to_vector<double>() == V{10, 40, 90, 160});
  CHECK((b / a).to_vector<double>() == V{10, 10, 10, 10});
  CHECK((a - b).shape() == Shape{2, 2});
  CHECK((-a).to_vector<double>() == V{-1, -2, -3, -4});
  CHECK(a.add(b).dtype() == tg::kFloat64);
  CHECK(a.mul(b).to_vector<double>() == V{10, 40, 90, 160});
}

TEST_CASE("elementwise: integer arithmetic stays integral, division is true division") {
  Tensor a = tg::tensor(std::vector<int64_t>{7, -7, 6, 1});
  Tensor b = tg::tensor(std::vector<int64_t>{2, 2, 3, 4});
  CHECK(tg::add(a, b).dtype() == tg::kInt64);
  CHECK(tg::add(a, b, -2).to_vector<int64_t>() == std::vector<int64_t>{3, -11, 0, -7});
  CHECK(tg::mul(a, b).to_vector<int64_t>() == std::vector<int64_t>{14, -14, 18, 4});
  Tensor q = tg::div(a, b);
  CHECK(q.dtype() == tg::kFloat32);
  CHECK(q.to_vector<double>() == V{3.5, -3.5, 2, 0.25});
  Tensor i32 = tg::tensor(std::vector<int32_t>{5, -3});
  CHECK(tg::neg(i32).dtype() == tg::kInt32);
  CHECK(tg::neg(i32).to_vector<int32_t>() == std::vector<int32_t>{-5, 3});
  // Division by zero follows IEEE in the float result.
  Tensor z = tg::div(tg::tensor(std::vector<int64_t>{1, -1, 0}),
                     tg::tensor(std::vector<int64_t>{0, 0, 0}));
  const V zv = z.to_vector<double>();
  CHECK(zv[0] == std::numeric_limits<double>::infinity());
  CHECK(zv[1] == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(zv[2]));
}

TEST_CASE("elementwise: type promotion follows PyTorch") {
  Tensor i32 = tg::tensor(std::vector<int32_t>{1, 2});
  Tensor f64 = tg::tensor(V{0.5, 0.25});
  Tensor f32 = tg::tensor(std::vector<float>{1.5f, 2.5f});
  Tensor i64 = tg::tensor(std::vector<int64_t>{3, 4});
  CHECK(tg::add(i32, f64).dtype() == tg::kFloat64);
  CHECK(tg::add(i32, f64).to_vector<double>() == V{1.5, 2.25});
  CHECK(tg::add(i32, i64).dtype() == tg::kInt64);
  CHECK(tg::mul(f32, f64).dtype() == tg::kFloat64);
  // A number only changes the category: int tensor + 2.5 is float32, float32 * 2.0 stays float32.
  Tensor r = i64 + 2.5;
  CHECK(r.dtype() == tg::kFloat32);
  CHECK(r.to_vector<double>() == V{5.5, 6.5});
  CHECK((f32 * 2.0).dtype() == tg::kFloat32);
  CHECK((i32 + 1).dtype() == tg::kInt32);
  // A 0-d tensor also counts only across categories.
  CHECK(tg::add(i32, tg::scalar_tensor(3, tg::kInt64)).dtype() == tg::kInt32);
  CHECK(tg::add(f32, tg::scalar_tensor(1.0, tg::kFloat64)).dtype() == tg::kFloat32);
  CHECK(tg::add(i32, tg::scalar_tensor(1.5, tg::kFloat64)).dtype() == tg::kFloat64);
}

TEST_CASE("elementwise: bool arithmetic") {
  Tensor t = tg::tensor(std::vector<bool>{true, true, false, false});
  Tensor u = tg::tensor(std::vector<bool>{true, false, true, false});
  Tensor s = tg::add(t, u);  // bool + bool is logical or, as in PyTorch
  CHECK(s.dtype() == tg::kBool);
  CHECK(s.to_vector<bool>() == std::vector<bool>{true, true, true, false});
  CHECK(tg::mul(t, u).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK((t + 1).dtype() == tg::kInt64);
  CHECK((t + 1).to_vector<int64_t>() == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(tg::div(t, tg::tensor(std::vector<bool>{true, true, true, true})).dtype() == tg::kFloat32);
  std::string msg = error_of<tg::TypeError>([&] { tg::sub(t, u); });
  CHECK(msg.find("[sub]") == 0);
  CHECK(msg.find("bool") != std::string::npos);
  CHECK(error_of<tg::TypeError>([&] { tg::neg(t); }).find("[neg]") == 0);
}

TEST_CASE("elementwise: alpha must fit the result dtype") {
  Tensor a = tg::tensor(std::vector<int64_t>{1, 2});
  std::string msg = error_of<tg::TypeError>([&] { tg::add(a, a, 0.5); });
  CHECK(msg.find("[add]") == 0);
  CHECK(msg.find("alpha") != std::string::npos);
  CHECK(error_of<tg::TypeError>([&] { tg::sub(a, a, 1.0); }).find("[sub]") == 0);
  Tensor f = tg::tensor(V{1, 2});
  CHECK(error_of<tg::TypeError>([&] { tg::add(f, f, true); }).find("[add]") == 0);
}

// ---- broadcasting and layout
// -----------------------------------------------------------------------

TEST_CASE("elementwise: broadcasting") {
  Tensor m = iota(6, {2, 3});                    // [[0, 1, 2], [3, 4, 5]]
  Tensor row = tg::tensor(V{10, 20, 30});        // [3]
  Tensor col = tg::tensor(V{100, 200}, {2, 1});  // [2, 1]
  CHECK((m + row).to_vector<double>() == V{10, 21, 32, 13, 24, 35});
  CHECK((m + col).to_vector<double>() == V{100, 101, 102, 203, 204, 205});
  Tensor outer = row.view({1, 3}) * col;  // [1, 3] * [2, 1] -> [2, 3]
  CHECK(outer.shape() == Shape{2, 3});
  CHECK(outer.to_vector<double>() == V{1000, 2000, 3000, 2000, 4000, 6000});
  Tensor r = row - m;  // the broadcast operand on the left
  CHECK(r.to_vector<double>() == V{10, 19, 28, 7, 16, 25});
  // 0-d tensors broadcast everywhere; 0-d with 0-d stays 0-d.
  Tensor zero_d = tg::scalar_tensor(2.0, tg::kFloat64);
  CHECK((m * zero_d).to_vector<double>() == V{0, 2, 4, 6, 8, 10});
  CHECK((zero_d * zero_d).shape() == Shape{});
  CHECK((zero_d * zero_d).item<double>() == 4);
  // A 3-d case whose broadcast dims merge ([2, 3, 4] + [4]) and one that does not ([2, 3, 4] + [3,
  // 1]).
  Tensor c = iota(24, {2, 3, 4});
  V e = (c + tg::tensor(V{0, 100, 200, 300})).to_vector<double>();
  CHECK(e[5] == 105);
  CHECK(e[23] == 323);
  V f = (c + tg::tensor(V{0, 10, 20}, {3, 1})).to_vector<double>();
  CHECK(f[4] == 14);
  CHECK(f[21] == 41);
  // Empty tensors broadcast to empty results.
  CHECK((tg::zeros({0, 3}) + tg::ones({3})).shape() == Shape{0, 3});
}

TEST_CASE("elementwise: errors name the op and show the shapes") {
  Tensor a = tg::zeros({2, 3});
  Tensor b = tg::zeros({4});
  std::string msg = error_of<tg::ValueError>([&] { tg::add(a, b); });
  CHECK(msg.find("[add]") == 0);
  CHECK(msg.find("[2, 3]") != std::string::npos);
  CHECK(msg.find("[4]") != std::string::npos);
  CHECK(msg.find("cannot broadcast") != std::string::npos);
  CHECK(error_of<tg::ValueError>([&] { tg::mul(a, b); }).find("[mul]") == 0);
  CHECK(error_of<tg::ValueError>([&] { tg::lt(a, b); }).find("[lt]") == 0);
  CHECK(error_of<tg::ValueError>([&] { tg::pow(a, b); }).find("[pow]") == 0);
}

TEST_CASE("elementwise: non-contiguous inputs") {
  Tensor m = iota(6, {2, 3});
  Tensor t = m.transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  CHECK(!t.is_contiguous());
  CHECK((t + 1.0).to_vector<double>() == V{1, 4, 2, 5, 3, 6});
  CHECK((t * t).to_vector<double>() == V{0, 9, 1, 16, 4, 25});
  Tensor s = iota(6, {3, 2});  // [[0, 1], [2, 3], [4, 5]]
  CHECK((t - s).to_vector<double>() == V{0, 2, -1, 1, -2, 0});
  CHECK((s - t).to_vector<double>() == V{0, -2, 1, -1, 2, 0});
  CHECK((t + tg::tensor(V{10, 20})).to_vector<double>() == V{10, 23, 11, 24, 12, 25});
  CHECK(tg::neg(t).to_vector<double>() == V{0, -3, -1, -4, -2, -5});
  CHECK(tg::gt(t, s).to_vector<bool>() ==
        std::vector<bool>{false, true, false, true, false, false});
  // A transposed int tensor promoted to float on the way.
  CHECK(tg::add(t.to(tg::kInt32), s.to(tg::kFloat32)).dtype() == tg::kFloat32);
  CHECK(tg::add(t.to(tg::kInt32), s.to(tg::kFloat32)).to_vector<double>() == V{0, 4, 3, 7, 6, 10});
  // A strided slice (every other column).
  Tensor cols = iota(8, {2, 4}).slice(1, 0, 4, 2);  // [[0, 2], [4, 6]]
  CHECK(tg::exp(cols).to_vector<double>()[3] == doctest::Approx(std::exp(6.0)));
}

TEST_CASE("elementwise: large tensors take the parallel paths") {
  const int64_t n = 3 * tg::kElementwiseGrain + 7;
  Tensor a = tg::arange(n, tg::kFloat32);
  Tensor b = tg::full({n}, 2.0, tg::kFloat32);
  V sum = (a + b).to_vector<double>();
  CHECK(sum[0] == 2);
  CHECK(sum[n - 1] == static_cast<double>(n + 1));
  V scaled = (a * 0.5).to_vector<double>();
  CHECK(scaled[n - 2] == static_cast<double>(n - 2) / 2);
  // Strided: a transposed 301 x 397 matrix plus a row (sizes that split bands and blocks unevenly).
  Tensor m = tg::arange(301 * 397, tg::kFloat64).reshape({301, 397});
  Tensor r = m.transpose(0, 1) + tg::arange(301, tg::kFloat64);  // [397, 301]
  CHECK(r.shape() == Shape{397, 301});
  V rv = r.to_vector<double>();
  // r[i][j] = m[j][i] + j = 397 * j + i + j
  bool all_right = true;
  for (int64_t i = 0; i < 397; ++i)
    for (int64_t j = 0; j < 301; ++j) all_right = all_right && rv[i * 301 + j] == 397 * j + i + j;
  CHECK(all_right);
}

// ---- unary ops ---------------------------------------------------------------------------------

TEST_CASE("elementwise: exp, log, sqrt, sigmoid, tanh") {
  Tensor x = tg::tensor(V{-1, 0, 0.5, 2});
  check_close(tg::exp(x), {std::exp(-1.0), 1, std::exp(0.5), std::exp(2.0)});
  check_close(tg::tanh(x), {std::tanh(-1.0), 0, std::tanh(0.5), std::tanh(2.0)});
  check_close(tg::sigmoid(x),
              {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-2.0))});
  Tensor p = tg::tensor(V{1, 4, 0.25, 9});
  CHECK(tg::sqrt(p).to_vector<double>() == V{1, 2, 0.5, 3});
  check_close(tg::log(p), {0, std::log(4.0), std::log(0.25), std::log(9.0)});
  CHECK(tg::log(tg::tensor(V{0})).item<double>() == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(tg::sqrt(tg::tensor(V{-1})).item<double>()));
  // Extreme inputs of sigmoid do not overflow into nan.
  CHECK(tg::sigmoid(tg::tensor(V{-1000, 1000})).to_vector<double>() == V{0, 1});
  // Integer and bool inputs give float32, as torch.exp(int) does.
  Tensor i = tg::tensor(std::vector<int64_t>{0, 1});
  CHECK(tg::exp(i).dtype() == tg::kFloat32);
  check_close(tg::exp(i), {1, std::exp(1.0)});
  CHECK(tg::sqrt(tg::tensor(std::vector<int32_t>{4, 9})).to_vector<double>() == V{2, 3});
  CHECK(tg::sigmoid(tg::tensor(std::vector<bool>{false})).item<double>() == 0.5);
  CHECK(tg::exp(tg::tensor(std::vector<float>{0.f})).dtype() == tg::kFloat32);
  CHECK(x.exp().to_vector<double>() == tg::exp(x).to_vector<double>());
}

TEST_CASE("elementwise: log1p, expm1, erf, rsqrt: values, edges, dtypes") {
  const double inf = std::numeric_limits<double>::infinity();
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32}) {
    CAPTURE(dt);
    const double tol = dt == tg::kFloat32 ? 1e-6 : 1e-15;
    auto close = [tol](const Tensor& t, const V& want) {
      const V got = t.to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i)
        if (std::isfinite(want[i]))
          CHECK(std::abs(got[i] - want[i]) <= tol * std::abs(want[i]));  // relative: 0 exact
        else
          CHECK(got[i] == want[i]);
    };
    // Small arguments keep their digits (1 + x would round them away), large ones do not
    // overflow: log1p of the largest finite value is its log.
    const double big = dt == tg::kFloat32 ? 3.0e38 : 1.7e308;
    Tensor x = tg::tensor(V{1e-10, -0.5, 3, big, -1}).to_dtype(dt);
    close(tg::log1p(x), {std::log1p(1e-10), std::log1p(-0.5), std::log1p(3.0),
                         std::log(dt == tg::kFloat32 ? double(float(big)) : big), -inf});
    CHECK(std::isnan(tg::log1p(tg::tensor(V{-2}).to_dtype(dt)).item<double>()));
    Tensor e = tg::tensor(V{1e-10, -1, 2, -inf, inf}).to_dtype(dt);
    close(tg::expm1(e), {std::expm1(1e-10), std::expm1(-1.0), std::expm1(2.0), -1, inf});
    Tensor z = tg::tensor(V{-2, -0.5, 0, 1e-20, 0.5, 3, -inf, inf}).to_dtype(dt);
    close(tg::erf(z), {std::erf(-2.0), std::erf(-0.5), 0, std::erf(1e-20), std::erf(0.5),
                       std::erf(3.0), -1, 1});
    Tensor r = tg::tensor(V{4, 0.25, 2, 0, inf}).to_dtype(dt);
    close(tg::rsqrt(r), {0.5, 2, 1 / std::sqrt(2.0), inf, 0});
    CHECK(std::isnan(tg::rsqrt(tg::tensor(V{-1}).to_dtype(dt)).item<double>()));
    // Long enough for the vector loops and the tail, in place and out, on a strided view.
    Tensor w = tg::arange(0, 1001).to_dtype(dt) / 100.0;
    Tensor v = w.slice(0, 0, 1000, 2);
    const V vs = v.to_vector<double>();
    V want(vs.size());
    for (size_t i = 0; i < vs.size(); ++i) want[i] = std::erf(vs[i]);
    close(tg::erf(v), want);
    Tensor c = v.clone();
    c.erf_();
    CHECK(c.to_vector<double>() == tg::erf(v).to_vector<double>());
  }
  // Integer and bool inputs give float32.
  Tensor i = tg::tensor(std::vector<int64_t>{0, 4});
  for (const Tensor& t : {tg::log1p(i), tg::expm1(i), tg::erf(i), tg::rsqrt(i)})
    CHECK(t.dtype() == tg::kFloat32);
  CHECK(tg::rsqrt(i).to_vector<double>() == V{std::numeric_limits<double>::infinity(), 0.5});
  CHECK(i.to_dtype(tg::kFloat64).expm1().to_vector<double>() ==
        tg::expm1(i.to_dtype(tg::kFloat64)).to_vector<double>());
}

TEST_CASE("elementwise: floating pow on the vector kernels: broadcast, long, in place, dtypes") {
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32}) {
    CAPTURE(dt);
    const double tol = dt == tg::kFloat32 ? 2.5e-7 : 5e-16;  // 1 ULP, relative
    Tensor x = (tg::arange(0, 1001).to_dtype(dt) / 250.0 + 0.1);
    Tensor y = (tg::arange(0, 1001).to_dtype(dt) / 100.0 - 5.0);
    const V xs = x.to_vector<double>(), ys = y.to_vector<double>();
    auto within = [&](const Tensor& got, auto want_at) {
      const V g = got.to_vector<double>();
      int64_t wrong = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        const double want = want_at(i);
        wrong += !(std::abs(g[i] - want) <= tol * std::abs(want));
      }
      CHECK(wrong == 0);
    };
    // Exponents computed in the result dtype, as the op sees them.
    within(tg::pow(x, y), [&](size_t i) { return std::pow(xs[i], ys[i]); });
    within(tg::pow(x, tg::tensor(V{-1.5}).to_dtype(dt)),
           [&](size_t i) { return std::pow(xs[i], -1.5); });
    within(tg::pow(x, 2.5), [&](size_t i) { return std::pow(xs[i], 2.5); });
    Tensor z = x.clone();
    z.pow_(y);
    CHECK(z.to_vector<double>() == tg::pow(x, y).to_vector<double>());
  }
  // An integer tensor to a fractional power is float32; integer powers of integers stay exact.
  Tensor i = tg::tensor(std::vector<int64_t>{4, 9, 2});
  CHECK(tg::pow(i, 0.5).dtype() == tg::kFloat32);
  CHECK(tg::pow(i, 0.5).to_vector<double>() == V{2, 3, std::sqrt(float(2))});
  CHECK(tg::pow(i, tg::tensor(std::vector<int64_t>{3, 2, 40})).to_vector<int64_t>() ==
        std::vector<int64_t>{64, 81, int64_t{1} << 40});
}

TEST_CASE("elementwise: abs, sign, relu") {
  Tensor x = tg::tensor(V{-2.5, -0.0, 0, 3});
  CHECK(tg::abs(x).to_vector<double>() == V{2.5, 0, 0, 3});
  CHECK(tg::sign(x).to_vector<double>() == V{-1, 0, 0, 1});
  CHECK(tg::relu(x).to_vector<double>() == V{0, 0, 0, 3});
  Tensor i = tg::tensor(std::vector<int32_t>{-4, 0, 5});
  CHECK(tg::abs(i).to_vector<int32_t>() == std::vector<int32_t>{4, 0, 5});
  CHECK(tg::sign(i).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 1});
  CHECK(tg::relu(i).dtype() == tg::kInt32);
  CHECK(tg::relu(i).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 5});
  Tensor b = tg::tensor(std::vector<bool>{true, false});
  CHECK(tg::sign(b).dtype() == tg::kBool);
  CHECK(tg::sign(b).to_vector<bool>() == std::vector<bool>{true, false});
  // NaN passes through relu, as in PyTorch.
  CHECK(std::isnan(tg::relu(tg::tensor(V{std::nan("")})).item<double>()));
  CHECK(error_of<tg::TypeError>([&] { tg::abs(b); }).find("[abs]") == 0);
  CHECK(error_of<tg::TypeError>([&] { tg::relu(b); }).find("[relu]") == 0);
}

TEST_CASE("elementwise: clamp") {
  Tensor x = tg::tensor(V{-3, -0.5, 0.2, 4});
  CHECK(tg::clamp(x, -1.0, 1.0).to_vector<double>() == V{-1, -0.5, 0.2, 1});
  CHECK(tg::clamp(x, 0.0).to_vector<double>() == V{0, 0, 0.2, 4});
  CHECK(tg::clamp(x, std::nullopt, 0.0).to_vector<double>() == V{-3, -0.5, 0, 0});
  CHECK(x.clamp(-1, 1).to_vector<double>() == V{-1, -0.5, 0.2, 1});
  // min > max: every element becomes max, as in PyTorch.
  CHECK(tg::clamp(x, 2.0, 1.0).to_vector<double>() == V{1, 1, 1, 1});
  // Infinities are not clipped by a missing bound; NaN passes through.
  Tensor inf = tg::tensor(V{-INFINITY, INFINITY, std::nan("")});
  V c = tg::clamp(inf, std::nullopt, 5.0).to_vector<double>();
  CHECK(c[0] == -INFINITY);
  CHECK(c[1] == 5);
  CHECK(std::isnan(c[2]));
  // Integers: integer bounds keep the dtype, a floating bound promotes to float32.
  Tensor i = tg::tensor(std::vector<int64_t>{-5, 0, 5});
  CHECK(tg::clamp(i, -2, 3).dtype() == tg::kInt64);
  CHECK(tg::clamp(i, -2, 3).to_vector<int64_t>() == std::vector<int64_t>{-2, 0, 3});
  CHECK(tg::clamp(i, std::nullopt, 3).to_vector<int64_t>() == std::vector<int64_t>{-5, 0, 3});
  Tensor f = tg::clamp(i, 0.5);
  CHECK(f.dtype() == tg::kFloat32);
  CHECK(f.to_vector<double>() == V{0.5, 0.5, 5});
  std::string msg = error_of<tg::ValueError>([&] { tg::clamp(x); });
  CHECK(msg.find("[clamp]") == 0);
  CHECK(msg.find("neither") != std::string::npos);
}

// ---- pow ---------------------------------------------------------------------------------------

TEST_CASE("elementwise: pow") {
  Tensor x = tg::tensor(V{2, 3, 4, 0});
  Tensor e = tg::tensor(V{3, 2, 0.5, 0});
  CHECK(tg::pow(x, e).to_vector<double>() == V{8, 9, 2, 1});
  CHECK(tg::pow(x, 2.0).to_vector<double>() == V{4, 9, 16, 0});  // the Scalar overload
  CHECK(tg::pow_scalar(x, 0.5).to_vector<double>() == V{std::sqrt(2.0), std::sqrt(3.0), 2, 0});
  CHECK(x.pow_scalar(-1).to_vector<double>() == V{0.5, 1.0 / 3, 0.25, INFINITY});
  CHECK(tg::pow(x, tg::tensor(V{1, 2}, {2, 1})).shape() == Shape{2, 4});
  // Integers: exact, negative exponents give 0 unless the base is 1 or -1.
  Tensor ib = tg::tensor(std::vector<int64_t>{2, 3, 1, -1, -1, 5});
  Tensor ie = tg::tensor(std::vector<int64_t>{10, 3, -3, -3, -2, -1});
  CHECK(tg::pow(ib, ie).to_vector<int64_t>() == std::vector<int64_t>{1024, 27, 1, -1, 1, 0});
  CHECK(tg::pow(tg::tensor(std::vector<int32_t>{-2, 7}), 3).to_vector<int32_t>() ==
        std::vector<int32_t>{-8, 343});
  // An int tensor to a floating power is float32.
  CHECK(tg::pow(ib, 0.5).dtype() == tg::kFloat32);
  std::string msg = error_of<tg::ValueError>([&] { tg::pow(ib, -1); });
  CHECK(msg.find("[pow_scalar]") == 0);
  CHECK(msg.find("negative integer powers") != std::string::npos);
}

// ---- where, comparisons, logical ops
// -------------------------------------------------------------

TEST_CASE("elementwise: where broadcasts all three and promotes") {
  Tensor c = tg::tensor(std::vector<bool>{true, false, true});
  Tensor a = iota(6, {2, 3});
  Tensor r = tg::where(c, a, tg::scalar_tensor(-1.0, tg::kFloat64));
  CHECK(r.to_vector<double>() == V{0, -1, 2, 3, -1, 5});
  Tensor col = tg::tensor(std::vector<bool>{false, true}, {2, 1});
  Tensor ints = tg::tensor(std::vector<int64_t>{7, 8, 9});
  Tensor w = tg::where(col, ints, tg::tensor(std::vector<float>{0.5f}));
  CHECK(w.dtype() == tg::kFloat32);
  CHECK(w.shape() == Shape{2, 3});
  CHECK(w.to_vector<double>() == V{0.5, 0.5, 0.5, 7, 8, 9});
  CHECK(a.where(c, tg::zeros({3}, tg::kFloat64)).to_vector<double>() == V{0, 0, 2, 3, 0, 5});
  std::string msg = error_of<tg::TypeError>([&] { tg::where(a, a, a); });
  CHECK(msg.find("[where]") == 0);
  CHECK(msg.find("condition") != std::string::npos);
  CHECK(error_of<tg::ValueError>([&] {
          tg::where(tg::tensor(std::vector<bool>{true, false}), a, a);
        }).find("[where]") == 0);
}

TEST_CASE("elementwise: where keeps each chosen value's bits, flat or broadcast, every dtype") {
  // The flat path selects bits without a branch: NaN payloads, -0.0 and infinities must come
  // through as the chosen input holds them, and the broadcast path must agree.
  const int64_t n = 1003;
  std::vector<bool> cond;
  std::vector<double> a, b;
  const double specials[] = {-0.0, std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::quiet_NaN(), 5e-324, -7.5};
  for (int64_t i = 0; i < n; ++i) {
    cond.push_back((i * 7919) % 3 == 0);
    a.push_back(specials[i % 5]);
    b.push_back(static_cast<double>(i % 5 == 1 ? -0.0 : i) * (i % 2 ? 1 : -1));
  }
  const Tensor c = tg::tensor(cond, {n});
  for (const tg::DType dtype : {tg::kFloat32, tg::kFloat64, tg::kInt32, tg::kInt64, tg::kBool}) {
    CAPTURE(dtype);
    const bool floating = dtype == tg::kFloat32 || dtype == tg::kFloat64;
    const Tensor ta =
        floating ? tg::tensor(a).to_dtype(dtype) : tg::tensor(b).abs().to_dtype(dtype);
    const Tensor tb = tg::tensor(b).to_dtype(dtype);
    const Tensor got = tg::where(c, ta, tb);
    const Tensor broadcast =
        tg::where(c.reshape({n, 1}), ta.reshape({n, 1}), tb.reshape({n, 1}).expand({n, 2}));
    const size_t item = tg::itemsize(dtype);
    const auto* g = static_cast<const unsigned char*>(got.data_ptr());
    const auto* x = static_cast<const unsigned char*>(ta.data_ptr());
    const auto* y = static_cast<const unsigned char*>(tb.data_ptr());
    const Tensor bc = broadcast.select(1, 1).contiguous();
    const auto* h = static_cast<const unsigned char*>(bc.data_ptr());
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const unsigned char* want = (cond[static_cast<size_t>(i)] ? x : y) + i * item;
      wrong += std::memcmp(g + i * item, want, item) != 0;
      wrong += std::memcmp(h + i * item, want, item) != 0;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("elementwise: comparisons give bool and compare in the promoted dtype") {
  Tensor i = tg::tensor(std::vector<int64_t>{1, 2, 3});
  Tensor f = tg::tensor(V{1, 2.5, 2});
  using B = std::vector<bool>;
  CHECK(tg::eq(i, f).dtype() == tg::kBool);
  CHECK(tg::eq(i, f).to_vector<bool>() == B{true, false, false});
  CHECK(tg::ne(i, f).to_vector<bool>() == B{false, true, true});
  CHECK(tg::lt(i, f).to_vector<bool>() == B{false, true, false});
  CHECK(tg::le(i, f).to_vector<bool>() == B{true, true, false});
  CHECK(tg::gt(i, f).to_vector<bool>() == B{false, false, true});
  CHECK(tg::ge(i, f).to_vector<bool>() == B{true, false, true});
  CHECK((i < 2.5).to_vector<bool>() == B{true, true, false});  // 2 < 2.5 compares in float
  CHECK((i == 2).to_vector<bool>() == B{false, true, false});
  CHECK((i.view({3, 1}) >= i).shape() == Shape{3, 3});
  CHECK((i.view({3, 1}) >= i).to_vector<bool>() ==
        B{true, false, false, true, true, false, true, true, true});
  Tensor nan = tg::tensor(V{std::nan("")});
  CHECK((nan == nan).to_vector<bool>() == B{false});
  CHECK((nan != nan).to_vector<bool>() == B{true});
}

TEST_CASE("elementwise: logical ops take any dtype") {
  using B = std::vector<bool>;
  Tensor a = tg::tensor(V{0, 1.5, 0, -2});
  Tensor b = tg::tensor(std::vector<int32_t>{0, 0, 3, 1});
  CHECK(tg::logical_not(a).to_vector<bool>() == B{true, false, true, false});
  CHECK(tg::logical_and(a, b).to_vector<bool>() == B{false, false, false, true});
  CHECK(tg::logical_or(a, b).to_vector<bool>() == B{false, true, true, true});
  CHECK(tg::logical_or(a, b).dtype() == tg::kBool);
  CHECK((!tg::tensor(B{true, false})).to_vector<bool>() == B{false, true});
  CHECK(tg::logical_not(tg::tensor(V{std::nan("")})).to_vector<bool>() == B{false});  // NaN is true
}

TEST_CASE("elementwise: bool operands of every layout, flat, broadcast and split across threads") {
  // The engine reads bool inputs as bytes and the logical ops use & and |: the results must be
  // those of plain loops over std::vector<bool>, with a tail that fills no vector, on the
  // strided walk's rows, and past the thread split.
  for (const int64_t n : {int64_t{1003}, int64_t{300001}}) {
    CAPTURE(n);
    std::vector<bool> p, q;
    std::vector<double> x;
    for (int64_t i = 0; i < n; ++i) {
      p.push_back((i * 7919) % 3 == 0);
      q.push_back((i * 104729) % 5 < 2);
      x.push_back(i % 7 == 3 ? -0.0 : static_cast<double>(i % 11) - 5.5);
    }
    const Tensor tp = tg::tensor(p, {n}), tq = tg::tensor(q, {n});
    const int before = tg::get_num_threads();
    for (const int threads : {1, 2}) {
      CAPTURE(threads);
      tg::set_num_threads(threads);
      const std::vector<bool> got_not = tg::logical_not(tp).to_vector<bool>();
      const std::vector<bool> got_and = tg::logical_and(tp, tq).to_vector<bool>();
      const std::vector<bool> got_or = tg::logical_or(tp, tq).to_vector<bool>();
      const std::vector<bool> got_eq = tg::eq(tp, tq).to_vector<bool>();
      // [n, 1] against [1, 2]: rows of the strided walk, each operand broadcast one way
      const Tensor rows =
          tg::logical_and(tp.reshape({n, 1}), tg::tensor(std::vector<bool>{true, false}, {1, 2}));
      const std::vector<bool> got_rows = rows.to_vector<bool>();
      const Tensor filled = tg::masked_fill_scalar(tg::tensor(x).to_dtype(tg::kFloat32), tp, 2.5);
      const std::vector<double> got_fill = filled.to_vector<double>();
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i);
        wrong += got_not[k] != !p[k];
        wrong += got_and[k] != (p[k] && q[k]);
        wrong += got_or[k] != (p[k] || q[k]);
        wrong += got_eq[k] != (p[k] == q[k]);
        wrong += got_rows[2 * k] != p[k] || got_rows[2 * k + 1];
        const double want = p[k] ? 2.5 : x[k];
        wrong += std::signbit(got_fill[k]) != std::signbit(want) || got_fill[k] != want;
      }
      CHECK(wrong == 0);
    }
    tg::set_num_threads(before);
  }
}

// ---- in-place forms
// ------------------------------------------------------------------------------

TEST_CASE("elementwise: in-place forms write into self") {
  Tensor a = tg::tensor(V{1, 2, 3});
  const void* data = a.data_ptr();
  a.add_(tg::tensor(V{10, 20, 30}));
  CHECK(a.to_vector<double>() == V{11, 22, 33});
  a += 1.0;
  a *= tg::tensor(V{2});
  CHECK(a.to_vector<double>() == V{24, 46, 68});
  a.sub_(tg::tensor(V{4, 6, 8}), 0.5);
  a /= 2.0;
  CHECK(a.to_vector<double>() == V{11, 21.5, 32});
  a.neg_();
  a.clamp_(-30.0, -20.0);
  CHECK(a.to_vector<double>() == V{-20, -21.5, -30});
  a.abs_().sqrt_();
  check_close(a, {std::sqrt(20.0), std::sqrt(21.5), std::sqrt(30.0)});
  CHECK(a.data_ptr() == data);
  // A transposed self is written through its strides.
  Tensor m = iota(6, {2, 3});
  m.transpose(0, 1).mul_(tg::tensor(V{1, 10}));  // row i of m scaled by 10^i
  CHECK(m.to_vector<double>() == V{0, 1, 2, 30, 40, 50});
  // An int tensor keeps its dtype in place: add_ works, exp_ and div_ (float results) fail.
  Tensor i = tg::tensor(std::vector<int64_t>{1, 2});
  i.add_(tg::tensor(std::vector<int64_t>{5, 5}));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{6, 7});
  CHECK(error_of<tg::TypeError>([&] { i.exp_(); }).find("[exp_]") == 0);
  CHECK(error_of<tg::TypeError>([&] { i.div_(i); }).find("[div_]") == 0);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{6, 7});  // unchanged
  // In place cannot change self's shape.
  Tensor small = tg::zeros({3});
  CHECK(error_of<tg::ValueError>([&] { small.add_(tg::zeros({2, 3})); }).find("[add_]") == 0);
  CHECK(small.to_vector<double>() == V{0, 0, 0});
}

// ---- gradients checked by hand
// --------------------------------------------------------------------

TEST_CASE("elementwise: gradients at the special points") {
  // pow at 0^0: d/dself is 0 (not nan), d/dexponent is 0 where self == 0 and exponent >= 0.
  Tensor x = tg::tensor(V{0, 2, 0}).requires_grad_();
  Tensor e = tg::tensor(V{0, 3, 2}).requires_grad_();
  tg::sum(tg::pow(x, e)).backward();
  CHECK(x.grad().to_vector<double>() == V{0, 12, 0});
  check_close(e.grad(), {0, 8 * std::log(2.0), 0});

  // clamp passes the gradient inside [min, max], bounds included.
  Tensor y = tg::tensor(V{-2, -1, 0.5, 1, 3}).requires_grad_();
  tg::sum(tg::clamp(y, -1.0, 1.0)).backward();
  CHECK(y.grad().to_vector<double>() == V{0, 1, 1, 1, 0});

  // relu, abs and where.
  Tensor z = tg::tensor(V{-1, 2}).requires_grad_();
  tg::sum(tg::relu(z) + tg::abs(z) * 3.0).backward();
  CHECK(z.grad().to_vector<double>() == V{-3, 4});
  Tensor p = tg::tensor(V{1, 2}).requires_grad_();
  Tensor q = tg::tensor(V{3, 4}).requires_grad_();
  tg::sum(tg::where(tg::tensor(std::vector<bool>{true, false}), p, q)).backward();
  CHECK(p.grad().to_vector<double>() == V{1, 0});
  CHECK(q.grad().to_vector<double>() == V{0, 1});

  // sub with alpha, and div: d(a/b)/db = -a/b^2; broadcasting sums over the broadcast dim.
  Tensor a = tg::tensor(V{1, 2, 3, 4}, {2, 2}).requires_grad_();
  Tensor b = tg::tensor(V{2, 4}).requires_grad_();
  tg::sum(tg::sub(a, b, 2) + a / b).backward();
  CHECK(a.grad().to_vector<double>() == V{1.5, 1.25, 1.5, 1.25});
  CHECK(b.grad().to_vector<double>() == V{-4 - (1.0 + 3) / 4, -4 - (2.0 + 4) / 16});
}

TEST_CASE("elementwise: double backward through exp and tanh") {
  Tensor x = tg::tensor(V{0.5}).requires_grad_();
  Tensor y = tg::exp(x) + tg::tanh(x);
  auto g = tg::autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  const double t = std::tanh(0.5);
  check_close(g[0], {std::exp(0.5) + 1 - t * t});
  auto gg = tg::autograd::grad({g[0]}, {x});
  check_close(gg[0], {std::exp(0.5) - 2 * t * (1 - t * t)});
}

TEST_CASE("elementwise: broadcast rows over two outer dims, split across threads mid-way") {
  // [3, 5, 4000] + [3, 1, 4000]: the outer dims do not merge (the second operand repeats along
  // dim 1), so each row's offsets advance like an odometer over two dims, and 60000 elements
  // split into parallel chunks that start inside dim 0. Expected values from the formula.
  for (const tg::DType dtype : {tg::kFloat32, tg::kInt64}) {
    const Tensor a = tg::arange(3 * 5 * 4000, dtype).reshape({3, 5, 4000});
    const Tensor b = tg::arange(3 * 4000, dtype).reshape({3, 1, 4000}) * 1000;
    Tensor inplace = a.clone();
    inplace.add_(b);
    for (const Tensor& sum : {tg::add(a, b), inplace}) {
      const std::vector<double> got = sum.to(tg::kFloat64).to_vector<double>();
      bool all_equal = true;
      for (int64_t i = 0; i < 3 && all_equal; ++i)
        for (int64_t j = 0; j < 5; ++j)
          for (int64_t k = 0; k < 4000; ++k) {
            const double expected = double((i * 5 + j) * 4000 + k) + 1000.0 * (i * 4000 + k);
            if (got[(i * 5 + j) * 4000 + k] != expected) all_equal = false;
          }
      CHECK_MESSAGE(all_equal, tg::to_string(dtype));
    }
  }
}

TEST_CASE("elementwise: broadcast rows of a column slice, out of place and in place") {
  // The left 1000 columns of a [70, 1500] float32 matrix times a [1000] row: every row is a unit-
  // step run, but consecutive rows of the slice lie 1500 elements apart, not 1000 (the row stride
  // the walk passes on, not the row length). 70000 elements: split across threads.
  const Tensor base = tg::arange(70 * 1500, tg::kFloat32).reshape({70, 1500}) * 0.5;
  const Tensor row = tg::arange(1000, tg::kFloat32) * 0.25 + 1;
  Tensor whole = base.clone();
  Tensor left = whole.slice(1, 0, 1000);
  const Tensor product = tg::mul(left, row);
  left.mul_(row);
  const std::vector<double> out = product.to(tg::kFloat64).to_vector<double>();
  const std::vector<double> in_place = whole.to(tg::kFloat64).to_vector<double>();
  bool all_equal = true;
  for (int64_t i = 0; i < 70; ++i)
    for (int64_t j = 0; j < 1500; ++j) {
      const float x = static_cast<float>(i * 1500 + j) * 0.5f;  // exact in float32
      const double want =
          j < 1000 ? static_cast<double>(x * (static_cast<float>(j) * 0.25f + 1)) : double{x};
      if (j < 1000 && out[static_cast<size_t>(i * 1000 + j)] != want) all_equal = false;
      if (in_place[static_cast<size_t>(i * 1500 + j)] != want) all_equal = false;
    }
  CHECK(all_equal);
}

TEST_CASE("elementwise: transposed operands, numbers on broadcast rows, column broadcasts") {
  // Three layouts the strided walk once ran element by element: a large transposed operand (now
  // copied blocked first), a number next to an expanded row (spread over a row), and [m, n]
  // against [m, 1] (steps 0 and 1: the vector loop on blocks). Values against plain loops, at 1
  // and 2 threads, out of place and in place, float32, int64 and a bool column.
  const int64_t m = 300, n = 257;  // 77100 elements: over the thread grain
  const Tensor x = tg::arange(m * n, tg::kFloat32).reshape({m, n}) * 0.5;
  const Tensor col = tg::arange(m, tg::kFloat32).reshape({m, 1}) * 0.25 - 7;
  std::vector<bool> thirds;
  for (int64_t i = 0; i < m; ++i) thirds.push_back(i % 3 == 1);
  const Tensor odd = tg::tensor(thirds, {m, 1});
  const Tensor row = tg::arange(n, tg::kFloat32).reshape({1, n});
  const auto xv = [&](int64_t i, int64_t j) { return static_cast<float>(i * n + j) * 0.5f; };
  const auto cv = [&](int64_t i) { return static_cast<float>(i) * 0.25f - 7; };
  const int before = tg::get_num_threads();
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    tg::set_num_threads(threads);
    const std::vector<double> twice_t = (x.t() * tg::scalar_tensor(2.0)).to_vector<double>();
    const std::vector<double> plus_t = tg::add(x.t(), x.t()).to_vector<double>();
    const std::vector<double> row_over =
        tg::div(row.expand({m, n}), tg::scalar_tensor(4.0)).to_vector<double>();
    const std::vector<double> minus_col = tg::sub(x, col).to_vector<double>();
    Tensor in_place = x.clone();
    in_place.sub_(col);
    const std::vector<double> minus_col_in_place = in_place.to_vector<double>();
    const std::vector<bool> at_col = tg::ge(x, col.expand({m, n}) * 300).to_vector<bool>();
    const std::vector<double> picked =
        tg::where(odd, x, tg::scalar_tensor(-1.0)).to_vector<double>();
    const std::vector<double> ints =
        tg::sub(x.to_dtype(tg::kInt64), tg::arange(m, tg::kInt64).reshape({m, 1}))
            .to_vector<double>();
    // The float32 row kernels' scalar forms on whole rows: the column on either side, each op,
    // and both operands constant along the row (spread over blocks).
    const std::vector<double> col_minus = tg::sub(col, x).to_vector<double>();
    const std::vector<double> col_over = tg::div(col, x + 1).to_vector<double>();
    const std::vector<double> times_col = tg::mul(x, col).to_vector<double>();
    const std::vector<double> plus_col = tg::add(x, col).to_vector<double>();
    const std::vector<double> over_col = tg::div(x, col).to_vector<double>();
    const std::vector<double> both_cols =
        tg::mul(col.expand({m, n}), col.expand({m, n})).to_vector<double>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const size_t k = static_cast<size_t>(i * n + j), kt = static_cast<size_t>(j * m + i);
        wrong += twice_t[kt] != static_cast<double>(xv(i, j) * 2.0f);
        wrong += plus_t[kt] != static_cast<double>(xv(i, j) + xv(i, j));
        wrong += row_over[k] != static_cast<double>(static_cast<float>(j) / 4.0f);
        wrong += minus_col[k] != static_cast<double>(xv(i, j) - cv(i));
        wrong += minus_col_in_place[k] != static_cast<double>(xv(i, j) - cv(i));
        wrong += at_col[k] != (xv(i, j) >= cv(i) * 300);
        wrong += picked[k] != (i % 3 == 1 ? static_cast<double>(xv(i, j)) : -1.0);
        wrong += ints[k] != static_cast<double>(static_cast<int64_t>(xv(i, j)) - i);
        wrong += col_minus[k] != static_cast<double>(cv(i) - xv(i, j));
        wrong += col_over[k] != static_cast<double>(cv(i) / (xv(i, j) + 1));
        wrong += times_col[k] != static_cast<double>(xv(i, j) * cv(i));
        wrong += plus_col[k] != static_cast<double>(xv(i, j) + cv(i));
        wrong += over_col[k] != static_cast<double>(xv(i, j) / cv(i));
        wrong += both_cols[k] != static_cast<double>(cv(i) * cv(i));
      }
    CHECK(wrong == 0);
  }
  tg::set_num_threads(before);
}

TEST_CASE("elementwise: a number next to a strided operand, on short and long rows") {
  // The number is spread over a row only for rows up to 65536 values; both sides of that limit
  // against a plain loop.
  for (const int64_t n : {int64_t{1000}, int64_t{70001}}) {
    CAPTURE(n);
    const Tensor every_other = tg::arange(2 * n, tg::kFloat32).slice(0, 0, 2 * n, 2);
    const std::vector<double> got = (every_other * tg::scalar_tensor(3.0)).to_vector<double>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      wrong += got[static_cast<size_t>(i)] != static_cast<double>(static_cast<float>(2 * i) * 3.0f);
    CHECK(wrong == 0);
  }
}
