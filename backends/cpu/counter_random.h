#pragma once
// The counter-based draws behind dropout and the random factories: element i of a call seeded
// with `seed` draws uniform_at(seed, i), so elements can be drawn in any order and on any thread
// with one result, and every op that drops elements (dropout, scaled_dot_product_attention)
// shares one rule.
#include <cstdint>

namespace tg::cpu {

// The i-th output of a splitmix64 stream seeded with `seed` (the generator's output i + 1 after
// its state was `seed`).
inline uint64_t bits_at(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The same output as a double in [0, 1).
inline double uniform_at(uint64_t seed, uint64_t i) {
  return static_cast<double>(bits_at(seed, i) >> 11) * 0x1.0p-53;
}

}  // namespace tg::cpu
