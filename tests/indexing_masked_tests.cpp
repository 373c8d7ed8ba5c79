// masked_fill, masked_select, masked_scatter and index_fill: values, broadcasting, gradients,
// in-place forms and rejected calls (which must leave every tensor unchanged).
#include <doctest/doctest.h>
#include <tapegrad/tapegrad.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace {

std::vector<double> values(const tg::Tensor& t) { return t.to_vector<double>(); }

tg::Tensor bools(const std::vector<bool>& v, tg::IntArrayRef shape) { return tg::tensor(v, shape); }
tg::Tensor bool0(bool b) { return tg::tensor(std::vector<bool>{b}).reshape({}); }

tg::Tensor grad_leaf(const tg::Tensor& t) {
  tg::Tensor leaf = t.detach();
  leaf.requires_grad_();
  return leaf;
}

// A rejected in-place call: the error is the expected one and self is bit-for-bit unchanged.
template <typename Error, typename Fn>
void check_rejected_inplace(const tg::Tensor& self, const char* text, Fn&& call) {
  const std::vector<double> before = values(self);
  const uint64_t version = self.version();
  CHECK_THROWS_WITH_AS(call(), doctest::Contains(text), Error);
  CHECK(values(self) == before);
  CHECK(self.version() == version);
}

// 2-D [rows, cols] float64 tensor with values 0, 1, 2, ... (row-major).
tg::Tensor counting(int64_t rows, int64_t cols) {
  return tg::arange(rows * cols, tg::kFloat64).reshape({rows, cols});
}

}  // namespace

TEST_CASE("masked_fill: broadcast mask, tensor and number values, dtypes") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::Tensor row = bools({true, false, true}, {3});
  tg::Tensor r = tg::masked_fill(x, row, tg::scalar_tensor(9.0, tg::kFloat64));
  CHECK(values(r) == std::vector<double>{9, 2, 9, 9, 5, 9});
  CHECK(values(tg::masked_fill(x, row, -1.0)) == std::vector<double>{-1, 2, -1, -1, 5, -1});
  CHECK(values(x.masked_fill_scalar(row, 0)) == std::vector<double>{0, 2, 0, 0, 5, 0});
  // A number converts to self's dtype (truncating, as in PyTorch).
  tg::Tensor i = tg::tensor(std::vector<int64_t>{1, 2, 3});
  tg::Tensor fi = tg::masked_fill(i, row, 2.7);
  CHECK(fi.dtype() == tg::kInt64);
  CHECK(values(fi) == std::vector<double>{2, 2, 2});
  // mask larger than self: the result takes the broadcast shape.
  tg::Tensor m2 = bools({true, false, false, false, true, false}, {2, 3});
  tg::Tensor big = tg::masked_fill(tg::tensor({1., 2., 3.}), m2, 0.5);
  CHECK(big.shape() == tg::Shape{2, 3});
  CHECK(values(big) == std::vector<double>{0.5, 2, 3, 1, 0.5, 3});
  // 0-d mask over a 2-D self.
  CHECK(values(tg::masked_fill(x, bool0(true), 0.0)) == std::vector<double>(6, 0.0));
}

TEST_CASE("masked_fill: gradients of self and of a 0-d tensor value") {
  tg::Tensor x = grad_leaf(tg::tensor({{1., 2., 3.}, {4., 5., 6.}}));
  tg::Tensor v = grad_leaf(tg::scalar_tensor(9.0, tg::kFloat64));
  tg::Tensor row = bools({true, false, true}, {3});
  tg::Tensor g = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  std::vector<tg::Tensor> gr = tg::autograd::grad({tg::masked_fill(x, row, v)}, {x, v}, {g});
  CHECK(values(gr[0]) == std::vector<double>{0, 2, 0, 0, 5, 0});
  CHECK(gr[1].dim() == 0);
  CHECK(values(gr[1]) == std::vector<double>{1 + 3 + 4 + 6});
  // self broadcast by the mask: its gradient sums over the broadcast rows.
  tg::Tensor s = grad_leaf(tg::tensor({1., 2., 3.}));
  tg::Tensor m2 = bools({true, false, false, false, true, false}, {2, 3});
  tg::Tensor gs = tg::autograd::grad({tg::masked_fill(s, m2, v)}, {s}, {g})[0];
  CHECK(values(gs) == std::vector<double>{4, 2, 9});
}

TEST_CASE("masked_fill_: in place, and rejected calls change nothing") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::masked_fill_(x, bools({false, true, false}, {3}), 0.0);
  CHECK(values(x) == std::vector<double>{1, 0, 3, 4, 0, 6});
  tg::Tensor s = tg::tensor({1., 2., 3.});
  check_rejected_inplace<tg::ValueError>(s, "cannot change self's shape", [&] {
    tg::masked_fill_(s, bools({true, false, false, false, true, false}, {2, 3}), 0.0);
  });
  check_rejected_inplace<tg::TypeError>(s, "mask has dtype float32",
                                        [&] { tg::masked_fill_(s, tg::ones({3}), 0.0); });
  check_rejected_inplace<tg::ValueError>(s, "cannot broadcast", [&] {
    tg::masked_fill_(s, bools({true, false}, {2}), 0.0);
  });
  check_rejected_inplace<tg::ValueError>(s, "value must be a 0-d tensor", [&] {
    tg::masked_fill_(s, bools({true, false, true}, {3}), tg::tensor({1.}));
  });
}

TEST_CASE("masked_select: row-major order, broadcasting both ways, empty results") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::Tensor m = bools({true, false, true, false, true, false}, {2, 3});
  CHECK(values(tg::masked_select(x, m)) == std::vector<double>{1, 3, 5});
  tg::Tensor row = bools({false, true, true}, {3});
  tg::Tensor r = x.masked_select(row);
  CHECK(r.shape() == tg::Shape{4});
  CHECK(values(r) == std::vector<double>{2, 3, 5, 6});
  // Transposed self: the order is the row-major order of the (logical) broadcast shape.
  CHECK(values(tg::masked_select(x.t(), bools({true, true, false, false, true, false}, {3, 2}))) ==
        std::vector<double>{1, 4, 3});
  tg::Tensor none = tg::masked_select(x, bool0(false));
  CHECK(none.shape() == tg::Shape{0});
  CHECK(values(tg::masked_select(tg::scalar_tensor(7.0), bool0(true))) == std::vector<double>{7});
}

TEST_CASE("masked_select: gradient goes back to the masked positions") {
  tg::Tensor x = grad_leaf(tg::tensor({{1., 2., 3.}, {4., 5., 6.}}));
  tg::Tensor row = bools({false, true, true}, {3});
  tg::Tensor gx =
      tg::autograd::grad({tg::masked_select(x, row)}, {x}, {tg::tensor({10., 20., 30., 40.})})[0];
  CHECK(values(gx) == std::vector<double>{0, 10, 20, 0, 30, 40});
  // self broadcast by a larger mask: the gradient sums over the rows it was repeated in.
  tg::Tensor s = grad_leaf(tg::tensor({1., 2., 3.}));
  tg::Tensor m2 = bools({true, false, true, true, true, false}, {2, 3});
  tg::Tensor picked = tg::masked_select(s, m2);
  CHECK(values(picked) == std::vector<double>{1, 3, 1, 2});
  tg::Tensor gs = tg::autograd::grad({picked}, {s}, {tg::tensor({1., 2., 3., 4.})})[0];
  CHECK(values(gs) == std::vector<double>{4, 4, 2});
}

TEST_CASE("masked_select: large inputs agree with a plain loop") {
  const int64_t rows = 300, cols = 256;  // several parallel chunks
  tg::Tensor x = counting(rows, cols);
  std::vector<bool> row(cols);
  for (int64_t j = 0; j < cols; ++j) row[j] = j % 3 == 0;
  std::vector<double> want;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (row[j]) want.push_back(static_cast<double>(i * cols + j));
  CHECK(values(tg::masked_select(x, bools(row, {cols}))) == want);
  // The same mask materialised at the full shape, and a column mask (not a suffix).
  tg::Tensor full = tg::broadcast_to(bools(row, {cols}), {rows, cols}).contiguous();
  CHECK(values(tg::masked_select(x, full)) == want);
  std::vector<bool> col(rows);
  for (int64_t i = 0; i < rows; ++i) col[i] = i % 7 == 2;
  std::vector<double> want_col;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (col[i]) want_col.push_back(static_cast<double>(i * cols + j));
  CHECK(values(tg::masked_select(x, bools(col, {rows, 1}))) == want_col);
}

TEST_CASE("masked_scatter: source taken in row-major order, any shape, longer than needed") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::Tensor row = bools({true, false, true}, {3});
  tg::Tensor src = tg::tensor({10., 20., 30., 40., 50.});
  CHECK(values(tg::masked_scatter(x, row, src)) == std::vector<double>{10, 2, 20, 30, 5, 40});
  CHECK(values(x.masked_scatter(row, src.reshape({5, 1}))) ==
        std::vector<double>{10, 2, 20, 30, 5, 40});
  // Every position, no position, a 0-d self.
  tg::Tensor all = bool0(true);
  CHECK(values(tg::masked_scatter(x, all, tg::arange(6, tg::kFloat64).reshape({3, 2}))) ==
        std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(values(tg::masked_scatter(x, bool0(false), tg::zeros({0}, tg::kFloat64))) == values(x));
  CHECK(values(tg::masked_scatter(tg::scalar_tensor(1.0, tg::kFloat64), all,
                                  tg::tensor({7., 8.}))) == std::vector<double>{7});
  // Transposed self and mask: positions follow the result's row-major order.
  tg::Tensor xt = tg::tensor({{1., 2.}, {3., 4.}}).t();          // [[1, 3], [2, 4]]
  tg::Tensor mt = bools({true, false, true, true}, {2, 2}).t();  // [[T, T], [F, T]]
  CHECK(values(tg::masked_scatter(xt, mt, tg::tensor({7., 8., 9.}))) ==
        std::vector<double>{7, 8, 2, 9});
  // self broadcast by a larger mask (out of place only).
  tg::Tensor s = tg::tensor(std::vector<int32_t>{1, 2});
  tg::Tensor r = tg::masked_scatter(s, bools({true, false, false, true}, {2, 2}),
                                    tg::tensor(std::vector<int32_t>{8, 9}));
  CHECK(r.shape() == tg::Shape{2, 2});
  CHECK(r.dtype() == tg::kInt32);
  CHECK(values(r) == std::vector<double>{8, 2, 1, 9});
}

TEST_CASE("masked_scatter: gradients of self and source") {
  tg::Tensor x = grad_leaf(tg::tensor({{1., 2., 3.}, {4., 5., 6.}}));
  tg::Tensor src = grad_leaf(tg::tensor({{10., 20., 30.}, {40., 50., 60.}}));
  tg::Tensor row = bools({true, false, true}, {3});
  tg::Tensor g = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  std::vector<tg::Tensor> gr = tg::autograd::grad({tg::masked_scatter(x, row, src)}, {x, src}, {g});
  CHECK(values(gr[0]) == std::vector<double>{0, 2, 0, 0, 5, 0});
  // Four elements of source were used: they get grad at the masked positions, the rest 0.
  CHECK(gr[1].shape() == tg::Shape{2, 3});
  CHECK(values(gr[1]) == std::vector<double>{1, 3, 4, 6, 0, 0});
  // Double backward: the source gradient is linear in grad.
  tg::Tensor gg = grad_leaf(g);
  tg::Tensor y = tg::masked_scatter(x, row, src);
  tg::Tensor dsrc = tg::autograd::grad({y}, {src}, {gg}, false, true)[0];
  tg::Tensor w = tg::tensor({{1., 1., 1.}, {1., 0., 0.}});
  CHECK(values(tg::autograd::grad({dsrc}, {gg}, {w})[0]) == std::vector<double>{1, 0, 1, 1, 0, 1});
}

TEST_CASE("masked_scatter_: in place, and every rejected call leaves self unchanged") {
  tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  tg::masked_scatter_(x, bools({false, true, false}, {3}), tg::tensor({7., 8.}));
  CHECK(values(x) == std::vector<double>{1, 7, 3, 4, 8, 6});
  tg::Tensor row = bools({true, true, false}, {3});
  // Too few source elements: PyTorch's CPU kernel writes the first ones before it fails.
  check_rejected_inplace<tg::ValueError>(x, "the mask selects 4 elements but source has only 3",
                                         [&] {
                                           tg::masked_scatter_(x, row, tg::tensor({-1., -2., -3.}));
                                         });
  check_rejected_inplace<tg::TypeError>(x, "source has dtype float32 but self has dtype float64",
                                        [&] { tg::masked_scatter_(x, row, tg::ones({6})); });
  check_rejected_inplace<tg::TypeError>(x, "mask has dtype int64", [&] {
    x.masked_scatter_(tg::tensor(std::vector<int64_t>{1, 0, 1}), tg::ones({6}, tg::kFloat64));
  });
  check_rejected_inplace<tg::ValueError>(x, "cannot broadcast", [&] {
    tg::masked_scatter_(x, bools({true, false}, {2}), tg::ones({6}, tg::kFloat64));
  });
  check_rejected_inplace<tg::ValueError>(x, "cannot change self's shape", [&] {
    tg::masked_scatter_(x, bools({true, false, true, false, true, false}, {3, 2, 1}),
                        tg::ones({9}, tg::kFloat64));
  });
  // The out-of-place form reports the same errors and leaves its inputs alone too.
  tg::Tensor src = tg::tensor({-1., -2., -3.});
  CHECK_THROWS_WITH_AS(tg::masked_scatter(x, row, src), doctest::Contains("[masked_scatter]"),
                       tg::ValueError);
  CHECK(values(src) == std::vector<double>{-1, -2, -3});
}

TEST_CASE("masked_scatter: large inputs agree with a plain loop") {
  const int64_t rows = 300, cols = 256;
  tg::Tensor x = counting(rows, cols);
  tg::Tensor src = -counting(rows, cols) - 1;
  std::vector<bool> row(cols);
  for (int64_t j = 0; j < cols; ++j) row[j] = j % 5 != 1;
  std::vector<double> want = values(x), s = values(src);
  size_t k = 0;
  for (int64_t i = 0; i < rows * cols; ++i)
    if (row[static_cast<size_t>(i % cols)]) want[static_cast<size_t>(i)] = s[k++];
  CHECK(values(tg::masked_scatter(x, bools(row, {cols}), src)) == want);
  CHECK(values(tg::masked_scatter(x.t().contiguous().t(), bools(row, {cols}), src)) == want);
}

TEST_CASE("index_fill: negative, repeated and 0-d indices, tensor and number values") {
  tg::Tensor x = tg::tensor({{1., 2., 3., 4.}, {5., 6., 7., 8.}, {9., 10., 11., 12.}});
  tg::Tensor cols = tg::tensor(std::vector<int64_t>{3, -1, 0});  // -1 and 3 are one column
  CHECK(values(tg::index_fill(x, 1, cols, tg::scalar_tensor(-1.0))) ==
        std::vector<double>{-1, 2, 3, -1, -1, 6, 7, -1, -1, 10, 11, -1});
  tg::Tensor last = tg::tensor(std::vector<int32_t>{-1}).reshape({});  // 0-d int32 index
  CHECK(values(tg::index_fill(x, 0, last, 2.5)) ==
        std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 2.5, 2.5, 2.5, 2.5});
  CHECK(values(x.index_fill_scalar(-2, tg::tensor(std::vector<int64_t>{1, 1}), 0)) ==
        std::vector<double>{1, 2, 3, 4, 0, 0, 0, 0, 9, 10, 11, 12});
  // An empty index fills nothing; a 0-d self has one position along dim 0.
  CHECK(values(tg::index_fill(x, 1, tg::zeros({0}, tg::kInt64), 7.0)) == values(x));
  CHECK(values(tg::index_fill(tg::scalar_tensor(3.0), -1, tg::tensor(std::vector<int64_t>{-1}),
                              7.0)) == std::vector<double>{7});
  // Integer self, transposed self.
  tg::Tensor i = tg::tensor(std::vector<int64_t>{1, 2, 3, 4}).reshape({2, 2});
  CHECK(values(tg::index_fill(i.t(), 1, tg::tensor(std::vector<int64_t>{0}), 9)) ==
        std::vector<double>{9, 3, 9, 4});
}

TEST_CASE("index_fill: gradients count each filled slice once") {
  tg::Tensor x = grad_leaf(tg::tensor({{1., 2., 3., 4.}, {5., 6., 7., 8.}, {9., 10., 11., 12.}}));
  tg::Tensor v = grad_leaf(tg::scalar_tensor(0.5, tg::kFloat64));
  tg::Tensor cols = tg::tensor(std::vector<int64_t>{3, -1, 0, 0});
  tg::Tensor g = tg::tensor({{1., 2., 3., 4.}, {5., 6., 7., 8.}, {9., 10., 11., 12.}});
  std::vector<tg::Tensor> gr = tg::autograd::grad({tg::index_fill(x, 1, cols, v)}, {x, v}, {g});
  CHECK(values(gr[0]) == std::vector<double>{0, 2, 3, 0, 0, 6, 7, 0, 0, 10, 11, 0});
  CHECK(values(gr[1]) == std::vector<double>{(1 + 5 + 9) + (4 + 8 + 12)});
  // In place on a non-leaf: x's gradient misses the filled slices, value gets their sum.
  tg::Tensor y = x * 1.0;
  tg::index_fill_(y, 0, tg::tensor(std::vector<int64_t>{-3}), v);
  std::vector<tg::Tensor> gi = tg::autograd::grad({y}, {x, v}, {g});
  CHECK(values(gi[0]) == std::vector<double>{0, 0, 0, 0, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(values(gi[1]) == std::vector<double>{10});
}

TEST_CASE("index_fill_: rejected calls name the problem and change nothing") {
  tg::Tensor x = tg::tensor({{1., 2., 3., 4.}, {5., 6., 7., 8.}, {9., 10., 11., 12.}});
  tg::Tensor ok = tg::tensor(std::vector<int64_t>{0});
  check_rejected_inplace<tg::IndexError>(
      x, "index 4 is out of range for dim 1 of size 4 (expected an index in [-4, 3])", [&] {
        tg::index_fill_(x, 1, tg::tensor(std::vector<int64_t>{0, 4}), 0.0);
      });
  check_rejected_inplace<tg::IndexError>(x, "index -4 is out of range for dim 0 of size 3", [&] {
    tg::index_fill_(x, 0, tg::tensor(std::vector<int32_t>{-4}), 0.0);
  });
  check_rejected_inplace<tg::TypeError>(x, "index has dtype float64",
                                        [&] { tg::index_fill_(x, 0, tg::tensor({0.}), 0.0); });
  check_rejected_inplace<tg::ValueError>(x, "index must be 0-d or 1-d, got a 2-d tensor", [&] {
    tg::index_fill_(x, 0, ok.reshape({1, 1}), 0.0);
  });
  check_rejected_inplace<tg::IndexError>(x, "dim 2 is out of range",
                                         [&] { tg::index_fill_(x, 2, ok, 0.0); });
  check_rejected_inplace<tg::ValueError>(x, "value must be a 0-d tensor",
                                         [&] { tg::index_fill_(x, 0, ok, tg::tensor({1.})); });
}

TEST_CASE("index_fill: large inputs agree with a plain loop") {
  const int64_t rows = 300, cols = 256;
  tg::Tensor x = counting(rows, cols);
  std::vector<double> want = values(x);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j : {0L, 5L, cols - 1}) want[static_cast<size_t>(i * cols + j)] = -1;
  CHECK(values(tg::index_fill(x, 1, tg::tensor(std::vector<int64_t>{0, 5, -1, 5}), -1.0)) == want);
  want = values(x);
  for (int64_t j = 0; j < cols; ++j) want[static_cast<size_t>(7 * cols + j)] = 2;
  CHECK(values(tg::index_fill(x, 0, tg::tensor(std::vector<int64_t>{7, -293}), 2.0)) == want);
}

TEST_CASE("masked_select / masked_scatter / its backward: random masks, odd sizes, every layout") {
  // Odd lengths (not multiples of the kernels' 8-element steps or 512-element blocks), short
  // periods that get tiled, full-shape masks and column masks, all against plain loops.
  std::mt19937 rng(7);
  for (const auto& size : {std::pair<int64_t, int64_t>{37, 1027}, {5, 3}, {1, 1}, {600, 13}}) {
    const int64_t rows = size.first, cols = size.second;
    for (int layout = 0; layout < 3; ++layout) {
      CAPTURE(rows);
      CAPTURE(cols);
      CAPTURE(layout);
      // layout 0: a row mask [cols]; 1: the full shape; 2: a column mask [rows, 1]
      const int64_t mrows = layout == 0 ? 1 : rows, mcols = layout == 2 ? 1 : cols;
      std::vector<bool> m(static_cast<size_t>(mrows * mcols));
      for (size_t e = 0; e < m.size(); ++e) m[e] = rng() % 2 == 0;
      const tg::Tensor mask = layout == 0 ? bools(m, {cols}) : bools(m, {mrows, mcols});
      auto at = [&](int64_t i, int64_t j) {
        return m[static_cast<size_t>((layout == 2 ? i : (layout == 0 ? 0 : i)) * mcols +
                                     (layout == 2 ? 0 : j))];
      };
      const tg::Tensor x = counting(rows, cols), src = -counting(rows, cols) - 1;
      std::vector<double> selected, scattered = values(x), grad_source(rows * cols, 0.0);
      const std::vector<double> s = values(src);
      size_t k = 0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          if (at(i, j)) {
            selected.push_back(static_cast<double>(i * cols + j));
            scattered[static_cast<size_t>(i * cols + j)] = s[k];
            grad_source[k] = static_cast<double>(i * cols + j);  // grad_output = x's values
            ++k;
          }
      CHECK(values(tg::masked_select(x, mask)) == selected);
      CHECK(values(tg::masked_scatter(x, mask, src)) == scattered);
      CHECK(values(tg::masked_scatter_backward(x, mask, {rows, cols})) == grad_source);
    }
  }
}
