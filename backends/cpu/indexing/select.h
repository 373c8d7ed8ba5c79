#pragma once
// A branch-free select for the indexing kernels' hot loops: GCC compiles a floating `c ? a : b`
// into a jump, which a random condition (a tie, a winner, an empty slot) mispredicts half the
// time; a jump per entry costs more than the whole entry.
#include <bit>
#include <cstdint>
#include <type_traits>

namespace tg::cpu::indexing {

// c ? a : b, for floating T with a mask instead of a jump.
template <typename T> inline T pick(bool c, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const U mask = U(0) - U(c);
    return std::bit_cast<T>(
        static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
  } else {
    return c ? a : b;
  }
}

// 1 if c else 0 (floating T), e.g. to multiply a gradient by [x == result].
template <typename T> inline T one_if(bool c) { return pick(c, T(1), T(0)); }

}  // namespace tg::cpu::indexing
