// The CPU index/scatter engine against a naive reference, on shapes that reach its every path:
// 1-d to 4-d, every dim (negative too), an index smaller than self and src, transposed inputs,
// int32 indices, every reduce with include_self on and off, values drawn from a small pool (ties,
// zeros, duplicates). The reference walks the index's positions in row-major order and applies
// each entry at once, the definition of the ops; sums see their terms in the same order, so the
// results must agree exactly. Then the fused backward kernels (a plain backward) against the
// composed formulas (a create_graph backward) on the same cases.
#include <doctest/doctest.h>
#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using Vec = std::vector<double>;
using Shape = std::vector<int64_t>;

std::mt19937& rng() {
  static std::mt19937 g(1234);
  return g;
}

int64_t pick(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng()); }

// Values from a small pool: ties and zeros on purpose.
tg::Tensor pool_values(const Shape& shape) {
  static const double pool[] = {-2, -1, -0.5, 0, 0.5, 1, 1.5, 3};
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Vec v(static_cast<size_t>(n));
  for (double& x : v) x = pool[pick(8)];
  return tg::tensor(v).reshape(shape);
}

tg::Tensor random_index(const Shape& shape, int64_t bound, bool int32) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& x : v) x = pick(bound);
  tg::Tensor t = tg::tensor(v);
  if (n == 0) t = t.to(tg::kInt64);
  return (int32 ? t.to(tg::kInt32) : t).reshape(shape);
}

// A copy of t laid out transposed in memory (same shape and values, other strides).
tg::Tensor transposed_copy(const tg::Tensor& t) {
  if (t.dim() < 2) return t;
  return t.transpose(0, t.dim() - 1).contiguous().transpose(0, t.dim() - 1);
}

// Same size and the same values, NaN matching NaN.
bool same_values(const tg::Tensor& a, const tg::Tensor& b) {
  const Vec x = a.to_vector<double>(), y = b.to_vector<double>();
  bool ok = x.size() == y.size();
  for (size_t e = 0; ok && e < x.size(); ++e)
    ok = x[e] == y[e] || (std::isnan(x[e]) && std::isnan(y[e]));
  return ok;
}

Shape strides_of(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (int64_t k = static_cast<int64_t>(shape.size()) - 2; k >= 0; --k)
    s[static_cast<size_t>(k)] = s[static_cast<size_t>(k + 1)] * shape[static_cast<size_t>(k + 1)];
  return s;
}

// Calls fn(position) for every position of shape, row-major.
template <typename Fn> void for_positions(const Shape& shape, Fn&& fn) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Shape p(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
      p[static_cast<size_t>(k)] = rest % shape[static_cast<size_t>(k)];
      rest /= shape[static_cast<size_t>(k)];
    }
    fn(p);
  }
}

int64_t offset(const Shape& p, const Shape& strides) {
  int64_t o = 0;
  for (size_t k = 0; k < p.size(); ++k) o += p[k] * strides[k];
  return o;
}

double combine(const std::string& reduce, double slot, double v) {
  if (reduce == "assign") return v;
  if (reduce == "sum" || reduce == "mean") return slot + v;
  if (reduce == "prod") return slot * v;
  if (reduce == "amax") return v > slot ? v : slot;
  return v < slot ? v : slot;  // amin
}

double start(const std::string& reduce) {
  if (reduce == "prod") return 1;
  if (reduce == "amax") return -std::numeric_limits<double>::infinity();
  if (reduce == "amin") return std::numeric_limits<double>::infinity();
  return 0;
}

// The definition: every position p of the index sends src[p] to slot p with p[dim] = index[p].
// by_row: the index ops (a 1-d index; entry p reads index[p[dim]], src has n at dim).
Vec reference(const tg::Tensor& self, int64_t dim, const tg::Tensor& index, const tg::Tensor& src,
              const std::string& reduce, bool include_self, bool by_row) {
  const Shape self_shape = self.shape().vec(), src_shape = src.shape().vec();
  const Shape entries = by_row ? src_shape : index.shape().vec();
  const Vec x = self.to_vector<double>(), s = src.to_vector<double>();
  const std::vector<int64_t> ix = index.to_vector<int64_t>();
  const Shape xs = strides_of(self_shape), ss = strides_of(src_shape);
  const Shape is = strides_of(index.shape().vec());
  Vec out = x;
  std::vector<int64_t> count(x.size(), 0);
  const size_t d = static_cast<size_t>(dim);
  for_positions(entries, [&](const Shape& p) {
    Shape q = p;
    q[d] = by_row ? ix[static_cast<size_t>(p[d])] : ix[static_cast<size_t>(offset(p, is))];
    double& slot = out[static_cast<size_t>(offset(q, xs))];
    int64_t& c = count[static_cast<size_t>(offset(q, xs))];
    if (c++ == 0 && !include_self) slot = start(reduce);
    slot = combine(reduce, slot, s[static_cast<size_t>(offset(p, ss))]);
  });
  if (reduce == "mean")
    for (size_t e = 0; e < out.size(); ++e)
      if (count[e] > 0) out[e] /= static_cast<double>(count[e] + (include_self ? 1 : 0));
  return out;
}

// A random scatter-form case: self, an index no larger than self off dim, src no smaller than
// the index; some inputs transposed in memory, some indices int32.
struct Case {
  tg::Tensor self, index, src;
  int64_t dim;
};

Case scatter_case() {
  const int64_t nd = 1 + pick(4);
  Shape self_shape, index_shape, src_shape;
  for (int64_t k = 0; k < nd; ++k) self_shape.push_back(1 + pick(4));
  const int64_t dim = pick(nd);
  for (int64_t k = 0; k < nd; ++k) {
    const int64_t s = self_shape[static_cast<size_t>(k)];
    index_shape.push_back(k == dim ? pick(7) : 1 + pick(s));
    src_shape.push_back(index_shape.back() + pick(2));
  }
  Case c{pool_values(self_shape),
         random_index(index_shape, self_shape[static_cast<size_t>(dim)], pick(2) == 0),
         pool_values(src_shape), dim - (pick(2) == 0 ? nd : 0)};
  if (pick(3) == 0) c.self = transposed_copy(c.self);
  if (pick(3) == 0) c.index = transposed_copy(c.index);
  if (pick(3) == 0) c.src = transposed_copy(c.src);
  return c;
}

// The same with a 1-d index along dim and src of self's shape but n at dim (index ops).
Case index_case() {
  const int64_t nd = 1 + pick(4);
  Shape self_shape;
  for (int64_t k = 0; k < nd; ++k) self_shape.push_back(1 + pick(4));
  const int64_t dim = pick(nd), n = pick(7);
  Shape src_shape = self_shape;
  src_shape[static_cast<size_t>(dim)] = n;
  Case c{pool_values(self_shape),
         random_index({n}, self_shape[static_cast<size_t>(dim)], pick(2) == 0),
         pool_values(src_shape), dim - (pick(2) == 0 ? nd : 0)};
  if (pick(3) == 0) c.self = transposed_copy(c.self);
  if (pick(3) == 0) c.src = transposed_copy(c.src);
  return c;
}

int64_t wrap(int64_t dim, int64_t nd) { return dim < 0 ? dim + nd : dim; }

const char* kReduces[] = {"sum", "prod", "mean", "amax", "amin"};

}  // namespace

TEST_CASE("scatter engine: every walk-form op matches the definition on random layouts") {
  for (int trial = 0; trial < 300; ++trial) {
    const Case c = scatter_case();
    const int64_t d = wrap(c.dim, c.self.dim());
    CAPTURE(trial);
    CAPTURE(c.self.shape());
    CAPTURE(c.index.shape());
    CAPTURE(c.src.shape());
    CAPTURE(c.dim);
    for (const char* reduce : kReduces) {
      for (bool include_self : {true, false}) {
        CAPTURE(reduce);
        CAPTURE(include_self);
        const tg::Tensor got =
            tg::scatter_reduce(c.self, c.dim, c.index, c.src, reduce, include_self);
        CHECK(got.to_vector<double>() ==
              reference(c.self, d, c.index, c.src, reduce, include_self, false));
      }
    }
    CHECK(tg::scatter_add(c.self, c.dim, c.index, c.src).to_vector<double>() ==
          reference(c.self, d, c.index, c.src, "sum", true, false));
    CHECK(tg::scatter(c.self, c.dim, c.index, c.src).to_vector<double>() ==
          reference(c.self, d, c.index, c.src, "assign", true, false));
    // gather is the transpose of scatter: out[p] = self[p with p[dim] = index[p]]
    const tg::Tensor g = tg::gather(c.self, c.dim, c.index);
    const Vec x = c.self.to_vector<double>(), gv = g.to_vector<double>();
    const std::vector<int64_t> ix = c.index.to_vector<int64_t>();
    const Shape xs = strides_of(c.self.shape().vec()), is = strides_of(c.index.shape().vec());
    bool same = true;
    for_positions(c.index.shape().vec(), [&](const Shape& p) {
      Shape q = p;
      q[static_cast<size_t>(d)] = ix[static_cast<size_t>(offset(p, is))];
      const double want = x[static_cast<size_t>(offset(q, xs))];
      same = same && gv[static_cast<size_t>(offset(p, is))] == want;
    });
    CHECK(same);
  }
}

TEST_CASE("scatter engine: every row-form op matches the definition on random layouts") {
  for (int trial = 0; trial < 300; ++trial) {
    const Case c = index_case();
    const int64_t d = wrap(c.dim, c.self.dim());
    CAPTURE(trial);
    CAPTURE(c.self.shape());
    CAPTURE(c.index.shape());
    CAPTURE(c.dim);
    for (const char* reduce : {"prod", "mean", "amax", "amin"}) {
      for (bool include_self : {true, false}) {
        CAPTURE(reduce);
        CAPTURE(include_self);
        CHECK(tg::index_reduce(c.self, c.dim, c.index, c.src, reduce, include_self)
                  .to_vector<double>() ==
              reference(c.self, d, c.index, c.src, reduce, include_self, true));
      }
    }
    CHECK(tg::index_add(c.self, c.dim, c.index, c.src).to_vector<double>() ==
          reference(c.self, d, c.index, c.src, "sum", true, true));
    CHECK(tg::index_copy(c.self, c.dim, c.index, c.src).to_vector<double>() ==
          reference(c.self, d, c.index, c.src, "assign", true, true));
    // index_select: picked[p] = self[p with p[dim] = index[p[dim]]]
    const tg::Tensor picked = tg::index_select(c.self, c.dim, c.index);
    const Vec x = c.self.to_vector<double>(), pv = picked.to_vector<double>();
    const std::vector<int64_t> ix = c.index.to_vector<int64_t>();
    const Shape xs = strides_of(c.self.shape().vec()), ps = strides_of(picked.shape().vec());
    bool same = true;
    for_positions(picked.shape().vec(), [&](const Shape& p) {
      Shape q = p;
      q[static_cast<size_t>(d)] = ix[static_cast<size_t>(p[static_cast<size_t>(d)])];
      const double want = x[static_cast<size_t>(offset(q, xs))];
      same = same && pv[static_cast<size_t>(offset(p, ps))] == want;
    });
    CHECK(same);
  }
}

TEST_CASE(
    "fused reduce gradients equal the composed ones (ties, zeros, duplicates - one or both "
    "inputs)") {
  for (int trial = 0; trial < 150; ++trial) {
    for (bool rows : {false, true}) {
      const Case c = rows ? index_case() : scatter_case();
      CAPTURE(trial);
      CAPTURE(rows);
      CAPTURE(c.self.shape());
      CAPTURE(c.index.shape());
      CAPTURE(c.dim);
      for (const char* reduce : kReduces) {
        if (rows && std::string(reduce) == "sum") continue;
        for (bool include_self : {true, false}) {
          CAPTURE(reduce);
          CAPTURE(include_self);
          tg::Tensor self = c.self.detach().requires_grad_(), src = c.src.detach().requires_grad_();
          const tg::Tensor out =
              rows ? tg::index_reduce(self, c.dim, c.index, src, reduce, include_self)
                   : tg::scatter_reduce(self, c.dim, c.index, src, reduce, include_self);
          const tg::Tensor g = pool_values(out.shape().vec());
          const auto fused = tg::autograd::grad({out}, {self, src}, {g}, true, false);
          const auto composed = tg::autograd::grad({out}, {self, src}, {g}, true, true);
          for (size_t k = 0; k < 2; ++k) {
            REQUIRE(fused[k].numel() == composed[k].numel());
            CHECK_MESSAGE(same_values(fused[k], composed[k]), (k == 0 ? "self" : "src"));
          }
          // one input requiring grad: the fused op computes that gradient alone, the same values
          for (size_t k = 0; k < 2; ++k) {
            tg::Tensor s1 = c.self.detach(), x1 = c.src.detach();
            (k == 0 ? s1 : x1).requires_grad_();
            const tg::Tensor out1 =
                rows ? tg::index_reduce(s1, c.dim, c.index, x1, reduce, include_self)
                     : tg::scatter_reduce(s1, c.dim, c.index, x1, reduce, include_self);
            const auto alone = tg::autograd::grad({out1}, {k == 0 ? s1 : x1}, {g}, true, false);
            REQUIRE(alone[0].numel() == composed[k].numel());
            CHECK_MESSAGE(same_values(alone[0], composed[k]),
                          (k == 0 ? "self alone" : "src alone"));
          }
        }
      }
    }
  }
}

// Along the last dim the fused backward runs one loop per line: amax/amin write src's gradient
// assuming one winner per slot and walk the line again when a slot has ties or a NaN result;
// mean counts, then reads each slot's share. Both must give the composed formulas' values, in
// float32 and float64, with unit and non-unit steps, with and without self, ties and NaNs.
TEST_CASE("line kernels of the fused scatter_reduce backward: ties, NaN results, strides") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // row 0: distinct values (one winner per slot); row 1: ties with self and between entries;
  // row 2: NaN in self and in src, no ties (the NaN alone sends that line to the second walk);
  // row 3: a NaN slot (no winner) beside a tied one (two): the winners add up to the slots, so
  // only the NaN check sends it to the tie-counting walk
  const tg::Tensor self = tg::tensor(
      {{1.0, 4.0, 2.0, 0.5}, {3.0, 3.0, 1.0, -1.0}, {nan, 1.0, 2.0, 0.25}, {nan, 1.0, 2.0, 0.5}});
  const tg::Tensor src = tg::tensor({{0.5, 5.0, 1.5, 3.0, 0.75, 2.5},
                                     {3.0, 2.0, 3.0, 1.0, 1.0, -1.0},
                                     {1.0, nan, 2.5, 3.0, 0.5, 7.0},
                                     {1.0, 1.0, 0.25, 0.1, 0.2, 0.05}});
  const tg::Tensor index =
      tg::tensor({{0, 1, 2, 2, 3, 0}, {0, 1, 1, 2, 2, 3}, {0, 1, 2, 2, 3, 3}, {0, 1, 2, 3, 2, 3}})
          .to(tg::kInt64);
  const tg::Tensor g = tg::tensor(
      {{1.0, -2.0, 0.5, 3.0}, {2.0, 1.0, -1.0, 4.0}, {1.5, 2.0, -0.5, 1.0}, {1.0, 2.0, 3.0, 4.0}});
  int fix_ups = 0;  // cases whose expected gradient needs the second walk (ties or NaN)
  for (tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    for (bool strided : {false, true}) {
      for (const char* reduce : {"amax", "amin", "mean"}) {
        for (bool include_self : {true, false}) {
          CAPTURE(tg::dtype_name(dtype));
          CAPTURE(strided);
          CAPTURE(reduce);
          CAPTURE(include_self);
          const tg::Tensor ix = strided ? transposed_copy(index) : index;
          tg::Tensor x = self.to(dtype).detach().requires_grad_();
          tg::Tensor v = (strided ? transposed_copy(src) : src).to(dtype).detach().requires_grad_();
          const tg::Tensor out = tg::scatter_reduce(x, -1, ix, v, reduce, include_self);
          const tg::Tensor gd = g.to(dtype);
          const auto fused = tg::autograd::grad({out}, {x, v}, {gd}, true, false);
          const auto composed = tg::autograd::grad({out}, {x, v}, {gd}, true, true);
          CHECK_MESSAGE(same_values(fused[0], composed[0]), "self");
          CHECK_MESSAGE(same_values(fused[1], composed[1]), "src");
          const Vec sg = composed[1].to_vector<double>();
          for (double e : sg) fix_ups += std::isnan(e) || (e != 0 && std::fabs(e) < 0.75);
        }
      }
    }
  }
  CHECK(fix_ups > 0);  // the cases above do reach the second walk
}

// index_reduce amax/amin with self included first assumes one winner per slot: the winners must
// add up to the number of slots. A NaN result (no winner) next to a tie (two) adds up too, so
// NaN must send it to the tie-counting path as well.
TEST_CASE("index_reduce amax/amin backward: one winner per slot, ties, and a NaN beside a tie") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct RowCase {
    Vec self;
    std::vector<int64_t> index;
    Vec source;
  };
  const RowCase cases[] = {
      {{0.5, 2.0, -1.0}, {1, 0, 2, 0}, {3.0, 1.0, 0.25, 4.0}},  // one winner everywhere
      {{nan, 1.0}, {1}, {1.0}},                                 // NaN slot + a tied slot
      {{1.0, 2.0, 3.0}, {0, 0, 2}, {1.0, 0.5, 3.0}},            // ties with self
  };
  for (const RowCase& c : cases) {
    for (const char* reduce : {"amax", "amin"}) {
      for (tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
        CAPTURE(reduce);
        CAPTURE(tg::dtype_name(dtype));
        tg::Tensor self = tg::tensor(c.self).to(dtype).requires_grad_();
        tg::Tensor source = tg::tensor(c.source).to(dtype).requires_grad_();
        const tg::Tensor out = tg::index_reduce(self, 0, tg::tensor(c.index), source, reduce);
        const tg::Tensor g = tg::arange(1, static_cast<int64_t>(c.self.size()) + 1).to(dtype);
        const auto fused = tg::autograd::grad({out}, {self, source}, {g}, true, false);
        const auto composed = tg::autograd::grad({out}, {self, source}, {g}, true, true);
        CHECK_MESSAGE(same_values(fused[0], composed[0]), "self");
        CHECK_MESSAGE(same_values(fused[1], composed[1]), "source");
      }
    }
  }
}

// The fast loops check the index too: a bad value in a group of four (mean's counts), in a
// chunk (amax's gathers) or in a row gathered from a repeated value raises, and changes nothing.
TEST_CASE("line kernels and the repeated-value gather reject out-of-range index values") {
  for (int64_t bad : {-1, 4, 1000}) {
    CAPTURE(bad);
    std::vector<int64_t> values = {0, 1, 2, 3, 3, 2, 1, 0, 1, 2};
    values[5] = bad;  // in the second group of four
    for (tg::DType itype : {tg::kInt64, tg::kInt32}) {
      const tg::Tensor index = tg::tensor(values).reshape({1, 10}).to(itype);
      for (const char* reduce : {"mean", "amax", "amin", "sum"}) {
        CAPTURE(reduce);
        tg::Tensor self = tg::tensor({{1.0, 2.0, 3.0, 4.0}}).requires_grad_();
        // distinct values below self's: with amax every slot has one winner (self), so the
        // backward takes its single-winner loop, whose range check must catch the bad value
        tg::Tensor src =
            (tg::arange(1, 11).to(tg::kFloat64) * 0.05).reshape({1, 10}).requires_grad_();
        const std::string what = tg_test::error_of<tg::IndexError>(
            [&] { (void)tg::scatter_reduce(self, 1, index, src, reduce, true); });
        CHECK(what.find("out of range") != std::string::npos);
        // the fused backward and the gather of a sum's (expanded) gradient check as well
        const tg::Tensor good =
            tg::tensor(std::vector<int64_t>{0, 1, 2, 3, 3, 2, 1, 0, 1, 2}).reshape({1, 10});
        const tg::Tensor result = tg::scatter_reduce(self.detach(), 1, good, src.detach(), reduce);
        if (std::string(reduce) != "sum") {
          CHECK(!tg_test::error_of<tg::IndexError>([&] {
                   (void)tg::scatter_reduce_backward(tg::ones({1, 4}, tg::kFloat64), self.detach(),
                                                     1, index, src.detach(), reduce, true, result,
                                                     "src");
                 }).empty());
        }
        tg::Tensor x = self.detach().clone();
        const tg::Tensor before = x.clone();
        CHECK(!tg_test::error_of<tg::IndexError>([&] {
                 x.scatter_reduce_(1, index, src.detach(), reduce);
               }).empty());
        CHECK(same_values(x, before));
      }
      const tg::Tensor repeated = tg::scalar_tensor(2.5, tg::kFloat64).expand({1, 4});
      CHECK(tg_test::error_of<tg::IndexError>([&] {
              (void)tg::gather(repeated, 1, index);
            }).find("out of range") != std::string::npos);
      const tg::Tensor picked =
          tg::gather(repeated, 1,
                     tg::tensor(std::vector<int64_t>{3, 0, 1}).reshape({1, 3}).to(itype));
      CHECK(picked.to_vector<double>() == Vec{2.5, 2.5, 2.5});
    }
  }
}

TEST_CASE("scatter engine: tensors with a zero-size dim, forward and both backward paths") {
  const tg::Tensor none = tg::zeros({0}, tg::kInt64);
  for (const Shape& shape : {Shape{0, 3}, Shape{3, 0}, Shape{2, 0, 2}}) {
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
      CAPTURE(shape);
      CAPTURE(dim);
      Shape src_shape = shape;
      src_shape[static_cast<size_t>(dim)] = 0;  // an empty index: no entries
      for (const char* reduce : {"prod", "mean", "amax", "amin"}) {
        for (bool create_graph : {false, true}) {
          tg::Tensor self = pool_values(shape).requires_grad_();
          tg::Tensor source = pool_values(src_shape).requires_grad_();
          const tg::Tensor out = tg::index_reduce(self, dim, none, source, reduce, true);
          CHECK(out.shape() == self.shape());
          const auto g =
              tg::autograd::grad({out}, {self, source}, {pool_values(shape)}, true, create_graph);
          CHECK(g[0].shape() == self.shape());
          CHECK((!g[1].defined() || g[1].shape() == source.shape()));
          tg::Tensor src = pool_values(shape).requires_grad_();
          const tg::Tensor index = tg::zeros(shape, tg::kInt64);
          const tg::Tensor out2 = tg::scatter_reduce(self, dim, index, src, reduce, false);
          const auto g2 =
              tg::autograd::grad({out2}, {self, src}, {pool_values(shape)}, true, create_graph);
          CHECK(g2[0].shape() == self.shape());
          CHECK(g2[1].shape() == src.shape());
        }
      }
      CHECK(tg::gather(pool_values(shape), dim, tg::zeros(shape, tg::kInt64)).shape() ==
            tg::Shape(shape));
      CHECK(tg::index_select(pool_values(shape), dim, none).shape() == tg::Shape(src_shape));
    }
  }
}

TEST_CASE(
    "row-form ops with a source that repeats one row (an expanded gradient) match a dense one") {
  // Such a source is combined slot by slot instead of in index order; every slot must still see
  // its entries in index order, so the results are bit-identical to a dense copy of the source.
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t slots = 1 + pick(6), n = pick(12), width = 1 + pick(5);
    CAPTURE(trial);
    const tg::Tensor self = pool_values({slots, width});
    const tg::Tensor index = random_index({n}, slots, trial % 2 == 0);
    // every stride 0 (one value repeated, as sum()'s gradient is); a repeated row [1, width]
    // is copied dense by the kernels anyway
    const tg::Tensor expanded = pool_values({}).expand({n, width}), dense = expanded.contiguous();
    CHECK(same_values(tg::index_add(self, 0, index, expanded, 0.5),
                      tg::index_add(self, 0, index, dense, 0.5)));
    for (const char* reduce : {"prod", "mean", "amax", "amin"})
      for (bool include_self : {true, false}) {
        CAPTURE(reduce);
        CAPTURE(include_self);
        CHECK(same_values(tg::index_reduce(self, 0, index, expanded, reduce, include_self),
                          tg::index_reduce(self, 0, index, dense, reduce, include_self)));
      }
    // index_select's gradient from sum(): an expanded ones gradient
    tg::Tensor x = self.detach().requires_grad_();
    tg::sum(tg::index_select(x, 0, index)).backward();
    const tg::Tensor want =
        tg::index_select_backward(tg::ones({n, width}, tg::kFloat64), {slots, width}, 0, index);
    CHECK(same_values(x.grad(), want));
  }
}

TEST_CASE("amax / amin: a NaN among a slot's contributors makes the slot NaN, wherever it comes") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // slot 0 gets NaN first then numbers, slot 1 numbers then NaN, slot 2 numbers only, slot 3
  // nothing (self's value, NaN in self for slot 3)
  const tg::Tensor self = tg::tensor(std::vector<double>{0, 0, 0, nan});
  const tg::Tensor index = tg::tensor(std::vector<int64_t>{0, 1, 0, 2, 1, 2});
  const tg::Tensor src = tg::tensor(std::vector<double>{nan, 5, 7, -1, nan, 4});
  for (const char* reduce : {"amax", "amin"})
    for (bool include_self : {true, false}) {
      CAPTURE(reduce);
      CAPTURE(include_self);
      const double slot2 = std::string(reduce) == "amax" ? 4 : -1;
      for (bool rows : {false, true}) {
        const Vec got = (rows ? tg::index_reduce(self, 0, index, src, reduce, include_self)
                              : tg::scatter_reduce(self, 0, index, src, reduce, include_self))
                            .to_vector<double>();
        CHECK(std::isnan(got[0]));
        CHECK(std::isnan(got[1]));
        CHECK(got[2] == slot2);
        CHECK(std::isnan(got[3]));
      }
    }
}

TEST_CASE("integer sums and products wrap on overflow, as PyTorch 1.13, in defined behaviour") {
  // expected values from torch 1.13: x.scatter_reduce(0, idx, src, ...), index_add(..., alpha=2)
  using I32 = std::vector<int32_t>;
  const tg::Tensor ones = tg::tensor(I32{1, 1});
  const tg::Tensor index = tg::tensor(std::vector<int64_t>{0, 0, 1, 1});
  const tg::Tensor src = tg::tensor(I32{100000, 100000, -70000, 90000});
  for (bool rows : {false, true}) {
    CAPTURE(rows);
    auto reduce = [&](const char* how) {
      return (rows ? tg::index_reduce(ones, 0, index, src, how, true)
                   : tg::scatter_reduce(ones, 0, index, src, how, true))
          .to_vector<int32_t>();
    };
    CHECK(reduce("prod") == I32{1410065408, -2005032704});
    if (!rows) CHECK(reduce("sum") == I32{200001, 20001});
  }
  const tg::Tensor extremes = tg::tensor(I32{2147483647, -2147483648});
  const tg::Tensor two = tg::tensor(std::vector<int64_t>{0, 1});
  CHECK(tg::scatter_reduce(extremes, 0, two, tg::tensor(I32{1, -1}), "sum").to_vector<int32_t>() ==
        I32{-2147483648, 2147483647});
  CHECK(tg::index_add(tg::zeros({2}, tg::kInt32), 0, two, tg::tensor(I32{2147483647, 5}), 2)
            .to_vector<int32_t>() == I32{-2, 10});
}
