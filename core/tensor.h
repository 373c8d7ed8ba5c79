#pragma once
// Tensor: a handle to a TensorImpl (shape, strides, offset into shared storage, dtype) plus the
// autograd metadata. Copying a Tensor copies the handle; both see the same data.
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include <tapegrad/core/dispatch.h>
#include <tapegrad/core/dtype.h>
#include <tapegrad/core/scalar.h>
#include <tapegrad/core/shape.h>
#include <tapegrad/core/storage.h>

namespace tg {

namespace autograd {
struct Node;
}
class Tensor;
struct AutogradMeta;
using GradHook = std::function<Tensor(const Tensor&)>;

struct TensorImpl {
  Storage storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = kFloat32;
  bool is_wrapped_number = false;        // a Scalar turned into a 0-d tensor (type promotion)
  DispatchKeySet keys;                   // backend key, plus Autograd when requires_grad
  std::shared_ptr<TensorImpl> view_base; // set for views: the tensor whose storage this views
  std::unique_ptr<AutogradMeta> autograd;

  TensorImpl(Storage s, Shape sh, Shape st, int64_t off, DType dt);
  ~TensorImpl();
  AutogradMeta& autograd_meta();  // creates it on first use
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // Metadata
  const Shape& shape() const { return impl_->shape; }
  const Shape& strides() const { return impl_->strides; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t numel() const { return impl_->shape.numel(); }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  int64_t storage_offset() const { return impl_->offset; }
  bool is_contiguous() const;
  bool is_view() const { return impl_->view_base != nullptr; }
  DispatchKeySet key_set() const { return impl_->keys; }
  uint64_t version() const { return impl_->storage->version; }
  void bump_version() const { ++impl_->storage->version; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // Raw data (CPU or device pointer), at this tensor's offset.
  void* data_ptr() const {
    return static_cast<char*>(impl_->storage->data) + impl_->offset * itemsize(impl_->dtype);
  }
  template <typename T> T* data() const { return static_cast<T*>(data_ptr()); }

  // The single value of a one-element tensor, converted to T.
  template <typename T> T item() const;
  // A row-major copy of all values, converted to T.
  template <typename T> std::vector<T> to_vector() const;

  // Autograd
  const Tensor& requires_grad_(bool requires_grad = true) const;
  bool requires_grad() const;
  bool is_leaf() const;
  const Tensor& grad() const;  // undefined tensor when no gradient was accumulated
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  uint32_t output_nr() const;
  void backward(const Tensor& gradient = {}, bool retain_graph = false,
                bool create_graph = false) const;
  Tensor detach() const;              // same data, no history, requires_grad false
  const Tensor& detach_() const;
  void register_hook(GradHook hook) const;  // hook(grad) may return a replacement or undefined
  void retain_grad() const;           // keep .grad() on a non-leaf after backward
  const Tensor& set_name(const std::string& name) const;  // label for graph pictures
  const std::string& name() const;

  // Conversions and copies
  Tensor contiguous() const;
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  Tensor to(DeviceType device) const { return to(Device(device)); }
  Tensor cpu() const { return to(kCPU); }
  Tensor cuda() const { return to(kCUDA); }
  const Tensor& copy_(const Tensor& src) const;   // broadcasting, dtype-converting copy
  const Tensor& fill_(const Scalar& value) const;
  const Tensor& zero_() const { return fill_(0); }

#include <tapegrad/generated/tensor_methods.h>

 private:
  std::shared_ptr<TensorImpl> impl_;
};

struct AutogradMeta {
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;           // null for leaves
  std::shared_ptr<autograd::Node> grad_accumulator;  // leaves: the node that fills .grad (kept)
  std::vector<GradHook> leaf_hooks;                  // hooks registered before an accumulator exists
  uint32_t output_nr = 0;
  bool requires_grad = false;
  bool retains_grad = false;
  std::string name;
};

// Creation helpers used by kernels (no autograd, no checks beyond sizes).
Tensor empty_strided(const Shape& shape, const Shape& strides, DType dtype, Device device = {});
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);
Tensor scalar_to_tensor(const Scalar& s, Device device = {});  // 0-d "wrapped number"

// Type promotion over tensors (0-d tensors and wrapped numbers count only across categories).
DType result_type(std::initializer_list<const Tensor*> tensors);
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);

std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

namespace detail {
double read_as_double(const Tensor& t, int64_t linear_index);  // CPU, row-major index
}

template <typename T> T Tensor::item() const {
  TG_CHECK(defined(), ValueError, "item", "tensor is undefined");
  TG_CHECK(numel() == 1, ValueError, "item", "expected a tensor with 1 element, got ", numel(),
           " elements (shape ", shape(), ")");
  return to_vector<T>()[0];
}

template <typename T> std::vector<T> Tensor::to_vector() const {
  TG_CHECK(defined(), ValueError, "to_vector", "tensor is undefined");
  Tensor src = device().is_cpu() ? *this : to(Device(kCPU));
  src = src.dtype() == dtype_of<T>() ? src.contiguous() : src.to(dtype_of<T>()).contiguous();
  const T* p = static_cast<const T*>(src.data_ptr());
  return std::vector<T>(p, p + numel());  // also right for std::vector<bool>
}

}  // namespace tg
