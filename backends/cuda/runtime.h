#pragma once
// The one place that knows whether the CUDA backend runs on a GPU (nvcc, TG_WITH_CUDA) or is
// emulated on the CPU (g++, TG_CUDA_EMULATION). Everything else in backends/cuda is written once
// against this header: kernels are __host__ __device__ functors launched through launch.cuh, and
// memory, copies and synchronisation go through the tg::cuda::detail::rt_* functions below.
#include <cstddef>
#include <cstdint>

#if defined(TG_CUDA_EMULATION)
// g++ sees the same sources: the CUDA execution-space keywords mean nothing on the host.
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#else
#include <cuda_runtime_api.h>
#endif

namespace tg::cuda::detail {

// Device memory straight from the driver (cudaMalloc, or aligned host memory in emulation):
// nullptr when it is out of memory. Used only by the caching allocator.
void* rt_malloc(size_t nbytes);
void rt_free(void* ptr);
// Free and total device memory in bytes (0, 0 when unknown).
void rt_mem_info(size_t& free_bytes, size_t& total_bytes);

// Synchronous byte copies. A device-to-host copy is a host synchronisation: it is counted, and it
// raises any error a kernel recorded on the device (device_errors.h).
void rt_copy_to_host(void* dst, const void* src, size_t nbytes);
void rt_copy_to_device(void* dst, const void* src, size_t nbytes);
void rt_copy_on_device(void* dst, const void* src, size_t nbytes);

// Counts one host synchronisation (tg::cuda::host_sync_count()).
void count_host_sync();

}  // namespace tg::cuda::detail
