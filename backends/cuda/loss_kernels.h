#pragma once
// The plain-data interface of loss_kernels.cu (nll_loss, cross_entropy and their backward).
#include "cuda_utils.h"

namespace tg::cuda::detail {

struct LossArgs {
  const int64_t* target = nullptr;  // int64, one per sample
  int64_t samples = 0, classes = 0, inner = 1, ignore_index = -100;
  bool softmax = false;     // cross_entropy: log_softmax of the row first
  double eps = 0;           // label smoothing
  bool per_sample = false;  // backward: grad has one value per sample (reduction "none")
};

// loss[r], wt[r] (float64): sample r's loss and its weight w[t] (0 when ignored).
void launch_loss(const char* op, const LossArgs& a, DType dtype, const void* self,
                 const void* weight, double* loss, double* wt);
// out (zeroed, self's shape) = d loss / d self, divisor a device scalar.
void launch_loss_backward(const char* op, const LossArgs& a, DType dtype, const void* self,
                          const void* weight, const void* grad, const double* divisor, void* out);

}  // namespace tg::cuda::detail
