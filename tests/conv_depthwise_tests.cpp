// Depthwise convs (groups = input channels = output channels), which run plane by plane
// (backends/cpu/conv_depthwise.h): conv1d and conv2d of several kernel sizes, strides, paddings
// and dilations, forward and both gradients against their definitions summed in float64, in
// float32 and float64, and the same bits at 1 and 2 threads; taps outside the input adding
// nothing, with signed zeros and infinite weights.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "conv_reference.h"

using namespace tg;

namespace {

struct DepthwiseCase {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool conv1d, bias;  // conv1d: h = kh = 1, sh = dh = 1, ph = 0
  int64_t oh() const { return (h + 2 * ph - (kh - 1) * dh - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - (kw - 1) * dw - 1) / sw + 1; }
};

std::vector<double> wave(int64_t count, double a, double b) {
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(a * static_cast<double>(k) + b);
  return v;
}

// y, gx and gw by the definition.
ConvSums reference(const DepthwiseCase& t, const std::vector<double>& x,
                   const std::vector<double>& w, const std::vector<double>& b,
                   const std::vector<double>& gy) {
  ConvSums r(gy.size(), x.size(), w.size());
  const int64_t OH = t.oh(), OW = t.ow();
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const auto yi = static_cast<size_t>(((n * t.c + c) * OH + oh) * OW + ow);
          if (t.bias) r.bias(yi, b[static_cast<size_t>(c)]);
          for (int64_t i = 0; i < t.kh; ++i)
            for (int64_t j = 0; j < t.kw; ++j) {
              const int64_t ih = oh * t.sh - t.ph + i * t.dh, iw = ow * t.sw - t.pw + j * t.dw;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) continue;
              r.tap(yi, static_cast<size_t>(((n * t.c + c) * t.h + ih) * t.w + iw),
                    static_cast<size_t>((c * t.kh + i) * t.kw + j), x, w, gy);
            }
        }
  return r;
}

}  // namespace

TEST_CASE("depthwise convs: forward and both gradients in float32 and float64, any thread count") {
  // n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, conv1d, bias
  const std::vector<DepthwiseCase> cases = {
      {2, 5, 9, 13, 3, 3, 1, 1, 1, 1, 1, 1, false, true},    // a MobileNet 3x3
      {1, 3, 10, 21, 3, 3, 2, 2, 1, 1, 1, 1, false, false},  // stride 2
      {2, 2, 8, 9, 5, 3, 1, 3, 2, 0, 2, 1, false, true},   // 5x3, dilation 2 rows, stride 3 columns
      {1, 4, 6, 7, 2, 2, 1, 1, 3, 3, 1, 2, false, true},   // padding past the kernel's reach
      {3, 6, 1, 45, 1, 4, 1, 1, 0, 3, 1, 1, true, true},   // a causal conv1d, k = 4
      {2, 3, 1, 31, 1, 5, 1, 2, 0, 1, 1, 3, true, false},  // conv1d, stride 2, dilation 3
      {2, 3, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1, false, true},   // 1x1
      {2, 3, 12, 28, 3, 3, 1, 1, 2, 2, 2, 2, false, true},   // rows of 28, dilation 2
      {1, 2, 5, 8, 7, 5, 1, 1, 3, 2, 1, 1, false, true},     // a kernel taller than the image
      {1, 2, 3, 300, 3, 3, 1, 1, 1, 1, 1, 1, false, true},   // long rows (the stencils)
      {2, 2, 1, 40, 3, 3, 1, 1, 1, 1, 1, 1, false, true},    // one row: a third inside (the walk)
      {2, 3, 1, 1100, 1, 4, 1, 1, 0, 3, 1, 1, true, true},   // a causal conv1d on long rows
      {2, 3, 20, 37, 3, 3, 2, 2, 1, 1, 1, 1, false, true},   // stride 2 (the strided stencils)
      {1, 2, 17, 40, 3, 3, 1, 2, 1, 1, 2, 3, false, true},   // stride (1, 2), dilation (2, 3)
      {1, 2, 19, 33, 5, 4, 2, 1, 2, 1, 1, 1, false, false},  // stride (2, 1), 5x4
      {2, 2, 20, 20, 1, 1, 2, 2, 0, 0, 1, 1, false, true},   // 1x1, stride 2: untouched inputs
      {2, 3, 1, 60, 1, 3, 1, 2, 0, 1, 1, 1, true, true},     // conv1d, stride 2
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const DepthwiseCase& t = cases[k];
    INFO("case ", k);
    const double s = static_cast<double>(k);
    const Shape x_shape = t.conv1d ? Shape{t.n, t.c, t.w} : Shape{t.n, t.c, t.h, t.w};
    const Shape w_shape = t.conv1d ? Shape{t.c, 1, t.kw} : Shape{t.c, 1, t.kh, t.kw};
    const Shape y_shape = t.conv1d ? Shape{t.n, t.c, t.ow()} : Shape{t.n, t.c, t.oh(), t.ow()};
    const std::vector<double> x = wave(x_shape.numel(), 0.37 + 0.01 * s, 0.1);
    const std::vector<double> w = wave(w_shape.numel(), 0.53, 0.5 + s);
    const std::vector<double> b = wave(t.c, 1.1, 0.2), gy = wave(y_shape.numel(), 0.71, 0.3);
    const std::vector<int64_t> stride =
        t.conv1d ? std::vector<int64_t>{t.sw} : std::vector<int64_t>{t.sh, t.sw};
    const std::vector<int64_t> pad =
        t.conv1d ? std::vector<int64_t>{t.pw} : std::vector<int64_t>{t.ph, t.pw};
    const std::vector<int64_t> dil =
        t.conv1d ? std::vector<int64_t>{t.dw} : std::vector<int64_t>{t.dh, t.dw};
    for (DType dtype : {kFloat32, kFloat64}) {
      INFO(dtype_name(dtype));
      const Tensor xt = tensor(x, x_shape).to(dtype), wt = tensor(w, w_shape).to(dtype);
      const Tensor bt = t.bias ? tensor(b, {t.c}).to(dtype) : Tensor();
      const Tensor gyt = tensor(gy, y_shape).to(dtype);
      const auto run = [&](int threads) {
        set_num_threads(threads);
        const Tensor y = t.conv1d ? conv1d(xt, wt, bt, stride, pad, dil, t.c)
                                  : conv2d(xt, wt, bt, stride, pad, dil, t.c);
        return std::vector<std::vector<double>>{
            y.to_vector<double>(),
            conv_backward_input(gyt, wt, x_shape, stride, pad, dil, t.c).to_vector<double>(),
            conv_backward_weight(gyt, xt, w_shape, stride, pad, dil, t.c).to_vector<double>()};
      };
      const std::vector<std::vector<double>> one = same_at_one_and_two_threads(run);
      // The inputs as the dtype holds them, so that only the sums' rounding differs.
      const auto held = [&](const std::vector<double>& v, const Shape& shape) {
        return tensor(v, shape).to(dtype).to_vector<double>();
      };
      const ConvSums want =
          reference(t, held(x, x_shape), held(w, w_shape), held(b, Shape{t.c}), held(gy, y_shape));
      const double tol = dtype == kFloat32 ? 2e-6 : 1e-14;
      check_within_sums("y", one[0], want.y, want.y_abs, tol);
      check_within_sums("grad input", one[1], want.gx, want.gx_abs, tol);
      check_within_sums("grad weight", one[2], want.gw, want.gw_abs, tol);
    }
  }
}

// The stride-1 kernels read staged padding for the taps outside the input, made so that each such
// product is exactly -0 (which leaves a sum as it is); channels with an infinite weight keep the
// walk that skips those taps. Both must give what skipping gives.
TEST_CASE(
    "depthwise convs: taps outside the input add nothing, with signed zeros and inf weights") {
  for (DType dtype : {kFloat32, kFloat64}) {
    INFO(dtype_name(dtype));
    // -0 inputs and bias: channel 0's weights +1 (every product -0: the outputs stay -0), channel
    // 1's -1 (products +0: the outputs become +0).
    // Stride 1 and 2 (rows of 20 and 10 outputs: the stencils).
    const Tensor x = full({1, 2, 9, 20}, -0.0, dtype);
    const Tensor w = cat({ones({1, 1, 3, 3}, dtype), -ones({1, 1, 3, 3}, dtype)}, 0);
    for (int64_t stride : {1, 2}) {
      INFO("stride ", stride);
      const Tensor y = conv2d(x, w, full({2}, -0.0, dtype), {stride}, {1}, {1}, 2);
      const std::vector<double> v = y.to_vector<double>();
      const auto plane = static_cast<size_t>(y.size(2) * y.size(3));
      int64_t wrong = 0;
      for (size_t k = 0; k < v.size(); ++k) wrong += v[k] != 0 || std::signbit(v[k]) != (k < plane);
      CHECK(wrong == 0);
    }

    // An infinite weight at tap (0, 0): the corner output that tap does not reach stays finite
    // (the four inside taps of ones), as does the input gradient's opposite corner.
    std::vector<double> taps(9, 1.0);
    taps[0] = std::numeric_limits<double>::infinity();
    const Tensor winf = tensor(taps, {1, 1, 3, 3}).to(dtype);
    const Tensor ones_in = ones({1, 1, 9, 12}, dtype);
    const std::vector<double> yi =
        conv2d(ones_in, winf, Tensor(), {1}, {1}, {1}, 1).to_vector<double>();
    CHECK(yi.front() == 4.0);
    CHECK(std::isinf(yi.back()));
    const std::vector<double> gx =
        conv_backward_input(ones_in, winf, {1, 1, 9, 12}, {1}, {1}, {1}, 1).to_vector<double>();
    CHECK(gx.back() == 4.0);
    CHECK(std::isinf(gx.front()));

    // An infinite output gradient at the corner of image 0: tap (0, 0), which reads outside
    // there, keeps a finite weight gradient (88 inside positions per image, of ones), tap (1, 1)
    // reads x[0][0] there and is inf.
    std::vector<double> g(2 * 9 * 12, 1.0);
    g[0] = std::numeric_limits<double>::infinity();
    const Tensor gw =
        conv_backward_weight(tensor(g, {2, 1, 9, 12}).to(dtype), ones({2, 1, 9, 12}, dtype),
                             {1, 1, 3, 3}, {1}, {1}, {1}, 1);
    const std::vector<double> gwv = gw.to_vector<double>();
    CHECK(gwv[0] == 176.0);
    CHECK(std::isinf(gwv[4]));
  }
}
