#pragma once
// Small helpers shared by the test files.
#include <tapegrad/tapegrad.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tg_test {

// The message of the ErrorType (any tg::Error by default) that fn throws, or "" when it throws
// none.
template <typename ErrorType = tg::Error, typename Fn> std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ErrorType& e) {
    return e.what();
  }
  return "";
}

// The seeded random source of the differential (device against CPU) tests.
struct Rng {
  std::mt19937_64 gen;
  int64_t uniform(int64_t lo, int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen); }
};

// The first element where got (any device) and want differ by more than tol (0: bit for bit,
// the sign of zero included), or "" when none does; NaN matches NaN.
inline std::string differs(const tg::Tensor& got, const tg::Tensor& want, double tol) {
  if (got.defined() != want.defined()) return "one is undefined";
  if (!want.defined()) return "";
  const tg::Tensor g = got.cpu();
  if (g.shape() != want.shape() || g.dtype() != want.dtype()) return "shape or dtype";
  const std::vector<double> a = g.to_vector<double>(), b = want.to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k) {
    if (std::isnan(a[k]) && std::isnan(b[k])) continue;
    const bool same = tol == 0 ? std::signbit(a[k]) == std::signbit(b[k]) && a[k] == b[k]
                               : std::abs(a[k] - b[k]) <= tol * (1 + std::abs(b[k]));
    if (!same) {
      std::ostringstream os;
      os.precision(17);  // enough digits to show values that differ in the last bit
      os << "element " << k << ": " << a[k] << " vs " << b[k];
      return os.str();
    }
  }
  return "";
}

}  // namespace tg_test
