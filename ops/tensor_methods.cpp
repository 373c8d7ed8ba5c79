// The hand-written conversion methods of tg::Tensor (declared in
// tools/opgen/templates/tensor.h.in). They call generated ops, so they are defined here, in the
// ops layer, rather than in core.
#include <tapegrad/generated/functions.h>

namespace tg {

Tensor Tensor::detach() const {
  auto impl = make_pooled<TensorImpl>(impl_->storage, impl_->shape, impl_->strides, impl_->offset,
                                      impl_->dtype);
  return Tensor(std::move(impl));
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : tg::clone(*this); }
Tensor Tensor::to(DType dtype) const {
  return dtype == this->dtype() ? *this : tg::to_dtype(*this, dtype);
}
Tensor Tensor::to(Device device) const {
  return device == this->device() ? *this : tg::to_device(*this, device);
}

}  // namespace tg
