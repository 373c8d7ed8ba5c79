// CUDA matmul, bmm, baddbmm and linear. Operands are broadcast over the batch dims and made
// contiguous on the device, then one batched product (linalg_kernels.cu: cuBLAS on the GPU).
#include <algorithm>

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

// A 1-d operand as a matrix: [1, k] on the left, [k, 1] on the right (a view).
Tensor as_matrix(const Tensor& t, bool left) {
  if (t.dim() != 1) return t;
  const int64_t k = t.size(0), s = t.stride(0);
  return left ? Tensor(make_view(t, {1, k}, {k * s, s}, t.storage_offset()))
              : Tensor(make_view(t, {k, 1}, {s, 1}, t.storage_offset()));
}

}  // namespace

Tensor matmul(const Tensor& self, const Tensor& other) {
  const Tensor a = as_matrix(self, true), b = as_matrix(other, false);
  const int64_t na = a.dim() - 2, nb = b.dim() - 2, nbatch = std::max(na, nb);
  Shape batch(static_cast<size_t>(nbatch), 1);
  for (int64_t d = 0; d < nbatch; ++d) {
    const int64_t sa = d - (nbatch - na) >= 0 ? a.size(d - (nbatch - na)) : 1;
    const int64_t sb = d - (nbatch - nb) >= 0 ? b.size(d - (nbatch - nb)) : 1;
    batch[static_cast<size_t>(d)] = sa == 1 ? sb : sa;  // a size-0 dim broadcast with 1 stays 0
  }
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape out_shape = batch;
  if (self.dim() > 1) out_shape.push_back(m);
  if (other.dim() > 1) out_shape.push_back(n);
  Tensor out = empty(out_shape, self.dtype(), self.device());
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
  const Tensor da = broadcast_dense(a, a_shape), db = broadcast_dense(b, b_shape);
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
