// The index/scatter family: index_select, index_add, index_copy, index_reduce, gather, scatter,
// scatter_add, scatter_reduce; forward values, duplicate rules, gradients and errors.
#include <doctest/doctest.h>
#include <tapegrad/ops/scatter_slices.h>
#include <tapegrad/tapegrad.h>

#include <string>
#include <vector>

#include "test_helpers.h"

namespace {

using Vec = std::vector<double>;
Vec values(const tg::Tensor& t) { return t.to_vector<double>(); }
tg::Tensor idx(std::vector<int64_t> v) { return tg::tensor(v); }
tg::Tensor idx(std::vector<int64_t> v, tg::IntArrayRef shape) { return tg::tensor(v, shape); }
tg::Tensor leaf(Vec v, tg::IntArrayRef shape) {
  tg::Tensor t = tg::tensor(v, shape);
  t.requires_grad_();
  return t;
}
tg::Tensor leaf(Vec v) { return leaf(v, {static_cast<int64_t>(v.size())}); }

// Gradients of sum(out) wrt each input.
std::vector<Vec> grads_of_sum(const tg::Tensor& out, const std::vector<tg::Tensor>& inputs) {
  std::vector<Vec> result;
  for (const tg::Tensor& g : tg::autograd::grad({tg::sum(out)}, inputs))
    result.push_back(values(g));
  return result;
}

using tg_test::error_of;

}  // namespace

TEST_CASE("index_select picks slices, duplicates included - grad adds back") {
  tg::Tensor x = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  tg::Tensor y = tg::index_select(x, 0, idx({2, 0, 2}));
  CHECK(y.shape() == tg::Shape{3, 2});
  CHECK(values(y) == Vec{5, 6, 1, 2, 5, 6});
  CHECK(grads_of_sum(y, {x})[0] == Vec{1, 1, 0, 0, 2, 2});
  CHECK(values(tg::index_select(x, -1, idx({1}))) == Vec{2, 4, 6});
}

TEST_CASE("index_select along the last dim: rows gathered four at a time, any layout and threads") {
  // One index shared by every row: checked once, then 4 rows per step and the last rows (here 3 of
  // 2 * 5 * 7 = 70, or 2 of each half at 2 threads) one at a time; self transposed, so its rows
  // are not contiguous; int32 indices; an index out of range raises and changes nothing.
  const int64_t a = 2, b = 5, c = 7, m = 9;
  Vec v;
  for (int64_t i = 0; i < a * b * c * m; ++i) v.push_back(static_cast<double>(i));
  const tg::Tensor base = tg::tensor(v, {a, c, b, m});  // base[i, k, j, l]
  const tg::Tensor x = base.transpose(1, 2);            // x[i, j, k, l] = base[i, k, j, l]
  const std::vector<int64_t> pick = {8, 0, 3, 3, 7, 1, 8, 2, 5, 0, 4};
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    const int before = tg::get_num_threads();
    tg::set_num_threads(threads);
    const Vec got = values(tg::index_select(x, 3, idx(pick)));
    const Vec got32 = values(tg::index_select(x, -1, idx(pick).to_dtype(tg::kInt32)));
    tg::set_num_threads(before);
    int64_t wrong = 0, p = 0;
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        for (int64_t k = 0; k < c; ++k)
          for (int64_t l : pick) {
            const double want = v[static_cast<size_t>(((i * c + k) * b + j) * m + l)];
            wrong +=
                (got[static_cast<size_t>(p)] != want) + (got32[static_cast<size_t>(p)] != want);
            ++p;
          }
    CHECK(p == static_cast<int64_t>(got.size()));
    CHECK(wrong == 0);
  }
  CHECK(error_of([&] { tg::index_select(x, 3, idx({0, 9})); }).find("[index_select]") == 0);
  CHECK(error_of([&] { tg::index_select(x, 3, idx({-1, 2})); }).find("[index_select]") == 0);
}

TEST_CASE("index_add scales by alpha and accumulates duplicates") {
  tg::Tensor self = leaf({1, 1, 1, 1, 1, 1}, {3, 2});
  tg::Tensor source = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  tg::Tensor y = tg::index_add(self, 0, idx({2, 0, 2}), source, 2);
  CHECK(values(y) == Vec{7, 9, 1, 1, 13, 17});
  auto g = grads_of_sum(y, {self, source});
  CHECK(g[0] == Vec{1, 1, 1, 1, 1, 1});
  CHECK(g[1] == Vec{2, 2, 2, 2, 2, 2});
}

TEST_CASE("index_copy: the last duplicate wins, and only it gets the gradient") {
  tg::Tensor self = leaf({0, 0, 0, 0, 0, 0}, {3, 2});
  tg::Tensor source = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  tg::Tensor y = tg::index_copy(self, 0, idx({0, 2, 0}), source);
  CHECK(values(y) == Vec{5, 6, 0, 0, 3, 4});
  auto g = grads_of_sum(y, {self, source});
  CHECK(g[0] == Vec{0, 0, 1, 1, 0, 0});
  CHECK(g[1] == Vec{0, 0, 1, 1, 1, 1});
}

TEST_CASE("gather and its gradient") {
  tg::Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  tg::Tensor y = tg::gather(x, 1, idx({2, 0, 1, 1}, {2, 2}));
  CHECK(values(y) == Vec{3, 1, 5, 5});
  CHECK(grads_of_sum(y, {x})[0] == Vec{1, 0, 1, 0, 2, 0});
}

TEST_CASE("scatter: the last write along dim wins - losers get no gradient") {
  tg::Tensor self = leaf({0, 0, 0});
  tg::Tensor src = leaf({10, 20, 30});
  tg::Tensor y = tg::scatter(self, 0, idx({1, 1, 0}), src);
  CHECK(values(y) == Vec{30, 20, 0});
  auto g = grads_of_sum(y, {self, src});
  CHECK(g[0] == Vec{0, 0, 1});
  CHECK(g[1] == Vec{0, 1, 1});
}

TEST_CASE("scatter_add with an index smaller than src: forward and backward") {
  tg::Tensor self = leaf({0, 0, 0, 0}, {2, 2});
  tg::Tensor src = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  tg::Tensor y = tg::scatter_add(self, 1, idx({0, 0}, {1, 2}), src);
  CHECK(values(y) == Vec{3, 0, 0, 0});
  auto g = grads_of_sum(y, {self, src});
  CHECK(g[0] == Vec{1, 1, 1, 1});
  CHECK(g[1] == Vec{1, 1, 0, 0, 0, 0});
}

TEST_CASE("scatter_reduce prod: exact gradients with one and two zeros in a slot") {
  // slot 0: 2 * 0 * 4 (one zero), slot 1: 3 * 0 * 0 * 7 (two zeros), slot 2: 5 untouched
  tg::Tensor self = leaf({2, 3, 5});
  tg::Tensor src = leaf({0, 4, 0, 0, 7});
  const tg::Tensor index = idx({0, 0, 1, 1, 1});
  tg::Tensor y = tg::scatter_reduce(self, 0, index, src, "prod");
  CHECK(values(y) == Vec{0, 0, 5});
  auto g = grads_of_sum(y, {self, src});
  CHECK(g[0] == Vec{0, 0, 1});
  CHECK(g[1] == Vec{8, 0, 0, 0, 0});

  // second derivative: d(dy1/dsrc2)/dsrc3 is the product of the nonzero rest, 3 * 7
  tg::Tensor gs = tg::autograd::grad({tg::sum(tg::scatter_reduce(self, 0, index, src, "prod"))},
                                     {src}, {}, true, true)[0];
  tg::Tensor row = tg::autograd::grad({gs}, {src}, {tg::tensor(Vec{0, 0, 1, 0, 0})})[0];
  CHECK(values(row) == Vec{0, 0, 0, 21, 0});

  // include_self = false: slot 0 is 0 * 4, slot 1 is 0 * 0 * 7
  tg::Tensor z = tg::scatter_reduce(self, 0, index, src, "prod", false);
  CHECK(values(z) == Vec{0, 0, 5});
  auto h = grads_of_sum(z, {self, src});
  CHECK(h[0] == Vec{0, 0, 1});
  CHECK(h[1] == Vec{4, 0, 0, 0, 0});
}

TEST_CASE("scatter_reduce mean counts self only with include_self") {
  tg::Tensor self = leaf({1, 2, 3});
  tg::Tensor src = leaf({4, 6, 9});
  const tg::Tensor index = idx({0, 0, 2});
  tg::Tensor with_self = tg::scatter_reduce(self, 0, index, src, "mean");
  CHECK(values(with_self) == Vec{11.0 / 3, 2, 6});
  auto g = grads_of_sum(with_self, {self, src});
  CHECK(g[0] == Vec{1.0 / 3, 1, 0.5});
  CHECK(g[1] == Vec{1.0 / 3, 1.0 / 3, 0.5});
  tg::Tensor without = tg::scatter_reduce(self, 0, index, src, "mean", false);
  CHECK(values(without) == Vec{5, 2, 9});
  auto h = grads_of_sum(without, {self, src});
  CHECK(h[0] == Vec{0, 1, 0});
  CHECK(h[1] == Vec{0.5, 0.5, 1});
  // integral means round down, as PyTorch's
  tg::Tensor ints = tg::scatter_reduce(idx({1}), 0, idx({0, 0}), idx({-2, -3}), "mean", false);
  CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{-3});
}

TEST_CASE("amax ties share the gradient - self left out with include_self = false") {
  tg::Tensor self = leaf({5, 1});
  tg::Tensor src = leaf({5, 3});
  const tg::Tensor index = idx({0, 0});
  tg::Tensor with_self = tg::scatter_reduce(self, 0, index, src, "amax");
  CHECK(values(with_self) == Vec{5, 1});
  auto g = grads_of_sum(with_self, {self, src});
  CHECK(g[0] == Vec{0.5, 1});
  CHECK(g[1] == Vec{0.5, 0});
  // PyTorch 1.13 gives src 0.5 here: it counts self's tied 5 although self is left out
  tg::Tensor without = tg::scatter_reduce(self, 0, index, src, "amax", false);
  auto h = grads_of_sum(without, {self, src});
  CHECK(h[0] == Vec{0, 1});
  CHECK(h[1] == Vec{1, 0});
}

TEST_CASE("index_reduce amin and prod along dim 0") {
  tg::Tensor self = tg::tensor(Vec{1, 2, 3, 4}, {2, 2});
  tg::Tensor source = tg::tensor(Vec{0, 5, 2, -1}, {2, 2});
  CHECK(values(tg::index_reduce(self, 0, idx({1, 1}), source, "amin")) == Vec{1, 2, 0, -1});
  CHECK(values(tg::index_reduce(self, 0, idx({1, 0}), source, "prod", false)) == Vec{2, -1, 0, 5});
  // an empty index changes nothing
  CHECK(values(tg::index_reduce(self, 1, idx({}), tg::zeros({2, 0}, tg::kFloat64), "mean")) ==
        Vec{1, 2, 3, 4});
}

TEST_CASE("errors are typed, name the op, and leave in-place targets unchanged") {
  tg::Tensor x = tg::tensor(Vec{1, 2, 3});
  const std::string range = error_of([&] { x.scatter_(0, idx({5}), tg::tensor(Vec{9})); });
  CHECK(range.find("[scatter") != std::string::npos);
  CHECK(range.find("index 5 is out of range for dim 0 of size 3") != std::string::npos);
  CHECK(values(x) == Vec{1, 2, 3});
  CHECK_THROWS_AS(tg::index_add_(x, 0, idx({-1}), tg::tensor(Vec{9})), tg::IndexError);
  CHECK(values(x) == Vec{1, 2, 3});
  const std::string reduce =
      error_of([&] { tg::index_reduce_(x, 0, idx({0}), tg::tensor(Vec{9}), "sum"); });
  CHECK(reduce.find("prod, mean, amax, amin") != std::string::npos);
  CHECK(values(x) == Vec{1, 2, 3});
  CHECK_THROWS_AS(tg::index_copy(x, 0, idx({0, 1}), tg::tensor(Vec{9})), tg::ValueError);
  CHECK_THROWS_AS(tg::gather(x, 0, tg::tensor(Vec{0})), tg::TypeError);
  CHECK_THROWS_AS(tg::index_select(x, 1, idx({0})), tg::IndexError);
}

TEST_CASE(
    "the seed's scatter form: overwrite, reduce, axis, include_self, 0-d "
    "index") {
  const tg::Tensor x = tg::tensor(Vec{1, 1, 2, 2, 3, 3}, {3, 2});
  const tg::Tensor index = idx({2, 1, 0, 1});
  const tg::Tensor updates = tg::tensor(Vec{1, 1, 2, 2, 3, 3, 4, 4}, {4, 2});
  // the seed's own example: slots that receive updates start from zero, then add
  CHECK(values(tg::scatter(x, index, updates, {.overwrite = false})) == Vec{3, 3, 6, 6, 1, 1});
  CHECK(values(tg::scatter(x, index, updates)) == Vec{3, 3, 4, 4, 1, 1});  // last write wins
  CHECK(values(tg::scatter(x, index, updates, {.overwrite = false, .include_self = true})) ==
        Vec{4, 4, 8, 8, 4, 4});
  CHECK(values(tg::scatter(x, index, updates, {.overwrite = false, .reduce = "mul"})) ==
        Vec{3, 3, 8, 8, 1, 1});
  const tg::Tensor y = tg::tensor(Vec{1, 2, 3, 4}, {2, 2});
  CHECK(values(
            tg::scatter(y, idx({1, 1}), tg::tensor(Vec{5, 6, 7, 8}, {2, 2}),
                        {.overwrite = false, .axis = 1, .reduce = "mean", .include_self = true})) ==
        Vec{1, 13.0 / 3, 3, 19.0 / 3});
  CHECK(values(tg::scatter(y, tg::scalar_tensor(1, tg::kInt64), tg::tensor(Vec{9, 9}))) ==
        Vec{1, 2, 9, 9});
  // updates longer than index along axis: only the first rows take part, the rest get no grad
  tg::Tensor longer = leaf({5, 6, 7, 8}, {2, 2});
  tg::Tensor w = tg::scatter(y, idx({0}), longer, {.overwrite = false, .reduce = "amin"});
  CHECK(values(w) == Vec{5, 6, 3, 4});
  CHECK(grads_of_sum(w, {longer})[0] == Vec{1, 1, 0, 0});
  CHECK_THROWS_AS(tg::scatter(y, idx({0, 1}), tg::tensor(Vec{1, 2}, {1, 2})), tg::ValueError);
  tg::Tensor z = tg::tensor(Vec{1, 2, 3, 4}, {2, 2});
  const std::string bad = error_of([&] {
    tg::scatter_(z, idx({0}), tg::tensor(Vec{9, 9}, {1, 2}), {.overwrite = false, .reduce = "max"});
  });
  CHECK(bad.find("[scatter] reduce must be one of add, sum, mul, multiply, "
                 "mean, amax, amin") != std::string::npos);
  CHECK(values(z) == Vec{1, 2, 3, 4});
  tg::scatter_(z, idx({0}), tg::tensor(Vec{9, 9}, {1, 2}), {.overwrite = false, .reduce = "amax"});
  CHECK(values(z) == Vec{9, 9, 3, 4});
}

TEST_CASE("index ops: the contiguous row path agrees with the strided path, in parallel") {
  const tg::Tensor self = tg::randn({64, 300}, tg::kFloat64);
  const tg::Tensor source = tg::randn({500, 300}, tg::kFloat64);
  // the same values with transposed strides: not contiguous, so the strided engine runs
  const tg::Tensor strided = tg::transpose(tg::transpose(source, 0, 1).contiguous(), 0, 1);
  REQUIRE(!strided.is_contiguous());
  const tg::Tensor index = tg::randint(0, 64, {500});
  for (const char* reduce : {"prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      CAPTURE(reduce);
      CAPTURE(include_self);
      CHECK(values(tg::index_reduce(self, 0, index, source, reduce, include_self)) ==
            values(tg::index_reduce(self, 0, index, strided, reduce, include_self)));
    }
  }
  CHECK(values(tg::index_add(self, 0, index, source, 2)) ==
        values(tg::index_add(self, 0, index, strided, 2)));
  CHECK(values(tg::index_copy(self, 0, index, source)) ==
        values(tg::index_copy(self, 0, index, strided)));
  const tg::Tensor t = tg::transpose(tg::transpose(self, 0, 1).contiguous(), 0, 1);
  CHECK(values(tg::index_select(self, 0, index)) == values(tg::index_select(t, 0, index)));
}
