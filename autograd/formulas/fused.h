#pragma once
// The switch between a backward rule's two forms. The composed formula, written with public ops,
// is the statement of the rule (and the form double backward records). A fused kernel computes
// the same gradients in one pass for a plain backward; it is a fast path only, held to the
// composed formula bit for bit by the op check (tg_opcheck --fused-vs-composed runs every sample
// of such an op both ways and compares). A formula with a fused kernel asks use_fused() which
// form to run.
#include <cstdint>
#include <initializer_list>

#include <tapegrad/generated/tensor.h>

namespace tg::formulas {

// Whether a formula may run its fused kernel: not while recording for double backward (grad mode
// on, some input requires grad: the fused ops are not differentiable), nor inside a
// ComposedOnlyGuard. Each true answer counts in fused_runs().
bool use_fused(std::initializer_list<const Tensor*> inputs);

// How many times use_fused() said yes on this thread: the op check learns from it whether an
// op's backward has a fused path at all.
uint64_t fused_runs();

// Inside this scope (on this thread) every formula runs its composed form.
class ComposedOnlyGuard {
 public:
  ComposedOnlyGuard();
  ~ComposedOnlyGuard();
  ComposedOnlyGuard(const ComposedOnlyGuard&) = delete;
  ComposedOnlyGuard& operator=(const ComposedOnlyGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tg::formulas
