// Elementwise CUDA kernels: broadcasting, type promotion, then one strided kernel launch.
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"

namespace tg::cuda {
namespace {

// `t` (the operand called `name`) as a tensor of `dtype` on `device`. The only CPU tensor that
// may be mixed with CUDA tensors is a 0-d one, such as the wrapped number 2 in `x + 2`.
Tensor on_device(const char* op, const char* name, const Tensor& t, Device device, DType dtype) {
  Tensor r = t;
  if (t.device() != device) {
    TG_CHECK(t.device().is_cpu() && t.dim() == 0, ValueError, op, name, " is on ", t.device(),
             " (shape ", t.shape(), ") but the other operand is on ", device,
             "; only 0-d CPU tensors can be mixed with CUDA tensors");
    r = t.to(dtype).to(device);
  }
  return r.dtype() == dtype ? r : r.to(dtype);
}

}  // namespace

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  // alpha's type and the broadcast were checked before dispatch (ops/checks/elementwise.cpp).
  const DType dtype = result_type(self, other);
  const Shape shape = broadcast_shapes("add", self.shape(), other.shape());
  const Device device = self.device().is_cuda() ? self.device() : other.device();
  const Tensor a = on_device("add", "self", self, device, dtype);
  const Tensor b = on_device("add", "other", other, device, dtype);

  Tensor out = empty(shape, dtype, device);
  const auto layout = detail::make_layout<3>("add", shape,
                                             {out.strides(), broadcast_strides("add", a, shape),
                                              broadcast_strides("add", b, shape)});
  detail::launch_add(out.data_ptr(), a.data_ptr(), b.data_ptr(), dtype, alpha, out.numel(), layout);
  return out;
}

}  // namespace tg::cuda
