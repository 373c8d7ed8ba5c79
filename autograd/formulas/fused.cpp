// The fused-or-composed switch; see fused.h.
#include <tapegrad/autograd/formulas/fused.h>

#include <tapegrad/core/grad_mode.h>

namespace tg::formulas {
namespace {
thread_local bool composed_only = false;
thread_local uint64_t fused_count = 0;
}  // namespace

bool use_fused(std::initializer_list<const Tensor*> inputs) {
  if (composed_only) return false;
  if (GradMode::is_enabled())
    for (const Tensor* t : inputs)
      if (t->defined() && t->requires_grad()) return false;
  ++fused_count;
  return true;
}

uint64_t fused_runs() { return fused_count; }

ComposedOnlyGuard::ComposedOnlyGuard() : prev_(composed_only) { composed_only = true; }
ComposedOnlyGuard::~ComposedOnlyGuard() { composed_only = prev_; }

}  // namespace tg::formulas
