// Integer arithmetic that wraps modulo 2^bits on overflow, as PyTorch's integer tensors do in
// practice, without the undefined behaviour of signed overflow in C++: the operation is done on
// the unsigned type of the same width and converted back (defined since C++20). Floating types
// (and bool, whose sums saturate to true when stored) use the plain operators.
#pragma once

#include <type_traits>

namespace tg::cpu {

template <typename T> constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T> T wrapping_add(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T> T wrapping_sub(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T> T wrapping_mul(T a, T b) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return static_cast<T>(a * b);
  }
}
// -x; the most negative integer stays itself, as in two's complement.
template <typename T> T wrapping_neg(T x) {
  if constexpr (kWraps<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
  } else {
    return -x;
  }
}

}  // namespace tg::cpu
