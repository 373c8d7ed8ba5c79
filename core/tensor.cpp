#include <tapegrad/core/tensor.h>

#include <cmath>
#include <iomanip>
#include <sstream>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/autograd/node.h>
#include <tapegrad/core/checked.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/factories.h>
#include <tapegrad/core/inplace.h>
#include <tapegrad/generated/functions.h>

namespace tg {

TensorImpl::TensorImpl(Storage s, Shape sh, Shape st, int64_t off, DType dt)
    : storage(std::move(s)), shape(std::move(sh)), strides(std::move(st)), offset(off), dtype(dt),
      keys(backend_key(storage->device.type)) {}
TensorImpl::~TensorImpl() = default;

AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<AutogradMeta>();
  return *autograd;
}

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim("size", d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim("stride", d, dim())]; }

bool Tensor::is_contiguous() const {
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

// ---- autograd accessors -------------------------------------------------------------------------

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  TG_CHECK(defined(), ValueError, "requires_grad_", "tensor is undefined");
  if (requires_grad) {
    TG_CHECK(is_floating(dtype()), TypeError, "requires_grad_",
             "only floating point tensors can require gradients, got ", dtype_name(dtype()));
  } else {
    TG_CHECK(is_leaf(), ValueError, "requires_grad_",
             "requires_grad can only be turned off on leaf tensors (use detach() on results of ops)");
  }
  impl_->autograd_meta().requires_grad = requires_grad;
  impl_->keys = requires_grad ? impl_->keys.add(DispatchKey::Autograd) : impl_->keys.remove(DispatchKey::Autograd);
  return *this;
}

bool Tensor::requires_grad() const {
  const auto& m = impl_->autograd;
  return m && (m->requires_grad || m->grad_fn);
}

bool Tensor::is_leaf() const { return !impl_->autograd || !impl_->autograd->grad_fn; }

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  return impl_->autograd ? impl_->autograd->grad : undefined;
}

void Tensor::set_grad(const Tensor& g) const { impl_->autograd_meta().grad = g; }

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  return impl_->autograd ? impl_->autograd->grad_fn : none;
}

uint32_t Tensor::output_nr() const { return impl_->autograd ? impl_->autograd->output_nr : 0; }

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  std::vector<Tensor> grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(impl_->storage, impl_->shape, impl_->strides, impl_->offset, impl_->dtype);
  return Tensor(std::move(impl));
}

const Tensor& Tensor::detach_() const {
  if (impl_->autograd) {
    impl_->autograd->grad_fn.reset();
    impl_->autograd->requires_grad = false;
  }
  impl_->keys = impl_->keys.remove(DispatchKey::Autograd);
  return *this;
}

void Tensor::register_hook(GradHook hook) const {
  TG_CHECK(requires_grad(), ValueError, "register_hook",
           "cannot register a hook on a tensor that does not require grad");
  if (is_leaf()) {
    impl_->autograd_meta().leaf_hooks.push_back(std::move(hook));
  } else {
    grad_fn()->pre_hooks.emplace_back(output_nr(), std::move(hook));
  }
}

void Tensor::retain_grad() const {
  TG_CHECK(requires_grad(), ValueError, "retain_grad", "cannot retain grad of a tensor that does not require grad");
  if (is_leaf() || impl_->autograd->retains_grad) return;
  impl_->autograd->retains_grad = true;
  grad_fn()->retained.emplace_back(output_nr(), impl_);
}

const Tensor& Tensor::set_name(const std::string& name) const {
  impl_->autograd_meta().name = name;
  return *this;
}

const std::string& Tensor::name() const {
  static const std::string none;
  return impl_->autograd ? impl_->autograd->name : none;
}

// ---- conversions --------------------------------------------------------------------------------

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : tg::clone(*this); }
Tensor Tensor::to(DType dtype) const { return dtype == this->dtype() ? *this : tg::to_dtype(*this, dtype); }
Tensor Tensor::to(Device device) const { return device == this->device() ? *this : tg::to_device(*this, device); }

const Tensor& Tensor::copy_(const Tensor& src) const {
  TG_CHECK(src.defined(), ValueError, "copy_", "src is undefined");
  TG_CHECK(src.device() == device() || src.impl()->is_wrapped_number, ValueError, "copy_",
           "src is on ", src.device(), " but self is on ", device(), "; use src.to(device) first");
  detail::apply_inplace("copy_", *this, {&src}, [&](const Tensor&) {
    broadcast_shapes("copy_", src.shape(), shape());  // src must broadcast to self
    return src.to(dtype()).expand(shape());
  });
  return *this;
}

const Tensor& Tensor::fill_(const Scalar& value) const {
  detail::apply_inplace("fill_", *this, {}, [&](const Tensor&) {
    return scalar_to_tensor(value, device()).to(dtype()).expand(shape());
  });
  return *this;
}

// ---- creation helpers ---------------------------------------------------------------------------

// Both are public: their sizes, strides and offsets are checked (core/checked.h) so that no
// tensor can reach outside its storage, however it was made.
Tensor empty_strided(const Shape& shape, const Shape& strides, DType dtype, Device device) {
  TG_CHECK(shape.size() == strides.size(), ValueError, "empty_strided", "shape ", shape, " and strides ",
           strides, " have different lengths");
  const int64_t span = checked::storage_span("empty_strided", shape, strides);
  auto storage = make_storage(checked::nbytes("empty_strided", span, itemsize(dtype)), device);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), shape, strides, 0, dtype));
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  TG_CHECK(shape.size() == strides.size(), ValueError, "make_view", "shape ", shape, " and strides ",
           strides, " have different lengths");
  checked::view_bounds("make_view", shape, strides, offset,
                       static_cast<int64_t>(base.impl()->storage->nbytes / itemsize(base.dtype())));
  auto impl = std::make_shared<TensorImpl>(base.impl()->storage, std::move(shape), std::move(strides), offset, base.dtype());
  impl->view_base = base.impl()->view_base ? base.impl()->view_base : base.impl_ptr();
  return Tensor(std::move(impl));
}

Tensor scalar_to_tensor(const Scalar& s, Device device) {
  Tensor t = empty_strided({}, {}, s.dtype(), Device(kCPU));
  if (s.is_floating()) {
    *t.data<double>() = s.to_double();
  } else if (s.is_bool()) {
    *t.data<bool>() = s.to<bool>();
  } else {
    *t.data<int64_t>() = s.to_int();
  }
  if (!device.is_cpu()) t = t.to(device);
  t.impl()->is_wrapped_number = true;
  return t;
}

// ---- type promotion (PyTorch's ResultTypeState) ------------------------------------------------

namespace {
struct ResultTypeState {
  std::optional<DType> dim, zero, wrapped;
};
void promote_into(std::optional<DType>& slot, DType t) { slot = slot ? promote_types(*slot, t) : t; }
void update(ResultTypeState& s, const Tensor& t) {
  if (!t.defined()) return;
  if (t.impl()->is_wrapped_number) {
    DType d = is_floating(t.dtype()) ? kFloat32 : t.dtype();  // default dtype for Python-like numbers
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

DType result_type(std::initializer_list<const Tensor*> tensors) {
  ResultTypeState s;
  for (const Tensor* t : tensors) update(s, *t);
  return finish(s);
}
DType result_type(const Tensor& a, const Tensor& b) { return result_type({&a, &b}); }
DType result_type(const Tensor& a, const Scalar& b) {
  ResultTypeState s;
  update(s, a);
  promote_into(s.wrapped, b.is_floating() ? kFloat32 : b.dtype());
  return finish(s);
}

// ---- printing (like PyTorch) --------------------------------------------------------------------

namespace detail {
double read_as_double(const Tensor& t, int64_t linear_index) {
  int64_t offset = 0, rem = linear_index;
  for (size_t i = t.shape().size(); i-- > 0;) {
    offset += (rem % t.shape()[i]) * t.strides()[i];
    rem /= t.shape()[i];
  }
  const char* base = static_cast<const char*>(t.data_ptr());
  return visit_dtype("print", t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(reinterpret_cast<const T*>(base)[offset]);
  });
}
}  // namespace detail

namespace {
struct Printer {
  const Tensor& t;
  bool floating, all_integral = true;
  int width = 1;
  std::string fmt(double v) const {
    std::ostringstream os;
    if (t.dtype() == kBool) return v != 0 ? "True" : "False";
    if (!floating) {
      os << static_cast<int64_t>(v);
    } else if (std::isnan(v)) {
      os << "nan";
    } else if (std::isinf(v)) {
      os << (v > 0 ? "inf" : "-inf");
    } else if (all_integral) {
      os << std::fixed << std::setprecision(0) << v << ".";
    } else {
      os << std::fixed << std::setprecision(4) << v;
    }
    return os.str();
  }
  void print(std::ostream& os, int64_t dim, int64_t base, int indent) const {
    const int64_t n = t.shape()[static_cast<size_t>(dim)];
    int64_t inner = 1;
    for (size_t i = static_cast<size_t>(dim) + 1; i < t.shape().size(); ++i) inner *= t.shape()[i];
    bool summarize = t.numel() > 1000 && n > 6;
    os << "[";
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && i == 3) {
        os << "...";
        i = n - 3;
        os << (dim + 1 == t.dim() ? ", " : ",\n" + std::string(static_cast<size_t>(indent + 1), ' '));
      }
      if (dim + 1 == t.dim()) {
        std::string s = fmt(detail::read_as_double(t, base + i));
        os << std::string(static_cast<size_t>(std::max<int>(0, width - static_cast<int>(s.size()))), ' ') << s;
        if (i + 1 < n) os << ", ";
      } else {
        print(os, dim + 1, base + i * inner, indent + 1);
        if (i + 1 < n) os << "," << std::string(static_cast<size_t>(t.dim() - dim - 1), '\n')
                          << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
    os << "]";
  }
};
}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t0) {
  if (!t0.defined()) return os << "tensor(undefined)";
  Tensor t = t0.device().is_cpu() ? t0 : t0.detach().to(Device(kCPU));
  Printer p{t, is_floating(t.dtype())};
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = detail::read_as_double(t, i);
    if (std::isfinite(v) && v != std::floor(v)) p.all_integral = false;
  }
  for (int64_t i = 0; i < t.numel(); ++i)
    p.width = std::max(p.width, static_cast<int>(p.fmt(detail::read_as_double(t, i)).size()));
  os << "tensor(";
  if (t.dim() == 0) {
    os << p.fmt(detail::read_as_double(t, 0));
  } else if (t.numel() == 0) {
    os << "[]";
  } else {
    p.print(os, 0, 0, 7);
  }
  if (t.numel() == 0 && t.dim() > 1) os << ", size=" << t.shape();
  if (!t0.device().is_cpu()) os << ", device='" << t0.device() << "'";
  if (t.dtype() != kFloat32 && t.dtype() != kInt64 && t.dtype() != kBool) os << ", dtype=" << dtype_name(t.dtype());
  if (t0.grad_fn()) {
    os << ", grad_fn=<" << t0.grad_fn()->name() << ">";
  } else if (t0.requires_grad()) {
    os << ", requires_grad=True";
  }
  return os << ")";
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace tg
