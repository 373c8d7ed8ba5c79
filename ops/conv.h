#pragma once
// conv1d / conv2d with padding given by name, as PyTorch's padding="same" / "valid":
//   tg::conv2d(x, w, b, {1}, "same")   // output spatial size = input's (stride must be 1)
// The generated tg::conv1d / tg::conv2d take padding as a list of ints; these overloads take any
// string-like value (a template, so that a braced list such as {0} still picks the list form).
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <tapegrad/generated/tensor.h>

namespace tg {

namespace detail {
// "valid": no padding. "same": d * (k - 1) zeros per dim, split evenly, the odd one at the end.
Tensor conv_named_padding(const char* op, int spatial, const Tensor& self, const Tensor& weight,
                          const Tensor& bias, IntArrayRef stride, std::string_view padding,
                          IntArrayRef dilation, int64_t groups);
template <typename S> inline constexpr bool is_padding_name =
    std::is_convertible_v<const S&, std::string_view>;
}  // namespace detail

template <typename S, std::enable_if_t<detail::is_padding_name<S>, int> = 0>
Tensor conv1d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = {1}, int64_t groups = 1) {
  return detail::conv_named_padding("conv1d", 1, self, weight, bias, stride, padding, dilation,
                                    groups);
}

template <typename S, std::enable_if_t<detail::is_padding_name<S>, int> = 0>
Tensor conv2d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = {1}, int64_t groups = 1) {
  return detail::conv_named_padding("conv2d", 2, self, weight, bias, stride, padding, dilation,
                                    groups);
}

}  // namespace tg
