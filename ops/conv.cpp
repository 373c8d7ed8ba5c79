// conv1d / conv2d with padding "same" or "valid" (see conv.h), composed of the conv ops and a
// view, so gradients of every order come from those ops.
#include <tapegrad/ops/conv.h>

#include <string>
#include <vector>

#include <tapegrad/core/error.h>
#include <tapegrad/generated/functions.h>

namespace tg::detail {

namespace {

Tensor conv_op(int spatial, const Tensor& self, const Tensor& weight, const Tensor& bias,
               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return spatial == 1 ? conv1d(self, weight, bias, stride, padding, dilation, groups)
                      : conv2d(self, weight, bias, stride, padding, dilation, groups);
}

}  // namespace

Tensor conv_named_padding(const char* op, int spatial, const Tensor& self, const Tensor& weight,
                          const Tensor& bias, IntArrayRef stride, std::string_view padding,
                          IntArrayRef dilation, int64_t groups) {
  if (padding == "valid")
    return conv_op(spatial, self, weight, bias, stride, {0}, dilation, groups);
  TG_CHECK(padding == "same", ValueError, op,
           "padding must be a list of ints, 'valid' or 'same'; got '", std::string(padding), "'");
  for (int64_t s : stride)
    TG_CHECK(s == 1, ValueError, op,
             "padding='same' is not supported for strided convolutions, got stride ", stride);
  // Bad weight shapes or dilations: let the op itself say what is wrong.
  if (weight.dim() != spatial + 2 ||
      (dilation.size() != 1 && dilation.size() != static_cast<size_t>(spatial)))
    return conv_op(spatial, self, weight, bias, stride, {0}, dilation, groups);
  // Per dim, total = d * (k - 1). An odd total is padded ceil(total / 2) on both sides and the
  // first output dropped: the same windows as floor(total / 2) before and ceil(total / 2) after.
  std::vector<int64_t> pad(static_cast<size_t>(spatial));
  std::vector<bool> odd(pad.size());
  for (size_t d = 0; d < pad.size(); ++d) {
    const int64_t dil = dilation.size() == 1 ? dilation[0] : dilation[d];
    const int64_t total = dil * (weight.size(static_cast<int64_t>(d) + 2) - 1);
    pad[d] = (total + 1) / 2;
    odd[d] = total % 2 == 1;
  }
  Tensor out = conv_op(spatial, self, weight, bias, stride, pad, dilation, groups);
  for (size_t d = 0; d < pad.size(); ++d) {
    if (!odd[d]) continue;
    const int64_t dim = out.dim() - spatial + static_cast<int64_t>(d);
    out = out.narrow(dim, 1, out.size(dim) - 1);
  }
  return out;
}

}  // namespace tg::detail
