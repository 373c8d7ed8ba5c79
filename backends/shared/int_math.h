#pragma once
// Per-element integer rules that the CPU and CUDA kernels must agree on bit for bit, written once
// for both (backends/shared/host_device.h).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "host_device.h"

namespace tg::shared {

// base^exponent. Integers: repeated squaring (wrapping on overflow, computed unsigned so that
// it is defined behaviour); a negative exponent gives 1 / base^|e| truncated to an integer (1 for
// base 1, +-1 for base -1, else 0), as PyTorch's integer pow does.
template <typename T> TG_HOST_DEVICE inline T power(T base, T exponent) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(base, exponent);
  } else {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return exponent % 2 == 0 ? 1 : -1;
      return 0;
    }
    using U = std::make_unsigned_t<T>;
    U result = 1, b = static_cast<U>(base);
    for (; exponent > 0; exponent /= 2, b *= b)
      if (exponent % 2 == 1) result *= b;
    return static_cast<T>(result);
  }
}

// The mean of a scatter/index_reduce slot holding `total` over `count` contributions; integral
// values round down (floor, as PyTorch), bool is never averaged (it runs Assign only).
template <typename T> TG_HOST_DEVICE inline T mean_divide(T total, int64_t count) {
  if constexpr (std::is_same_v<T, bool>) {
    (void)count;
    return total;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(total / static_cast<T>(count));
  } else {
    const T c = static_cast<T>(count);
    T q = static_cast<T>(total / c);
    if ((total % c != 0) && ((total < 0) != (c < 0))) --q;
    return q;
  }
}

}  // namespace tg::shared
