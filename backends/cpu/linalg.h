#pragma once
// CPU matmul entry points beyond the registered kernel (for tests and benchmarks).
#include <tapegrad/generated/tensor.h>

namespace tg::cpu {

// matmul(self, other) computed by the portable blocked loop even when BLAS is built in; the
// registered kernel cpu::matmul uses BLAS for float32/float64 when TG_WITH_BLAS is set.
Tensor matmul_fallback(const Tensor& self, const Tensor& other);

}  // namespace tg::cpu
