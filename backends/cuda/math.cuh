#pragma once
// Scalar helpers usable in kernels on the GPU and in the emulation (no std:: calls that nvcc
// cannot run on the device).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime.h"

namespace tg::cuda::detail {

// Integer arithmetic that wraps modulo 2^bits instead of overflowing (undefined behaviour for
// signed types): done on the unsigned type of the same width, as backends/cpu/wrapping.h does.
// Floating types and bool use the plain operators.
template <typename T> inline constexpr bool kWraps =
    std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T> __host__ __device__ inline T wrapping_add(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T> __host__ __device__ inline T wrapping_sub(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T> __host__ __device__ inline T wrapping_mul(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return static_cast<T>(a * b);
  }
}

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
