// argmax / argmin: the index half of max / min (dim given), or over the flattened tensor. The
// dim and the size are checked before dispatch (ops/checks/reduce.cpp).
#include <algorithm>
#include <tuple>

#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {
template <typename Reduce>
Tensor arg_reduce(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Reduce reduce) {
  if (dim) return std::get<1>(reduce(self, *dim, keepdim));
  Tensor index = std::get<1>(reduce(self.reshape({-1}), 0, false));
  // keepdim without a dim keeps every dim as size 1, as PyTorch.
  return keepdim ? index.reshape(Shape(static_cast<size_t>(self.dim()), 1)) : index;
}
}  // namespace

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(self, dim, keepdim, [](auto&&... a) { return cpu::max(a...); });
}

Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(self, dim, keepdim, [](auto&&... a) { return cpu::min(a...); });
}

}  // namespace tg::cpu
