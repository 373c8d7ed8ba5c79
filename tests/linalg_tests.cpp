// matmul: shapes (1-D, 2-D, batched, broadcast), dtypes, BLAS vs the blocked loop, gradients.
#include <doctest/doctest.h>

#include <tapegrad/backends/cpu/linalg.h>
#include <tapegrad/tapegrad.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace {

std::vector<double> values(const tg::Tensor& t) { return t.to_vector<double>(); }

double max_abs_diff(const tg::Tensor& a, const tg::Tensor& b) {
  std::vector<double> x = values(a), y = values(b);
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// The textbook triple loop over row-major copies of 2-D a and b, in double.
std::vector<double> naive_matmul(const tg::Tensor& a, const tg::Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<double> x = values(a), y = values(b), c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) c[i * n + j] += x[i * k + p] * y[p * n + j];
  return c;
}

}  // namespace

TEST_CASE("matmul: 2-D by 2-D against a hand-computed product") {
  tg::Tensor a = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::Tensor b = tg::tensor({{7., 8.}, {9., 10.}, {11., 12.}});
  tg::Tensor c = tg::matmul(a, b);
  CHECK(c.shape() == tg::Shape{2, 2});
  CHECK(values(c) == std::vector<double>{58, 64, 139, 154});
  CHECK(values(a.matmul(b)) == std::vector<double>{58, 64, 139, 154});
  CHECK(values(tg::cpu::matmul_fallback(a, b)) == std::vector<double>{58, 64, 139, 154});
}

TEST_CASE("matmul: 1-D operands") {
  tg::Tensor dot = tg::matmul(tg::tensor({1., 2., 3.}), tg::tensor({4., 5., 6.}));
  CHECK(dot.dim() == 0);
  CHECK(dot.item<double>() == 32);
  tg::Tensor m = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::Tensor row = tg::matmul(tg::tensor({1., 2.}), m);
  CHECK(row.shape() == tg::Shape{3});
  CHECK(values(row) == std::vector<double>{9, 12, 15});
  tg::Tensor col = tg::matmul(m, tg::tensor({1., 0., -1.}));
  CHECK(col.shape() == tg::Shape{2});
  CHECK(values(col) == std::vector<double>{-2, -2});
}

TEST_CASE("matmul: batched, with broadcast batch dims") {
  tg::Tensor a = tg::arange(12, tg::kFloat64).reshape({2, 2, 3});
  tg::Tensor b = tg::tensor({{1., 0.}, {0., 1.}, {1., 1.}});
  tg::Tensor c = tg::matmul(a, b);
  CHECK(c.shape() == tg::Shape{2, 2, 2});
  CHECK(values(c) == std::vector<double>{2, 3, 8, 9, 14, 15, 20, 21});
  // [2, 1, 2, 3] @ [3, 3, 2] -> [2, 3, 2, 2]; each entry is a 2-D product of the right slices.
  tg::manual_seed(1);
  tg::Tensor x = tg::randn({2, 1, 2, 3}, tg::kFloat64), y = tg::randn({3, 3, 2}, tg::kFloat64);
  tg::Tensor z = tg::matmul(x, y);
  CHECK(z.shape() == tg::Shape{2, 3, 2, 2});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      CHECK(max_abs_diff(z.select(0, i).select(0, j),
                         tg::matmul(x.select(0, i).select(0, 0), y.select(0, j))) < 1e-12);
  tg::Tensor v = tg::tensor({1., 2., 3.});
  tg::Tensor vb = tg::matmul(v, a.transpose(1, 2));  // [3] @ [2, 3, 2] -> [2, 2]
  CHECK(vb.shape() == tg::Shape{2, 2});
  CHECK(values(vb) == std::vector<double>{8, 26, 44, 62});
  tg::Tensor bv = tg::matmul(a, v);  // [2, 2, 3] @ [3] -> [2, 2]
  CHECK(values(bv) == std::vector<double>{8, 26, 44, 62});
}

TEST_CASE("matmul: integer dtypes use the blocked loop") {
  for (tg::DType dt : {tg::kInt32, tg::kInt64}) {
    tg::Tensor a = tg::tensor({{1, 2, 3}, {4, 5, 6}}).to(dt);
    tg::Tensor b = tg::tensor({{7, 8}, {9, 10}, {11, 12}}).to(dt);
    tg::Tensor c = tg::matmul(a, b);
    CHECK(c.dtype() == dt);
    CHECK(c.to_vector<int64_t>() == std::vector<int64_t>{58, 64, 139, 154});
  }
  tg::manual_seed(3);
  tg::Tensor a = tg::randint(-5, 5, {37, 141}), b = tg::randint(-5, 5, {141, 300});
  CHECK(values(tg::matmul(a, b)) == naive_matmul(a, b));
  CHECK(values(tg::matmul(a, b.transpose(0, 1).contiguous().transpose(0, 1))) ==
        naive_matmul(a, b));
}

TEST_CASE("matmul: empty and zero-depth products") {
  CHECK(tg::matmul(tg::zeros({0, 3}), tg::zeros({3, 2})).shape() == tg::Shape{0, 2});
  tg::Tensor c = tg::matmul(tg::ones({2, 0}), tg::ones({0, 3}));
  CHECK(c.shape() == tg::Shape{2, 3});
  CHECK(values(c) == std::vector<double>(6, 0.0));
}

TEST_CASE("matmul: BLAS and the blocked fallback agree") {
  tg::manual_seed(7);
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    const double tol = dt == tg::kFloat32 ? 1e-3 : 1e-10;
    // Larger than every block of the loop, with every operand layout.
    tg::Tensor a = tg::randn({67, 145}, dt), b = tg::randn({145, 290}, dt);
    CHECK(max_abs_diff(tg::matmul(a, b), tg::cpu::matmul_fallback(a, b)) < tol);
    tg::Tensor at = tg::randn({145, 67}, dt).transpose(0, 1);
    tg::Tensor bt = tg::randn({290, 145}, dt).transpose(0, 1);
    CHECK(max_abs_diff(tg::matmul(at, bt), tg::cpu::matmul_fallback(at, bt)) < tol);
    CHECK(max_abs_diff(tg::matmul(at, bt), tg::matmul(at.contiguous(), bt.contiguous())) < tol);
    // Batched, with a shared right operand (folded into one product) and a broadcast batch.
    tg::Tensor x = tg::randn({3, 17, 9}, dt), w = tg::randn({9, 33}, dt);
    CHECK(max_abs_diff(tg::matmul(x, w), tg::cpu::matmul_fallback(x, w)) < tol);
    tg::Tensor y = tg::randn({4, 1, 5, 6}, dt), u = tg::randn({3, 6, 7}, dt);
    CHECK(max_abs_diff(tg::matmul(y, u), tg::cpu::matmul_fallback(y, u)) < tol);
    // A stride-0 (expanded) operand.
    tg::Tensor e = tg::randn({1, 6}, dt).expand({5, 6});
    CHECK(max_abs_diff(tg::matmul(e, u.select(0, 0)), tg::cpu::matmul_fallback(e, u.select(0, 0))) <
          tol);
  }
  tg::Tensor a = tg::randn({30, 40}, tg::kFloat64), b = tg::randn({40, 20}, tg::kFloat64);
  std::vector<double> ref = naive_matmul(a, b), got = values(tg::cpu::matmul_fallback(a, b));
  for (size_t i = 0; i < ref.size(); ++i) CHECK(std::abs(ref[i] - got[i]) < 1e-12);
}

TEST_CASE("matmul: batches and single products split across threads agree with the blocked loop") {
  // With BLAS, a batch runs one whole product per thread when it splits evenly or its products
  // are small, else product after product with OpenBLAS's own threads: cases of each kind at
  // 1, 2 and 3 threads (32 small products; 3 and 4 of over 2^22 multiply-adds each). A single
  // product at 2 threads and more runs a block of rows (or of columns, when it has more) per
  // thread: both kinds, each operand transposed or not, extents that do not divide by the thread
  // count, and a product too small to split.
  tg::manual_seed(11);
  const int before = tg::get_num_threads();
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    tg::set_num_threads(threads);
    for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
      const double tol = dt == tg::kFloat32 ? 2e-3 : 1e-10;
      auto check = [&](const tg::Tensor& x, const tg::Tensor& y) {
        CHECK(max_abs_diff(tg::matmul(x, y), tg::cpu::matmul_fallback(x, y)) < tol);
      };
      check(tg::randn({32, 20, 9}, dt), tg::randn({32, 9, 15}, dt));
      for (int64_t batch : {3, 4})
        check(tg::randn({batch, 130, 140}, dt), tg::randn({batch, 140, 240}, dt));
      // Split by rows, by columns (both over 2^18 multiply-adds), and too small to split.
      for (auto [m, k, n] : {std::array<int64_t, 3>{130, 70, 41}, {41, 70, 130}, {5, 7, 6}}) {
        const tg::Tensor a = tg::randn({m, k}, dt), b = tg::randn({k, n}, dt);
        const tg::Tensor at = tg::randn({k, m}, dt).t(), bt = tg::randn({n, k}, dt).t();
        for (const tg::Tensor* x : {&a, &at})
          for (const tg::Tensor* y : {&b, &bt}) check(*x, *y);
      }
    }
  }
  tg::set_num_threads(before);
}

TEST_CASE(
    "matmul: a single product under 2^18 multiply-adds gives the same bits at every thread count") {
  // Such products are one OpenBLAS call whatever the thread count. Split into blocks of rows
  // they gave other float64 bits on Zen 3 ([32,8]x[8,16] at 2-4 threads; issue 12's
  // concurrency test found it), since OpenBLAS picks its kernels by size.
  tg::manual_seed(12);
  const int before = tg::get_num_threads();
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    for (const auto& shape :
         {std::array<int64_t, 3>{32, 8, 16}, {70, 33, 25}, {30, 33, 91}, {100, 17, 9}}) {
      CAPTURE(shape);  // a named array, not a structured binding: clang-14 cannot capture those
      const tg::Tensor a = tg::randn({shape[0], shape[1]}, dt);
      const tg::Tensor b = tg::randn({shape[1], shape[2]}, dt);
      tg::set_num_threads(1);
      const std::vector<double> want = tg::matmul(a, b).to(tg::kFloat64).to_vector<double>();
      for (int threads : {2, 3, 4, 5}) {
        CAPTURE(threads);
        tg::set_num_threads(threads);
        CHECK(tg::matmul(a, b).to(tg::kFloat64).to_vector<double>() == want);
      }
    }
  }
  tg::set_num_threads(before);
}

TEST_CASE("matmul: rejected inputs name both shapes") {
  CHECK_THROWS_WITH_AS(tg::matmul(tg::zeros({2, 3}), tg::zeros({4, 5})),
                       doctest::Contains("[matmul] shapes [2, 3] and [4, 5] cannot be multiplied"),
                       tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::matmul(tg::zeros({3}), tg::zeros({4})),
                       doctest::Contains("shapes [3] and [4]"), tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::matmul(tg::zeros({2, 2, 3}), tg::zeros({3, 3, 4})),
                       doctest::Contains("cannot be broadcast"), tg::ValueError);
  CHECK_THROWS_AS(tg::matmul(tg::zeros({}), tg::zeros({3})), tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::matmul(tg::zeros({2, 3}), tg::zeros({3, 2}, tg::kFloat64)),
                       doctest::Contains("same dtype"), tg::TypeError);
}

TEST_CASE("matmul backward: grad @ other^T and self^T @ grad, 1-D cases included") {
  auto grads = [](const tg::Tensor& a, const tg::Tensor& b, const tg::Tensor& g) {
    a.requires_grad_();
    b.requires_grad_();
    std::vector<tg::Tensor> r = tg::autograd::grad({tg::matmul(a, b)}, {a, b}, {g});
    return std::make_pair(values(r[0]), values(r[1]));
  };
  auto [da, db] =
      grads(tg::tensor({{1., 2., 3.}, {4., 5., 6.}}), tg::tensor({{7., 8.}, {9., 10.}, {11., 12.}}),
            tg::ones({2, 2}, tg::kFloat64));
  CHECK(da == std::vector<double>{15, 19, 23, 15, 19, 23});
  CHECK(db == std::vector<double>{5, 5, 7, 7, 9, 9});
  auto [dx, dy] = grads(tg::tensor({1., 2., 3.}), tg::tensor({4., 5., 6.}),
                        tg::scalar_tensor(2.0, tg::kFloat64));
  CHECK(dx == std::vector<double>{8, 10, 12});
  CHECK(dy == std::vector<double>{2, 4, 6});
  auto [dv, dm] = grads(tg::tensor({1., 2.}), tg::tensor({{1., 2., 3.}, {4., 5., 6.}}),
                        tg::ones({3}, tg::kFloat64));
  CHECK(dv == std::vector<double>{6, 15});
  CHECK(dm == std::vector<double>{1, 1, 1, 2, 2, 2});
  auto [dm2, dw] = grads(tg::tensor({{1., 2., 3.}, {4., 5., 6.}}), tg::tensor({1., 0., -1.}),
                         tg::tensor({1., 2.}));
  CHECK(dm2 == std::vector<double>{1, 0, -1, 2, 0, -2});
  CHECK(dw == std::vector<double>{9, 12, 15});
  // The broadcast batch dim of other is summed by the engine.
  auto [dba, dbb] =
      grads(tg::arange(12, tg::kFloat64).reshape({2, 2, 3}),
            tg::tensor({{1., 0.}, {0., 1.}, {1., 1.}}), tg::ones({2, 2, 2}, tg::kFloat64));
  CHECK(dba == std::vector<double>{1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2});
  CHECK(dbb == std::vector<double>{18, 18, 22, 22, 26, 26});
}
