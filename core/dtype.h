#pragma once
// Element types, their names and sizes, and PyTorch-style type promotion.
#include <cstdint>
#include <string>

namespace tg {

// X-macro: (enum name, C++ type, printable name). float16/bfloat16 are reserved (no kernels yet).
#define TG_FORALL_DTYPES(_)         \
  _(Bool, bool, "bool")             \
  _(Int32, int32_t, "int32")        \
  _(Int64, int64_t, "int64")        \
  _(Float16, uint16_t, "float16")   \
  _(BFloat16, uint16_t, "bfloat16") \
  _(Float32, float, "float32")      \
  _(Float64, double, "float64")

enum class DType : uint8_t {
#define TG_DTYPE_ENUM(e, t, s) e,
  TG_FORALL_DTYPES(TG_DTYPE_ENUM)
#undef TG_DTYPE_ENUM
};

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

const char* dtype_name(DType t);
// Inline: every tensor creation asks for it.
inline size_t itemsize(DType t) {
  switch (t) {
#define TG_DTYPE_SIZE(e, type, s) \
  case DType::e: return sizeof(type);
    TG_FORALL_DTYPES(TG_DTYPE_SIZE)
#undef TG_DTYPE_SIZE
  }
  return 0;
}
DType dtype_from_name(const std::string& name);  // throws ValueError for unknown names
inline bool is_floating(DType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}
inline bool is_integral(DType t, bool include_bool = false) {
  return t == kInt32 || t == kInt64 || (include_bool && t == kBool);
}
// The wider of two dtypes (bool < int32 < int64 < float16/bfloat16 < float32 < float64).
DType promote_types(DType a, DType b);
// Whether a result of type `from` may be written into a tensor of type `to` (PyTorch's rule:
// never from a higher category: float -> int or int -> bool).
bool can_cast(DType from, DType to);
std::string to_string(DType t);

template <typename T> struct TypeTag { using type = T; };
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<bool>() { return kBool; }
template <> constexpr DType dtype_of<int32_t>() { return kInt32; }
template <> constexpr DType dtype_of<int64_t>() { return kInt64; }
template <> constexpr DType dtype_of<float>() { return kFloat32; }
template <> constexpr DType dtype_of<double>() { return kFloat64; }

[[noreturn]] void throw_unsupported_dtype(const char* op, DType t);

// Calls fn(TypeTag<T>{}) with T the C++ type of `t`, for the implemented dtypes.
// Usage: visit_dtype("add", t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename Fn> decltype(auto) visit_dtype(const char* op, DType t, Fn&& fn) {
  switch (t) {
    case kBool: return fn(TypeTag<bool>{});
    case kInt32: return fn(TypeTag<int32_t>{});
    case kInt64: return fn(TypeTag<int64_t>{});
    case kFloat32: return fn(TypeTag<float>{});
    case kFloat64: return fn(TypeTag<double>{});
    default: throw_unsupported_dtype(op, t);
  }
}
// Same, floating dtypes only.
template <typename Fn> decltype(auto) visit_floating(const char* op, DType t, Fn&& fn) {
  switch (t) {
    case kFloat32: return fn(TypeTag<float>{});
    case kFloat64: return fn(TypeTag<double>{});
    default: throw_unsupported_dtype(op, t);
  }
}

}  // namespace tg
