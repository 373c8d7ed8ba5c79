#pragma once
// The plain-data interface of optim_kernels.cu: the optimizers' fused per-parameter updates.
#include <tapegrad/core/optim_step.h>

#include "cuda_utils.h"

namespace tg::cuda::detail {

// n contiguous elements of `dtype` (float32 or float64); buf may be null (no momentum).
void launch_sgd_step(DType dtype, void* param, const void* grad, void* buf, int64_t n,
                     const tg::detail::SgdStepArgs& args);
// vmax is null unless args.amsgrad.
void launch_adam_step(DType dtype, void* param, const void* grad, void* m, void* v, void* vmax,
                      int64_t n, const tg::detail::AdamStepArgs& args);

}  // namespace tg::cuda::detail
