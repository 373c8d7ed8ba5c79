// Checks of conv1d / conv2d and their backward ops (kernels: backends/cpu/conv.cpp).
#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

namespace {

void check_list(const char* op, const char* name, IntArrayRef list, int spatial, int64_t min) {
  if (spatial == 1) {
    TG_CHECK(list.size() == 1, ValueError, op, name, " must have 1 value, got ", list.size(), " (",
             list, ")");
  } else {
    TG_CHECK(list.size() == 1 || list.size() == 2, ValueError, op, name,
             " must have 1 or 2 values, got ", list.size(), " (", list, ")");
  }
  for (int64_t v : list)
    TG_CHECK(v >= min, ValueError, op, name,
             min == 0 ? " must be non-negative" : " must be positive", ", got ", list);
}

// Checks every argument of a conv of input_shape with weight_shape (dims, channels, groups,
// stride / padding / dilation values, kernel within the padded input) and returns its geometry.
ConvGeometry check_conv(const char* op, int spatial, const Shape& input_shape,
                        const Shape& weight_shape, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef dilation, int64_t groups) {
  const int64_t wdim = spatial + 2;
  TG_CHECK(static_cast<int64_t>(weight_shape.size()) == wdim, ValueError, op, "weight must be ",
           wdim, "-D [out_channels, in_channels / groups, ", spatial == 2 ? "kH, kW" : "kW",
           "], got shape ", weight_shape);
  const int64_t idim = static_cast<int64_t>(input_shape.size());
  TG_CHECK(idim == wdim || idim == wdim - 1, ValueError, op, "expected ", wdim - 1,
           "-D (unbatched) or ", wdim, "-D (batched) input, got shape ", input_shape);
  check_list(op, "stride", stride, spatial, 1);
  check_list(op, "padding", padding, spatial, 0);
  check_list(op, "dilation", dilation, spatial, 1);
  TG_CHECK(groups >= 1, ValueError, op, "groups must be positive, got ", groups);
  for (size_t d = 2; d < weight_shape.size(); ++d)
    TG_CHECK(weight_shape[d] >= 1, ValueError, op,
             "kernel sizes must be positive, got weight shape ", weight_shape);
  TG_CHECK(weight_shape[0] % groups == 0, ValueError, op,
           "out_channels (weight.size(0) = ", weight_shape[0], ") must be divisible by groups ",
           groups);
  const ConvGeometry g =
      conv_geometry(spatial, input_shape, weight_shape, stride, padding, dilation, groups);
  TG_CHECK(g.c == weight_shape[1] * groups, ValueError, op, "given groups=", groups,
           ", weight of shape ", weight_shape, ", expected input ", input_shape, " to have ",
           weight_shape[1] * groups, " channels, but got ", g.c, " channels");
  const int64_t eh = g.dh * (g.kh - 1) + 1, ew = g.dw * (g.kw - 1) + 1;
  const int64_t padded_h = g.h + 2 * g.ph, padded_w = g.w + 2 * g.pw;
  if (spatial == 2) {
    TG_CHECK(eh <= padded_h && ew <= padded_w, ValueError, op, "kernel size (", eh, " x ", ew,
             ", after dilation) can't be greater than the padded input size (", padded_h, " x ",
             padded_w, ")");
  } else {
    TG_CHECK(ew <= padded_w, ValueError, op, "kernel size (", ew,
             ", after dilation) can't be greater than the padded input size (", padded_w, ")");
  }
  return g;
}

void check_same_dtype(const char* op, const char* name, const Tensor& t, const Tensor& self,
                      const char* self_name) {
  TG_CHECK(t.dtype() == self.dtype(), TypeError, op, name, " has dtype ", dtype_name(t.dtype()),
           ", expected ", self_name, "'s dtype ", dtype_name(self.dtype()));
}

void check_forward(const char* op, int spatial, const Tensor& self, const Tensor& weight,
                   const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, int64_t groups) {
  check_same_dtype(op, "weight", weight, self, "self");
  const ConvGeometry g =
      check_conv(op, spatial, self.shape(), weight.shape(), stride, padding, dilation, groups);
  if (!bias.defined()) return;
  check_same_dtype(op, "bias", bias, self, "self");
  TG_CHECK(bias.dim() == 1 && bias.size(0) == g.oc, ValueError, op,
           "bias must have shape [out_channels] = [", g.oc, "], got ", bias.shape());
}

// The spatial dims of a backward op's conv: those of its weight (shape), which must be 3-D or 4-D.
int spatial_of(const char* op, const Shape& weight_shape) {
  TG_CHECK(weight_shape.size() == 3 || weight_shape.size() == 4, ValueError, op,
           "weight must be 3-D (conv1d) or 4-D (conv2d), got shape ", weight_shape);
  return static_cast<int>(weight_shape.size()) - 2;
}

void check_grad_output(const char* op, const Tensor& grad_output, const ConvGeometry& g) {
  TG_CHECK(grad_output.shape() == g.output_shape(), ValueError, op,
           "grad_output must have the conv's output shape ", g.output_shape(), ", got ",
           grad_output.shape());
}

}  // namespace

void conv1d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
            IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_forward("conv1d", 1, self, weight, bias, stride, padding, dilation, groups);
}

void conv2d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
            IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_forward("conv2d", 2, self, weight, bias, stride, padding, dilation, groups);
}

void conv_backward_input(const Tensor& grad_output, const Tensor& weight, IntArrayRef input_size,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                         int64_t groups) {
  constexpr const char* op = "conv_backward_input";
  check_same_dtype(op, "weight", weight, grad_output, "grad_output");
  const int spatial = spatial_of(op, weight.shape());
  for (int64_t v : input_size)
    TG_CHECK(v >= 0, ValueError, op, "input_size must be non-negative, got ", input_size);
  const ConvGeometry g =
      check_conv(op, spatial, Shape(input_size), weight.shape(), stride, padding, dilation, groups);
  check_grad_output(op, grad_output, g);
}

void conv_backward_weight(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                          int64_t groups) {
  constexpr const char* op = "conv_backward_weight";
  check_same_dtype(op, "input", input, grad_output, "grad_output");
  const int spatial = spatial_of(op, Shape(weight_size));
  for (int64_t v : weight_size)
    TG_CHECK(v >= 0, ValueError, op, "weight_size must be non-negative, got ", weight_size);
  const ConvGeometry g =
      check_conv(op, spatial, input.shape(), Shape(weight_size), stride, padding, dilation, groups);
  check_grad_output(op, grad_output, g);
}

}  // namespace tg::checks
