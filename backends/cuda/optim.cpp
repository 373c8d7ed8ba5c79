// The optimizers' fused device steps (core/cuda.h, tg::cuda::detail::sgd_step / adam_step):
// tensors to pointers for optim_kernels.cu. nn/optim.cpp has checked the parameters (contiguous,
// float32 / float64) and made the gradient contiguous of the parameter's dtype.
#include <initializer_list>

#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/tensor_base.h>

#include "optim_kernels.h"

namespace tg::cuda::detail {
namespace {

void* data_or_null(const TensorBase& t) { return t.defined() ? t.data_ptr() : nullptr; }

void check_operands(std::initializer_list<const TensorBase*> ts) {
  const TensorBase& p = **ts.begin();
  for (const TensorBase* t : ts)
    TG_ASSERT(!t->defined() || (t->device() == p.device() && t->dtype() == p.dtype() &&
                                t->is_contiguous() && t->numel() == p.numel()),
              "(optimizer operands: contiguous, of the parameter's device, dtype and size)");
}

}  // namespace

void sgd_step(const TensorBase& param, const TensorBase& grad, const TensorBase& momentum_buffer,
              const tg::detail::SgdStepArgs& args) {
  check_operands({&param, &grad, &momentum_buffer});
  launch_sgd_step(param.dtype(), param.data_ptr(), grad.data_ptr(), data_or_null(momentum_buffer),
                  param.numel(), args);
}

void adam_step(const TensorBase& param, const TensorBase& grad, const TensorBase& exp_avg,
               const TensorBase& exp_avg_sq, const TensorBase& max_exp_avg_sq,
               const tg::detail::AdamStepArgs& args) {
  check_operands({&param, &grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq});
  TG_ASSERT(args.amsgrad == max_exp_avg_sq.defined(), "(max_exp_avg_sq with amsgrad only)");
  launch_adam_step(param.dtype(), param.data_ptr(), grad.data_ptr(), exp_avg.data_ptr(),
                   exp_avg_sq.data_ptr(), data_or_null(max_exp_avg_sq), param.numel(), args);
}

}  // namespace tg::cuda::detail
