#pragma once
// A number that is not a tensor: bool, integer or floating, remembering which.
#include <cstdint>
#include <ostream>
#include <type_traits>

#include <tapegrad/core/checked.h>
#include <tapegrad/core/dtype.h>

namespace tg {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool) { i_ = v; }  // NOLINT: implicit on purpose
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) {
    i_ = static_cast<int64_t>(v);
  }  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0> Scalar(T v)
      : kind_(Kind::Float) {
    d_ = static_cast<double>(v);
  }  // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating() const { return kind_ == Kind::Float; }
  // The dtype a tensor made from this scalar gets (bool, int64, float64).
  DType dtype() const { return is_floating() ? kFloat64 : is_bool() ? kBool : kInt64; }

  template <typename T> T to() const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // A NaN, inf or out-of-range double becomes T's lowest value, as tensor conversion does
      // (core/checked.h), instead of an undefined cast.
      return is_floating() ? float_to_int<T>(d_) : static_cast<T>(i_);
    } else {
      return is_floating() ? static_cast<T>(d_) : static_cast<T>(i_);
    }
  }
  double to_double() const { return to<double>(); }
  int64_t to_int() const { return to<int64_t>(); }
  Scalar operator-() const { return is_floating() ? Scalar(-d_) : Scalar(-i_); }
  bool equals(double v) const { return to_double() == v; }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace tg
