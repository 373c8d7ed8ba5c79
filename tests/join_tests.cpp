// cat and stack: values, dims, dtype promotion, errors and gradients; and the permuted copies,
// which copy row by row through the same byte copy (copy_bytes) as cat.
#include <doctest/doctest.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/tapegrad.h>

#include <vector>

namespace {
std::vector<double> values(const tg::Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("cat: along first, last and negative dims") {
  tg::Tensor a = tg::tensor({{1., 2.}, {3., 4.}});
  tg::Tensor b = tg::tensor({{5., 6.}});
  tg::Tensor rows = tg::cat({a, b});
  CHECK(rows.shape() == tg::Shape{3, 2});
  CHECK(values(rows) == std::vector<double>{1, 2, 3, 4, 5, 6});
  tg::Tensor c = tg::tensor(std::vector<double>{7, 8}, {2, 1});
  tg::Tensor cols = tg::cat({a, c, a}, -1);
  CHECK(cols.shape() == tg::Shape{2, 5});
  CHECK(values(cols) == std::vector<double>{1, 2, 7, 1, 2, 3, 4, 8, 3, 4});
  tg::Tensor t = tg::cat({a.transpose(0, 1), c}, 1);  // a non-contiguous input
  CHECK(values(t) == std::vector<double>{1, 3, 7, 2, 4, 8});
}

TEST_CASE("cat: dtype promotion and skipped 1-D empty tensors") {
  tg::Tensor i = tg::tensor(std::vector<int64_t>{1, 2});
  tg::Tensor f = tg::tensor(std::vector<float>{0.5f});
  tg::Tensor r = tg::cat({i, f});
  CHECK(r.dtype() == tg::kFloat32);
  CHECK(values(r) == std::vector<double>{1, 2, 0.5});
  tg::Tensor b = tg::tensor(std::vector<bool>{true});
  CHECK(tg::cat({b, i}).dtype() == tg::kInt64);
  tg::Tensor m = tg::cat({tg::ones({2, 2}), tg::zeros({0}), tg::ones({1, 2})});
  CHECK(m.shape() == tg::Shape{3, 2});
}

TEST_CASE("cat: rejected inputs") {
  CHECK_THROWS_WITH_AS(tg::cat({}), doctest::Contains("[cat]"), tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::cat({tg::zeros({2, 3}), tg::zeros({3, 4})}),
                       doctest::Contains(
                           "tensors[0] has shape [2, 3], tensors[1] has shape [3, 4]"),
                       tg::ValueError);
  CHECK_THROWS_AS(tg::cat({tg::zeros({2, 3}), tg::zeros({2, 3, 1})}, 1), tg::ValueError);
  CHECK_THROWS_AS(tg::cat({tg::zeros({}), tg::zeros({})}), tg::ValueError);
  CHECK_THROWS_AS(tg::cat({tg::zeros({2, 3})}, 2), tg::IndexError);
}

TEST_CASE("stack: new dim at the front, middle and end") {
  tg::Tensor a = tg::tensor({1., 2., 3.}), b = tg::tensor({4., 5., 6.});
  tg::Tensor s0 = tg::stack({a, b});
  CHECK(s0.shape() == tg::Shape{2, 3});
  CHECK(values(s0) == std::vector<double>{1, 2, 3, 4, 5, 6});
  tg::Tensor s1 = tg::stack({a, b}, -1);
  CHECK(s1.shape() == tg::Shape{3, 2});
  CHECK(values(s1) == std::vector<double>{1, 4, 2, 5, 3, 6});
  tg::Tensor m = tg::tensor({{1., 2.}, {3., 4.}});
  tg::Tensor mid = tg::stack({m, m.transpose(0, 1)}, 1);
  CHECK(mid.shape() == tg::Shape{2, 2, 2});
  CHECK(values(mid) == std::vector<double>{1, 2, 1, 3, 3, 4, 2, 4});
  CHECK(tg::stack({tg::tensor(std::vector<int32_t>{1}), tg::tensor(std::vector<double>{2})})
            .dtype() == tg::kFloat64);
}

TEST_CASE("stack: rejected inputs") {
  CHECK_THROWS_WITH_AS(tg::stack({}), doctest::Contains("[stack]"), tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::stack({tg::zeros({2, 3}), tg::zeros({3, 2})}),
                       doctest::Contains(
                           "tensors[0] has shape [2, 3], tensors[1] has shape [3, 2]"),
                       tg::ValueError);
  CHECK_THROWS_AS(tg::stack({tg::zeros({2})}, 2), tg::IndexError);
}

TEST_CASE("cat / stack backward: each input gets its slice of the gradient") {
  tg::Tensor a = tg::tensor({{1., 2.}, {3., 4.}}),
             b = tg::tensor(std::vector<double>{5, 6}, {2, 1});
  a.requires_grad_();
  b.requires_grad_();
  tg::Tensor g = tg::tensor({{10., 20., 30.}, {40., 50., 60.}});
  std::vector<tg::Tensor> gc = tg::autograd::grad({tg::cat({a, b}, 1)}, {a, b}, {g});
  CHECK(values(gc[0]) == std::vector<double>{10, 20, 40, 50});
  CHECK(values(gc[1]) == std::vector<double>{30, 60});
  tg::Tensor x = tg::tensor({1., 2.}), y = tg::tensor({3., 4.});
  x.requires_grad_();
  y.requires_grad_();
  std::vector<tg::Tensor> gs =
      tg::autograd::grad({tg::stack({x, y}, 1)}, {x, y}, {tg::tensor({{1., 2.}, {3., 4.}})});
  CHECK(values(gs[0]) == std::vector<double>{1, 3});
  CHECK(values(gs[1]) == std::vector<double>{2, 4});
}

TEST_CASE("cat: large inputs split across threads, also inside one run") {
  // Runs of 70000 and 50001 float32 (over the 256 KiB a thread copies at least): the byte ranges
  // the threads get start and end inside runs, and every item must land once. Three rows, then
  // (at 1 and 2 threads) enough rows for a result written with non-temporal stores
  // (core/cpu_features.h), whose runs here start at addresses that are not 32-byte aligned.
  const int64_t wa = 70000, wb = 50001;
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    const int before = tg::get_num_threads();
    tg::set_num_threads(threads);
    const int64_t streaming_rows = threads * tg::streaming_store_min_bytes() / (4 * (wa + wb)) + 1;
    std::vector<int64_t> row_counts = {3};
    if (threads <= 2) row_counts.push_back(streaming_rows);
    for (const int64_t rows : row_counts) {
      CAPTURE(rows);
      CHECK(tg::streaming_stores_for(4 * rows * (wa + wb)) == (rows == streaming_rows));
      std::vector<double> va, vb;
      for (int64_t i = 0; i < rows * wa; ++i) va.push_back(static_cast<double>(i));
      for (int64_t i = 0; i < rows * wb; ++i) vb.push_back(static_cast<double>(-1 - i));
      const tg::Tensor a = tg::tensor(va, {rows, wa}).to_dtype(tg::kFloat32);
      const tg::Tensor b = tg::tensor(vb, {rows, wb}).to_dtype(tg::kFloat32);
      const std::vector<double> got = values(tg::cat({a, b}, 1));
      const std::vector<double> flat = values(tg::cat({a.reshape({-1}), b.reshape({-1})}));
      int64_t wrong = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < wa; ++j)
          wrong +=
              got[static_cast<size_t>(r * (wa + wb) + j)] != va[static_cast<size_t>(r * wa + j)];
        for (int64_t j = 0; j < wb; ++j)
          wrong += got[static_cast<size_t>(r * (wa + wb) + wa + j)] !=
                   vb[static_cast<size_t>(r * wb + j)];
      }
      CHECK(wrong == 0);
      std::vector<double> want = va;
      want.insert(want.end(), vb.begin(), vb.end());
      CHECK(flat == want);
    }
    tg::set_num_threads(before);
  }
}

TEST_CASE("cat / stack along an inner dim: rows written in order, and the inputs it cannot take") {
  // Many rows: the result is written row by row, each from every input in turn. Widths 3, 0 and
  // 5, a stack along dim 1, then inputs that go the input-by-input way instead (a transposed
  // input, a float64 input promoting the result).
  const int64_t rows = 37;
  const tg::Tensor a = tg::arange(rows * 3, tg::kFloat64).reshape({rows, 3}).to_dtype(tg::kFloat32);
  const tg::Tensor empty = tg::zeros({rows, 0});
  const tg::Tensor b =
      (tg::arange(rows * 5, tg::kFloat64) + 1000.0).reshape({rows, 5}).to_dtype(tg::kFloat32);
  const tg::Tensor bt = b.t().contiguous().t();  // b's values, transposed strides
  const tg::Tensor b64 = b.to_dtype(tg::kFloat64);
  const int before = tg::get_num_threads();
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    tg::set_num_threads(threads);
    for (const tg::Tensor& second : {b, bt, b64}) {
      const std::vector<double> got = values(tg::cat({a, empty, second, a}, 1));
      REQUIRE(got.size() == static_cast<size_t>(rows * 11));
      int64_t wrong = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < 11; ++j) {
          const double want = j < 3   ? static_cast<double>(r * 3 + j)
                              : j < 8 ? 1000.0 + static_cast<double>(r * 5 + j - 3)
                                      : static_cast<double>(r * 3 + j - 8);
          wrong += got[static_cast<size_t>(r * 11 + j)] != want;
        }
      CHECK(wrong == 0);
    }
    const std::vector<double> stacked = values(tg::stack({a, a + 0.5, a + 0.25}, 1));
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < 3; ++k)
        for (int64_t j = 0; j < 3; ++j)
          wrong += stacked[static_cast<size_t>((r * 3 + k) * 3 + j)] !=
                   static_cast<double>(r * 3 + j) + (k == 0   ? 0.0
                                                     : k == 1 ? 0.5
                                                              : 0.25);
    CHECK(wrong == 0);
  }
  tg::set_num_threads(before);
}

TEST_CASE("contiguous of a permuted tensor: rows copied whole, streamed when the result is large") {
  // [4, 64, 16, 100] -> permute(0, 2, 1, 3): rows of 100 items (every other float32 row starts
  // off a 32-byte boundary). Under ctest's 1 MiB threshold the float32 / int32 result (1.6 MiB)
  // is written with non-temporal stores at 1 thread and not at 2, the float64 one (3.1 MiB) at
  // both; the values must not depend on it.
  const int64_t a = 4, b = 64, c = 16, d = 100;
  std::vector<double> v;
  for (int64_t i = 0; i < a * b * c * d; ++i) v.push_back(static_cast<double>(i));
  const tg::Tensor x = tg::tensor(v, {a, b, c, d});
  int streamed = 0;  // of the six copies below
  for (const tg::DType dtype : {tg::kFloat32, tg::kFloat64, tg::kInt32}) {
    for (int threads : {1, 2}) {
      CAPTURE(dtype);
      CAPTURE(threads);
      const int before = tg::get_num_threads();
      tg::set_num_threads(threads);
      const int64_t bytes = a * b * c * d * static_cast<int64_t>(tg::itemsize(dtype));
      streamed += tg::streaming_stores_for(bytes) ? 1 : 0;
      const std::vector<double> got =
          values(tg::permute(x.to_dtype(dtype), {0, 2, 1, 3}).contiguous());
      tg::set_num_threads(before);
      int64_t wrong = 0;
      for (int64_t i = 0; i < a; ++i)
        for (int64_t k = 0; k < c; ++k)
          for (int64_t j = 0; j < b; ++j)
            for (int64_t l = 0; l < d; ++l)
              wrong += got[static_cast<size_t>(((i * c + k) * b + j) * d + l)] !=
                       v[static_cast<size_t>(((i * b + j) * c + k) * d + l)];
      CHECK(wrong == 0);
    }
  }
  if (tg::streaming_store_min_bytes() == 1 << 20) CHECK(streamed == 4);
}

TEST_CASE("contiguous of permuted, sliced and expanded tensors with contiguous rows") {
  // Rows of 2 items, 127551 of them: at 2 threads the split falls inside a dim, so each half
  // starts its walk mid-way and carries. A permutation is walked in the source's order, a
  // broadcast (stride-0) source in the result's; a slice with a step keeps the order.
  const int64_t a = 41, b = 51, c = 61, d = 2;
  std::vector<double> v;
  for (int64_t i = 0; i < a * b * c * d; ++i) v.push_back(static_cast<double>(i));
  const tg::Tensor x = tg::tensor(v, {a, b, c, d});
  auto at = [&](int64_t i, int64_t j, int64_t k, int64_t l) {
    return v[static_cast<size_t>(((i * b + j) * c + k) * d + l)];
  };
  const tg::Tensor column = tg::tensor(std::vector<double>(v.begin(), v.begin() + b * d), {b, d});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    const int before = tg::get_num_threads();
    tg::set_num_threads(threads);
    const std::vector<double> p201 = values(tg::permute(x, {2, 0, 1, 3}).contiguous());
    const std::vector<double> p120 = values(tg::permute(x, {1, 2, 0, 3}).contiguous());
    const std::vector<double> sliced = values(x.slice(1, 1, b, 3).slice(2, 0, c, 2).contiguous());
    const std::vector<double> expanded = values(
        column.reshape({1, b, 1, d}).expand({a, b, c, d}).permute({0, 2, 1, 3}).contiguous());
    tg::set_num_threads(before);
    int64_t wrong = 0, p = 0;
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < b; ++j)
          for (int64_t l = 0; l < d; ++l) wrong += p201[static_cast<size_t>(p++)] != at(i, j, k, l);
    p = 0;
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t i = 0; i < a; ++i)
          for (int64_t l = 0; l < d; ++l) wrong += p120[static_cast<size_t>(p++)] != at(i, j, k, l);
    p = 0;
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 1; j < b; j += 3)
        for (int64_t k = 0; k < c; k += 2)
          for (int64_t l = 0; l < d; ++l)
            wrong += sliced[static_cast<size_t>(p++)] != at(i, j, k, l);
    REQUIRE(static_cast<size_t>(p) == sliced.size());
    p = 0;
    for (int64_t i = 0; i < a; ++i)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t j = 0; j < b; ++j)
          for (int64_t l = 0; l < d; ++l)
            wrong += expanded[static_cast<size_t>(p++)] != at(0, 0, j, l);
    CHECK(wrong == 0);
  }
}

TEST_CASE("a result made from little distinct input streams only when it outgrows the cache") {
  // The two-argument rule: result plus distinct input bytes against twice the threshold. An
  // expanded row and a tensor joined with itself read little, so a result of the threshold's
  // size stays cached and one of twice that streams; the values are the same either way.
  const int before = tg::get_num_threads();
  tg::set_num_threads(1);
  const int64_t m = tg::streaming_store_min_bytes();
  CHECK(tg::streaming_stores_for(m, m) == tg::streaming_stores_for(m));
  CHECK(tg::streaming_stores_for(m, m));
  CHECK(!tg::streaming_stores_for(m, 4096));
  CHECK(tg::streaming_stores_for(2 * m, 4096));
  CHECK(!tg::streaming_stores_for(2 * m - 8192, 4096));
  for (const int64_t bytes : {m, 2 * m + 4096}) {  // cached, then streamed
    CAPTURE(bytes);
    const int64_t cols = 1000, rows = bytes / (4 * cols) + 1;
    const tg::Tensor row = tg::arange(0.0, static_cast<double>(cols), 1.0, tg::kFloat32);
    const std::vector<double> expanded =
        values(row.reshape({1, cols}).expand({rows, cols}).contiguous());
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        wrong += expanded[static_cast<size_t>(r * cols + c)] != static_cast<double>(c);
    CHECK(wrong == 0);
    const tg::Tensor part = row.reshape({1, cols}).expand({rows / 4, cols}).contiguous();
    const std::vector<double> joined = values(tg::cat({part, part, part, part}, 1));
    wrong = 0;
    for (int64_t r = 0; r < rows / 4; ++r)
      for (int64_t c = 0; c < 4 * cols; ++c)
        wrong += joined[static_cast<size_t>(r * 4 * cols + c)] != static_cast<double>(c % cols);
    CHECK(wrong == 0);
  }
  tg::set_num_threads(before);
}
