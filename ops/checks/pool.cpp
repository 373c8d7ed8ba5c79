// Checks of the 2-d pooling ops and their backward ops (kernels: backends/cpu/pool.cpp).
#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

namespace {

int64_t first_or(IntArrayRef list, size_t d) { return list.size() == 1 ? list[0] : list[d]; }

void check_list(const char* op, const char* name, IntArrayRef list, int64_t min,
                bool empty_ok = false) {
  TG_CHECK(list.size() == 1 || list.size() == 2 || (empty_ok && list.empty()), ValueError, op, name,
           " must have ", empty_ok ? "0, " : "", "1 or 2 values, got ", list.size(), " (", list,
           ")");
  for (int64_t v : list)
    TG_CHECK(v >= min, ValueError, op, name,
             min == 0 ? " must be non-negative" : " must be positive", ", got ", list);
}

// A 3-D [C, H, W] or 4-D [N, C, H, W] input whose C, H, W are not empty (N may be 0).
void check_input(const char* op, const char* name, const Shape& shape) {
  const size_t d = shape.size();
  bool ok = (d == 3 || d == 4) && shape[0] >= 0;
  for (size_t i = d == 4 ? 1 : 0; ok && i < d; ++i) ok = shape[i] > 0;
  TG_CHECK(ok, ValueError, op, "expected ", name,
           " of 3 dims [C, H, W] or 4 dims [N, C, H, W] with non-empty C, H, W, got shape ", shape);
}

PoolGeometry check_pool(const char* op, const Shape& input_shape, IntArrayRef kernel_size,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                        bool ceil_mode, const char* input_name) {
  check_input(op, input_name, input_shape);
  check_list(op, "kernel_size", kernel_size, 1);
  check_list(op, "stride", stride, 1, /*empty_ok=*/true);
  check_list(op, "padding", padding, 0);
  check_list(op, "dilation", dilation, 1);
  for (size_t d = 0; d < 2; ++d) {
    const int64_t k = first_or(kernel_size, d), p = first_or(padding, d);
    TG_CHECK(p <= k / 2, ValueError, op,
             "pad should be at most half of kernel size, but got pad=", p, " and kernel_size=", k);
  }
  const PoolGeometry g =
      pool_geometry(input_shape, kernel_size, stride, padding, dilation, ceil_mode);
  TG_CHECK(g.oh >= 1 && g.ow >= 1, ValueError, op, "given input size (", g.c, "x", g.h, "x", g.w,
           "), the calculated output size (", g.c, "x", g.oh, "x", g.ow,
           ") is too small: the (dilated) kernel does not fit in the padded input");
  return g;
}

void check_grad_output(const char* op, const Tensor& grad_output, const Shape& expected) {
  TG_CHECK(grad_output.shape() == expected, ValueError, op,
           "grad_output must have the pooling's output shape ", expected, ", got ",
           grad_output.shape());
}

}  // namespace

namespace {

// Whether every window along one dim holds at least one input element (a dilated window that
// starts in the padding can step over a small input entirely).
bool windows_hit_input(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t d) {
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    int64_t first = start < 0 ? start + ((-start + d - 1) / d) * d : start;  // first tap >= 0
    if (first > start + (k - 1) * d || first >= in) return false;
  }
  return true;
}

}  // namespace

void max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "max_pool2d";
  const PoolGeometry g =
      check_pool(op, self.shape(), kernel_size, stride, padding, dilation, ceil_mode, "self");
  TG_CHECK(windows_hit_input(g.h, g.oh, g.kh, g.sh, g.ph, g.dh) &&
               windows_hit_input(g.w, g.ow, g.kw, g.sw, g.pw, g.dw),
           ValueError, op, "a pooling window lies wholly in the padding (input ", g.h, "x", g.w,
           ", kernel ", g.kh, "x", g.kw, ", padding ", g.ph, "x", g.pw, ", dilation ", g.dh, "x",
           g.dw, ")");
}

namespace {

void check_avg(const char* op, const Shape& input_shape, IntArrayRef kernel_size,
               IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
               std::optional<int64_t> divisor_override, const char* input_name) {
  check_pool(op, input_shape, kernel_size, stride, padding, {1}, ceil_mode, input_name);
  TG_CHECK(!divisor_override || *divisor_override != 0, ValueError, op,
           "divisor_override must not be zero");
}

}  // namespace

void avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                IntArrayRef padding, bool ceil_mode, bool /*count_include_pad*/,
                std::optional<int64_t> divisor_override) {
  check_avg("avg_pool2d", self.shape(), kernel_size, stride, padding, ceil_mode, divisor_override,
            "self");
}

void avg_pool2d_backward(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                         bool /*count_include_pad*/, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool2d_backward";
  check_avg(op, Shape(input_size), kernel_size, stride, padding, ceil_mode, divisor_override,
            "input_size");
  check_grad_output(
      op, grad_output,
      pool_geometry(input_size, kernel_size, stride, padding, {1}, ceil_mode).output_shape());
}

namespace {

Shape adaptive_output_shape(const Shape& input_shape, IntArrayRef output_size) {
  Shape out = input_shape;
  const size_t d = out.size();
  out[d - 2] = first_or(output_size, 0);
  out[d - 1] = first_or(output_size, 1);
  return out;
}

}  // namespace

void adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  check_input(op, "self", self.shape());
  check_list(op, "output_size", output_size, 0);
}

void adaptive_avg_pool2d_backward(const Tensor& grad_output, IntArrayRef input_size) {
  constexpr const char* op = "adaptive_avg_pool2d_backward";
  check_input(op, "input_size", Shape(input_size));
  const Shape& g = grad_output.shape();
  TG_CHECK(g.size() == input_size.size(), ValueError, op, "grad_output must have ",
           input_size.size(), " dims like input_size ", input_size, ", got shape ", g);
  TG_CHECK(adaptive_output_shape(input_size, {g[g.size() - 2], g.back()}) == g, ValueError, op,
           "grad_output ", g, " must match input_size ", input_size,
           " in every dim but the last two");
}

}  // namespace tg::checks
