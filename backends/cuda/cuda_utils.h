#pragma once
// Internal to the CUDA backend: error checking, device memory, and the plain-data interface
// between the Tensor-level code (*.cpp, g++ in C++20) and the kernels (*.cu, nvcc). The .cu files
// see only this header, dtype.h, scalar.h and error.h, never Tensor.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <tapegrad/core/dtype.h>
#include <tapegrad/core/scalar.h>

namespace tg::cuda::detail {

// Throws tg::Error("[op] <what> failed: <cudaGetErrorString(err)>") unless err is cudaSuccess.
void check(cudaError_t err, const char* op, const char* what);

// Runs a CUDA runtime call and throws a tg::Error naming op and the call when it fails.
#define TG_CUDA_CHECK(call, op) ::tg::cuda::detail::check((call), (op), #call)

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

// Launchers (defined in the .cu files). Pointers are device pointers already at the tensor's
// offset; n is the number of elements of the iteration shape.
// dst = convert(src), over any strides and any pair of implemented dtypes.
void launch_copy(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n,
                 const StridedLayout<2>& layout);
// Every element of dst set to value converted to dtype.
void launch_fill(void* dst, DType dtype, const Scalar& value, int64_t n,
                 const StridedLayout<1>& layout);
// out = a + alpha * b, all three of `dtype`.
void launch_add(void* out, const void* a, const void* b, DType dtype, const Scalar& alpha,
                int64_t n, const StridedLayout<3>& layout);
// out[0] = sum of the n contiguous elements of in (n > 0), both of `dtype`.
void launch_sum_all(const void* in, void* out, DType dtype, int64_t n);
// out[r] = sum of row r of a contiguous rows x cols matrix (rows, cols > 0), both of `dtype`.
void launch_sum_rows(const void* in, void* out, DType dtype, int64_t rows, int64_t cols);

}  // namespace tg::cuda::detail
