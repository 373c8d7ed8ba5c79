// Copy and conversion kernels (namespace tg::convert), backend-agnostic ("Default" in the specs):
// each allocates a fresh contiguous tensor and fills it with core/copy.h's copy_data, which
// converts dtypes and moves data between devices.
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

namespace tg::convert {

Tensor clone(const Tensor& self) {
  Tensor out = tg::empty(self.shape(), self.dtype(), self.device());
  copy_data(out, self);
  return out;
}

Tensor to_dtype(const Tensor& self, DType dtype) {
  Tensor out = tg::empty(self.shape(), dtype, self.device());
  copy_data(out, self);
  return out;
}

Tensor to_device(const Tensor& self, Device device) {
  // copy_data moves data between devices only for contiguous tensors.
  Tensor src = self.is_contiguous() ? self : convert::clone(self);
  Tensor out = tg::empty(self.shape(), self.dtype(), device);
  copy_data(out, src);
  return out;
}

}  // namespace tg::convert
