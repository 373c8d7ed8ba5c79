// The float32 row kernels of backends/cpu/simd/vec_binary.h, for every instruction set this CPU
// runs, against the scalar IEEE operation computed here: the same bits for every element (NaN
// for NaN) over specials (+-0, +-inf, NaN, denormals, the overflow edges) and random values, for
// every length that exercises the unrolled body, the single-vector loop and the scalar tail,
// with nothing written past n; in place too. Then the ops that use them, broadcast both ways.
#include <doctest/doctest.h>

#include <tapegrad/backends/cpu/simd/vec_binary.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/tapegrad.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

namespace vec = tg::cpu::vec;

float reference(vec::Binary op, float a, float b) {
  volatile float x = a, y = b;  // one scalar IEEE operation, not folded or contracted
  switch (op) {
    case vec::Binary::add: return x + y;
    case vec::Binary::sub: return x - y;
    case vec::Binary::mul: return x * y;
    case vec::Binary::div: return x / y;
    case vec::Binary::count: break;
  }
  return 0;
}

bool same(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  uint32_t g, w;
  std::memcpy(&g, &got, sizeof g);
  std::memcpy(&w, &want, sizeof w);
  return g == w;  // -0 differs from +0
}

// Specials, then random values over many binades, with neighbours that cancel.
std::vector<float> inputs(size_t n, uint32_t seed) {
  using L = std::numeric_limits<float>;
  std::vector<float> v = {0.0f,           -0.0f,          L::infinity(),
                          -L::infinity(), L::quiet_NaN(), L::denorm_min(),
                          -L::min(),      L::max(),       -L::max(),
                          1.0f,           -1.0f,          3.0f};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(0.5f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 128);
  while (v.size() < n)
    v.push_back(((rng() & 1) ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng)));
  v.resize(n);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

const vec::Binary kOps[] = {vec::Binary::add, vec::Binary::sub, vec::Binary::mul, vec::Binary::div};
const vec::Operands kForms[] = {vec::Operands::arrays, vec::Operands::scalar_b,
                                vec::Operands::scalar_a};

}  // namespace

TEST_CASE("vec_binary: every kernel, every ISA this CPU runs, matches the scalar operation") {
  const auto isas = vec::binary_available();
#if defined(__x86_64__)
  REQUIRE(!isas.empty());
  CHECK(vec::binary_best() != nullptr);
#endif
  constexpr float kGuard = 12345.0f;
  // out starts 0-7 floats past a 64-byte boundary: streaming stores need vector-aligned
  // addresses, so their kernels write a head of single elements first.
  std::vector<float> buffer(1027 + 64, kGuard);
  float* const aligned = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) / 4;
  for (const vec::BinaryIsa* isa : isas)
    for (const vec::Stores stores : {vec::Stores::cached, vec::Stores::streaming})
      for (const vec::Binary op : kOps)
        for (const vec::Operands form : kForms)
          for (int64_t n : {0, 1, 3, 7, 8, 15, 16, 31, 33, 63, 64, 65, 100, 1027})
            for (int64_t shift : {0, 1, 5}) {
              CAPTURE(isa->name);
              CAPTURE(static_cast<int>(stores));
              CAPTURE(static_cast<int>(op));
              CAPTURE(static_cast<int>(form));
              CAPTURE(n);
              CAPTURE(shift);
              const auto un = static_cast<size_t>(n);
              const std::vector<float> a = inputs(un + 1, 1), b = inputs(un + 1, 2);
              std::fill(buffer.begin(), buffer.end(), kGuard);
              float* out = aligned + shift;
              isa->row(op, form, stores)(out, a.data(), b.data(), n);
              tg::stream_fence();
              bool ok = true;
              for (size_t i = 0; i < un; ++i) {
                const float x = form == vec::Operands::scalar_a ? a[0] : a[i];
                const float y = form == vec::Operands::scalar_b ? b[0] : b[i];
                if (!same(out[i], reference(op, x, y))) {
                  ok = false;
                  CAPTURE(i);
                  CHECK(same(out[i], reference(op, x, y)));
                  break;
                }
              }
              CHECK(ok);
              // nothing before out or past n
              CHECK(std::all_of(buffer.data(), out, [](float v) { return v == kGuard; }));
              CHECK(std::all_of(out + n, buffer.data() + buffer.size(),
                                [](float v) { return v == kGuard; }));
            }
}

TEST_CASE("vec_binary: in place, the result written over either operand") {
  // In place the kernels take their four-vector loop (out == a or out == b), else the two-vector
  // one: these lengths cover each loop's body and the single vectors and elements after it.
  for (const vec::BinaryIsa* isa : vec::binary_available())
    for (const vec::Stores stores : {vec::Stores::cached, vec::Stores::streaming})
      for (const vec::Binary op : kOps)
        for (const vec::Operands form : kForms)
          for (int64_t n : {1, 7, 31, 32, 33, 64, 203})
            for (int over = 0; over < 2; ++over) {
              // a scalar operand cannot be the one written over
              if ((form == vec::Operands::scalar_a && over == 0) ||
                  (form == vec::Operands::scalar_b && over == 1))
                continue;
              CAPTURE(isa->name);
              CAPTURE(static_cast<int>(stores));
              CAPTURE(static_cast<int>(op));
              CAPTURE(static_cast<int>(form));
              CAPTURE(n);
              CAPTURE(over);
              const auto un = static_cast<size_t>(n);
              const std::vector<float> a = inputs(un, 3), b = inputs(un, 4);
              std::vector<float> io = over == 0 ? a : b;
              if (over == 0)
                isa->row(op, form, stores)(io.data(), io.data(), b.data(), n);
              else
                isa->row(op, form, stores)(io.data(), a.data(), io.data(), n);
              tg::stream_fence();
              for (size_t i = 0; i < un; ++i) {
                const float x = form == vec::Operands::scalar_a ? a[0] : a[i];
                const float y = form == vec::Operands::scalar_b ? b[0] : b[i];
                CHECK(same(io[i], reference(op, x, y)));
              }
            }
}

TEST_CASE("vec_binary: add/sub/mul/div of float32 tensors, broadcast rows and scalars") {
  const int64_t rows = 7, cols = 45;  // 45: the kernels' body, single vectors and tail
  const std::vector<float> av = inputs(rows * cols, 5), bv = inputs(cols, 6);
  const tg::Tensor a = tg::tensor(av).reshape({rows, cols}), b = tg::tensor(bv);
  const tg::Tensor s = tg::scalar_tensor(1.5, tg::kFloat32);
  struct Case {
    vec::Binary op;
    tg::Tensor (*fn)(const tg::Tensor&, const tg::Tensor&);
  };
  const Case cases[] = {
      {vec::Binary::add, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::add(x, y); }},
      {vec::Binary::sub, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::sub(x, y); }},
      {vec::Binary::mul, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::mul(x, y); }},
      {vec::Binary::div, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::div(x, y); }}};
  for (const Case& c : cases) {
    CAPTURE(static_cast<int>(c.op));
    const std::vector<float> rowwise = c.fn(a, b).to_vector<float>();
    const std::vector<float> by_scalar = c.fn(a, s).to_vector<float>();
    const std::vector<float> scalar_by = c.fn(s, a).to_vector<float>();
    for (int64_t i = 0; i < rows * cols; ++i) {
      const auto k = static_cast<size_t>(i);
      CHECK(same(rowwise[k], reference(c.op, av[k], bv[k % cols])));
      CHECK(same(by_scalar[k], reference(c.op, av[k], 1.5f)));
      CHECK(same(scalar_by[k], reference(c.op, 1.5f, av[k])));
    }
  }
}

// Results of at least streaming_store_min_bytes() are written with streaming stores
// (backends/cpu/loops.h): flat arrays, a scalar operand, and broadcast rows whose starts are not
// vector-aligned (cols odd), at 1 and 2 threads (each thread's chunk starts anywhere in a row).
// Every element must be the scalar operation's; in place (cached stores) too.
TEST_CASE("vec_binary: results large enough for streaming stores hold every element") {
  using Fn = tg::Tensor (*)(const tg::Tensor&, const tg::Tensor&);
  struct Case {
    vec::Binary op;
    Fn out_of_place, in_place;
  };
  const Case cases[] = {
      {vec::Binary::add, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::add(x, y); },
       [](const tg::Tensor& x, const tg::Tensor& y) { return tg::add_(x, y); }},
      {vec::Binary::sub, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::sub(x, y); },
       [](const tg::Tensor& x, const tg::Tensor& y) { return tg::sub_(x, y); }},
      {vec::Binary::mul, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::mul(x, y); },
       [](const tg::Tensor& x, const tg::Tensor& y) { return tg::mul_(x, y); }},
      {vec::Binary::div, [](const tg::Tensor& x, const tg::Tensor& y) { return tg::div(x, y); },
       [](const tg::Tensor& x, const tg::Tensor& y) { return tg::div_(x, y); }}};
  const int threads_before = tg::get_num_threads();
  for (int threads : {1, 2}) {
    tg::set_num_threads(threads);
    const int64_t cols = 1001;
    const int64_t rows = threads * tg::streaming_store_min_bytes() / 4 / cols + 3;
    CHECK(tg::streaming_stores_for(4 * rows * cols));
    const std::vector<float> av = inputs(static_cast<size_t>(rows * cols), 7);
    const std::vector<float> rowv = inputs(cols, 8), flatv = inputs(av.size(), 9);
    const std::vector<float> colv = inputs(static_cast<size_t>(rows), 10);
    const tg::Tensor a = tg::tensor(av).reshape({rows, cols});
    const tg::Tensor row = tg::tensor(rowv), flat = tg::tensor(flatv).reshape({rows, cols});
    const tg::Tensor scalar = tg::scalar_tensor(1.25, tg::kFloat32);
    const tg::Tensor column = tg::tensor(colv).reshape({rows, 1});  // the scalar row kernels
    for (int kind = 0; kind < 4; ++kind) {
      const tg::Tensor& other = kind == 0 ? row : kind == 1 ? flat : kind == 2 ? scalar : column;
      const auto b_at = [&](size_t i) {
        return kind == 0   ? rowv[i % cols]
               : kind == 1 ? flatv[i]
               : kind == 2 ? 1.25f
                           : colv[i / static_cast<size_t>(cols)];
      };
      for (const Case& c : cases) {
        CAPTURE(threads);
        CAPTURE(kind);
        CAPTURE(static_cast<int>(c.op));
        tg::Tensor io = a.clone();
        c.in_place(io, other);
        const std::vector<float> got = c.out_of_place(a, other).to_vector<float>();
        const std::vector<float> got_in_place = io.to_vector<float>();
        size_t wrong = 0, wrong_in_place = 0;
        for (size_t i = 0; i < av.size(); ++i) {
          const float want = reference(c.op, av[i], b_at(i));
          wrong += !same(got[i], want);
          wrong_in_place += !same(got_in_place[i], want);
        }
        CHECK(wrong == 0);
        CHECK(wrong_in_place == 0);
      }
    }
  }
  tg::set_num_threads(threads_before);
}
