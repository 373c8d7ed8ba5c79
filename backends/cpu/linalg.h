#pragma once
// CPU matmul entry points beyond the registered kernel: the blocked loop (for tests and
// benchmarks), and the scaled product baddbmm uses.
#include <optional>

#include <tapegrad/generated/tensor.h>

namespace tg::cpu {

// matmul(self, other) computed by the portable blocked loop even when BLAS is built in; the
// registered kernel cpu::matmul uses BLAS for float32/float64 when TG_WITH_BLAS is set.
Tensor matmul_fallback(const Tensor& self, const Tensor& other);

// The factors of alpha * A B + beta * C (BLAS's gemm).
struct GemmScale {
  double alpha = 1, beta = 0;
};

// alpha * matmul(self, other) + beta * addend (broadcast to the product's shape) in one BLAS call
// per product, C preset to the addend (not read when beta = 0); nullopt where the product does
// not go to BLAS (other dtypes, builds without it, sizes past int), so the caller composes it.
std::optional<Tensor> scaled_matmul_blas(const Tensor& self, const Tensor& other,
                                         const Tensor& addend, const GemmScale& scale);

}  // namespace tg::cpu
