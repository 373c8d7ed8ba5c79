// tg::cuda device queries, and the error check every CUDA call goes through.
#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>

#include "cuda_utils.h"

namespace tg::cuda {

namespace detail {

void check(cudaError_t err, const char* op, const char* what) {
  if (err == cudaSuccess) [[likely]]
    return;
  (void)cudaGetLastError();  // clear a non-sticky error so that later calls start clean
  fail<Error>(op, what, " failed: ", cudaGetErrorString(err));
}

}  // namespace detail

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver or no device: not an error here
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

bool is_available() { return device_count() > 0; }

void synchronize() { TG_CUDA_CHECK(cudaDeviceSynchronize(), "cuda"); }

}  // namespace tg::cuda
