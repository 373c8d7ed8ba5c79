// Reductions: sum, mean, prod, amax, amin, max/min with indices, and their gradients.
#include <doctest/doctest.h>
#include <tapegrad/tapegrad.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

std::vector<double> values(const tg::Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> ints(const tg::Tensor& t) { return t.to_vector<int64_t>(); }

// Gradient of sum(grad_output * f(x)) wrt x, i.e. the vector-Jacobian product.
std::vector<double> vjp(const tg::Tensor& y, const tg::Tensor& x, const tg::Tensor& grad_output) {
  return values(tg::autograd::grad({y}, {x}, {grad_output})[0]);
}

// Row i of the Hessian of the scalar y(x), through create_graph (double backward).
std::vector<std::vector<double>> hessian(const std::function<tg::Tensor(const tg::Tensor&)>& f,
                                         const std::vector<double>& at) {
  tg::Tensor x = tg::tensor(at);
  x.requires_grad_();
  tg::Tensor g = tg::autograd::grad({f(x)}, {x}, {}, true, true)[0];
  std::vector<std::vector<double>> rows;
  for (size_t i = 0; i < at.size(); ++i) {
    std::vector<double> e(at.size(), 0.0);
    e[i] = 1.0;
    rows.push_back(values(tg::autograd::grad({g}, {x}, {tg::tensor(e)}, true)[0]));
  }
  return rows;
}

}  // namespace

TEST_CASE("sum: full, per dim, keepdim, negative dims") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::Tensor all = tg::sum(x);
  CHECK(all.dim() == 0);
  CHECK(all.item<double>() == 21);
  CHECK(tg::sum(x, {}, true).shape() == tg::Shape{1, 1});
  CHECK(values(tg::sum(x, {0})) == std::vector<double>{5, 7, 9});
  tg::Tensor rows = tg::sum(x, {-1}, true);
  CHECK(rows.shape() == tg::Shape{2, 1});
  CHECK(values(rows) == std::vector<double>{6, 15});
  CHECK(tg::sum(x, {0, -1}).item<double>() == 21);
  CHECK(x.sum({1}).shape() == tg::Shape{2});
}

TEST_CASE("sum: dtypes follow PyTorch") {
  tg::Tensor i = tg::tensor(std::vector<int32_t>{1, 2, 3, 4}, {2, 2});
  CHECK(tg::sum(i).dtype() == tg::kInt64);
  CHECK(ints(tg::sum(i, {0})) == std::vector<int64_t>{4, 6});
  tg::Tensor b = tg::tensor(std::vector<bool>{true, false, true, true}, {2, 2});
  CHECK(tg::sum(b).dtype() == tg::kInt64);
  CHECK(ints(tg::sum(b, {1})) == std::vector<int64_t>{1, 2});
  tg::Tensor as_double = tg::sum(i, {1}, false, tg::kFloat64);
  CHECK(as_double.dtype() == tg::kFloat64);
  CHECK(values(as_double) == std::vector<double>{3, 7});
  CHECK(tg::sum(tg::ones({3}, tg::kFloat32)).dtype() == tg::kFloat32);
}

TEST_CASE("sum: non-adjacent dims, transposed and empty inputs") {
  tg::Tensor x = tg::arange(24, tg::kFloat64).reshape({2, 3, 4});  // x[i,j,k] = 12i + 4j + k
  CHECK(values(tg::sum(x, {0, 2})) == std::vector<double>{60, 92, 124});
  tg::Tensor mid = tg::sum(x, {1}, true);
  CHECK(mid.shape() == tg::Shape{2, 1, 4});
  CHECK(values(mid) == std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57});
  tg::Tensor t = tg::tensor({{1., 2., 3.}, {4., 5., 6.}}).transpose(0, 1);  // [[1,4],[2,5],[3,6]]
  CHECK(values(tg::sum(t, {0})) == std::vector<double>{6, 15});
  CHECK(values(tg::sum(t, {1})) == std::vector<double>{5, 7, 9});
  CHECK(values(tg::sum(tg::zeros({0, 3}), {0})) == std::vector<double>{0, 0, 0});
  CHECK(tg::sum(tg::zeros({2, 0}), {0}).shape() == tg::Shape{0});
  tg::Tensor scalar = tg::scalar_tensor(2.5);
  CHECK(tg::sum(scalar, {-1}).item<double>() == 2.5);
}

TEST_CASE("sum: large float32 inputs are summed accurately") {
  const int64_t n = int64_t{1} << 24;
  const double expected = static_cast<double>(n) * static_cast<double>(0.1f);
  tg::Tensor x = tg::full({n}, 0.1f, tg::kFloat32);
  // Accumulating in float32 would stall at 2^21; we accumulate in double.
  CHECK(std::abs(tg::sum(x).item<double>() - expected) <= 1e-6 * expected);
  tg::Tensor square = x.reshape({4096, 4096});
  const double per_line = 4096.0 * static_cast<double>(0.1f);
  for (int64_t d : {0, 1}) {
    std::vector<double> s = values(tg::sum(square, {d}));
    CHECK(s.size() == 4096);
    CHECK(std::abs(s[0] - per_line) <= 1e-6 * per_line);
    CHECK(std::abs(s[4095] - per_line) <= 1e-6 * per_line);
  }
}

// The exact sum of the n float32 values p[0], p[step], ... (taken in long double) and the stated
// bound on a float32 sum's error for them (docs/SEMANTICS.md): |sum - exact| <= 7 u sum|x| +
// u |exact| (u = 2^-24) plus the float64 part (under n 2^-53 sum|x|).
constexpr double kFloat32Unit = 0x1p-24;
struct SumBound {
  double exact, bound;
};
SumBound float32_sum_bound(const float* p, int64_t n, int64_t step = 1) {
  long double exact = 0, abs_sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    exact += p[j * step];
    abs_sum += std::abs(p[j * step]);
  }
  const double e = static_cast<double>(exact), a = static_cast<double>(abs_sum);
  return {e, 7 * kFloat32Unit * a + kFloat32Unit * std::abs(e) +
                 static_cast<double>(n) * std::ldexp(1.0, -53) * a};
}
// A float32 of either sign spread over 2^-30 .. 2^31, from a small LCG's draws (the tests need
// no tapegrad RNG to make their data), so that partial sums differ widely.
template <typename Next> float spread_float32(Next& next) {
  const float mag = std::ldexp(1.0f + static_cast<float>(next() % 1000) / 1000.0f,
                               static_cast<int>(next() % 61) - 30);
  return next() % 2 ? mag : -mag;
}

// The stated bound for rows of every length around the kernel's blocks of 256 and lanes of 32
// (tails included).
TEST_CASE("sum / mean of float32 rows stay within the stated error bound") {
  const int64_t lengths[] = {1, 7, 31, 32, 33, 255, 256, 257, 511, 1000, 1024, 1057, 4099};
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (int64_t n : lengths) {
    const int64_t rows = 3;
    std::vector<float> data(static_cast<size_t>(rows * n));
    for (float& v : data) v = spread_float32(next);
    tg::Tensor x = tg::tensor(data, {rows, n});
    const std::vector<double> sums = values(tg::sum(x, {1}));
    const std::vector<double> means = values(tg::mean(x, {1}, true));
    for (int64_t r = 0; r < rows; ++r) {
      const SumBound b = float32_sum_bound(data.data() + r * n, n);
      CAPTURE(n);
      CHECK(std::abs(sums[r] - b.exact) <= b.bound);
      CHECK(std::abs(means[r] * static_cast<double>(n) - b.exact) <=
            b.bound + kFloat32Unit * std::abs(b.exact));
    }
  }
  // One long row (the full reduction splits among threads): the same bound.
  const int64_t n = 3 * 65536 + 77;
  std::vector<float> data(static_cast<size_t>(n));
  for (float& v : data)
    v = std::ldexp(static_cast<float>(next() % 2001) - 1000.0f, static_cast<int>(next() % 21) - 10);
  const double got = tg::sum(tg::tensor(data, {n})).item<double>();
  const SumBound b = float32_sum_bound(data.data(), n);
  CHECK(std::abs(got - b.exact) <= b.bound);
}

// The order of docs/SEMANTICS.md, written out plainly: lane k (of 32) adds the values k, 32 + k,
// ..., 224 + k of each block of 256 in float32, then that partial sum in float64; a tail of whole
// groups of 32 adds each value into its lane; the lanes merge in the fixed tree (vectors of 8
// lanes 0-7, 8-15, ... added as (A + B) + (C + D), the two halves of that, then (v0 + v2) +
// (v1 + v3)); the last n % 32 values are added in order.
double float32_row_sum_in_stated_order(const float* p, int64_t n) {
  double lane[32] = {};
  int64_t i = 0;
  for (; i + 256 <= n; i += 256)
    for (int k = 0; k < 32; ++k) {
      float part = p[i + k];
      for (int b = 1; b < 8; ++b) part += p[i + 32 * b + k];
      lane[k] += part;
    }
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 32; ++k) lane[k] += p[i + k];
  double u[8], v[4];
  for (int e = 0; e < 8; ++e) u[e] = (lane[e] + lane[8 + e]) + (lane[16 + e] + lane[24 + e]);
  for (int e = 0; e < 4; ++e) v[e] = u[e] + u[4 + e];
  double result = (v[0] + v[2]) + (v[1] + v[3]);
  for (; i < n; ++i) result += p[i];
  return result;
}

// Every instruction set's kernel (SSE2, AVX2, AVX-512; ctest runs this again with TG_SIMD=avx2)
// must give exactly these bits, for rows around the blocks and lanes and for long rows, which
// are summed in chunks of 32768 merged in order.
TEST_CASE("sum of float32 follows the stated order of additions bit for bit") {
  uint32_t state = 4242;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (int64_t n :
       {1, 31, 32, 33, 255, 256, 257, 1000, 4099, 32768, 40000, 65536, 3 * 65536 + 77}) {
    std::vector<float> data(static_cast<size_t>(n));
    for (float& v : data) v = spread_float32(next);
    // Pairs of huge values that cancel: where each pair meets decides which small values survive
    // the float64 roundings, so any other order shows even after the rounding to float32.
    for (int64_t pair = 0; pair < n / 200; ++pair) {
      const float huge = std::ldexp(1.0f, 60 + static_cast<int>(next() % 20));
      data[next() % static_cast<uint32_t>(n)] = huge;
      data[next() % static_cast<uint32_t>(n)] = -huge;
    }
    double expected = 0;
    if (n >= 65536) {
      for (int64_t start = 0; start < n; start += 32768) {
        const double chunk = float32_row_sum_in_stated_order(data.data() + start,
                                                             std::min<int64_t>(32768, n - start));
        expected = start == 0 ? chunk : expected + chunk;
      }
    } else {
      expected = float32_row_sum_in_stated_order(data.data(), n);
    }
    CAPTURE(n);
    CHECK(tg::sum(tg::tensor(data, {n})).item<float>() == static_cast<float>(expected));
    if (n == 4099) {  // each row of a [rows, n] sum in the same order
      const std::vector<float> two_rows = [&] {
        std::vector<float> d = data;
        d.insert(d.end(), data.begin(), data.end());
        return d;
      }();
      CHECK(tg::sum(tg::tensor(two_rows, {2, n}), {1}).to_vector<float>() ==
            std::vector<float>(2, static_cast<float>(expected)));
    }
  }
}

// Columns (a reduction over a leading dim) add groups of 8 rows in float32, then in float64: the
// same bound as rows, for row counts around the groups of 8 and the blocks of 256 (tails
// included) and widths that leave vector tails.
TEST_CASE("sum / mean of float32 columns stay within the stated error bound") {
  uint32_t state = 777;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (int64_t rows : {2, 7, 8, 9, 17, 255, 256, 257, 1000, 4099})
    for (int64_t cols : {3, 37, 1030}) {
      std::vector<float> data(static_cast<size_t>(rows * cols));
      for (float& v : data) v = spread_float32(next);
      const tg::Tensor x = tg::tensor(data, {rows, cols});
      const std::vector<double> sums = values(tg::sum(x, {0}));
      const std::vector<double> means = values(tg::mean(x, {0}));
      bool all_within = true;
      for (int64_t j = 0; j < cols; ++j) {
        const SumBound b = float32_sum_bound(data.data() + j, rows, cols);
        all_within = all_within && std::abs(sums[j] - b.exact) <= b.bound &&
                     std::abs(means[j] * static_cast<double>(rows) - b.exact) <=
                         b.bound + kFloat32Unit * std::abs(b.exact);
      }
      CAPTURE(rows);
      CAPTURE(cols);
      CHECK(all_within);
    }
}

// Column reductions add blocks of rows and long rows add chunks, then merge the partial results
// in order: the blocks are fixed, so the bits do not depend on the thread count. float64 values
// spread over 2^-40 .. 2^40 make every change of order show in the last bits.
TEST_CASE("sum / mean / amax: the same bits at 1, 2 and 3 threads") {
  struct ThreadsGuard {
    int before = tg::get_num_threads();
    ~ThreadsGuard() { tg::set_num_threads(before); }
  } guard;
  uint64_t state = 99;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return state >> 33;
  };
  auto spread = [&](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v)
      x = std::ldexp(static_cast<double>(next() % 2001) - 1000.0,
                     static_cast<int>(next() % 81) - 40);
    return v;
  };
  const int64_t rows = 1500, cols = 37;  // 5 full blocks of rows and a partial one
  const std::vector<double> cdata = spread(rows * cols);
  const tg::Tensor c = tg::tensor(cdata, {rows, cols});
  const tg::Tensor c32 = c.to(tg::kFloat32);
  const int64_t n = 5 * 65536 + 123;  // a long row: several chunks and a tail
  const tg::Tensor r = tg::tensor(spread(n), {n});
  auto results = [&] {
    return std::vector<std::vector<double>>{
        values(tg::sum(c, {0})),
        values(tg::mean(c32, {0})),
        values(tg::amax(c, {0})),
        values(tg::sum(r)),
        values(tg::sum(r.to(tg::kFloat32))),
        values(tg::mean(r.slice(0, 0, 5 * 65536).reshape({5, 65536}).t(), {0}))};
  };
  tg::set_num_threads(1);
  const std::vector<std::vector<double>> one = results();
  for (int threads : {2, 3}) {
    tg::set_num_threads(threads);
    CAPTURE(threads);
    const std::vector<std::vector<double>> got = results();
    for (size_t k = 0; k < one.size(); ++k) {
      CAPTURE(k);
      CHECK(got[k] == one[k]);
    }
  }
  // The column sums are float64 sums: within n 2^-53 sum|x| of the exact sum (long double).
  for (int64_t j = 0; j < cols; ++j) {
    long double exact = 0, abs_sum = 0;
    for (int64_t i = 0; i < rows; ++i) {
      exact += cdata[static_cast<size_t>(i * cols + j)];
      abs_sum += std::abs(cdata[static_cast<size_t>(i * cols + j)]);
    }
    CHECK(std::abs(one[0][static_cast<size_t>(j)] - static_cast<double>(exact)) <=
          static_cast<double>(rows) * std::ldexp(1.0, -53) * static_cast<double>(abs_sum));
  }
}

TEST_CASE("mean: values, keepdim, and integer inputs rejected") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  CHECK(tg::mean(x).item<double>() == 3.5);
  CHECK(values(tg::mean(x, {0})) == std::vector<double>{2.5, 3.5, 4.5});
  tg::Tensor m = tg::mean(x, {1}, true);
  CHECK(m.shape() == tg::Shape{2, 1});
  CHECK(values(m) == std::vector<double>{2, 5});
  CHECK(std::isnan(tg::mean(tg::zeros({0})).item<double>()));
  tg::Tensor i = tg::tensor(std::vector<int64_t>{1, 2}, {2});
  CHECK_THROWS_WITH_AS(tg::mean(i), doctest::Contains("[mean]"), tg::Error);
}

TEST_CASE("prod: full, per dim, keepdim, integer inputs") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  CHECK(tg::prod(x).item<double>() == 720);
  CHECK(values(tg::prod(x, 0)) == std::vector<double>{4, 10, 18});
  tg::Tensor rows = tg::prod(x, -1, true);
  CHECK(rows.shape() == tg::Shape{2, 1});
  CHECK(values(rows) == std::vector<double>{6, 120});
  tg::Tensor i = tg::tensor(std::vector<int32_t>{2, 3, 4}, {3});
  CHECK(tg::prod(i).dtype() == tg::kInt64);
  CHECK(tg::prod(i).item<int64_t>() == 24);
  CHECK(tg::prod(tg::zeros({0})).item<double>() == 1);
}

TEST_CASE("prod over a leading dim: the column loop equals each column's product in order") {
  // [37, 1003] float32 (vector lanes and a tail; one row block, at 1 and 2 threads): each
  // column's float32 values multiplied in double in row order, then rounded, with a nan, an inf
  // and a zero in some columns.
  const int64_t rows = 37, cols = 1003;
  std::vector<float> v;
  for (int64_t i = 0; i < rows * cols; ++i)
    v.push_back(0.5f + static_cast<float>((i * 13) % 17) / 16);
  v[5] = std::nanf("");
  v[cols + 6] = std::numeric_limits<float>::infinity();
  v[2 * cols + 7] = 0;
  const tg::Tensor x = tg::tensor(v, {rows, cols});
  const int before = tg::get_num_threads();
  for (const int threads : {1, 2}) {
    tg::set_num_threads(threads);
    const std::vector<float> got = tg::prod(x, 0).to_vector<float>();
    int64_t wrong = 0;
    for (int64_t j = 0; j < cols; ++j) {
      double want = 1;
      for (int64_t r = 0; r < rows; ++r)
        want *= static_cast<double>(v[static_cast<size_t>(r * cols + j)]);
      const float w = static_cast<float>(want);
      wrong += !(got[static_cast<size_t>(j)] == w ||
                 (std::isnan(w) && std::isnan(got[static_cast<size_t>(j)])));
    }
    CHECK(wrong == 0);
  }
  tg::set_num_threads(before);
}

TEST_CASE("amax / amin: values, keepdim, bool, NaN") {
  tg::Tensor x = tg::tensor({{1., 5., 2.}, {7., -1., 7.}});
  CHECK(tg::amax(x).item<double>() == 7);
  CHECK(tg::amin(x).item<double>() == -1);
  CHECK(values(tg::amax(x, {1})) == std::vector<double>{5, 7});
  tg::Tensor cols = tg::amin(x, {0}, true);
  CHECK(cols.shape() == tg::Shape{1, 3});
  CHECK(values(cols) == std::vector<double>{1, -1, 2});
  CHECK(values(tg::amax(x, {0, 1}, true)) == std::vector<double>{7});
  tg::Tensor i = tg::tensor(std::vector<int32_t>{3, -8, 6}, {3});
  CHECK(tg::amin(i).dtype() == tg::kInt32);
  CHECK(tg::amin(i).item<int64_t>() == -8);
  tg::Tensor b = tg::tensor(std::vector<bool>{false, true, false, false}, {2, 2});
  CHECK(ints(tg::amax(b, {1})) == std::vector<int64_t>{1, 0});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  tg::Tensor with_nan = tg::tensor(std::vector<double>{1, nan, 3});
  CHECK(std::isnan(tg::amax(with_nan).item<double>()));
  CHECK(std::isnan(tg::amin(with_nan).item<double>()));
}

// Rows long enough for the vectorised row kernel (32 lanes, then a tail): the result is the row's
// extreme, or its first NaN bit for bit (payload and sign), wherever in the row it lies.
template <typename T> void check_long_rows() {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const int64_t n = 1000;  // 31 blocks of 32 lanes and a tail of 8
  const std::vector<int64_t> first_nan = {-1, 0, 37, 500, 991, 992, 999, 100, 64};
  std::vector<T> data;
  for (size_t r = 0; r < first_nan.size(); ++r)
    for (int64_t j = 0; j < n; ++j)
      data.push_back(static_cast<T>(((j * 7919 + static_cast<int64_t>(r) * 31) % 2001) - 1000));
  auto nan_with = [](Bits payload, bool negative) {
    const Bits sign = Bits(1) << (sizeof(T) * 8 - 1);
    return std::bit_cast<T>(Bits(std::bit_cast<Bits>(std::numeric_limits<T>::quiet_NaN()) |
                                 payload | (negative ? sign : 0)));
  };
  data[n + 5] = std::numeric_limits<T>::infinity();  // row 1: inf before the NaN
  data[2 * n + 6] = -std::numeric_limits<T>::infinity();
  for (size_t r = 1; r < first_nan.size(); ++r) {
    data[r * n + first_nan[r]] = nan_with(Bits(r), r % 2 == 0);
    if (r % 2 == 1 && first_nan[r] + 1 < n) data[r * n + n - 1] = nan_with(Bits(100), false);
  }
  const tg::Tensor x = tg::tensor(data).reshape({static_cast<int64_t>(first_nan.size()), n});
  for (bool greater : {true, false}) {
    const std::vector<T> got =
        (greater ? tg::amax(x, {1}) : tg::amin(x, {1})).template to_vector<T>();
    for (size_t r = 0; r < first_nan.size(); ++r) {
      CAPTURE(r);
      CAPTURE(greater);
      T want = greater ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < n; ++j)
        want = greater ? std::max(want, data[r * n + j]) : std::min(want, data[r * n + j]);
      if (first_nan[r] >= 0) want = data[r * n + first_nan[r]];
      CHECK(std::bit_cast<Bits>(got[r]) == std::bit_cast<Bits>(want));
    }
  }
}

TEST_CASE("amax / amin of long rows: the extreme, or the first NaN bit for bit") {
  check_long_rows<float>();
  check_long_rows<double>();
}

// The kernels' model of a row's extreme: element j in lane j % 32, each lane keeping its first
// extreme, the lanes merged lowest first, then the tail of n % 32 elements in order.
template <typename T> T lanes_extreme_model(const T* p, int64_t n, bool greater) {
  auto better = [greater](T v, T best) { return greater ? v > best : v < best; };
  const T start =
      greater ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  std::vector<T> lane(32, start);
  const int64_t full = n / 32 * 32;
  for (int64_t j = 0; j < full; ++j)
    if (better(p[j], lane[static_cast<size_t>(j % 32)])) lane[static_cast<size_t>(j % 32)] = p[j];
  T want = start;
  for (T v : lane)
    if (better(v, want)) want = v;
  for (int64_t j = full; j < n; ++j)
    if (better(p[j], want)) want = p[j];
  return want;
}

// A zero extreme met as both -0 and +0: which one a row returns is set by the kernels' 32 lanes
// (lanes_extreme_model), the same on every instruction set. The vector kernels merge in any order
// unless the extreme is zero; this checks the zero case against that model.
template <typename T> void check_signed_zero_rows() {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const int64_t n = 1000;  // 31 blocks of 32 lanes and a tail of 8
  const std::vector<std::pair<int64_t, int64_t>> zeros = {{3, 40},   {40, 3},    {10, 995},
                                                          {995, 10}, {8, 40},    {64, 33},
                                                          {0, 999},  {7, 7 + 32}};
  for (bool greater : {true, false}) {
    std::vector<T> data;
    for (size_t r = 0; r < 2 * zeros.size(); ++r) {
      const bool minus_first = r % 2 == 0;
      for (int64_t j = 0; j < n; ++j) {
        const T magnitude = static_cast<T>(1 + (j * 7919 + static_cast<int64_t>(r)) % 1000);
        data.push_back(greater ? -magnitude : magnitude);
      }
      const auto [a, b] = zeros[r / 2];
      data[r * n + a] = minus_first ? T(-0.0) : T(0.0);
      data[r * n + b] = minus_first ? T(0.0) : T(-0.0);
    }
    const int64_t rows = static_cast<int64_t>(2 * zeros.size());
    const tg::Tensor x = tg::tensor(data).reshape({rows, n});
    const std::vector<T> got =
        (greater ? tg::amax(x, {1}) : tg::amin(x, {1})).template to_vector<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T want = lanes_extreme_model(data.data() + r * n, n, greater);
      CAPTURE(r);
      CAPTURE(greater);
      CHECK(want == T(0));
      CHECK(std::bit_cast<Bits>(got[r]) == std::bit_cast<Bits>(want));
    }
  }
}

TEST_CASE("amax / amin: a zero extreme keeps the sign the lanes' order picks") {
  check_signed_zero_rows<float>();
  check_signed_zero_rows<double>();
}

// A full reduction of a long float32 vector (chunks of 32768 merged in order, each chunk through
// the row kernel: AVX-512 where the CPU has it, AVX2 under TG_SIMD=avx2): its extreme, its first
// NaN bit for bit, and the sign of a zero extreme as the lanes' order picks it in each chunk
// (lanes_extreme_model), the earlier chunk winning a tie.
TEST_CASE("amax / amin of a long float32 vector: the extreme, the first NaN, a zero's sign") {
  const int64_t n = 3 * 32768 + 77;
  for (bool greater : {true, false}) {
    // Zeros at these pairs of positions (the first of each pair -0 on even cases, +0 on odd).
    const std::vector<std::pair<int64_t, int64_t>> zeros = {{3, 40},        {40, 3},
                                                            {70000, 5},     {32770, 32769},
                                                            {98380, 98310}, {64, 33}};
    for (size_t c = 0; c < 2 * zeros.size(); ++c) {
      std::vector<float> data(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        const float magnitude = static_cast<float>(1 + (j * 7919 + static_cast<int64_t>(c)) % 999);
        data[static_cast<size_t>(j)] = greater ? -magnitude : magnitude;
      }
      const auto [a, b] = zeros[c / 2];
      data[static_cast<size_t>(a)] = c % 2 == 0 ? -0.0f : 0.0f;
      data[static_cast<size_t>(b)] = c % 2 == 0 ? 0.0f : -0.0f;
      float want = lanes_extreme_model(data.data(), 32768, greater);
      for (int64_t s = 32768; s < n; s += 32768) {
        const float chunk =
            lanes_extreme_model(data.data() + s, std::min<int64_t>(32768, n - s), greater);
        if (greater ? chunk > want : chunk < want) want = chunk;
      }
      const tg::Tensor x = tg::tensor(data, {n});
      const float got = (greater ? tg::amax(x) : tg::amin(x)).item<float>();
      CAPTURE(c);
      CAPTURE(greater);
      CHECK(want == 0.0f);
      CHECK(std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want));
      // The first NaN wins, wherever it lies, whatever its payload and sign.
      const uint32_t nan_bits =
          0x7fc00000u | static_cast<uint32_t>(c + 1) | (c % 2 ? 0x80000000u : 0);
      const int64_t at = (static_cast<int64_t>(c) * 16411) % n;
      data[static_cast<size_t>(at)] = std::bit_cast<float>(nan_bits);
      data[static_cast<size_t>(n - 1)] = std::bit_cast<float>(0x7fc00abcu);
      if (at == n - 1) continue;
      const tg::Tensor y = tg::tensor(data, {n});
      CHECK(std::bit_cast<uint32_t>((greater ? tg::amax(y) : tg::amin(y)).item<float>()) ==
            nan_bits);
    }
  }
}

TEST_CASE("max / min along a dim: values and first index among ties") {
  tg::Tensor x = tg::tensor({{1., 5., 5.}, {7., 2., 7.}});
  auto [v, i] = tg::max(x, 1);
  CHECK(values(v) == std::vector<double>{5, 7});
  CHECK(i.dtype() == tg::kInt64);
  CHECK(ints(i) == std::vector<int64_t>{1, 0});
  auto [v0, i0] = tg::max(x, 0, true);
  CHECK(v0.shape() == tg::Shape{1, 3});
  CHECK(values(v0) == std::vector<double>{7, 5, 7});
  CHECK(ints(i0) == std::vector<int64_t>{1, 0, 1});
  auto [mv, mi] = tg::min(x, -1);
  CHECK(values(mv) == std::vector<double>{1, 2});
  CHECK(ints(mi) == std::vector<int64_t>{0, 1});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto [nv, ni] = tg::max(tg::tensor(std::vector<double>{1, nan, 3, nan}), 0);
  CHECK(std::isnan(nv.item<double>()));
  CHECK(ni.item<int64_t>() == 1);
  auto [tv, ti] = tg::min(tg::arange(24, tg::kFloat64).reshape({2, 3, 4}), 1);  // column path
  CHECK(values(tv) == std::vector<double>{0, 1, 2, 3, 12, 13, 14, 15});
  CHECK(ints(ti) == std::vector<int64_t>(8, 0));
}

TEST_CASE("max / min along contiguous rows: first extreme, first NaN and zero signs, every dtype") {
  // Rows longer than the blocks of the search for the extreme's position (32 values).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t n = 100;
  auto row_with = [&](std::vector<std::pair<int64_t, double>> at, double fill) {
    std::vector<double> row(static_cast<size_t>(n), fill);
    for (const auto& [i, v] : at) row[static_cast<size_t>(i)] = v;
    return row;
  };
  for (const tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(dtype);
    std::vector<double> rows;
    for (const auto& row :
         {row_with({{40, 9}, {70, 9}, {3, -9}}, 1),     // ties: the first
          row_with({{50, nan}, {80, nan}, {2, 9}}, 1),  // NaN wins: the first NaN
          row_with({{10, -0.0}, {60, 0.0}}, -1),        // -0 and +0 tie: the first, its sign
          row_with({{99, 5}}, -1)})                     // the last value
      rows.insert(rows.end(), row.begin(), row.end());
    const tg::Tensor x = tg::tensor(rows, {4, n}).to_dtype(dtype);
    auto [v, i] = tg::max(x, 1);
    CHECK(ints(i) == std::vector<int64_t>{40, 50, 10, 99});
    const std::vector<double> got = values(v);
    CHECK(got[0] == 9);
    CHECK(std::isnan(got[1]));
    CHECK((got[2] == 0 && std::signbit(got[2])));
    CHECK(got[3] == 5);
    auto [mv, mi] = tg::min(-x, 1);
    CHECK(ints(mi) == std::vector<int64_t>{40, 50, 10, 99});
    CHECK((values(mv)[2] == 0 && !std::signbit(values(mv)[2])));
  }
  std::vector<int64_t> big(static_cast<size_t>(2 * n), 3);
  big[33] = 7;
  big[90] = 7;
  big[n + 64] = -1;
  const tg::Tensor xi = tg::tensor(big, {2, n});
  CHECK(ints(std::get<1>(tg::max(xi, 1))) == std::vector<int64_t>{33, 0});
  CHECK(ints(std::get<1>(tg::min(xi.to_dtype(tg::kInt32), 1))) == std::vector<int64_t>{0, 64});
  CHECK(ints(std::get<1>(tg::max(tg::gt(xi, tg::scalar_tensor(5, tg::kInt64)), 1))) ==
        std::vector<int64_t>{33, 0});
}

TEST_CASE("prod along rows: lanes merged in a tree give the exact product where one exists") {
  // Powers of two (every partial product exact) and wrapping int64 (every order gives the same
  // value): what the lane merge's order may not change.
  std::vector<double> row;
  std::vector<int64_t> wraps;
  for (int64_t i = 0; i < 200; ++i) {
    row.push_back(std::ldexp(1.0, static_cast<int>(i % 9) - 4) * (i % 5 == 0 ? -1 : 1));
    wraps.push_back(3 + 2 * i);
  }
  double want = 1;
  uint64_t want_wrapped = 1;
  for (size_t i = 0; i < row.size(); ++i) {
    want *= row[i];
    want_wrapped *= static_cast<uint64_t>(wraps[i]);
  }
  CHECK(values(tg::prod(tg::tensor(row, {1, 200}), 1)) == std::vector<double>{want});
  CHECK(values(tg::prod(tg::tensor(row, {1, 200}).to_dtype(tg::kFloat32), 1)) ==
        std::vector<double>{want});
  CHECK(ints(tg::prod(tg::tensor(wraps, {1, 200}), 1)) ==
        std::vector<int64_t>{static_cast<int64_t>(want_wrapped)});
  // float32 products accumulate in double: 1e20 * 1e20 * 1e-20 * 1e-20 is 1, where a float32
  // accumulator overflows to inf (PyTorch 1.13: inf, and nan for 8 such groups in a row).
  std::vector<double> wide;
  for (int i = 0; i < 8; ++i) wide.insert(wide.end(), {1e20, 1e20, 1e-20, 1e-20});
  const tg::Tensor w = tg::tensor(wide, {1, 32}).to_dtype(tg::kFloat32);
  CHECK(std::abs(values(tg::prod(w.narrow(1, 0, 4)))[0] - 1) < 1e-6);
  CHECK(std::abs(values(tg::prod(w, 1))[0] - 1) < 1e-5);
}

TEST_CASE("prod of float32 rows: the lanes' products in double, on every instruction set") {
  // 32 double lanes (value i to lane i % 32), merged by folding halves, then the tail in order:
  // written out plainly, rounded once to float32. The CPU's own build (AVX-512 where it has it;
  // ctest's row_kernels_avx2 entry runs this under TG_SIMD=avx2) must give the same values. The
  // order itself rarely shows after the rounding to float32; a lost, doubled or float32-rounded
  // factor does (one factor off by 1e-7 fails it).
  const int64_t rows = 3, n = 1000;  // 31 blocks of 32 and a tail of 8
  std::vector<float> x;
  for (int64_t i = 0; i < rows * n; ++i)
    x.push_back(0.75f + static_cast<float>((i * 7919) % 1000) / 2000.0f);
  std::vector<double> want;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x.data() + r * n;
    double lane[32];
    std::fill(lane, lane + 32, 1.0);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
      for (int k = 0; k < 32; ++k) lane[k] *= static_cast<double>(p[i + k]);
    for (int half = 16; half > 0; half /= 2)
      for (int k = 0; k < half; ++k) lane[k] *= lane[k + half];
    for (; i < n; ++i) lane[0] *= static_cast<double>(p[i]);
    want.push_back(static_cast<double>(static_cast<float>(lane[0])));
  }
  CHECK(values(tg::prod(tg::tensor(x, {rows, n}), 1)) == want);
}

TEST_CASE("reductions: bad dims and empty slots are rejected") {
  tg::Tensor x = tg::zeros({2, 3});
  CHECK_THROWS_WITH_AS(tg::sum(x, {2}), doctest::Contains("[sum] dim 2 is out of range"),
                       tg::IndexError);
  CHECK_THROWS_WITH_AS(tg::sum(x, {1, -1}), doctest::Contains("appears multiple times"),
                       tg::ValueError);
  CHECK_THROWS_AS(tg::prod(x, -3), tg::IndexError);
  CHECK_THROWS_AS(tg::max(x, 2), tg::IndexError);
  CHECK_THROWS_WITH_AS(tg::amax(tg::zeros({0, 3}), {0}), doctest::Contains("[amax]"),
                       tg::ValueError);
  CHECK_THROWS_AS(tg::min(tg::zeros({2, 0}), 1), tg::ValueError);
}

TEST_CASE("sum / mean backward: grad spread over the slot") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  x.requires_grad_();
  CHECK(vjp(tg::sum(x, {1}), x, tg::tensor({1., 2.})) == std::vector<double>{1, 1, 1, 2, 2, 2});
  CHECK(vjp(tg::sum(x, {0}, true), x, tg::tensor({{1., 2., 3.}})) ==
        std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(vjp(tg::mean(x, {0}), x, tg::tensor({2., 4., 6.})) ==
        std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(vjp(tg::mean(x), x, tg::scalar_tensor(6.0, tg::kFloat64)) == std::vector<double>(6, 1.0));
}

TEST_CASE("prod backward: exact with 0, 1, 2 and 3 zeros in a slot") {
  auto grad_of = [](const std::vector<double>& at) {
    tg::Tensor x = tg::tensor(at);
    x.requires_grad_();
    return values(tg::autograd::grad({tg::prod(x)}, {x})[0]);
  };
  CHECK(grad_of({2, 3, 4}) == std::vector<double>{12, 8, 6});
  CHECK(grad_of({0, 3, 4}) == std::vector<double>{12, 0, 0});
  CHECK(grad_of({0, 3, 0}) == std::vector<double>{0, 0, 0});
  CHECK(grad_of({0, 0, 0}) == std::vector<double>{0, 0, 0});
  // Per dim: each row is its own slot.
  tg::Tensor x = tg::tensor({{0., 2.}, {3., 4.}});
  x.requires_grad_();
  CHECK(vjp(tg::prod(x, 1), x, tg::tensor({1., 1.})) == std::vector<double>{2, 0, 4, 3});
  CHECK(vjp(tg::prod(x, 0, true), x, tg::tensor({{1., 10.}})) == std::vector<double>{3, 40, 0, 20});
}

TEST_CASE("prod double backward: H[i][j] is the product of the other elements") {
  auto f = [](const tg::Tensor& x) { return tg::prod(x); };
  using H = std::vector<std::vector<double>>;
  CHECK(hessian(f, {2, 3, 4}) == H{{0, 4, 3}, {4, 0, 2}, {3, 2, 0}});
  CHECK(hessian(f, {0, 3, 4}) == H{{0, 4, 3}, {4, 0, 0}, {3, 0, 0}});
  CHECK(hessian(f, {0, 3, 0}) == H{{0, 0, 3}, {0, 0, 0}, {3, 0, 0}});
  CHECK(hessian(f, {0, 0, 0}) == H{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
}

TEST_CASE("amax / amin backward: tied elements share the gradient evenly") {
  tg::Tensor x = tg::tensor(std::vector<double>{1, 3, 3});
  x.requires_grad_();
  CHECK(vjp(tg::amax(x), x, tg::scalar_tensor(1.0, tg::kFloat64)) ==
        std::vector<double>{0, 0.5, 0.5});
  tg::Tensor y = tg::tensor({{2., 2., 5.}, {1., 0., 0.}});
  y.requires_grad_();
  CHECK(vjp(tg::amin(y, {1}), y, tg::tensor({2., 4.})) == std::vector<double>{1, 1, 0, 0, 2, 2});
}

TEST_CASE("max / min backward: the gradient goes to the returned index only") {
  tg::Tensor x = tg::tensor({{1., 5., 5.}, {7., 2., 7.}});
  x.requires_grad_();
  CHECK(vjp(std::get<0>(tg::max(x, 1)), x, tg::tensor({1., 2.})) ==
        std::vector<double>{0, 1, 0, 2, 0, 0});
  CHECK(vjp(std::get<0>(tg::min(x, 0, true)), x, tg::tensor({{1., 2., 3.}})) ==
        std::vector<double>{1, 0, 3, 0, 2, 0});
}

TEST_CASE("amax backward: ties share, and an inf or NaN gradient gives NaN off the extremes") {
  // PyTorch's rule, grad / count * mask: the masked-off positions get grad / count * 0.
  const double inf = std::numeric_limits<double>::infinity();
  for (const double g : {1.0, inf}) {
    CAPTURE(g);
    tg::Tensor x = tg::tensor(std::vector<double>{1.0, 3.0, 3.0, -2.0, 5.0, -4.0}, {2, 3});
    x.requires_grad_();
    tg::amax(x, {1}).backward(tg::full({2}, g, tg::kFloat64));
    const std::vector<double> got = x.grad().to_vector<double>();
    const std::vector<bool> extreme = {false, true, true, false, true, false};
    const std::vector<double> share = {0, g / 2, g / 2, 0, g, 0};
    for (size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      if (extreme[k])
        CHECK(got[k] == share[k]);
      else if (std::isinf(g))
        CHECK(std::isnan(got[k]));
      else
        CHECK(got[k] == 0.0);
    }
  }
}

TEST_CASE("amax / amin over columns: NaN wins, ties keep the first row, on every lane") {
  // The column loop runs on AVX2 where the CPU has it: 8 float lanes, a tail of 5 columns. Each
  // column against a plain loop of the same rule (the extreme, NaN if any; between -0 and +0 the
  // earlier row's).
  const int64_t rows = 37, cols = 101;
  std::vector<double> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = static_cast<double>((r * 7919 + c * 104729) % 97) - 48;
      if (c % 13 == 5 && r == (c % rows)) x = std::nan("");
      if (c % 11 == 3) x = (r + c) % 2 ? 0.0 : -0.0;
      v[static_cast<size_t>(r * cols + c)] = x;
    }
  for (const tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(dtype);
    const tg::Tensor x = tg::tensor(v, {rows, cols}).to_dtype(dtype);
    for (const bool greater : {true, false}) {
      CAPTURE(greater);
      const std::vector<double> got = values(greater ? tg::amax(x, {0}) : tg::amin(x, {0}));
      int64_t wrong = 0;
      for (int64_t c = 0; c < cols; ++c) {
        double best = v[static_cast<size_t>(c)];
        for (int64_t r = 1; r < rows; ++r) {
          const double y = v[static_cast<size_t>(r * cols + c)];
          if ((greater ? y > best : y < best) || (std::isnan(y) && !std::isnan(best))) best = y;
        }
        const double g = got[static_cast<size_t>(c)];
        wrong += std::isnan(best) ? !std::isnan(g)
                                  : (g != best || std::signbit(g) != std::signbit(best));
      }
      CHECK(wrong == 0);
    }
  }
}
