// Batched matrix products C[b] = A[b] @ B[b] of contiguous row-major operands: cuBLAS on the GPU
// for float32 / float64 (cublasGemmStridedBatchedEx), and one thread per output element, summing
// over k in order, for integers and in the emulation.
#include <type_traits>

#include <tapegrad/core/error.h>

#include "cuda_utils.h"
#include "launch.cuh"
#include "math.cuh"

#if !defined(TG_CUDA_EMULATION)
#include <cublas_v2.h>

#include <mutex>
#endif

namespace tg::cuda::detail {
namespace {

template <typename T> struct GemmBody {
  const T* a;
  const T* b;
  T* c;
  int64_t m, n, k;
  __host__ __device__ void operator()(int64_t i) const {
    const int64_t batch = i / (m * n), row = (i / n) % m, col = i % n;
    const T* ar = a + (batch * m + row) * k;
    const T* bc = b + batch * k * n + col;
    T acc = T(0);
    for (int64_t j = 0; j < k; ++j) acc = wrapping_add(acc, wrapping_mul(ar[j], bc[j * n]));
    c[i] = acc;
  }
};

#if !defined(TG_CUDA_EMULATION)
cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) fail<Error>("matmul", "cublasCreate failed");
    return h;
  }();
  return handle;
}

template <typename T>
void cublas_gemm(const T* a, const T* b, T* c, int64_t batch, int64_t m, int64_t n, int64_t k) {
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, keep the layouts.
  constexpr bool kDouble = std::is_same_v<T, double>;
  const T one = 1, zero = 0;
  const cudaDataType_t type = kDouble ? CUDA_R_64F : CUDA_R_32F;
  const cublasStatus_t status = cublasGemmStridedBatchedEx(
      cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &one, b, type, static_cast<int>(n), k * n, a, type, static_cast<int>(k),
      m * k, &zero, c, type, static_cast<int>(n), m * n, static_cast<int>(batch),
      kDouble ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    fail<Error>("matmul", "cublasGemmStridedBatchedEx failed (status ", static_cast<int>(status),
                ")");
}
#endif

}  // namespace

void launch_gemm(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t m,
                 int64_t n, int64_t k) {
  visit_dtype("matmul", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    T* pc = static_cast<T*>(c);
#if !defined(TG_CUDA_EMULATION)
    if constexpr (std::is_floating_point_v<T>) {
      const int64_t limit = 0x7fffffff;
      if (m <= limit && n <= limit && k <= limit && batch <= limit) {
        cublas_gemm(pa, pb, pc, batch, m, n, k);
        return;
      }
    }
#endif
    launch_n("matmul", batch * m * n, GemmBody<T>{pa, pb, pc, m, n, k});
  });
}

}  // namespace tg::cuda::detail
