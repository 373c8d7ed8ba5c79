// CUDA matmul, bmm, baddbmm and linear. Operands are broadcast over the batch dims and made
// contiguous on the device, then one batched product (linalg_kernels.cu: cuBLAS on the GPU).
#include <algorithm>

#include <tapegrad/backends/shared/matmul_plan.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "cuda_utils.h"

namespace tg::cuda {
namespace {

// t broadcast to `shape` as a fresh contiguous tensor.
Tensor broadcast_dense(const Tensor& t, const Shape& shape) {
  Tensor out = empty(shape, t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& self, const Tensor& other) {
  const shared::MatmulPlan plan = shared::matmul_plan(self, other);
  const Shape& batch = plan.batch;
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  Tensor out = empty(plan.out_shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  if (k == 0) {
    fill_data(out, 0);
    return out;
  }
  Shape a_shape = batch, b_shape = batch;
  a_shape.push_back(m);
  a_shape.push_back(k);
  b_shape.push_back(k);
  b_shape.push_back(n);
  const Tensor da = broadcast_dense(plan.a, a_shape), db = broadcast_dense(plan.b, b_shape);
  detail::launch_gemm(self.dtype(), da.data_ptr(), db.data_ptr(), out.data_ptr(), batch.numel(), m,
                      n, k);
  return out;
}

Tensor bmm(const Tensor& self, const Tensor& mat2) { return matmul(self, mat2); }

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  Tensor result = matmul(batch1, batch2);
  // beta = 0 ignores self altogether (as BLAS and PyTorch do), so its nan and inf do not leak in.
  const bool use_self = !beta.equals(0.0);
  if ((!use_self && alpha.equals(1.0)) || result.numel() == 0) return result;
  const Tensor scaled = mul(result, scalar_to_tensor(alpha, kCPU));
  if (!use_self) return scaled;
  return add(scaled, broadcast_dense(self, result.shape()), beta);
}

Tensor linear(const Tensor& self, const Tensor& weight, const Tensor& bias) {
  const Tensor wt(make_view(weight, {weight.size(1), weight.size(0)},
                            {weight.stride(1), weight.stride(0)}, weight.storage_offset()));
  Tensor result = matmul(self, wt);
  if (!bias.defined() || result.numel() == 0) return result;
  return add(result, bias, 1);
}

}  // namespace tg::cuda
