// Accuracy of the vectorised SLEEF kernels (backends/cpu/simd/vec_math.h), for every instruction
// set this CPU runs: the maximum error in ULPs against a long-double reference, over a dense
// sweep of float32 bit patterns (every 2039th of all 2^32, kFloatStep below: positive and
// negative, normal and subnormal), a random sample of float64 bit patterns within each function's
// useful range, and the special values (+-0, +-inf, NaN, denormals, the overflow edges). The bounds
// checked here are the ones docs/SEMANTICS.md states.
#include <doctest/doctest.h>

#include <tapegrad/backends/cpu/simd/vec_math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

namespace vec = tg::cpu::vec;
using LD = long double;

LD ref_unary(vec::Unary f, LD x) {
  switch (f) {
    case vec::Unary::exp: return std::exp(x);
    case vec::Unary::log: return std::log(x);
    case vec::Unary::tanh: return std::tanh(x);
    case vec::Unary::sigmoid: return 1 / (1 + std::exp(-x));
    case vec::Unary::gelu_erf: return x / 2 * std::erfc(-x / std::sqrt(LD(2)));
    case vec::Unary::gelu_tanh: {  // x/2 (1 + tanh(u)) = x sigmoid(2u): no cancellation
      const LD u = std::sqrt(2 / LD(M_PIl)) * (x + LD(0.044715) * x * x * x);
      return x / (1 + std::exp(-2 * u));
    }
    case vec::Unary::softplus: return std::max(x, LD(0)) + std::log1p(std::exp(-std::fabs(x)));
    case vec::Unary::sqrt: return std::sqrt(x);
    case vec::Unary::log1p: return std::log1p(x);
    case vec::Unary::expm1: return std::expm1(x);
    case vec::Unary::erf: return std::erf(x);
    case vec::Unary::rsqrt: return 1 / std::sqrt(x);
    case vec::Unary::cos: return std::cos(x);
    case vec::Unary::count: break;
  }
  return 0;
}

// gelu'(x), and the larger of its two terms' magnitudes: gelu' crosses zero near x = -0.75,
// where no formula keeps a relative error, so the gradients' error is measured in ULPs of that
// scale (the error bound of a sum of two terms).
std::pair<LD, LD> ref_grad(vec::Grad f, LD x) {
  if (f == vec::Grad::gelu_erf) {
    const LD cdf = std::erfc(-x / std::sqrt(LD(2))) / 2;
    const LD xpdf = x * std::exp(-x * x / 2) / std::sqrt(2 * LD(M_PIl));
    return {cdf + xpdf, std::max(std::fabs(cdf), std::fabs(xpdf))};
  }
  // (1 + t)/2 + x/2 (1 - t^2) u' with t = tanh(u), written with s = sigmoid(2u) = (1 + t)/2
  // so that the reference itself does not cancel: s + x s (1 - s) 2u'.
  const LD b = std::sqrt(2 / LD(M_PIl)), k = 0.044715L;
  const LD u = b * (x + k * x * x * x);
  const LD sp = 1 / (1 + std::exp(-2 * u)), sm = 1 / (1 + std::exp(2 * u));
  const LD first = sp, second = x * sp * sm * 2 * b * (1 + 3 * k * x * x);
  return {first + second, std::max(std::fabs(first), std::fabs(second))};
}

// The error of `got` against `want` in units of T's last place at `want` (subnormal spacing
// below the smallest normal). NaN against NaN and equal infinities count 0; a finite result
// where the reference overflows T (or the reverse) counts as infinitely wrong.
template <typename T> double ulp_error(T got, LD want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  const LD max = std::numeric_limits<T>::max();
  // Overflow to +-inf counts as 1 ulp when the true value is within 1e-12 of T's largest (SLEEF's
  // float64 exp overflows a few inputs early, below log(DBL_MAX) by a few ulps of x).
  if (std::isinf(got) && (got > 0) == (want > 0) && std::fabs(want) > max * (1 - LD(1e-12)))
    return std::fabs(want) > max ? 0 : 1;
  if (std::isinf(got)) return std::isinf(want) && (got > 0) == (want > 0) ? 0 : INFINITY;
  int e = 0;
  std::frexp(want, &e);
  e = std::max(e, std::numeric_limits<T>::min_exponent);
  const LD ulp = std::ldexp(LD(1), e - std::numeric_limits<T>::digits);
  return static_cast<double>(std::fabs(LD(got) - want) / ulp);
}

// The error of `got` against `want` in ULPs of `scale` (at least |want|).
template <typename T> double scaled_error(T got, LD want, LD scale) {
  if (!std::isfinite(want) || !std::isfinite(got)) return ulp_error<T>(got, want);
  int e = 0;
  std::frexp(std::max(std::fabs(want), scale), &e);
  e = std::max(e, std::numeric_limits<T>::min_exponent);
  return static_cast<double>(std::fabs(LD(got) - want) /
                             std::ldexp(LD(1), e - std::numeric_limits<T>::digits));
}

template <typename T> std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {
      T(0),      -T(0),           L::infinity(),    -L::infinity(), L::quiet_NaN(), L::min(),
      -L::min(), L::denorm_min(), -L::denorm_min(), L::max(),       -L::max(),      L::epsilon(),
      T(1),      T(-1),           T(0.5),           T(-0.5),        T(2),           T(-2)};
  // the overflow / underflow edges of exp: log(max), log(min), log(denorm_min) and neighbours
  for (const T edge : {std::log(L::max()), std::log(L::min()), std::log(L::denorm_min())})
    for (const T s : {T(1), T(-1)}) {
      T x = s * edge;
      for (int k = 0; k < 4; ++k) {
        v.push_back(x);
        x = std::nextafter(x, L::infinity());
      }
      x = s * edge;
      for (int k = 0; k < 4; ++k) v.push_back(x = std::nextafter(x, -L::infinity()));
    }
  return v;
}

// The sweeps' density. Accuracy is the kernels' own property, swept densely by the plain build;
// the sanitizer build (TG_TEST_SANITIZED) checks how they touch memory, which a sparser sweep of
// the same range, special values included, checks as well in an eighth of the time.
#if defined(TG_TEST_SANITIZED)
constexpr uint64_t kFloatStep = 16381;  // prime, so the low bits vary too
constexpr int kDoubleCount = 1 << 15;
#else
constexpr uint64_t kFloatStep = 2039;
constexpr int kDoubleCount = 1 << 18;
#endif

// Dense float32 inputs: every kFloatStep-th bit pattern plus the special values.
std::vector<float> float_inputs() {
  std::vector<float> v = special_values<float>();
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += kFloatStep) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, sizeof x);
    v.push_back(x);
  }
  return v;
}

// float64 inputs: random bit patterns with exponents in [-1100, 1030) (so every binade from
// subnormal to overflow), plus the special values.
std::vector<double> double_inputs() {
  std::vector<double> v = special_values<double>();
  std::mt19937_64 rng(14);
  for (int k = 0; k < kDoubleCount; ++k) {
    const double m = static_cast<double>(rng() >> 11) * 0x1p-53 + 0.5;
    const int e = static_cast<int>(rng() % 2130) - 1100;
    v.push_back(((rng() & 1) ? -1.0 : 1.0) * std::ldexp(m, e));
  }
  for (int k = 0; k < 1 << 16; ++k)  // and the range activations see, densely
    v.push_back((static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5) * 40);
  return v;
}

struct Worst {
  double ulp = 0;
  double at = 0;
};

// The left tails of gelu and its gradients: x / sqrt(2) (erf form) or 2u (tanh form) is
// rounded to T before erfc or exp sees it, and erfc(z) magnifies a relative error of z by 2 z^2,
// exp(-v) by v; so the error grows like x^2 ulps (erf form) or like 2u ulps (tanh form) for
// negative x, where the result is already below 1e-3 |x|. The tests allow 2 x^2 and 4 |2u|
// ulps on top of the bound there; docs/SEMANTICS.md says so (3.44 |2u| measured, float64 on SSE2).
enum class Tail { none, erf, tanh };
double tail_allowance(Tail tail, double x) {
  if (!(x < 0) || std::isinf(x) || tail == Tail::none) return 0;
  if (tail == Tail::erf) return 2 * x * x;
  return 4 * std::fabs(2 * 0.7978845608 * (x + 0.044715 * x * x * x));
}

template <typename T, typename Run, typename Ref>
Worst worst_of(const std::vector<T>& x, const Run& run, const Ref& ref, Tail tail) {
  std::vector<T> y(x.size());
  run(x.data(), y.data(), static_cast<int64_t>(x.size()));
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error<T>(y[i], ref(LD(x[i]))) - tail_allowance(tail, x[i]);
    if (e > w.ulp || std::isnan(e)) w = {e, static_cast<double>(x[i])};
  }
  return w;
}

const char* unary_name(vec::Unary f) {
  static const char* const names[] = {"exp",       "log",      "tanh", "sigmoid", "gelu_erf",
                                      "gelu_tanh", "softplus", "sqrt", "log1p",   "expm1",
                                      "erf",       "rsqrt",    "cos"};
  static_assert(std::size(names) == static_cast<size_t>(vec::Unary::count));
  return names[static_cast<int>(f)];
}

}  // namespace

TEST_CASE("vec_math: max ULP error of every SLEEF kernel, every ISA this CPU runs") {
  const std::vector<const vec::Isa*> isas = vec::available();
  if (isas.empty()) {
    MESSAGE("built without SLEEF: nothing to check");
    return;
  }
  const std::vector<float> xf = float_inputs();
  const std::vector<double> xd = double_inputs();
  // {float32 bound, float64 bound} per function, in ULPs (docs/SEMANTICS.md).
  const double unary_bound[][2] = {
      {1.0, 1.0},    // exp
      {1.0, 1.0},    // log
      {1.01, 1.01},  // tanh (SLEEF's 1.0; the long-double reference blurs the last 0.001)
      {3.0, 3.0},    // sigmoid
      {4.0, 4.0},    // gelu_erf
      {4.0, 4.0},    // gelu_tanh
      {2.5, 2.5},    // softplus
      {0.5, 0.5},    // sqrt
      {1.0, 1.0},    // log1p
      {1.0, 1.0},    // expm1
      {2.0, 1.5},    // erf (1.1 with FMA; SSE2's float32 at subnormal x 1.8, float64 1.08)
      {1.5, 1.5},    // rsqrt (two correctly rounded steps)
      {1.0, 1.0},    // cos
  };
  static_assert(std::size(unary_bound) == static_cast<size_t>(vec::Unary::count));
  for (const vec::Isa* isa : isas) {
    for (int k = 0; k < static_cast<int>(vec::Unary::count); ++k) {
      const auto f = static_cast<vec::Unary>(k);
      const auto ref = [f](LD x) { return ref_unary(f, x); };
      const Tail tail = f == vec::Unary::gelu_erf    ? Tail::erf
                        : f == vec::Unary::gelu_tanh ? Tail::tanh
                                                     : Tail::none;
      const Worst wf = worst_of(xf, isa->f32.unary[k], ref, tail);
      const Worst wd = worst_of(xd, isa->f64.unary[k], ref, tail);
      const std::string what = std::string(isa->name) + " " + unary_name(f);
      MESSAGE(what << ": float32 " << wf.ulp << " ulp at " << wf.at << ", float64 " << wd.ulp
                   << " ulp at " << wd.at);
      CHECK_MESSAGE(wf.ulp <= unary_bound[k][0], what << " float32 at x = " << wf.at);
      CHECK_MESSAGE(wd.ulp <= unary_bound[k][1], what << " float64 at x = " << wd.at);
    }
  }
}

TEST_CASE("vec_math: gelu gradients, both forms, every ISA this CPU runs") {
  const std::vector<const vec::Isa*> isas = vec::available();
  if (isas.empty()) return;
  const std::vector<float> xf = float_inputs();
  const std::vector<double> xd = double_inputs();
  for (const vec::Isa* isa : isas) {
    for (int k = 0; k < static_cast<int>(vec::Grad::count); ++k) {
      const auto f = static_cast<vec::Grad>(k);
      auto run_with_unit_grad = [&](const auto& x, auto kernel) {
        using T = typename std::decay_t<decltype(x)>::value_type;
        const std::vector<T> ones(x.size(), T(1));
        std::vector<T> y(x.size());
        kernel(ones.data(), x.data(), y.data(), static_cast<int64_t>(x.size()));
        Worst w;
        for (size_t i = 0; i < x.size(); ++i) {
          const auto [want, scale] = ref_grad(f, LD(x[i]));
          const double e = scaled_error<T>(y[i], want, scale) -
                           tail_allowance(f == vec::Grad::gelu_erf ? Tail::erf : Tail::tanh,
                                          static_cast<double>(x[i]));
          if (e > w.ulp || std::isnan(e)) w = {e, static_cast<double>(x[i])};
        }
        return w;
      };
      const Worst wf = run_with_unit_grad(xf, isa->f32.grad[k]);
      const Worst wd = run_with_unit_grad(xd, isa->f64.grad[k]);
      const std::string what = std::string(isa->name) + (k == 0 ? " gelu_erf'" : " gelu_tanh'");
      MESSAGE(what << ": float32 " << wf.ulp << " ulp at " << wf.at << ", float64 " << wd.ulp
                   << " ulp at " << wd.at);
      CHECK_MESSAGE(wf.ulp <= 4.0, what << " float32 at x = " << wf.at);
      CHECK_MESSAGE(wd.ulp <= 4.0, what << " float64 at x = " << wd.at);
    }
  }
}

TEST_CASE("vec_math: pow, every ISA this CPU runs: 1 ULP, and C99's special cases") {
  const std::vector<const vec::Isa*> isas = vec::available();
  if (isas.empty()) return;
  // Every pair of the special values (and a few more exponents: odd and even integers, halves),
  // then random bases over every binade with exponents in [-40, 40], integers among them (a
  // negative base needs one), against powl.
  auto pairs = [](auto zero) {
    using T = decltype(zero);
    std::vector<T> special = special_values<T>();
    for (T e : {T(3), T(-3), T(1.5), T(-1.5), T(0.25), T(1e10), T(-1e10)}) special.push_back(e);
    std::vector<T> a, b;
    for (T x : special)
      for (T y : special) {
        a.push_back(x);
        b.push_back(y);
      }
    std::mt19937_64 rng(15);
    for (int k = 0; k < kDoubleCount; ++k) {
      const int max_e = std::numeric_limits<T>::max_exponent, span = 2 * max_e + 40;
      const T m = static_cast<T>(static_cast<double>(rng() >> 11) * 0x1p-53 + 0.5);
      const int e = static_cast<int>(rng() % static_cast<uint64_t>(span)) - max_e - 40;
      a.push_back(((rng() & 1) ? T(-1) : T(1)) * std::ldexp(m, e));
      const double y = (static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5) * 80;
      b.push_back(static_cast<T>(k % 4 == 0 ? std::round(y) : y));
    }
    return std::pair{a, b};
  };
  auto check = [](const auto& a, const auto& b, const auto& got, const std::string& what) {
    Worst w;
    int64_t zero_signs = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const LD want = std::pow(LD(a[i]), LD(b[i]));
      const double e = ulp_error(got[i], want);
      if (e > w.ulp || std::isnan(e)) w = {e, static_cast<double>(a[i])};
      zero_signs += want == 0 && std::signbit(got[i]) != std::signbit(want);
    }
    MESSAGE(what << ": " << w.ulp << " ulp at base " << w.at);
    CHECK_MESSAGE(w.ulp <= 1.0, what << " at base " << w.at);
    CHECK_MESSAGE(zero_signs == 0, what);
  };
  for (const vec::Isa* isa : isas) {
    const auto [af, bf] = pairs(0.0f);
    const auto [ad, bd] = pairs(0.0);
    std::vector<float> yf(af.size());
    std::vector<double> yd(ad.size());
    const int pow = static_cast<int>(vec::BinaryMath::pow);
    isa->f32.binary[pow](af.data(), bf.data(), yf.data(), static_cast<int64_t>(af.size()));
    isa->f64.binary[pow](ad.data(), bd.data(), yd.data(), static_cast<int64_t>(ad.size()));
    check(af, bf, yf, std::string(isa->name) + " pow float32");
    check(ad, bd, yd, std::string(isa->name) + " pow float64");
    // One exponent for every element: the same function.
    for (const float e : {0.5f, -1.0f, 3.0f, 0.0f}) {
      isa->f32.binary_scalar[pow](af.data(), e, yf.data(), static_cast<int64_t>(af.size()));
      check(af, std::vector<float>(af.size(), e), yf,
            std::string(isa->name) + " pow_scalar float32 ^" + std::to_string(e));
    }
  }
}
