#pragma once
// Scalar helpers usable in kernels on the GPU and in the emulation (no std:: calls that nvcc
// cannot run on the device).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime.h"

namespace tg::cuda::detail {

template <typename T> __host__ __device__ inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    (void)v;
    return false;
  }
}

// -inf / +inf for floating types, the integer limits otherwise (false / true for bool).
template <typename T> __host__ __device__ inline T lowest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}
template <typename T> __host__ __device__ inline T highest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::max();
  }
}

}  // namespace tg::cuda::detail

namespace tg::cuda::detail {

// The i-th output of a splitmix64 stream seeded with `seed`, as a double in [0, 1): the same
// function as backends/cpu/counter_random.h (dropout draws element i with it on every backend,
// so a seeded dropout gives the CPU's mask on the device).
__host__ __device__ inline double uniform_at(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace tg::cuda::detail
