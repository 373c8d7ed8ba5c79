// The conv, pooling and normalisation ops against PyTorch 1.13: tests/data/
// conv_pool_norm_crosscheck.json, written by tools/crosscheck/conv_pool_norm.py, holds PyTorch's
// outputs and gradients for inputs that both sides build as wave(shape, a, b)[k] = sin(a k + b).
// Then conv2d against a direct loop over many geometries, and the edge cases of each op.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using namespace tg;

namespace {

const nlohmann::json& reference() {
  static const nlohmann::json values = [] {
    const auto path = std::filesystem::path(TG_TEST_DATA_DIR) / "conv_pool_norm_crosscheck.json";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open ", path.string());
    return nlohmann::json::parse(in).at("values");
  }();
  return values;
}

// got equals PyTorch's `name` in shape, and in every element within rel * max(1, |want|).
void expect(const std::string& name, const Tensor& got, double rel = 1e-12) {
  INFO(name);
  const auto& want = reference().at(name);
  REQUIRE(got.shape() == Shape(want.at("shape").get<std::vector<int64_t>>()));
  const std::vector<double> g = got.to_vector<double>();
  const std::vector<double> w = want.at("values").get<std::vector<double>>();
  REQUIRE(g.size() == w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element ", i, ": got ", g[i], ", expected ", w[i]);
    CHECK(std::abs(g[i] - w[i]) <= rel * std::max(1.0, std::abs(w[i])));
  }
}

Tensor wave(const std::vector<int64_t>& shape, double a, double b, DType dtype = kFloat64) {
  std::vector<double> v(static_cast<size_t>(Shape(shape).numel()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(a * static_cast<double>(k) + b);
  return tensor(v, shape).to(dtype);
}

Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(); }

// Gradients of sum(y * wave(y.shape, 0.61, 0.2)) w.r.t. xs, with a graph for second derivatives.
std::vector<Tensor> grads(const Tensor& y, const std::vector<Tensor>& xs) {
  const Tensor g = wave(y.shape().vec(), 0.61, 0.2);
  return autograd::grad({sum(y * g)}, xs, {}, true, /*create_graph=*/true);
}

}  // namespace

TEST_CASE("conv2d: stride, padding, dilation and bias, then gradients and a second derivative") {
  Tensor x = leaf(wave({2, 2, 4, 5}, 0.37, 0.1)), w = leaf(wave({3, 2, 3, 2}, 0.23, 0.5));
  Tensor b = leaf(wave({3}, 1.1, 0.0));
  Tensor y = conv2d(x, w, b, {2, 1}, {1, 2}, {1, 2});
  expect("conv2d y", y);
  auto g = grads(y, {x, w, b});
  expect("conv2d grad x", g[0]);
  expect("conv2d grad w", g[1]);
  expect("conv2d grad b", g[2]);
  // d/dw of sum(grad_x^2 * h): through conv_backward_input's own backward.
  const Tensor h = wave({2, 2, 4, 5}, 0.17, 0.4);
  expect("conv2d d/dw sum(grad_x^2 * h)", autograd::grad({sum(g[0] * g[0] * h)}, {w})[0]);

  // float32 agrees with float64 to float32 precision.
  Tensor y32 = conv2d(x.detach().to(kFloat32), w.detach().to(kFloat32), b.detach().to(kFloat32),
                      {2, 1}, {1, 2}, {1, 2});
  CHECK(y32.dtype() == kFloat32);
  expect("conv2d y", y32, 1e-5);
}

TEST_CASE("conv2d: groups on an unbatched input") {
  Tensor x = leaf(wave({4, 3, 3}, 0.29, 0.7)), w = leaf(wave({4, 2, 2, 2}, 0.41, 0.2));
  Tensor y = conv2d(x, w, {}, {1}, {1}, {1}, 2);
  expect("grouped y", y);
  auto g = grads(y, {x, w});
  expect("grouped grad x", g[0]);
  expect("grouped grad w", g[1]);
}

TEST_CASE("conv2d / conv1d: padding 'same' and 'valid'") {
  Tensor x = leaf(wave({1, 2, 4, 5}, 0.31, 0.0)), w = leaf(wave({2, 2, 2, 3}, 0.53, 0.9));
  Tensor y = conv2d(x, w, {}, {1}, "same", {1, 2});  // even kernel: one more zero at the end
  expect("same y", y);
  expect("same grad x", grads(y, {x, w})[0]);
  CHECK(conv2d(x, w, {}, {1}, std::string("valid")).shape() == Shape{1, 2, 3, 3});
  CHECK(tg_test::error_of([&] {
          conv2d(x, w, {}, {2}, "same");
        }).find("[conv2d] padding='same' is not supported for strided convolutions") == 0);
  CHECK(tg_test::error_of<ValueError>([&] {
          conv2d(x, w, {}, {1}, "full");
        }).find("padding must be a list of ints, 'valid' or 'same'; got 'full'") !=
        std::string::npos);

  Tensor x1 = wave({2, 3, 7}, 0.19, 0.3), w1 = wave({2, 3, 3}, 0.47, 0.1), b1 = wave({2}, 0.9, 1.0);
  expect("conv1d same y", conv1d(x1, w1, b1, {1}, "same", {3}));
}

TEST_CASE("conv1d: stride, padding, dilation and bias, then gradients") {
  Tensor x = leaf(wave({2, 3, 7}, 0.19, 0.3)), w = leaf(wave({2, 3, 3}, 0.47, 0.1));
  Tensor b = leaf(wave({2}, 0.9, 1.0));
  Tensor y = conv1d(x, w, b, {2}, {2}, {2});
  expect("conv1d y", y);
  auto g = grads(y, {x, w, b});
  expect("conv1d grad x", g[0]);
  expect("conv1d grad w", g[1]);
}

namespace {

// conv2d by its definition: one loop per index (the reference for many geometries below).
std::vector<double> direct_conv2d(const Tensor& x, const Tensor& w, int64_t sh, int64_t sw,
                                  int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups,
                                  const Shape& out_shape) {
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), Cg = w.size(1), KH = w.size(2), KW = w.size(3);
  const int64_t OH = out_shape[2], OW = out_shape[3], Og = O / groups;
  std::vector<double> out(static_cast<size_t>(N * O * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ci = (o / Og) * Cg + c;
                s += xv[static_cast<size_t>(((n * C + ci) * H + ih) * W + iw)] *
                     wv[static_cast<size_t>(((o * Cg + c) * KH + i) * KW + j)];
              }
          out[static_cast<size_t>(((n * O + o) * OH + oh) * OW + ow)] = s;
        }
  return out;
}

}  // namespace

TEST_CASE("conv2d: equals the direct loop over strides, paddings, dilations and groups") {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t sh, sw, ph, pw, dh, dw, groups;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, 1, 1, 1, 1, 1, 1, 1},
      {{1, 2, 9, 11}, {3, 2, 3, 2}, 2, 3, 1, 0, 1, 2, 1},
      {{2, 4, 7, 7}, {6, 2, 2, 3}, 3, 1, 1, 1, 2, 1, 2},
      {{1, 6, 5, 6}, {6, 1, 3, 3}, 1, 2, 1, 1, 1, 1, 6},
      {{3, 1, 8, 8}, {5, 1, 1, 1}, 2, 2, 0, 0, 1, 1, 1},
      {{1, 2, 4, 4}, {2, 2, 5, 5}, 1, 1, 2, 2, 1, 1, 1},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    INFO("case ", k);
    const Tensor x = wave(c.x, 0.13 + 0.01 * static_cast<double>(k), 0.3);
    const Tensor w = wave(c.w, 0.29, 0.1 * static_cast<double>(k));
    for (DType dtype : {kFloat64, kFloat32}) {
      const Tensor y =
          conv2d(x.to(dtype), w.to(dtype), {}, {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw}, c.groups);
      const std::vector<double> want =
          direct_conv2d(x, w, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.groups, y.shape());
      const std::vector<double> got = y.to_vector<double>();
      const double tol = dtype == kFloat64 ? 1e-12 : 1e-5;
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("element ", i, " ", dtype_name(dtype));
        CHECK(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])));
      }
    }
  }
}

namespace {

// A float32 3x3 stride-1 conv against the direct loop: forward (with bias), the input gradient
// and the weight gradient (the adjoints of the direct loop). Winograd's transforms round more
// than a direct sum: within 2e-5 of the largest |value|.
struct WinogradCase {
  std::vector<int64_t> x;
  int64_t oc, ph, pw;
};
void check_winograd(const WinogradCase& c, double seed) {
  const auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("element ", i);
      CHECK(std::abs(got[i] - want[i]) <= 2e-5 * scale);
    }
  };
  const Tensor x = wave(c.x, 0.37 + 0.01 * seed, 0.1);
  const Tensor w = wave({c.oc, c.x[1], 3, 3}, 0.23, 0.5), b = wave({c.oc}, 1.1, 0.2);
  const Tensor y = conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), {1}, {c.ph, c.pw});
  std::vector<double> want = direct_conv2d(x, w, 1, 1, c.ph, c.pw, 1, 1, 1, y.shape());
  const std::vector<double> bias = b.to_vector<double>();
  const int64_t plane = y.size(2) * y.size(3);
  for (size_t i = 0; i < want.size(); ++i)
    want[i] += bias[(i / static_cast<size_t>(plane)) % static_cast<size_t>(c.oc)];
  near(y.to_vector<double>(), want);

  // Both gradients are adjoints of the direct loop: every tap pairs x[n, ci, ih, iw],
  // w[o, ci, i, j] and y[n, o, oh, ow] with ih = oh - ph + i, iw = ow - pw + j, so
  // gx[x] += gy[y] w[w] and gw[w] += gy[y] x[x] over the taps inside the input.
  const Tensor gy = wave({c.x[0], c.oc, y.size(2), y.size(3)}, 0.71, 0.3);
  const Tensor gx =
      conv_backward_input(gy.to(kFloat32), w.to(kFloat32), x.shape(), {1}, {c.ph, c.pw});
  const Tensor gw =
      conv_backward_weight(gy.to(kFloat32), x.to(kFloat32), w.shape(), {1}, {c.ph, c.pw});
  const std::vector<double> gyv = gy.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<double> xv = x.to_vector<double>();
  const int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], OH = y.size(2), OW = y.size(3);
  std::vector<double> gx_want(xv.size(), 0.0), gw_want(wv.size(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < c.oc; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t ci = 0; ci < C; ++ci)
            for (int64_t i = 0; i < 3; ++i)
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t ih = oh - c.ph + i, iw = ow - c.pw + j;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const auto xi = static_cast<size_t>(((n * C + ci) * H + ih) * W + iw);
                const auto wi = static_cast<size_t>(((o * C + ci) * 3 + i) * 3 + j);
                const auto yi = static_cast<size_t>(((n * c.oc + o) * OH + oh) * OW + ow);
                gx_want[xi] += gyv[yi] * wv[wi];
                gw_want[wi] += gyv[yi] * xv[xi];
              }
  near(gx.to_vector<double>(), gx_want);
  near(gw.to_vector<double>(), gw_want);
}

}  // namespace

// Rows wide enough for the Winograd path's tile-row layout (backends/cpu/conv_winograd.h, on
// CPUs with AVX2): odd and even output sizes, paddings 0 to 2; the weight gradient takes the
// Winograd path for 16 or 32 input channels.
TEST_CASE("conv2d: 3x3 stride 1 float32 forward and gradients on wide rows") {
  const std::vector<WinogradCase> cases = {{{2, 5, 7, 30}, 7, 1, 1},
                                           {{1, 4, 6, 31}, 9, 2, 0},
                                           {{2, 3, 5, 30}, 17, 0, 2},
                                           {{3, 16, 5, 29}, 6, 1, 1},
                                           {{2, 32, 4, 28}, 9, 0, 2}};
  for (size_t k = 0; k < cases.size(); ++k) {
    INFO("case ", k);
    check_winograd(cases[k], static_cast<double>(k));
  }
}

// Small images for the packed layout (tiles of the whole image in the lanes): the digits CNN's
// 8x8 (16 tiles), the shortcut stores of whole 4- or 8-tile rows (8 or 16 wide) next to a
// last group that is not whole (12x8), odd sizes whose last tile row or column is half outside, a
// batch of 1, images of several groups of 16 tiles (10x12: 30 tiles; 14x15 by padding 2: 64), an
// output past its input (padding 2), channel counts that are not multiples of 16 (forward and input
// gradient only) and 16 or 32 (the weight gradient too), and output channels not a multiple of 8.
TEST_CASE("conv2d: 3x3 stride 1 float32 forward and gradients on small images") {
  const std::vector<WinogradCase> cases = {
      {{3, 16, 8, 8}, 32, 1, 1},  {{1, 16, 8, 8}, 13, 1, 1}, {{2, 1, 8, 8}, 16, 1, 1},
      {{2, 5, 7, 7}, 11, 1, 1},   {{1, 32, 7, 8}, 9, 1, 1},  {{2, 3, 10, 12}, 6, 1, 1},
      {{1, 16, 12, 13}, 5, 2, 2}, {{2, 4, 7, 7}, 3, 2, 2},   {{1, 16, 10, 6}, 17, 0, 2},
      {{2, 16, 8, 16}, 10, 1, 1}, {{1, 16, 12, 8}, 8, 1, 1},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    INFO("case ", k);
    check_winograd(cases[k], static_cast<double>(k));
  }
}

TEST_CASE("max_pool2d: padding, ceil_mode, dilation, then indices and gradient") {
  Tensor x = leaf(wave({1, 2, 5, 5}, 0.83, 0.2));
  auto [y, idx] = max_pool2d(x, {3}, {2}, {1}, {1}, true);
  expect("max_pool2d y", y);
  expect("max_pool2d indices", idx);
  CHECK(idx.dtype() == kInt64);
  expect("max_pool2d grad x", grads(y, {x})[0]);
  auto [yd, idxd] = max_pool2d(x, {2}, {1}, {0}, {2});
  expect("max_pool2d dilated y", yd);
  expect("max_pool2d dilated indices", idxd);

  // Ties: the first maximum in scan order takes the whole gradient; a NaN wins (as PyTorch).
  Tensor t = tensor(std::vector<double>{1, 3, 3, 2}, {1, 1, 2, 2}).requires_grad_();
  auto [yt, it] = max_pool2d(t, {2});
  CHECK(it.to_vector<int64_t>() == std::vector<int64_t>{1});
  CHECK(autograd::grad({sum(yt)}, {t})[0].to_vector<double>() == std::vector<double>{0, 1, 0, 0});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto [yn, in] = max_pool2d(tensor(std::vector<double>{1, nan, 3, 2}, {1, 1, 2, 2}), {2});
  CHECK(std::isnan(yn.item<double>()));
  CHECK(in.item<int64_t>() == 1);
}

// float32's 2x2 windows run four outputs per vector; float64 keeps the scalar loop. Both follow
// one rule (the first maximum in scan order wins, a NaN wins), so on the same values they give
// the same maxima and the same indices: rows of 4, of 4 plus a tail, odd sizes (the last row and
// column unused), with ties, signed zeros, infinities and NaNs.
TEST_CASE("max_pool2d: float32's vector path for 2x2 windows matches the float64 path") {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  const std::vector<Shape> shapes = {
      {2, 3, 8, 8}, {1, 2, 6, 14}, {1, 1, 5, 9}, {3, 2, 4, 20}, {1, 1, 2, 2}};
  for (const Shape& shape : shapes) {
    INFO("shape ", shape);
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (size_t k = 0; k < v.size(); ++k) {
      const uint32_t h = static_cast<uint32_t>(k) * 2654435761u >> 7;
      const float special[4] = {nan, inf, -inf, -0.0f};
      v[k] = h % 23 == 0 ? special[h / 23 % 4] : static_cast<float>(static_cast<int>(h % 5) - 2);
    }
    const Tensor x = tensor(v, shape);
    const auto [y32, i32] = max_pool2d(x, {2});
    const auto [y64, i64] = max_pool2d(x.to(kFloat64), {2});
    CHECK(i32.to_vector<int64_t>() == i64.to_vector<int64_t>());
    const std::vector<float> a = y32.to_vector<float>();
    const std::vector<double> b = y64.to_vector<double>();
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      INFO("output ", k);
      if (std::isnan(b[k])) {
        CHECK(std::isnan(a[k]));
      } else {
        CHECK(static_cast<double>(a[k]) == b[k]);
        CHECK(std::signbit(a[k]) == std::signbit(b[k]));
      }
    }
  }
}

TEST_CASE("avg_pool2d: ceil_mode, count_include_pad, divisor_override, then adaptive_avg_pool2d") {
  Tensor x = leaf(wave({1, 1, 5, 6}, 0.57, 0.1));
  expect("avg_pool2d ceil count_include_pad", avg_pool2d(x, {3}, {2}, {1}, true));
  Tensor y = avg_pool2d(x, {3}, {2}, {1}, true, false);
  expect("avg_pool2d ceil exclude pad", y);
  expect("avg_pool2d exclude pad grad x", grads(y, {x})[0]);
  expect("avg_pool2d divisor_override", avg_pool2d(x, {2, 3}, {1, 2}, {0}, false, true, 5));

  Tensor xa = leaf(wave({1, 2, 5, 7}, 0.33, 0.6));
  Tensor ya = adaptive_avg_pool2d(xa, {3, 4});
  expect("adaptive y", ya);
  expect("adaptive grad x", grads(ya, {xa})[0]);
}

TEST_CASE("adaptive_avg_pool2d: a 1x1 output is each plane's mean, any layout, then its gradient") {
  // The global pool runs on the reduction's kernel (sums in double): within a float32 rounding
  // of the exact mean, for [N, C, H, W] and [C, H, W], contiguous or channels-last strided.
  for (const DType dtype : {kFloat32, kFloat64}) {
    CAPTURE(dtype);
    const Tensor x4 = wave({3, 5, 9, 11}, 0.37, 0.4, dtype);
    const Tensor last = x4.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    for (const Tensor& x : {x4, last, x4.select(0, 1)}) {
      const Tensor y = adaptive_avg_pool2d(x, {1});
      Shape want_shape = x.shape();
      want_shape[want_shape.size() - 2] = want_shape[want_shape.size() - 1] = 1;
      REQUIRE(y.shape() == want_shape);
      const std::vector<double> got = y.to_vector<double>();
      const Tensor planes = x.to_dtype(kFloat64).contiguous().reshape({-1, 9 * 11});
      const std::vector<double> v = planes.to_vector<double>();
      for (size_t p = 0; p < got.size(); ++p) {
        long double exact = 0;
        for (size_t k = 0; k < 99; ++k) exact += v[p * 99 + k];
        exact /= 99;
        const double tol = dtype == kFloat32 ? 1e-7 : 1e-15;
        CHECK(std::fabs(got[p] - static_cast<double>(exact)) <= tol);
      }
    }
  }
  Tensor x = leaf(wave({2, 3, 4, 5}, 0.21, 0.3));
  Tensor g = grads(adaptive_avg_pool2d(x, {1, 1}), {x})[0];
  // d mean / d x_k = 1 / 20 times the output's weight, spread over each plane
  const Tensor gy = wave({2, 3, 1, 1}, 0.61, 0.2).expand({2, 3, 4, 5}) / 20.0;
  CHECK(tg_test::differs(g, gy.contiguous(), 1e-15) == "");
}

TEST_CASE("batch_norm: training updates the running stats in place, then eval uses them") {
  Tensor x = leaf(wave({3, 2, 2, 2}, 0.71, 0.4) * 2.0 + 0.5);
  Tensor w = leaf(wave({2}, 0.8, 1.0)), b = leaf(wave({2}, 0.3, 0.2));
  Tensor rm = wave({2}, 0.5, 0.1), rv = abs(wave({2}, 0.5, 0.1)) + 0.5;
  const uint64_t version = rm.version();
  Tensor y = batch_norm(x, rm, rv, w, b, true, 0.2, 1e-5);
  expect("batch_norm train y", y);
  expect("running_mean after", rm);
  expect("running_var after", rv);
  CHECK(rm.version() == version);  // as PyTorch: the update does not bump the version
  auto g = grads(y, {x, w, b});
  expect("batch_norm train grad x", g[0]);
  expect("batch_norm train grad w", g[1]);
  expect("batch_norm train grad b", g[2]);
  // Second derivatives: through batch_norm_backward's own formulas.
  auto gg = autograd::grad({sum(g[0] * g[0]) + sum(g[1] * g[1])}, {x, w});
  expect("batch_norm train d/dx sum(grad_x^2 + grad_w^2)", gg[0]);
  expect("batch_norm train d/dw sum(grad_x^2 + grad_w^2)", gg[1]);

  Tensor ye = batch_norm(x, rm, rv, w, b, false, 0.1, 1e-3);
  expect("batch_norm eval y", ye);
  auto ge = grads(ye, {x, w});
  expect("batch_norm eval grad x", ge[0]);
  expect("batch_norm eval grad w", ge[1]);
  gg = autograd::grad({sum(ge[0] * ge[0]) + sum(ge[1] * ge[1])}, {x, w});
  expect("batch_norm eval d/dx sum(grad_x^2 + grad_w^2)", gg[0]);
  expect("batch_norm eval d/dw sum(grad_x^2 + grad_w^2)", gg[1]);

  // A rejected call leaves the running stats alone.
  const std::vector<double> before = rm.to_vector<double>();
  CHECK_THROWS_AS(batch_norm(x.narrow(0, 0, 1).narrow(2, 0, 1).narrow(3, 0, 1), rm, rv, {}, {},
                             true),
                  ValueError);
  CHECK(rm.to_vector<double>() == before);
}

TEST_CASE("batch_norm: float32 gradients against PyTorch's float64 ones") {
  Tensor x = leaf((wave({3, 2, 2, 2}, 0.71, 0.4) * 2.0 + 0.5).to(kFloat32));
  Tensor w = leaf(wave({2}, 0.8, 1.0, kFloat32)), b = leaf(wave({2}, 0.3, 0.2, kFloat32));
  Tensor y = batch_norm(x, {}, {}, w, b, true, 0.2, 1e-5);
  const Tensor g = wave({3, 2, 2, 2}, 0.61, 0.2, kFloat32);
  const auto grads32 = autograd::grad({sum(y * g)}, {x, w, b});
  expect("batch_norm train grad x", grads32[0], 1e-4);
  expect("batch_norm train grad w", grads32[1], 1e-5);
  expect("batch_norm train grad b", grads32[2], 1e-5);
}

TEST_CASE("group_norm_backward: the fused kernel against the composed formula, any thread count") {
  // grad_input = rstd (g - <g> - x^ <g x^>), g = dy w, over each (sample, group); grad_weight =
  // sum(dy x^), grad_bias = sum(dy) per channel, written with public ops in float64. Data far
  // from 0 (mean 100, spread 3) so that a centring error shows; float32 within its rounding.
  const int64_t n = 3, c = 8, groups = 4;
  const Tensor x = wave({n, c, 9, 11}, 0.37, 0.1) * 3.0 + 100.0;
  const Tensor dy = wave({n, c, 9, 11}, 0.53, 0.7);
  const Tensor w = wave({c}, 0.9, 0.3) + 1.5;
  const Tensor xg = x.reshape({n, groups, -1});
  const Tensor centered = xg - mean(xg, {2}, true);
  const Tensor rstd = pow_scalar(mean(centered * centered, {2}, true) + 1e-5, -0.5);
  const Tensor xhat = centered * rstd;
  const Tensor g = (dy * w.reshape({1, c, 1, 1})).reshape({n, groups, -1});
  const Tensor want_input =
      (rstd * (g - mean(g, {2}, true) - xhat * mean(g * xhat, {2}, true))).reshape(x.shape());
  const Tensor want_weight = sum(dy * xhat.reshape(x.shape()), {0, 2, 3});
  const Tensor want_bias = sum(dy, {0, 2, 3});
  const int before = get_num_threads();
  std::vector<Tensor> first;
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    const auto [gi, gw, gb] = group_norm_backward(dy, x, groups, w, 1e-5);
    CHECK(tg_test::differs(gi, want_input, 1e-11) == "");
    CHECK(tg_test::differs(gw, want_weight, 1e-11) == "");
    CHECK(tg_test::differs(gb, want_bias, 1e-11) == "");
    const auto [fi, fw, fb] =
        group_norm_backward(dy.to(kFloat32), x.to(kFloat32), groups, w.to(kFloat32), 1e-5);
    CHECK(tg_test::differs(fi.to(kFloat64), want_input, 2e-5) == "");
    CHECK(tg_test::differs(fw.to(kFloat64), want_weight, 2e-5) == "");
    CHECK(tg_test::differs(fb.to(kFloat64), want_bias, 2e-5) == "");
    if (first.empty()) {
      first = {fi, fw, fb};
    } else {  // the same bits at every thread count
      CHECK(tg_test::differs(fi, first[0], 0) == "");
      CHECK(tg_test::differs(fw, first[1], 0) == "");
      CHECK(tg_test::differs(fb, first[2], 0) == "");
    }
  }
  set_num_threads(before);
}

TEST_CASE("group_norm saves each group's mean and rstd, and its backward takes them") {
  // Far from 0 (mean 50) with groups of different spreads: the saved statistics must be the
  // group's exact ones, and the backward given them must match the one that recomputes them.
  const int64_t n = 2, c = 6, groups = 3;
  const Tensor x =
      wave({n, c, 5, 7}, 0.41, 0.2) * (arange(c).to(kFloat64).reshape({1, c, 1, 1}) + 1.0) + 50.0;
  const Tensor dy = wave({n, c, 5, 7}, 0.29, 0.6), w = wave({c}, 0.8, 0.1) + 1.2;
  const auto [y, saved_mean, saved_rstd] = group_norm_with_internal(x, groups, w, Tensor(), 1e-5);
  const Tensor xg = x.reshape({n, groups, -1});
  const Tensor want_mean = mean(xg, {2});
  const Tensor centered = xg - want_mean.unsqueeze(2);
  const Tensor want_rstd = pow_scalar(mean(centered * centered, {2}) + 1e-5, -0.5);
  CHECK(saved_mean.shape() == Shape{n, groups});
  CHECK(tg_test::differs(saved_mean, want_mean, 1e-13) == "");
  CHECK(tg_test::differs(saved_rstd, want_rstd, 1e-13) == "");
  for (const DType dtype : {kFloat64, kFloat32}) {
    CAPTURE(dtype);
    const Tensor xt = x.to(dtype), dyt = dy.to(dtype), wt = w.to(dtype);
    const auto [yt, m, r] = group_norm_with_internal(xt, groups, wt, Tensor(), 1e-5);
    CHECK(m.dtype() == dtype);
    const auto given = group_norm_backward(dyt, xt, groups, wt, 1e-5, m, r);
    const auto recomputed = group_norm_backward(dyt, xt, groups, wt, 1e-5);
    const double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
    CHECK(tg_test::differs(std::get<0>(given), std::get<0>(recomputed), tol) == "");
    CHECK(tg_test::differs(std::get<1>(given), std::get<1>(recomputed), tol) == "");
    CHECK(tg_test::differs(std::get<2>(given), std::get<2>(recomputed), tol) == "");
  }
  // A transposed (non-contiguous) saved mean is read by index, not by memory order.
  const Tensor mean_t = saved_mean.t().contiguous().t(), rstd_t = saved_rstd.t().contiguous().t();
  CHECK(!mean_t.is_contiguous());
  const auto strided = group_norm_backward(dy, x, groups, w, 1e-5, mean_t, rstd_t);
  const auto plain = group_norm_backward(dy, x, groups, w, 1e-5, saved_mean, saved_rstd);
  CHECK(tg_test::differs(std::get<0>(strided), std::get<0>(plain), 0) == "");
}

TEST_CASE("group_norm: values and gradients") {
  Tensor x = leaf(wave({2, 4, 3}, 0.67, 0.5));
  Tensor w = leaf(wave({4}, 0.9, 0.3)), b = leaf(wave({4}, 0.4, 0.8));
  Tensor y = group_norm(x, 2, w, b);
  expect("group_norm y", y);
  auto g = grads(y, {x, w, b});
  expect("group_norm grad x", g[0]);
  expect("group_norm grad w", g[1]);
}

// The BLAS path splits a batch into chunks of images run across the pool, and sums the weight
// gradient in partial sums over consecutive chunks: a batch of many chunks (one image each, and
// several images plus a short tail) must equal the per-image results, and must not depend on the
// thread count, bit for bit.
TEST_CASE("conv2d: chunks of images and the weight gradient's partial sums, any thread count") {
  struct Case {
    std::vector<int64_t> x, w;
  };
  for (const Case& c : {Case{{5, 16, 20, 20}, {6, 16, 3, 3}}, Case{{13, 3, 10, 10}, {4, 3, 3, 3}},
                        Case{{11, 8, 12, 12}, {8, 4, 3, 3}}}) {
    const int64_t groups = c.x[1] / c.w[1];
    INFO("batch ", c.x[0], ", channels ", c.x[1], ", groups ", groups);
    const Tensor x = wave(c.x, 0.17, 0.4, kFloat32), w = wave(c.w, 0.23, 0.1, kFloat32);
    const Tensor y0 = conv2d(x, w, {}, {1, 1}, {1, 1}, {1, 1}, groups);
    const Tensor gy = wave(y0.shape().vec(), 0.31, 0.7, kFloat32);
    const auto run = [&](int threads) {
      set_num_threads(threads);
      return std::vector<Tensor>{conv2d(x, w, {}, {1, 1}, {1, 1}, {1, 1}, groups),
                                 conv_backward_input(gy, w, x.shape(), {1, 1}, {1, 1}, {1, 1},
                                                     groups),
                                 conv_backward_weight(gy, x, w.shape(), {1, 1}, {1, 1}, {1, 1},
                                                      groups)};
    };
    const int before = get_num_threads();
    const std::vector<Tensor> one = run(1), two = run(2), three = run(3);
    set_num_threads(before);
    for (size_t k = 0; k < one.size(); ++k) {
      INFO("result ", k);
      CHECK(two[k].to_vector<float>() == one[k].to_vector<float>());
      CHECK(three[k].to_vector<float>() == one[k].to_vector<float>());
    }
    // Image by image, in float64: a single chunk each.
    std::vector<Tensor> ys, gxs;
    Tensor gw = zeros(c.w, kFloat64);
    const Tensor x64 = x.to(kFloat64), w64 = w.to(kFloat64), gy64 = gy.to(kFloat64);
    for (int64_t n = 0; n < c.x[0]; ++n) {
      const Tensor xi = narrow(x64, 0, n, 1), gyi = narrow(gy64, 0, n, 1);
      ys.push_back(conv2d(xi, w64, {}, {1, 1}, {1, 1}, {1, 1}, groups));
      gxs.push_back(conv_backward_input(gyi, w64, xi.shape(), {1, 1}, {1, 1}, {1, 1}, groups));
      gw = gw + conv_backward_weight(gyi, xi, w.shape(), {1, 1}, {1, 1}, {1, 1}, groups);
    }
    const std::vector<Tensor> want = {cat(ys), cat(gxs), gw};
    for (size_t k = 0; k < want.size(); ++k) {
      INFO("result ", k);
      const std::vector<double> got = one[k].to_vector<double>(), ref = want[k].to_vector<double>();
      REQUIRE(got.size() == ref.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("element ", i, ": got ", got[i], ", expected ", ref[i]);
        CHECK(std::abs(got[i] - ref[i]) <= 1e-4 * std::max(1.0, std::abs(ref[i])));
      }
    }
  }
}
