#pragma once
// Checked size arithmetic and defined float-to-int conversion. Sizes come from users, configs and
// files (safetensors headers): every product of sizes, sizes-times-itemsize, stride and view bound
// that tapegrad computes goes through these, so a wrapped product never becomes a small
// allocation that is then indexed as a big one. Each raises a ValueError naming `op`.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <tapegrad/core/shape.h>

namespace tg {
namespace checked {

// a * b and a + b into `out`; false (out unspecified) when the result does not fit in int64.
inline bool mul(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool add(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }

// a * b, a + b, or ValueError("[op] <what> overflows int64 (a * b)").
int64_t mul(const char* op, int64_t a, int64_t b, const char* what);
int64_t add(const char* op, int64_t a, int64_t b, const char* what);

// The sizes of a tensor that gets its own contiguous storage: every size >= 0, and the product of
// max(size, 1) times itemsize (the contiguous layout's byte span, and so its strides and numel)
// fits in int64. Returns numel.
int64_t numel(const char* op, IntArrayRef sizes, size_t itemsize);
// The sizes of a view (which may repeat elements through stride 0): every size >= 0 and numel
// fits in int64. Returns numel.
int64_t view_numel(const char* op, IntArrayRef sizes);
// Elements of storage that (sizes, strides) at offset 0 reach: 1 + the largest offset, 0 when
// numel is 0. Strides must be >= 0. Checks numel too.
int64_t storage_span(const char* op, IntArrayRef sizes, IntArrayRef strides);
// sizes * itemsize as a byte count that fits in int64.
size_t nbytes(const char* op, int64_t elements, size_t itemsize);
// That every element a view (sizes, strides, offset) reaches lies in [0, storage_elements): the
// one check behind make_view, whatever computed the view.
void view_bounds(const char* op, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 int64_t storage_elements);

}  // namespace checked

// Floating value to integer type To the way PyTorch converts on x86 (cvttss2si/cvttsd2si): the
// value truncated toward zero when that fits To, else To's lowest value (NaN, +-inf and
// out-of-range values alike). A plain static_cast is undefined behaviour for those.
template <typename To, typename From> constexpr To float_to_int(From v) {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool> &&
                std::is_floating_point_v<From>);
  // limit = 2^31 or 2^63, exact in float and double; [-limit, limit) truncates into To (values in
  // (-limit - 1, -limit) truncate to lowest(), which is the fallback anyway). The value is
  // replaced by -limit (which converts to lowest() exactly) before one unconditional conversion:
  // selecting between two conversions kept loops scalar, a branch per value, as the compiler may
  // not run a conversion (or a comparison) that could trap on a path that did not ask for it.
  constexpr From limit = -static_cast<From>(std::numeric_limits<To>::lowest());
  const bool in_range = (v >= -limit) & (v < limit);  // both compared: no branch between them
  return static_cast<To>(in_range ? v : -limit);
}

// One element converted between dtypes, as `.to()` does: to bool is `v != 0`; floating to integer
// by float_to_int; everything else a plain conversion. Kernels that read a value of another dtype
// use this, so no conversion of theirs can be undefined behaviour.
template <typename To, typename From> constexpr To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace tg
