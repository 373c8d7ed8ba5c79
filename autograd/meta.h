#pragma once
// AutogradMeta: a tensor's autograd state. Its TensorImpl owns it (as core's AutogradMetaBase,
// created the first time autograd needs it); only autograd reads or writes it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg {

struct AutogradMeta final : AutogradMetaBase {
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;           // null for leaves
  std::shared_ptr<autograd::Node> grad_accumulator;  // leaves: the node that fills .grad (kept)
  std::vector<GradHook> leaf_hooks;  // hooks registered before an accumulator exists
  uint32_t output_nr = 0;
  bool requires_grad = false;
  bool retains_grad = false;
  std::string name;
};

// impl's autograd state, or null when autograd never touched the tensor. Only autograd creates
// the state, always as an AutogradMeta, so the downcast is exact.
inline AutogradMeta* autograd_meta_if(const TensorImpl& impl) {
  return static_cast<AutogradMeta*>(impl.autograd.get());
}
// impl's autograd state, created on first use.
inline AutogradMeta& autograd_meta(TensorImpl& impl) {
  if (!impl.autograd) impl.autograd = std::make_unique<AutogradMeta>();
  return *autograd_meta_if(impl);
}

}  // namespace tg
