#include <tapegrad/autograd/inplace.h>

#include <tapegrad/autograd/meta.h>
#include <tapegrad/autograd/node.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/overlap.h>
#include <tapegrad/generated/functions.h>

namespace tg::detail {

namespace {
// History for a tensor overwritten by a value that does not depend on anything requiring grad
// (fill_, copy_ from a constant): its old history gets no gradient.
struct OverwriteBackward final : autograd::Node {
  std::vector<Tensor> apply(std::vector<Tensor>&&) override {
    return std::vector<Tensor>(next_edges.size());
  }
  const char* name() const override { return "OverwriteBackward"; }
};
}  // namespace

InplacePlan begin_inplace(const char* op, const Tensor& self,
                          std::initializer_list<const Tensor*> others) {
  TG_CHECK(self.defined(), ValueError, op, "self is an undefined tensor");
  check_inplace_overlap(op, self);
  InplacePlan plan;
  if (!GradMode::is_enabled()) return plan;
  TG_CHECK(
      !(self.is_leaf() && self.requires_grad()), ValueError, op,
      "a leaf tensor that requires grad cannot be modified in place (use a copy, or NoGradGuard)");
  plan.record = self.requires_grad() || autograd::any_requires_grad(others);
  if (plan.record) {
    bool base_requires_grad = self.is_view() && Tensor(self.impl()->view_base).requires_grad();
    TG_CHECK(!self.is_view() || !(self.requires_grad() || base_requires_grad), ValueError, op,
             "in-place on a view under autograd is not supported yet; apply the op to the base "
             "tensor or use the out-of-place form");
  }
  return plan;
}

Tensor clone_for_inplace(const Tensor& self) { return tg::clone(self); }

bool shares_storage(const Tensor& self, std::initializer_list<const Tensor*> others) {
  for (const Tensor* t : others)
    if (t->defined() && t->impl()->storage == self.impl()->storage) return true;
  return false;
}

void finish_inplace(const char* op, const Tensor& self, const Tensor& result,
                    const InplacePlan& plan) {
  TG_CHECK(result.shape() == self.shape(), ValueError, op, "the result has shape ", result.shape(),
           " but self has shape ", self.shape(), "; an in-place op cannot change self's shape");
  TG_CHECK(can_cast(result.dtype(), self.dtype()), TypeError, op, "result type ",
           dtype_name(result.dtype()), " cannot be written into self of dtype ",
           dtype_name(self.dtype()));
  if (result.impl() != self.impl()) {  // else the kernel wrote into self (apply_inplace)
    AutoGradMode no_grad(false);
    // A result that shares self's storage (a view of self) is copied first: no read-after-write.
    Tensor src = result.impl()->storage == self.impl()->storage ? tg::clone(result) : result;
    copy_data(self, src);
  }
  self.bump_version();
  if (!plan.record) return;
  AutogradMeta& meta = autograd_meta(*self.impl());
  if (result.requires_grad()) {
    meta.grad_fn = result.grad_fn();
    meta.output_nr = result.output_nr();
  } else {
    auto node = make_pooled<OverwriteBackward>();
    autograd::collect_inputs(*node, {&self});
    autograd::set_history(node, {&self});
  }
  meta.requires_grad = false;  // history, not the leaf flag, makes it require grad now
  self.impl()->keys = self.impl()->keys.add(DispatchKey::Autograd);
}

}  // namespace tg::detail
