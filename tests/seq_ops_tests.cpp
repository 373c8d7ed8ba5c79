// The attention and sequence ops beyond the op check and the PyTorch cross-check: dropout inside
// attention, what its backward keeps, nan ordering in sort and topk, beta = 0 in baddbmm, and
// masks that leave a query nothing to attend to. Expected values come from PyTorch 1.13.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using namespace tg;

namespace {
const double kNan = std::numeric_limits<double>::quiet_NaN();

// Same shape and every element within tol (nan never matches).
bool close(const Tensor& a, const Tensor& b, double tol = 0) {
  if (a.shape() != b.shape()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(x[i] - y[i]) <= tol)) return false;
  return true;
}
}  // namespace

TEST_CASE("scaled_dot_product_attention dropout: drops weights at rate p and rescales the rest") {
  manual_seed(3);
  const Tensor q = randn({4, 64, 8}, kFloat64), k = randn({4, 64, 8}, kFloat64);
  const Tensor v = randn({4, 64, 5}, kFloat64);
  const auto [plain, weights] = scaled_dot_product_attention(q, k, v);
  const double p = 0.25;
  manual_seed(7);
  const auto [out, dropped] = scaled_dot_product_attention(q, k, v, {}, p);
  // Each weight is either 0 (dropped) or the undropped weight / (1 - p).
  const std::vector<double> w = weights.to_vector<double>(), d = dropped.to_vector<double>();
  int64_t zeros = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (d[i] == 0) {
      ++zeros;
    } else {
      CHECK(d[i] == doctest::Approx(w[i] / (1 - p)).epsilon(1e-12));
    }
  }
  const double rate = static_cast<double>(zeros) / static_cast<double>(w.size());
  CHECK(rate == doctest::Approx(p).epsilon(0.1));  // 16384 draws: within a few percent
  // The result is the dropped weights applied to value.
  CHECK(close(out, matmul(dropped, v), 1e-12));
  // The same seed draws the same mask; the next call another one.
  manual_seed(7);
  CHECK(close(std::get<1>(scaled_dot_product_attention(q, k, v, {}, p)), dropped));
  CHECK(!close(std::get<1>(scaled_dot_product_attention(q, k, v, {}, p)), dropped));
}

TEST_CASE(
    "scaled_dot_product_attention backward keeps one attention matrix: the returned weights") {
  const Tensor q = randn({2, 3, 4}, kFloat64).requires_grad_();
  const Tensor k = randn({2, 5, 4}, kFloat64).requires_grad_();
  const Tensor v = randn({2, 5, 3}, kFloat64).requires_grad_();
  for (double p : {0.0, 0.5}) {
    auto result = scaled_dot_product_attention(q, k, v, {}, p);
    Tensor out = std::get<0>(result), attn = std::get<1>(result);
    // The node saved the weights it returned (no other [.., L, S] tensor): changing them in place
    // is caught at backward.
    {
      NoGradGuard no_grad;
      attn.mul_(scalar_to_tensor(1.0));
    }
    const std::string msg = tg_test::error_of([&] { sum(out).backward(); });
    CHECK(msg.find("modified in place") != std::string::npos);
  }
}

TEST_CASE("scaled_dot_product_attention: a query with every key masked gets nan, as PyTorch") {
  const Tensor q = ones({2, 2}, kFloat64), k = ones({3, 2}, kFloat64), v = ones({3, 2}, kFloat64);
  const Tensor mask = tensor(std::vector<bool>{true, false, true, false, false, false}, {2, 3});
  const auto [out, attn] = scaled_dot_product_attention(q, k, v, mask);
  const std::vector<double> o = out.to_vector<double>();
  CHECK(o[0] == doctest::Approx(1.0));
  CHECK(std::isnan(o[2]));
  CHECK(std::isnan(o[3]));
}

TEST_CASE("scaled_dot_product_attention is_causal: outputs do not depend on later positions") {
  const Tensor x = randn({1, 6, 4}, kFloat64).requires_grad_();
  const auto [out, attn] = scaled_dot_product_attention(x, x, x, {}, 0.0, true);
  // d out[2] / d x: zero for positions 3.. (later keys and values)
  const Tensor g = autograd::grad({out.select(1, 2).sum()}, {x})[0];
  CHECK(close(g.narrow(1, 3, 3), zeros({1, 3, 4}, kFloat64)));
  CHECK(sum(abs(g.narrow(1, 0, 3))).item<double>() > 0);
  // Upper triangle of the weights is exactly 0.
  CHECK(close(triu(attn, 1), zeros_like(attn)));
}

TEST_CASE("sort and topk: nan is the largest value, ties keep index order (PyTorch 1.13)") {
  const Tensor x = tensor(std::vector<double>{3, kNan, 1, 3});
  auto [v, i] = sort(x, -1, false, true);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{2, 0, 3, 1});
  CHECK(std::isnan(v.to_vector<double>()[3]));
  std::tie(v, i) = sort(x, -1, true, true);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 3, 2});
  std::tie(v, i) = topk(x, 2);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  std::tie(v, i) = topk(x, 2, -1, false);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{2, 0});
  // bool sorts false < true
  std::tie(v, i) = sort(tensor(std::vector<bool>{true, false, true}));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 2});
  // A 0-d tensor gives itself for k = 0 too.
  std::tie(v, i) = topk(scalar_tensor(2.0, kFloat64), 0);
  CHECK(v.item<double>() == 2.0);
  CHECK(i.item<int64_t>() == 0);
}

TEST_CASE("baddbmm with beta = 0 ignores self, nan included") {
  const Tensor self = full({2, 3, 5}, kNan, kFloat64);
  const Tensor b1 = ones({2, 3, 4}, kFloat64), b2 = ones({2, 4, 5}, kFloat64);
  CHECK(close(baddbmm(self, b1, b2, 0, 2), full({2, 3, 5}, 8.0, kFloat64)));
  CHECK(std::isnan(baddbmm(self, b1, b2, 1, 2).to_vector<double>()[0]));
}

TEST_CASE("baddbmm: one BLAS call with C preset to self equals alpha * bmm + beta * self") {
  // float32/float64 take the fused call; int32 the composed pass. self broadcast from [5] and
  // [9, 1, 5], a transposed batch1, a batch that splits across threads.
  auto small_ints = [](const Shape& shape, int64_t step, DType dtype) {
    std::vector<double> v;
    for (int64_t i = 0; i < shape.numel(); ++i) v.push_back(static_cast<double>(i * step % 11 - 5));
    return tensor(v, shape).to(dtype);
  };
  const int before = get_num_threads();
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const DType dtype : {kFloat64, kFloat32, kInt32}) {
      CAPTURE(dtype);
      for (const Shape& self_shape : {Shape{9, 3, 5}, Shape{5}, Shape{9, 1, 5}}) {
        const Tensor self = small_ints(self_shape, 7, dtype);
        const Tensor b1 = small_ints({9, 4, 3}, 3, dtype).transpose(1, 2);
        const Tensor b2 = small_ints({9, 4, 5}, 5, dtype);
        const bool floating = dtype != kInt32;
        for (const std::pair<double, double>& factors :
             {std::pair{1.0, 1.0}, {0.5, -2.0}, {0.0, 3.0}}) {
          // Named copies, not a structured binding: clang 14 cannot capture those (CAPTURE).
          const double beta = factors.first, alpha = factors.second;
          if (!floating && beta == 0.5) continue;  // integer factors only
          CAPTURE(beta);
          const Tensor want = bmm(b1, b2).to(kFloat64) * alpha + self.to(kFloat64) * beta;
          const Tensor got = floating ? baddbmm(self, b1, b2, beta, alpha)
                                      : baddbmm(self, b1, b2, static_cast<int64_t>(beta),
                                                static_cast<int64_t>(alpha));
          CHECK(got.dtype() == dtype);
          CHECK(close(got.to(kFloat64), want, dtype == kFloat32 ? 1e-4 : 1e-12));
        }
      }
    }
  }
  set_num_threads(before);
}

TEST_CASE("sort: whole rows (the radix sort) in the comparison sort's stable order") {
  // Rows of 64 values and more take the radix sort: against std::stable_sort with sort's order
  // (nan above every number, -0.0 tied with 0.0, ties by index), ascending and descending,
  // along the last dim and along dim 0 (strided rows), float32/float64/int32/int64.
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  const double specials[] = {nan, -nan, inf, -inf, 0.0, -0.0, 1e-310, -1e-310, 3.5, -3.5, 1e30};
  const int64_t rows = 3, n = 301;
  std::vector<double> v;
  for (int64_t i = 0; i < rows * n; ++i)
    v.push_back(i % 5 == 0 ? specials[(i / 5) % 11] : static_cast<double>((i * 37) % 23) - 11);
  for (const DType dtype : {kFloat32, kFloat64, kInt32, kInt64}) {
    const bool floating = dtype == kFloat32 || dtype == kFloat64;
    std::vector<double> values = v;
    if (!floating)  // integers: the extremes instead of the specials
      for (size_t i = 0; i < values.size(); i += 5)
        values[i] = (i / 5) % 2 ? (dtype == kInt32 ? -2147483648.0 : -9223372036854775808.0)
                                : (dtype == kInt32 ? 2147483647.0 : 123456789012.0);
    const Tensor x = tensor(values, {rows, n}).to(dtype);
    const std::vector<double> xs = x.to_vector<double>();
    for (const bool descending : {false, true}) {
      for (const int64_t dim : {int64_t{1}, int64_t{0}}) {
        CAPTURE(dtype);
        CAPTURE(descending);
        CAPTURE(dim);
        const Tensor input = dim == 1 ? x : x.t().contiguous().t();  // dim 0 of a [n, rows] view
        const auto [sorted, indices] = sort(dim == 1 ? input : input.t(), dim, descending);
        const std::vector<double> got = sorted.to_vector<double>();
        const std::vector<int64_t> got_index = indices.to_vector<int64_t>();
        int64_t wrong = 0;
        for (int64_t r = 0; r < rows; ++r) {
          auto at = [&](int64_t j) { return xs[static_cast<size_t>(r * n + j)]; };
          // (is nan, value) ascending, or its mirror descending; -0.0 == 0.0 and nan == nan tie.
          auto order = [&](int64_t a, int64_t b) {
            const double va = at(a), vb = at(b);
            const bool na = std::isnan(va), nb = std::isnan(vb);
            if (na != nb) return descending ? na : nb;
            return !na && (descending ? va > vb : va < vb);
          };
          std::vector<int64_t> want(static_cast<size_t>(n));
          std::iota(want.begin(), want.end(), int64_t{0});
          std::stable_sort(want.begin(), want.end(), order);
          for (int64_t j = 0; j < n; ++j) {
            const size_t o =
                dim == 1 ? static_cast<size_t>(r * n + j) : static_cast<size_t>(j * rows + r);
            wrong += got_index[o] != want[static_cast<size_t>(j)];
            const double w = at(want[static_cast<size_t>(j)]);
            wrong += !(got[o] == w || (std::isnan(got[o]) && std::isnan(w)));
          }
        }
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("cumsum: int32 sums to int64 and float32 sums are accumulated in double") {
  const Tensor a = tensor(std::vector<int32_t>{2147483647, 1});
  CHECK(cumsum(a, 0).dtype() == kInt64);
  CHECK(cumsum(a, 0).to_vector<int64_t>() == std::vector<int64_t>{2147483647, 2147483648});
  CHECK(cumsum(a, 0, kInt32).to_vector<int32_t>()[1] == -2147483648);  // wraps, as PyTorch
  // 1e8 + 1 + 1 ... in float32: each partial sum is rounded from the exact (double) one.
  const Tensor f = tensor(std::vector<float>{1e8f, 1.0f, 1.0f, 1.0f, 1.0f});
  CHECK(cumsum(f, 0).to_vector<float>()[4] == 100000004.0f);
}

TEST_CASE("tril_ and triu_ work in place and one_hot infers the class count") {
  const Tensor m = ones({3, 3}, kFloat64);
  tril_(m, -1);
  CHECK(m.to_vector<double>() == std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0});
  CHECK(one_hot(tensor(std::vector<int64_t>{2, 0})).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 0, 1, 1, 0, 0});
}

TEST_CASE("cumsum along contiguous rows: each row's sequential sum, for any row count") {
  // Rows go in groups of 4 that advance element by element: 19 rows leave 3 that go one at a
  // time (with 2 threads, in either half). Each value must be the row's running sum in double,
  // rounded once, exactly as a plain loop computes it.
  const int64_t rows = 19, n = 37;
  std::vector<float> data;
  for (int64_t i = 0; i < rows * n; ++i)
    data.push_back(static_cast<float>(i % 7 == 0 ? 1e7 + i : 0.1 * (i % 13) - 0.55));
  const Tensor x = tensor(data, {rows, n});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    const int before = get_num_threads();
    set_num_threads(threads);
    const std::vector<float> got = cumsum(x, 1).to_vector<float>();
    const std::vector<double> got64 = cumsum(x.to_dtype(kFloat64), -1).to_vector<double>();
    const std::vector<int64_t> got_int = cumsum(x.to_dtype(kInt64), 1).to_vector<int64_t>();
    set_num_threads(before);
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0, acc64 = 0;
      int64_t acc_int = 0;
      for (int64_t j = 0; j < n; ++j) {
        const size_t p = static_cast<size_t>(r * n + j);
        acc += static_cast<double>(data[p]);
        acc64 += static_cast<double>(data[p]);
        acc_int += static_cast<int64_t>(data[p]);
        wrong += got[p] != static_cast<float>(acc);
        wrong += got64[p] != acc64;
        wrong += got_int[p] != acc_int;
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("topk with a small k agrees with sort: ties by index, NaN first, both directions") {
  // k up to 32 keeps the best k in one pass; a larger k goes through a partial sort. Both must
  // give sort's first k: values from a small set (many ties) and NaNs, rows along dim 1
  // (contiguous) and dim 0 (strided).
  std::vector<double> data, no_nan;
  for (int64_t i = 0; i < 40 * 70; ++i) {
    no_nan.push_back(static_cast<double>((i * 37) % 11) - 5);
    data.push_back(i % 29 == 3 ? kNan : no_nan.back());
  }
  // Equal, or both NaN.
  auto same = [](const Tensor& a, const Tensor& b) {
    const std::vector<double> x = a.to_vector<double>(), y = b.contiguous().to_vector<double>();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
    return true;
  };
  for (const DType dtype : {kFloat32, kFloat64, kInt64}) {
    const Tensor t = dtype == kInt64 ? tensor(no_nan, {40, 70}).to_dtype(kInt64)
                                     : tensor(data, {40, 70}).to_dtype(dtype);
    for (int64_t dim : {0, 1})
      for (int64_t k : {1, 5, 32, 33})
        for (bool largest : {true, false}) {
          CAPTURE(dtype);
          CAPTURE(dim);
          CAPTURE(k);
          CAPTURE(largest);
          auto [sv, si] = sort(t, dim, largest);
          auto [tv, ti] = topk(t, k, dim, largest);
          CHECK(same(tv, sv.narrow(dim, 0, k)));
          CHECK(ti.to_vector<int64_t>() == si.narrow(dim, 0, k).contiguous().to_vector<int64_t>());
        }
  }
}
