#pragma once
// Reading the TG_* environment variables that hold a number (TG_POOL_SPIN_US,
// TG_STREAMING_MIN_BYTES).
#include <cstdint>
#include <cstdlib>
#include <optional>

namespace tg {

// The integer the environment variable `name` holds, or nothing when it is unset, empty or not
// entirely a base-10 integer (the caller then keeps its default).
inline std::optional<int64_t> env_integer(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<int64_t>(n);
}

}  // namespace tg
