#pragma once
// Internal to the CUDA backend: error checking, device memory, and the plain-data interface
// between the Tensor-level code (*.cpp, g++ in C++20) and the kernels (*.cu, nvcc). The .cu files
// see only this header, runtime.h, dtype.h, scalar.h and error.h, never Tensor.
#include <cstddef>
#include <cstdint>

#include <tapegrad/core/dtype.h>
#include <tapegrad/core/scalar.h>

#include "runtime.h"

namespace tg::cuda::detail {

#if !defined(TG_CUDA_EMULATION)
// Throws tg::Error("[op] <what> failed: <cudaGetErrorString(err)>") unless err is cudaSuccess.
void check(cudaError_t err, const char* op, const char* what);

// Runs a CUDA runtime call and throws a tg::Error naming op and the call when it fails.
#define TG_CUDA_CHECK(call, op) ::tg::cuda::detail::check((call), (op), #call)
#endif

// Device memory from the caching allocator (stream-ordered on the default stream, so a block
// freed after queuing a kernel may be handed to the next kernel without a sync).
void* device_alloc(size_t nbytes);
void device_free(void* ptr, size_t nbytes);

// A device buffer that goes back to the caching allocator at the end of its scope.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t nbytes) : ptr_(device_alloc(nbytes)), nbytes_(nbytes) {}
  ~DeviceBuffer() { device_free(ptr_, nbytes_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_;
  size_t nbytes_;
};

// Shape and strides (in elements) of N operands that share one iteration shape, passed to
// kernels by value. Operand 0 is the output. Broadcast inputs have stride 0.
inline constexpr int kMaxDims = 8;
template <int N> struct StridedLayout {
  int ndim = 0;
  bool contiguous = true;  // every operand is row-major contiguous over `sizes`
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
};

// The elementwise ops the generic kernels compute (scalar_ops.cuh has the formulas).
enum class UnaryKind {
  Neg,
  Abs,
  Sign,
  Relu,
  Clamp,  // same dtype, no bool (Sign: any)
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Log1p,
  Expm1,
  Erf,
  Sigmoid,
  Tanh,
  Softplus,
  GeluErf,
  GeluTanh,
  LeakyRelu,  // floating
  LogicalNot  // any dtype in, bool out
};

enum class BinaryKind {
  Add,
  Sub,
  Mul,
  Div,
  Pow,  // in the compute dtype
  TanhBackward,
  ReluBackward,
  SigmoidBackward,
  GeluErfBackward,
  GeluTanhBackward,
  LeakyReluBackward,  // floating; alpha is the negative slope
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr  // bool out
};

inline constexpr bool is_bool_result(BinaryKind k) { return k >= BinaryKind::Eq; }

// Launchers (defined in the .cu files). Pointers are device pointers already at the tensor's
// offset; n is the number of elements of the iteration shape.
// dst = convert(src), over any strides and any pair of implemented dtypes.
void launch_copy(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n,
                 const StridedLayout<2>& layout);
// Every element of dst set to value converted to dtype.
void launch_fill(void* dst, DType dtype, const Scalar& value, int64_t n,
                 const StridedLayout<1>& layout);
// How a scatter-like op combines the entries of one slot (indexing_kernels.h).
enum class ScatterReduce { Assign, Sum, Prod, Mean, Amax, Amin };

// out = kind(in) with parameters p0, p1 (clamp's bounds, leaky_relu's slope); in and out of
// `dtype`, except LogicalNot whose out is bool.
void launch_unary(UnaryKind kind, void* out, const void* in, DType dtype, const Scalar& p0,
                  const Scalar& p1, int64_t n, const StridedLayout<2>& layout);
// out = kind(a, b) (alpha: add's and sub's multiplier); a, b and out of `dtype`, out bool for
// the comparison and logical kinds.
void launch_binary(BinaryKind kind, void* out, const void* a, const void* b, DType dtype,
                   const Scalar& alpha, int64_t n, const StridedLayout<3>& layout);
// out = cond ? a : b; a, b and out of `dtype`.
void launch_where(void* out, const bool* cond, const void* a, const void* b, DType dtype, int64_t n,
                  const StridedLayout<4>& layout);
// out[r] = the reduction of row r of a contiguous rows x cols matrix (rows > 0), in and out of
// `dtype`. Sum of no elements is 0, prod 1; Max / Min of no elements are -inf / +inf (the
// callers reject empty max / min before dispatch). Sum and Prod take the accumulation dtypes
// (float64, int64), Mean float64; Max and Min every dtype.
enum class ReduceKind { Sum, Mean, Prod, Max, Min };
void launch_reduce_rows(ReduceKind kind, const void* in, void* out, DType dtype, int64_t rows,
                        int64_t cols);
// values[r] = max (greater) or min of row r, indices[r] its first column (NaN wins); cols > 0.
void launch_extreme_index_rows(bool greater, const void* in, void* values, int64_t* indices,
                               DType dtype, int64_t rows, int64_t cols);

// c[b] = a[b] @ b[b] for b < batch: contiguous row-major [batch, m, k] @ [batch, k, n] ->
// [batch, m, n], all of `dtype` (m, n, k > 0).
void launch_gemm(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t m,
                 int64_t n, int64_t k);

// tril (upper false) / triu of a contiguous tensor whose last two dims are rows x cols.
void launch_triangle(bool upper, DType dtype, void* out, const void* in, int64_t n, int64_t rows,
                     int64_t cols, int64_t diagonal);
// Running sums along the middle dim of a contiguous [outer, size, inner] tensor (not bool).
void launch_cumsum(DType dtype, void* out, const void* in, int64_t outer, int64_t size,
                   int64_t inner);

// dropout over n contiguous elements with keep probability keep (0 < keep < 1).
void launch_dropout(DType dtype, void* out, bool* mask, const void* in, int64_t n, uint64_t seed,
                    double keep);

}  // namespace tg::cuda::detail
