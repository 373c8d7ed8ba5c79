#pragma once
// The kernels of vec_math.h for one instruction set. Included only by vec_math_<isa>.cpp, each
// compiled with its ISA's flags: it holds nothing but templates over a traits type V (one vector
// type of one ISA: its lanes, loads and stores, and SLEEF's functions for it), so no inline code
// built for a wider ISA can be picked by the linker for a caller on a narrower one.
//
// Every formula is written once, in the vector types' own arithmetic (GCC vector extensions:
// +, -, *, / and scalars broadcast), so the ISAs differ only by lane count and SLEEF's kernels.
#include <tapegrad/backends/cpu/simd/vec_math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace tg::cpu::vec::impl {

// |x| by clearing the sign bits (and the traits' fmin/fmax below by compare-and-select), inline:
// SLEEF's fabs/fmin are calls through the PLT, and two of them per vector (in gelu's Phi and the
// sigmoids) spilled the registers around each call and kept the core from overlapping one
// vector's long chains with the next's. The selects return b when a or b is NaN (SLEEF's
// fmin/fmax return the other operand); every caller passes a constant b, so the results are the
// same.
template <class Vec> inline Vec clear_sign(Vec x) {
  using BitsVec = decltype(x < x);  // the integer vector of the same lanes
  using Bits = std::remove_cvref_t<decltype(BitsVec{}[0])>;
  return reinterpret_cast<Vec>(reinterpret_cast<BitsVec>(x) & std::numeric_limits<Bits>::max());
}

// Full vectors straight from the arrays; the tail through a zero-padded vector (the padding
// lanes' results are dropped), so the tail's elements take exactly the same instructions.
// Two vectors per iteration where there are two: the inline kernels (gelu's Phi, the sigmoids)
// are long dependency chains, and with two in one block the compiler's scheduler
// (-fschedule-insns in CMakeLists.txt) interleaves them, which a core with a small window
// (Zen 1) does not do by itself across iterations.
template <class V, class Op> void unary_loop(const typename V::T* x, typename V::T* y, int64_t n) {
  using T = typename V::T;
  int64_t i = 0;
  for (; i + 2 * V::W <= n; i += 2 * V::W) {
    const typename V::Vec a = Op::template f<V>(V::load(x + i));
    const typename V::Vec b = Op::template f<V>(V::load(x + i + V::W));
    V::store(y + i, a);
    V::store(y + i + V::W, b);
  }
  for (; i + V::W <= n; i += V::W) V::store(y + i, Op::template f<V>(V::load(x + i)));
  if (i < n) {
    T buf[V::W] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(T));
    V::store(buf, Op::template f<V>(V::load(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(T));
  }
}

// Op::f(a, b) over two arrays (a binary function, or an activation's g * f'(x)).
template <class V, class Op>
void binary_loop(const typename V::T* g, const typename V::T* x, typename V::T* out, int64_t n) {
  using T = typename V::T;
  int64_t i = 0;
  for (; i + 2 * V::W <= n; i += 2 * V::W) {  // two per iteration, as in unary_loop
    const typename V::Vec a = Op::template f<V>(V::load(g + i), V::load(x + i));
    const typename V::Vec b = Op::template f<V>(V::load(g + i + V::W), V::load(x + i + V::W));
    V::store(out + i, a);
    V::store(out + i + V::W, b);
  }
  for (; i + V::W <= n; i += V::W)
    V::store(out + i, Op::template f<V>(V::load(g + i), V::load(x + i)));
  if (i < n) {
    T gb[V::W] = {}, xb[V::W] = {};
    const size_t bytes = static_cast<size_t>(n - i) * sizeof(T);
    std::memcpy(gb, g + i, bytes);
    std::memcpy(xb, x + i, bytes);
    V::store(gb, Op::template f<V>(V::load(gb), V::load(xb)));
    std::memcpy(out + i, gb, bytes);
  }
}

// Op::f(a, b) with one b for every element.
template <class V, class Op>
void binary_scalar_loop(const typename V::T* a, typename V::T b, typename V::T* out, int64_t n) {
  using T = typename V::T;
  const typename V::Vec bv = typename V::Vec{} + b;
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out + i, Op::template f<V>(V::load(a + i), bv));
  if (i < n) {
    T buf[V::W] = {};
    std::memcpy(buf, a + i, static_cast<size_t>(n - i) * sizeof(T));
    V::store(buf, Op::template f<V>(V::load(buf), bv));
    std::memcpy(out + i, buf, static_cast<size_t>(n - i) * sizeof(T));
  }
}

// sqrt(2/pi) and 0.044715: the tanh form of gelu (PyTorch's approximate="tanh").
inline constexpr double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5;
inline constexpr double kKappa = 0.044715;

struct Exp {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::exp(x); }
};
struct Log {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::log(x); }
};
struct Tanh {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::tanh(x); }
};
struct Cos {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::cos(x); }
};
struct Sqrt {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::sqrt(x); }
};
// Whether any lane of a compare's result is set. One test of the whole vector where the ISA has
// it: a test per lane became one extract per lane, a fifth of log1p's time on AVX2. Over V too,
// like everything here, so that each ISA's file has its own copy.
template <class V, class Mask> inline bool any_lane(Mask m) {
#ifdef __AVX512F__
  if constexpr (sizeof(Mask) == 64) {
    __m512i v;
    __builtin_memcpy(&v, &m, sizeof v);
    return _mm512_test_epi64_mask(v, v) != 0;
  }
#endif
#ifdef __AVX__
  if constexpr (sizeof(Mask) == 32) {
    __m256i v;
    __builtin_memcpy(&v, &m, sizeof v);
    return !_mm256_testz_si256(v, v);
  }
#endif
  uint64_t words[sizeof(Mask) / sizeof(uint64_t)];
  __builtin_memcpy(words, &m, sizeof m);
  uint64_t any = 0;
  for (uint64_t w : words) any |= w;
  return any != 0;
}
struct Pow {
  template <class V> static typename V::Vec f(typename V::Vec a, typename V::Vec b) {
    return V::pow(a, b);
  }
};
// SLEEF's log1p keeps its 1-ULP bound up to 1e38 (float) / 1e307 (double) and returns inf
// above; there 1 + x is x to far below an ULP of the result, so log(x) serves.
struct Log1p {
  template <class V> static typename V::Vec f(typename V::Vec x) {
    using T = typename V::T;
    constexpr T kSleefMax = std::is_same_v<T, float> ? T(1e38) : T(1e307);
    const typename V::Vec y = V::log1p(x);
    const auto large = x > kSleefMax;
    return any_lane<V>(large) ? (large ? V::log(x) : y) : y;
  }
};
struct Expm1 {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::expm1(x); }
};
struct Erf {
  template <class V> static typename V::Vec f(typename V::Vec x) { return V::erf(x); }
};
// Two correctly rounded steps (sqrt, then the division): within 1 ULP, where a reciprocal-root
// estimate and a Newton step would not be.
struct Rsqrt {
  template <class V> static typename V::Vec f(typename V::Vec x) {
    return typename V::T(1) / V::sqrt(x);
  }
};
// e^a for float32 lanes with a <= 0 (gelu's exp(-x^2/2), the sigmoids' exp(-|x|)), inline,
// where the ISA's traits give round_to_int and ldexp (AVX-512, AVX2); else SLEEF's expf, which
// handles every input but is a call through the PLT: around it the loop spills its registers,
// and on AVX2 that call made gelu's Phi the slowest part of the loop. a = n ln2 + r
// (n = round(a / ln2), ln2 in two parts so that r is exact), e^r = 1 + r + r^2 Q(r) with Q a
// degree-4 fit (relative error 3e-9; fit_gelu_erf.py), and 2^n applied by the ISA's ldexp, which
// rounds a subnormal result once. Always inline: as a call (GCC kept one out-of-line copy for
// its users) it cost the loop what SLEEF's call did.
template <class V>
concept InlineExp = requires(typename V::Vec a) {
  V::ldexp(V::round_to_int(a), a);
};

// The inline e^a for a in [-110, 0] (below -110 e^a is 0 in float32 and n would leave ldexp's
// range; the caller clamps). A NaN a stays NaN.
template <InlineExp V>
__attribute__((always_inline)) inline typename V::Vec exp_from_minus_110(typename V::Vec a) {
  using Vec = typename V::Vec;
  constexpr float kQ[] = {0.49999994f, 0.166665211f, 0.0416682586f, 0.00836866908f, 0.00138213614f};
  const Vec n = V::round_to_int(a * float(M_LOG2E));
  Vec r = a - n * 0.693145751953125f;  // ln 2's leading bits: n * them is exact
  r = r - n * 1.42860676533018704e-06f;
  Vec q = Vec{} + kQ[4];
  for (int k = 3; k >= 0; --k) q = q * r + kQ[k];
  return V::ldexp((r * r) * q + r + 1.0f, n);
}
// Any a <= 0: clamped at -110 for the inline form (fmax returns its second operand when one is
// NaN, so a NaN a stays NaN).
template <class V>
__attribute__((always_inline)) inline typename V::Vec exp_nonpositive(typename V::Vec a) {
  if constexpr (InlineExp<V>) {
    return exp_from_minus_110<V>(V::fmax(typename V::Vec{} - 110.0f, a));
  } else {
    return V::exp(a);
  }
}

// With e = exp(-|x|) (never overflows): 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0, so a
// very negative x keeps its tiny (even subnormal) result instead of 1 / (1 + inf) = 0.
struct Sigmoid {
  template <class V> static typename V::Vec f(typename V::Vec x) {
    using T = typename V::T;
    const typename V::Vec e = exp_nonpositive<V>(-V::fabs(x));
    const typename V::Vec r = T(1) / (T(1) + e);
    return x < typename V::Vec{} ? e * r : r;
  }
};
// Phi(x) = erfc(-x/sqrt2) / 2 for float32 lanes on the FMA ISAs, and e = exp(-x^2/2) (gelu's
// backward reuses it). SLEEF's erfcf costs about 14 of its expf (it works in double-float
// arithmetic); this costs one exp, a reciprocal and 13 multiply-adds, within the ULP bounds of
// docs/SEMANTICS.md. With u = |x|/sqrt2, erfc(u) = exp(-u^2) t R(s), t = 1 / (1 + u/2) and
// s = 1 - t = (u/2) t, R a degree-10 fit of erfcx(u) / t (fit_gelu_erf.py, relative error 4e-9
// before float32 rounding): Phi = erfc(u)/2 for x < 0 (no 1 + erf to cancel) and 1 - erfc(u)/2
// for x >= 0 (>= 0.5). R is written in s, not t: near x = 0 (t near 1) Horner in t added terms of
// both signs summing to about 2 and lost 5 ULP, in s it is 1 - 1.26 s + ... with s small, so one
// formula serves every x (no separate erf polynomial for small |x|, no second branch to pay for
// in every lane). exp takes -(x*x)/2, not -u*u: one rounding before the exponential magnifies it
// by x^2/2 instead of three.
// 1 / d for float32 lanes: where the ISA's traits name a reciprocal estimate (V::rcp_estimate:
// AVX-512's 14 bits), it and one Newton step, y + y (1 - d y) with fused multiply-adds (relative
// error about 2^-28 before rounding, so gelu's ULP counts do not move); else a division, which
// takes several times the cycles in a loop bound by its arithmetic. AVX2's estimate has 12 bits:
// one step leaves about 2^-23, which took gelu to 3.9 of its 4.0 ULP, so AVX2 divides.
template <class V> typename V::Vec reciprocal(typename V::Vec d) {
  if constexpr (requires { V::rcp_estimate(d); }) {
    const typename V::Vec y = V::rcp_estimate(d);
    return y + y * (1.0f - d * y);
  } else {
    return 1.0f / d;
  }
}

template <class V> struct PhiFloat {
  using Vec = typename V::Vec;
  Vec half_erfc;  // erfc(|x|/sqrt2) / 2 = half_erfcx * e
  Vec half_erfcx;
  Vec e;      // exp(-x^2/2)
  Vec abs_x;  // |x|, at most 14.8
  decltype(Vec{} < Vec{}) negative;

  explicit PhiFloat(Vec x) {
    // R / 2: the halving of erfc folded into the coefficients (exact, as every power of two),
    // one multiply fewer per vector.
    static constexpr float kHalfR[] = {0.5f * 1.0f,           0.5f * -1.25675893f,
                                       0.5f * 0.48651576f,    0.5f * 0.211091995f,
                                       0.5f * -0.0934342444f, 0.5f * -0.123142414f,
                                       0.5f * 0.0912879109f,  0.5f * -0.171634912f,
                                       0.5f * 0.267499864f,   0.5f * -0.164733246f,
                                       0.5f * 0.0353969783f};
    // |x| stops at 14.8, where e = exp(-x^2/2) is below half the smallest subnormal (so 0, as
    // beyond it) and -x^2/2 still in exp_from_minus_110's range: one clamp for both, and s is
    // never inf * 0. (minps returns the bound for a NaN x; the NaN comes back through x.)
    abs_x = V::fmin(V::fabs(x), Vec{} + 14.8f);
    const Vec h = abs_x * float(M_SQRT1_2 / 2);  // u/2
    const Vec t = reciprocal<V>(1.0f + h);
    const Vec s = h * t;  // 1 - t, without the cancellation near t = 1
    Vec p = Vec{} + kHalfR[10];
    for (int k = 9; k >= 0; --k) p = p * s + kHalfR[k];
    e = exp_from_minus_110<V>(-0.5f * (abs_x * abs_x));
    half_erfcx = t * p;
    half_erfc = e * half_erfcx;
    negative = x < Vec{};
  }
  // x Phi(x): x - x half_erfc in one rounding for x >= 0 (x (1 - half_erfc), two roundings,
  // reached 4.1 ULP near x = 0.03, this 3.3); the clamped |x| in the product, so that x = inf
  // gives inf - 0, not inf - inf * 0.
  Vec x_phi(Vec x) const { return negative ? x * half_erfc : x - abs_x * half_erfc; }
};

// erfc(-x/sqrt2) rather than 1 + erf(x/sqrt2): no cancellation for negative x, where 1 + erf
// loses every digit. float32 takes phi_float above, float64 SLEEF's erfc.
struct GeluErf {
  template <class V> static typename V::Vec f(typename V::Vec x) {
    using T = typename V::T;
    if constexpr (std::is_same_v<T, float> && V::fma) {
      return PhiFloat<V>(x).x_phi(x);
    } else {
      return T(0.5) * x * V::erfc(x * T(-M_SQRT1_2));
    }
  }
};
// sigmoid(v) and sigmoid(v) * (1 - sigmoid(v)) from e = exp(-|v|), which never overflows:
// r = 1 / (1 + e), sigmoid(v) = r (v >= 0) or e r (v < 0), and s (1 - s) = e r^2 either way.
template <class V>
typename V::Vec stable_sigmoid(typename V::Vec v, typename V::Vec& e, typename V::Vec& r) {
  using T = typename V::T;
  e = exp_nonpositive<V>(-V::fabs(v));
  r = T(1) / (T(1) + e);
  return v < typename V::Vec{} ? e * r : r;
}
// 1 + tanh(u) = 2 sigmoid(2u): gelu = x sigmoid(2u), without the cancellation for negative x.
struct GeluTanh {
  template <class V> static typename V::Vec f(typename V::Vec x) {
    using T = typename V::T;
    typename V::Vec e, r;
    return x * stable_sigmoid<V>(x * (T(2 * kBeta) + T(2 * kBeta * kKappa) * x * x), e, r);
  }
};
// Never overflows; exact for large |x| (log1p of a value below one ulp of 1 adds nothing).
struct Softplus {
  template <class V> static typename V::Vec f(typename V::Vec x) {
    return V::fmax(x, typename V::Vec{}) + V::log1p(V::exp(-V::fabs(x)));
  }
};

// d/dx x Phi(x) = Phi(x) + x phi(x).
struct GeluErfGrad {
  template <class V> static typename V::Vec f(typename V::Vec g, typename V::Vec x) {
    using T = typename V::T;
    constexpr T kPdf = T(0.5 * M_2_SQRTPI * M_SQRT1_2);  // 1 / sqrt(2 pi)
    if constexpr (std::is_same_v<T, float> && V::fma) {
      // Phi + x phi with the common factor e taken out where Phi has it (x phi = e x kPdf):
      // e's rounding then scales with the sum, not with the larger term, near the zero at -0.75.
      const PhiFloat<V> c(x);
      const typename V::Vec xpdf = x * kPdf;
      const typename V::Vec tail =
          c.negative ? c.e * (c.half_erfcx + xpdf) : 1.0f + c.e * (xpdf - c.half_erfcx);
      return g * tail;
    } else {
      const typename V::Vec cdf = T(0.5) * V::erfc(x * T(-M_SQRT1_2));
      const typename V::Vec pdf = V::exp(T(-0.5) * x * x) * kPdf;
      return g * (cdf + x * pdf);
    }
  }
};
// gelu = x s with s = sigmoid(2u): d/dx = s + x s (1 - s) 2u'. x is clamped to +-1e4 first
// (beyond it s is exactly 0 or 1 and the second term 0; unclamped, x^2 overflows and the term
// becomes inf * 0), and x - x added back so NaN and +-inf still give NaN.
struct GeluTanhGrad {
  template <class V> static typename V::Vec f(typename V::Vec g, typename V::Vec x) {
    using T = typename V::T;
    const typename V::Vec big = typename V::Vec{} + T(1e4);
    const typename V::Vec xc = V::fmax(V::fmin(x, big), -big);
    const typename V::Vec x2 = xc * xc;
    typename V::Vec e, r;
    const typename V::Vec s =
        stable_sigmoid<V>(xc * (T(2 * kBeta) + T(2 * kBeta * kKappa) * x2), e, r);
    const typename V::Vec du2 = T(2 * kBeta) + T(6 * kBeta * kKappa) * x2;
    return g * ((s + xc * du2 * e * r * r) + (x - x));
  }
};

template <class V> Kernels<typename V::T> kernels() {
  static_assert(static_cast<int>(Unary::count) == 13 && static_cast<int>(Grad::count) == 2 &&
                    static_cast<int>(BinaryMath::count) == 1,
                "the tables below list every function of vec_math.h in its enum's order");
  return {{&unary_loop<V, Exp>, &unary_loop<V, Log>, &unary_loop<V, Tanh>, &unary_loop<V, Sigmoid>,
           &unary_loop<V, GeluErf>, &unary_loop<V, GeluTanh>, &unary_loop<V, Softplus>,
           &unary_loop<V, Sqrt>, &unary_loop<V, Log1p>, &unary_loop<V, Expm1>, &unary_loop<V, Erf>,
           &unary_loop<V, Rsqrt>, &unary_loop<V, Cos>},
          {&binary_loop<V, GeluErfGrad>, &binary_loop<V, GeluTanhGrad>},
          {&binary_loop<V, Pow>},
          {&binary_scalar_loop<V, Pow>}};
}

}  // namespace tg::cpu::vec::impl

// The traits of one vector type: `lanes` is SLEEF's name for it (f8: 8 floats, d4: 4 doubles),
// `isa` its ISA suffix (avx2). `fma`: whether the TU is built with fused multiply-adds (the
// float32 Phi of gelu relies on their single rounding for its ULP bound; without them, as in the
// SSE2 baseline, gelu keeps SLEEF's erfc). `sqrt_`: the ISA's square-root instruction (IEEE's
// correctly rounded sqrt, inline; SLEEF's is a call, and rsqrt through it took 1.9x libtorch's
// time).
#ifdef __FMA__
#define TG_SIMD_FMA true
#else
#define TG_SIMD_FMA false
#endif
#define TG_SLEEF_TRAITS(Name, T_, Vec_, W_, lanes, isa, load_, store_, sqrt_)  \
  struct Name {                                                                \
    using T = T_;                                                              \
    using Vec = Vec_;                                                          \
    static constexpr int W = W_;                                               \
    static constexpr bool fma = TG_SIMD_FMA;                                   \
    static Vec load(const T* p) { return load_(p); }                           \
    static void store(T* p, Vec v) { store_(p, v); }                           \
    static Vec exp(Vec x) { return Sleef_exp##lanes##_u10##isa(x); }           \
    static Vec log(Vec x) { return Sleef_log##lanes##_u10##isa(x); }           \
    static Vec log1p(Vec x) { return Sleef_log1p##lanes##_u10##isa(x); }       \
    static Vec expm1(Vec x) { return Sleef_expm1##lanes##_u10##isa(x); }       \
    static Vec erf(Vec x) { return Sleef_erf##lanes##_u10##isa(x); }           \
    static Vec pow(Vec x, Vec y) { return Sleef_pow##lanes##_u10##isa(x, y); } \
    static Vec tanh(Vec x) { return Sleef_tanh##lanes##_u10##isa(x); }         \
    static Vec cos(Vec x) { return Sleef_cos##lanes##_u10##isa(x); }           \
    static Vec erfc(Vec x) { return Sleef_erfc##lanes##_u15##isa(x); }         \
    static Vec sqrt(Vec x) { return sqrt_(x); }                                \
    static Vec fabs(Vec x) { return impl::clear_sign(x); }                     \
    static Vec fmax(Vec a, Vec b) { return a > b ? a : b; }                    \
    static Vec fmin(Vec a, Vec b) { return a < b ? a : b; }                    \
  }
