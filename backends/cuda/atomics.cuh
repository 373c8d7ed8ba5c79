#pragma once
// Atomic read-modify-writes on device memory through libcu++'s cuda::atomic_ref, which compiles
// for the GPU and for the host (the emulation runs kernels on OpenMP threads, so these really
// are concurrent there too). Products, maxima and minima are compare-and-swap loops; bool adds
// are an "or".
#include <type_traits>

#include <cuda/atomic>

#include "math.cuh"

namespace tg::cuda::detail {

template <typename T> using DeviceAtomic = ::cuda::atomic_ref<T, ::cuda::thread_scope_device>;

// *p = op(*p, v), atomically.
template <typename T, typename Op> __host__ __device__ inline void atomic_apply(T* p, T v, Op op) {
  DeviceAtomic<T> ref(*p);
  T old = ref.load(::cuda::memory_order_relaxed);
  while (!ref.compare_exchange_weak(old, op(old, v), ::cuda::memory_order_relaxed)) {
  }
}

template <typename T> __host__ __device__ inline void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v) DeviceAtomic<T>(*p).store(true, ::cuda::memory_order_relaxed);
  } else {
    DeviceAtomic<T>(*p).fetch_add(v, ::cuda::memory_order_relaxed);
  }
}

template <typename T> __host__ __device__ inline void atomic_store(T* p, T v) {
  DeviceAtomic<T>(*p).store(v, ::cuda::memory_order_relaxed);
}

}  // namespace tg::cuda::detail
