#pragma once
// TensorBase: a handle to a TensorImpl (shape, strides, offset into shared storage, dtype) with
// everything that needs no op: metadata and raw data. Copying a handle copies the pointer; both
// see the same data.
//
// tg::Tensor is a TensorBase plus the methods that run ops and autograd (x.sum(), x.add_(y),
// x.to(kFloat64), x.backward()). Those methods are declared by the generated op layer, so Tensor
// is generated too: tools/opgen fills tools/opgen/templates/tensor.h.in into
// <tapegrad/generated/tensor.h>. Core works with TensorBase and so never depends on generated
// code; a TensorBase converts to a Tensor implicitly (same handle).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>

#include <tapegrad/core/dispatch.h>
#include <tapegrad/core/dtype.h>
#include <tapegrad/core/scalar.h>
#include <tapegrad/core/shape.h>
#include <tapegrad/core/storage.h>

namespace tg {

// A tensor's autograd state (gradient, history, hooks) is autograd's (autograd/meta.h): core
// owns it through this base, to free it with the tensor, and never looks inside.
struct AutogradMetaBase {
  virtual ~AutogradMetaBase() = default;
  // From the small-object lists (allocate_object): every tensor that records has one. The sized
  // delete gets the derived type's size through the virtual destructor.
  static void* operator new(size_t n) { return allocate_object(n); }
  static void operator delete(void* p, size_t n) noexcept { deallocate_object(p, n); }
};

struct TensorImpl {
  Storage storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = kFloat32;
  bool is_wrapped_number = false;              // a Scalar turned into a 0-d tensor (type promotion)
  DispatchKeySet keys;                         // backend key, plus Autograd when requires_grad
  std::shared_ptr<TensorImpl> view_base;       // set for views: the tensor whose storage this views
  std::unique_ptr<AutogradMetaBase> autograd;  // null until autograd records something

  // Inline: every op makes a few, and the shapes then move straight into place.
  TensorImpl(Storage s, Shape sh, Shape st, int64_t off, DType dt)
      : storage(std::move(s)), shape(std::move(sh)), strides(std::move(st)), offset(off), dtype(dt),
        keys(backend_key(storage->device.type)) {}
};

class TensorBase {
 public:
  TensorBase() = default;
  explicit TensorBase(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // Metadata
  const Shape& shape() const { return impl_->shape; }
  const Shape& strides() const { return impl_->strides; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t numel() const { return impl_->shape.numel(); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t stride(int64_t d) const;
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  int64_t storage_offset() const { return impl_->offset; }
  bool is_contiguous() const;
  bool is_view() const { return impl_->view_base != nullptr; }
  DispatchKeySet key_set() const { return impl_->keys; }
  uint64_t version() const { return impl_->storage->version; }
  void bump_version() const { ++impl_->storage->version; }
  bool is_same(const TensorBase& o) const { return impl_ == o.impl_; }

  // Raw data (CPU or device pointer), at this tensor's offset.
  void* data_ptr() const {
    return static_cast<char*>(impl_->storage->data) + impl_->offset * itemsize(impl_->dtype);
  }
  template <typename T> T* data() const { return static_cast<T*>(data_ptr()); }

 protected:
  std::shared_ptr<TensorImpl> impl_;
};

// Creation helpers used by kernels (no autograd, no checks beyond sizes).
TensorBase empty_strided(const Shape& shape, const Shape& strides, DType dtype, Device device = {});
// A fresh contiguous tensor: sizes that are negative or whose byte count overflows int64 raise a
// ValueError naming `op`, before anything is allocated. (empty_strided's checks for any layout
// cost more than this common case needs.)
TensorBase empty_contiguous(const char* op, IntArrayRef shape, DType dtype, Device device = {});
TensorBase make_view(const TensorBase& base, Shape shape, Shape strides, int64_t offset);
TensorBase scalar_to_tensor(const Scalar& s, Device device = {});  // 0-d "wrapped number"

// Type promotion over tensors (0-d tensors and wrapped numbers count only across categories).
DType result_type(std::initializer_list<const TensorBase*> tensors);
DType result_type(const TensorBase& a, const TensorBase& b);
DType result_type(const TensorBase& a, const Scalar& b);

}  // namespace tg
