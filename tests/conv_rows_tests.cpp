// float32 convs with 1 x k kernels and stride 1: conv1d and the 1 x k convs of conv2d, which
// run on the direct row kernels on CPUs with AVX2 + FMA (backends/cpu/conv_direct.h) and by
// im2col + GEMM elsewhere. Forward and both gradients against their definitions summed in
// float64, over geometries that reach each edge of the kernels: output channels that are not a
// multiple of the 6-channel tile, lengths that are not a multiple of the 16- or 64-position tile
// (but fill them to within 1/8, as the kernels require: the 16-position case fills only AVX2's,
// the last two run on GEMM), channel counts that split a row into several staged chunks, padding
// wider than the kernel's reach (the input gradient's padding is then negative), dilation,
// groups and rows of a conv2d; depthwise convs, whose weight gradient has a loop of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "conv_reference.h"

using namespace tg;

namespace {

std::vector<double> wave(int64_t count, double a, double b) {
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(a * static_cast<double>(k) + b);
  return v;
}

struct RowCase {
  int64_t n, c, h, w, oc, k, pad, dilation, groups;
  bool conv2d, bias;
  int64_t stride = 1;  // > 1: the GEMM path, but the depthwise weight gradient's loop
  int64_t ow() const { return (w + 2 * pad - (k - 1) * dilation - 1) / stride + 1; }
  int64_t cg() const { return c / groups; }
  Shape x_shape() const { return conv2d ? Shape{n, c, h, w} : Shape{n, c, w}; }
  Shape w_shape() const { return conv2d ? Shape{oc, cg(), 1, k} : Shape{oc, cg(), k}; }
  Shape y_shape() const { return conv2d ? Shape{n, oc, h, ow()} : Shape{n, oc, ow()}; }
};

// y, the input gradient and the weight gradient by the definition: every tap pairs
// x[n, ci, r, l * stride - pad + j * dilation], w[o, c, j] and y[n, o, r, l].
ConvSums reference(const RowCase& c, const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& b, const std::vector<double>& gy) {
  const int64_t ow = c.ow(), cg = c.cg(), ocg = c.oc / c.groups;
  ConvSums r(gy.size(), x.size(), w.size());
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.oc; ++o)
      for (int64_t row = 0; row < c.h; ++row)
        for (int64_t l = 0; l < ow; ++l) {
          const auto yi = static_cast<size_t>(((n * c.oc + o) * c.h + row) * ow + l);
          if (c.bias) r.bias(yi, b[static_cast<size_t>(o)]);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t j = 0; j < c.k; ++j) {
              const int64_t at = l * c.stride - c.pad + j * c.dilation;
              if (at < 0 || at >= c.w) continue;
              const int64_t channel = (o / ocg) * cg + ci;
              r.tap(yi, static_cast<size_t>(((n * c.c + channel) * c.h + row) * c.w + at),
                    static_cast<size_t>((o * cg + ci) * c.k + j), x, w, gy);
            }
        }
  return r;
}

}  // namespace

TEST_CASE(
    "1 x k convs in float32 (stride 1; depthwise also 3): forward and both gradients, any thread "
    "count") {
  // n, c, h, w, oc, k, pad, dilation, groups, conv2d, bias
  const std::vector<RowCase> cases = {
      {2, 5, 1, 59, 7, 3, 1, 1, 1, false, true},      // 7 = 6 + 1 channels, 59 positions
      {1, 3, 1, 62, 13, 5, 2, 2, 1, false, true},     // dilation 2
      {3, 8, 1, 63, 12, 4, 0, 1, 4, false, true},     // even kernel, 4 groups of 2 -> 3
      {2, 4, 1, 57, 6, 3, 3, 1, 1, false, false},     // padding past the kernel's reach
      {1, 520, 1, 120, 7, 2, 1, 1, 1, false, true},   // forward rows in several chunks
      {1, 7, 1, 120, 520, 2, 0, 1, 1, false, false},  // input-gradient rows in several chunks
      {2, 3, 4, 60, 5, 3, 1, 2, 1, true, true},       // a conv2d's 1 x 3 kernel over 4 rows
      {2, 6, 1, 61, 4, 2, 1, 1, 2, false, true},      // 2-tap kernel, groups
      {1, 2, 1, 16, 3, 3, 1, 1, 1, false, false},     // 16 outputs: one whole AVX2 tile
      {2, 16, 1, 124, 64, 7, 3, 1, 1, false, true},   // 64 channels
      {1, 4, 1, 250, 3, 3, 1, 1, 1, false, true},     // a 3-row block on wider tiles
      {2, 6, 1, 61, 6, 4, 3, 1, 6, false, true},      // depthwise, k = 4, padding 3
      {2, 5, 3, 57, 5, 3, 1, 2, 5, true, false},      // depthwise 1 x 3 over 3 rows, dilation 2
      {2, 4, 1, 40, 4, 5, 2, 1, 4, false, true, 3},   // depthwise, stride 3
      {2, 8, 1, 20, 9, 3, 1, 1, 1, false, true},      // rows too short for the tiles: GEMM
      {2, 6, 1, 61, 4, 1, 0, 1, 2, false, true},      // a 1-tap kernel: GEMM
  };

  for (size_t k = 0; k < cases.size(); ++k) {
    const RowCase& c = cases[k];
    INFO("case ", k);
    const double s = static_cast<double>(k);
    const std::vector<double> x = wave(c.x_shape().numel(), 0.37 + 0.01 * s, 0.1);
    const std::vector<double> w = wave(c.w_shape().numel(), 0.23, 0.5 + s);
    const std::vector<double> b = wave(c.oc, 1.1, 0.2), gy = wave(c.y_shape().numel(), 0.71, 0.3);
    const Tensor xt = tensor(x, c.x_shape()).to(kFloat32), wt = tensor(w, c.w_shape()).to(kFloat32);
    const Tensor bt = c.bias ? tensor(b, {c.oc}).to(kFloat32) : Tensor();
    const Tensor gyt = tensor(gy, c.y_shape()).to(kFloat32);
    const auto run = [&](int threads) {
      set_num_threads(threads);
      const std::vector<int64_t> stride =
          c.conv2d ? std::vector<int64_t>{1, c.stride} : std::vector<int64_t>{c.stride};
      const std::vector<int64_t> pad =
          c.conv2d ? std::vector<int64_t>{0, c.pad} : std::vector<int64_t>{c.pad};
      const std::vector<int64_t> dil =
          c.conv2d ? std::vector<int64_t>{1, c.dilation} : std::vector<int64_t>{c.dilation};
      const Tensor y = c.conv2d ? conv2d(xt, wt, bt, stride, pad, dil, c.groups)
                                : conv1d(xt, wt, bt, stride, pad, dil, c.groups);
      return std::vector<std::vector<float>>{
          y.to_vector<float>(),
          conv_backward_input(gyt, wt, c.x_shape(), stride, pad, dil, c.groups).to_vector<float>(),
          conv_backward_weight(gyt, xt, c.w_shape(), stride, pad, dil, c.groups)
              .to_vector<float>()};
    };
    const std::vector<std::vector<float>> one = same_at_one_and_two_threads(run);
    // The references use the float32-rounded inputs, so only the sums' rounding differs.
    const auto rounded = [](const std::vector<double>& v) {
      std::vector<double> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
      return out;
    };
    const ConvSums want = reference(c, rounded(x), rounded(w), rounded(b), rounded(gy));
    const auto as_double = [](const std::vector<float>& v) {
      return std::vector<double>(v.begin(), v.end());
    };
    check_within_sums("y", as_double(one[0]), want.y, want.y_abs, 2e-6);
    check_within_sums("grad input", as_double(one[1]), want.gx, want.gx_abs, 2e-6);
    check_within_sums("grad weight", as_double(one[2]), want.gw, want.gw_abs, 2e-6);
  }
}
