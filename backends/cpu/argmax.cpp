// argmax / argmin: the index half of max / min (dim given), or over the flattened tensor.
#include <algorithm>
#include <tuple>

#include <tapegrad/core/error.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {
template <typename Reduce>
Tensor arg_reduce(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                  Reduce reduce) {
  if (dim) {
    const int64_t n = std::max<int64_t>(self.dim(), 1);
    TG_CHECK(*dim >= -n && *dim < n, IndexError, op, "dim ", *dim, " is out of range for a tensor with ",
             self.dim(), " dims");
    TG_CHECK(self.dim() == 0 || self.size(*dim) > 0, ValueError, op, "cannot reduce over dim ", *dim,
             " of size 0");
    return std::get<1>(reduce(self, *dim, keepdim));
  }
  TG_CHECK(self.numel() > 0, ValueError, op, "cannot reduce a tensor of size 0 (shape ", self.shape(), ")");
  Tensor index = std::get<1>(reduce(self.reshape({-1}), 0, false));
  // keepdim without a dim keeps every dim as size 1, as PyTorch.
  return keepdim ? index.reshape(Shape(static_cast<size_t>(self.dim()), 1)) : index;
}
}  // namespace

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce("argmax", self, dim, keepdim, [](auto&&... a) { return cpu::max(a...); });
}

Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce("argmin", self, dim, keepdim, [](auto&&... a) { return cpu::min(a...); });
}

}  // namespace tg::cpu
