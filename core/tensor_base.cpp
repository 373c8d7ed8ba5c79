// TensorBase and TensorImpl (metadata, creation helpers, type promotion); see tensor_base.h.
#include <tapegrad/core/tensor_base.h>

#include <tapegrad/core/checked.h>

#include <algorithm>
#include <optional>

namespace tg {

int64_t TensorBase::size(int64_t d) const { return shape()[wrap_dim("size", d, dim())]; }
int64_t TensorBase::stride(int64_t d) const { return strides()[wrap_dim("stride", d, dim())]; }

bool TensorBase::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    int64_t n = impl_->shape[i];
    if (n == 1) continue;
    if (n == 0) return true;
    if (impl_->strides[i] != expected) return false;
    expected *= n;
  }
  return true;
}

// ---- creation helpers ---------------------------------------------------------------------------

// Both are public: their sizes, strides and offsets are checked (core/checked.h) so that no
// tensor can reach outside its storage, however it was made.
TensorBase empty_strided(const Shape& shape, const Shape& strides, DType dtype, Device device) {
  TG_CHECK(shape.size() == strides.size(), ValueError, "empty_strided", "shape ", shape,
           " and strides ", strides, " have different lengths");
  const int64_t span = checked::storage_span("empty_strided", shape, strides);
  auto storage = make_storage(checked::nbytes("empty_strided", span, itemsize(dtype)), device);
  return TensorBase(make_pooled<TensorImpl>(std::move(storage), shape, strides, 0, dtype));
}

TensorBase empty_contiguous(const char* op, IntArrayRef shape, DType dtype, Device device) {
  const size_t item = itemsize(dtype);
  const int64_t n = checked::numel(op, shape, item);  // so the strides cannot overflow either
  Shape strides(shape.size());  // contiguous_strides without its overflow checks:
  int64_t stride = 1;           // the byte size checked above is at least their product
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  auto storage = make_storage(static_cast<size_t>(n) * item, device);
  return TensorBase(
      make_pooled<TensorImpl>(std::move(storage), Shape(shape), std::move(strides), 0, dtype));
}

TensorBase make_view(const TensorBase& base, Shape shape, Shape strides, int64_t offset) {
  TG_CHECK(shape.size() == strides.size(), ValueError, "make_view", "shape ", shape,
           " and strides ", strides, " have different lengths");
  checked::view_bounds("make_view", shape, strides, offset,
                       static_cast<int64_t>(base.impl()->storage->nbytes / itemsize(base.dtype())));
  auto impl = make_pooled<TensorImpl>(base.impl()->storage, std::move(shape), std::move(strides),
                                      offset, base.dtype());
  impl->view_base = base.impl()->view_base ? base.impl()->view_base : base.impl_ptr();
  return TensorBase(std::move(impl));
}

TensorBase scalar_to_tensor(const Scalar& s, Device device) {
  TensorBase t = empty_strided({}, {}, s.dtype(), Device(kCPU));
  if (s.is_floating()) {
    *t.data<double>() = s.to_double();
  } else if (s.is_bool()) {
    *t.data<bool>() = s.to<bool>();
  } else {
    *t.data<int64_t>() = s.to_int();
  }
  if (!device.is_cpu()) {  // one value: its bytes, as a host-to-device copy_data would move them
    TensorBase d = empty_strided({}, {}, s.dtype(), device);
    memcpy_between(d.data_ptr(), device, t.data_ptr(), t.device(), itemsize(s.dtype()));
    t = d;
  }
  t.impl()->is_wrapped_number = true;
  return t;
}

// ---- type promotion (PyTorch's ResultTypeState) ------------------------------------------------

namespace {
struct ResultTypeState {
  std::optional<DType> dim, zero, wrapped;
};
void promote_into(std::optional<DType>& slot, DType t) {
  slot = slot ? promote_types(*slot, t) : t;
}
void update(ResultTypeState& s, const TensorBase& t) {
  if (!t.defined()) return;
  if (t.impl()->is_wrapped_number) {
    // the default dtype for Python-like numbers
    DType d = is_floating(t.dtype()) ? kFloat32 : t.dtype();
    promote_into(s.wrapped, d);
  } else if (t.dim() == 0) {
    promote_into(s.zero, t.dtype());
  } else {
    promote_into(s.dim, t.dtype());
  }
}
std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == kBool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}
DType finish(const ResultTypeState& s) {
  auto r = combine_categories(s.dim, combine_categories(s.zero, s.wrapped));
  return r ? *r : kFloat32;
}
}  // namespace

DType result_type(std::initializer_list<const TensorBase*> tensors) {
  ResultTypeState s;
  for (const TensorBase* t : tensors) update(s, *t);
  return finish(s);
}
DType result_type(const TensorBase& a, const TensorBase& b) { return result_type({&a, &b}); }
DType result_type(const TensorBase& a, const Scalar& b) {
  ResultTypeState s;
  update(s, a);
  promote_into(s.wrapped, b.is_floating() ? kFloat32 : b.dtype());
  return finish(s);
}

}  // namespace tg
