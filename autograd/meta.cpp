// The members of tg::Tensor that need the autograd engine or its nodes (declared with the rest of
// Tensor; defined here so that core never includes autograd).
#include <tapegrad/autograd/engine.h>
#include <tapegrad/autograd/node.h>

namespace tg {

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  std::vector<Tensor> grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, retain_graph, create_graph);
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

}  // namespace tg
