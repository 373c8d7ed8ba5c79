// The members of tg::Tensor that read or write autograd state or need the engine, the nodes or
// the in-place history (declared in tools/opgen/templates/tensor.h.in; defined here, in the
// autograd layer, so that nothing below autograd depends on it).
#include <sstream>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/autograd/inplace.h>
#include <tapegrad/autograd/meta.h>
#include <tapegrad/autograd/node.h>
#include <tapegrad/core/print.h>
#include <tapegrad/generated/functions.h>

namespace tg {

// ---- autograd state -----------------------------------------------------------------------------

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  TG_CHECK(defined(), ValueError, "requires_grad_", "tensor is undefined");
  if (requires_grad) {
    TG_CHECK(is_floating(dtype()), TypeError, "requires_grad_",
             "only floating point tensors can require gradients, got ", dtype_name(dtype()));
  } else {
    TG_CHECK(is_leaf(), ValueError, "requires_grad_",
             "requires_grad can only be turned off on leaf tensors "
             "(use detach() on results of ops)");
  }
  autograd_meta(*impl_).requires_grad = requires_grad;
  impl_->keys = requires_grad ? impl_->keys.add(DispatchKey::Autograd)
                              : impl_->keys.remove(DispatchKey::Autograd);
  return *this;
}

bool Tensor::requires_grad() const {
  const AutogradMeta* m = autograd_meta_if(*impl_);
  return m && (m->requires_grad || m->grad_fn);
}

bool Tensor::is_leaf() const {
  const AutogradMeta* m = autograd_meta_if(*impl_);
  return !m || !m->grad_fn;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  const AutogradMeta* m = autograd_meta_if(*impl_);
  return m ? m->grad : undefined;
}

void Tensor::set_grad(const Tensor& g) const { autograd_meta(*impl_).grad = g; }

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  const AutogradMeta* m = autograd_meta_if(*impl_);
  return m ? m->grad_fn : none;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = autograd_meta_if(*impl_);
  return m ? m->output_nr : 0;
}

const Tensor& Tensor::detach_() const {
  if (AutogradMeta* m = autograd_meta_if(*impl_)) {
    m->grad_fn.reset();
    m->requires_grad = false;
  }
  impl_->keys = impl_->keys.remove(DispatchKey::Autograd);
  return *this;
}

const Tensor& Tensor::set_name(const std::string& name) const {
  autograd_meta(*impl_).name = name;
  return *this;
}

const std::string& Tensor::name() const {
  static const std::string none;
  const AutogradMeta* m = autograd_meta_if(*impl_);
  return m ? m->name : none;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::backward(*this, gradient, retain_graph, create_graph);
}

void Tensor::register_hook(GradHook hook) const {
  TG_CHECK(requires_grad(), ValueError, "register_hook",
           "cannot register a hook on a tensor that does not require grad");
  if (is_leaf()) {
    autograd_meta(*impl_).leaf_hooks.push_back(std::move(hook));
  } else {
    grad_fn()->pre_hooks.emplace_back(output_nr(), std::move(hook));
  }
}

void Tensor::retain_grad() const {
  TG_CHECK(requires_grad(), ValueError, "retain_grad",
           "cannot retain grad of a tensor that does not require grad");
  AutogradMeta& meta = autograd_meta(*impl_);
  if (is_leaf() || meta.retains_grad) return;
  meta.retains_grad = true;
  grad_fn()->retained.emplace_back(output_nr(), impl_);
}

// ---- the hand-written in-place methods (through the in-place history) ---------------------------

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
    return Tensor(scalar_to_tensor(value, device())).to(dtype()).expand(shape());
  });
  return *this;
}

// ---- printing: core prints the values, autograd adds grad_fn or requires_grad -------------------

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  std::string note;
  if (t.defined() && t.grad_fn()) {
    note = std::string(", grad_fn=<") + t.grad_fn()->name() + ">";
  } else if (t.defined() && t.requires_grad()) {
    note = ", requires_grad=True";
  }
  print_tensor(os, t, note);
  return os;
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace tg
