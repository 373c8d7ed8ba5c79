// Reductions over inputs whose reduced dims are laid out apart: permuted inputs read in place,
// and dims with a kept dim between them reduced in two passes (backends/cpu/reduce.cpp).
#include <doctest/doctest.h>
#include <tapegrad/tapegrad.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

std::vector<double> values(const tg::Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> ints(const tg::Tensor& t) { return t.to_vector<int64_t>(); }

}  // namespace

TEST_CASE("reductions of permuted inputs read them in place, in memory order") {
  tg::Tensor x = tg::arange(24, tg::kFloat64).reshape({2, 3, 4});  // x[i,j,k] = 12i + 4j + k
  tg::Tensor p = x.permute({2, 0, 1});                             // p[k,i,j] = x[i,j,k]
  CHECK(values(tg::sum(p, {0, 2})) == std::vector<double>{66, 210});
  tg::Tensor s = tg::sum(p, {1}, true);  // s[k,0,j] = x[0,j,k] + x[1,j,k] = 12 + 8j + 2k
  CHECK(s.shape() == tg::Shape{4, 1, 3});
  CHECK(values(s) == std::vector<double>{12, 20, 28, 14, 22, 30, 16, 24, 32, 18, 26, 34});
  CHECK(values(tg::amax(p, {1})) == values(tg::amax(x, {0}).permute({1, 0})));
  auto [v, i] = tg::max(p, 2);  // along j: the largest j wins
  CHECK(values(v) == values(tg::amax(x, {1}).permute({1, 0})));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>(8, 2));
  CHECK(tg::sum(x, {1}).is_contiguous());
  CHECK(tg::sum(x.slice(2, 0, 4, 2), {2}).shape() == tg::Shape{2, 3});  // a strided view
  CHECK(values(tg::sum(x.slice(2, 0, 4, 2), {2})) == std::vector<double>{2, 10, 18, 26, 34, 42});
}

TEST_CASE("reductions over dims apart in memory: two passes, the values of one") {
  // Reduced dims with a kept dim between them (mean over (0, 2, 3) of NCHW, a channels-last
  // batch, dims 0, 2 and 4 of a 5-d tensor) are reduced in place in two passes (or three): the
  // innermost run first, in float64 or int64, then the rest. Values that are multiples of 1/4
  // make every sum exact, so each result must equal the plain loop's.
  const int64_t n = 3, c = 5, h = 4, w = 6;
  std::vector<double> v;
  for (int64_t i = 0; i < n * c * h * w; ++i)
    v.push_back(static_cast<double>((i * 37) % 23) / 4 - 2);
  for (const tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(dtype);
    const tg::Tensor x = tg::tensor(v, {n, c, h, w}).to_dtype(dtype);
    const tg::Tensor nhwc = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    for (const tg::Tensor& t : {x, nhwc}) {
      std::vector<double> sum(c, 0), hi(c, -1e9), lo(c, 1e9);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < c; ++k)
          for (int64_t p = 0; p < h * w; ++p) {
            const double e = v[static_cast<size_t>((i * c + k) * h * w + p)];
            sum[k] += e;
            hi[k] = std::max(hi[k], e);
            lo[k] = std::min(lo[k], e);
          }
      std::vector<double> mean = sum;
      for (double& m : mean) m = static_cast<double>(static_cast<float>(m / (n * h * w)));
      CHECK(values(tg::sum(t, {0, 2, 3})) == sum);
      CHECK(values(tg::mean(t, {0, 2, 3}, true).reshape({c})) ==
            (dtype == tg::kFloat32 ? mean : values(tg::sum(x, {0, 2, 3}) / double(n * h * w))));
      CHECK(tg::mean(t, {0, 2, 3}, true).shape() == tg::Shape{1, c, 1, 1});
      CHECK(values(tg::amax(t, {0, 2, 3})) == hi);
      CHECK(values(tg::amin(t, {3, 0, 2})) == lo);
      CHECK(values(tg::sum(tg::sum(t, {0, 2}), {1})) == sum);
    }
    // 5-d, dims 0, 2 and 4 reduced: three runs
    const tg::Tensor y = tg::tensor(v, {2, 3, 2, 5, 6}).to_dtype(dtype);
    std::vector<double> want(15, 0);
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t d = 0; d < 2; ++d)
          for (int64_t e = 0; e < 5; ++e)
            for (int64_t f = 0; f < 6; ++f)
              want[static_cast<size_t>(b * 5 + e)] +=
                  v[static_cast<size_t>((((a * 3 + b) * 2 + d) * 5 + e) * 6 + f)];
    CHECK(values(tg::sum(y, {0, 2, 4})) == want);
    CHECK(tg::sum(y, {0, 2, 4}, true).shape() == tg::Shape{1, 3, 1, 5, 1});
  }
  // int64 sums wrap as one pass does; bool sums (dtype int64) count
  const tg::Tensor big = tg::full({2, 3, 2}, int64_t{1} << 62, tg::kInt64);
  CHECK(ints(tg::sum(big, {0, 2})) == std::vector<int64_t>(3, 0));  // 4 * 2^62 wraps to 0
  const tg::Tensor flags = tg::gt(tg::tensor(v, {n, c, h, w}), tg::zeros({1}, tg::kFloat64));
  int64_t positive = 0;
  for (int64_t i = 0; i < n * h * w; ++i)
    positive += v[static_cast<size_t>((i / (h * w)) * c * h * w + i % (h * w))] > 0;
  CHECK(ints(tg::sum(flags, {0, 2, 3}))[0] == positive);
}
