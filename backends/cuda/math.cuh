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
