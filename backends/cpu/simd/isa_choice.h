#pragma once
// The TG_SIMD switch, read once by each kernel set (vec_math.cpp, vec_binary.cpp): from the
// instruction sets this CPU runs, weakest first, the one TG_SIMD names, or the strongest when it
// names none of them; TG_SIMD=scalar picks none (the callers then run their generic loops).
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tg::cpu::vec {

template <typename IsaT> const IsaT* choose_isa(const std::vector<const IsaT*>& available) {
  const char* cap = std::getenv("TG_SIMD");
  if (available.empty() || (cap && std::strcmp(cap, "scalar") == 0)) return nullptr;
  for (const IsaT* isa : available)
    if (cap && std::strcmp(cap, isa->name) == 0) return isa;
  return available.back();
}

}  // namespace tg::cpu::vec
