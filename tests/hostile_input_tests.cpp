// Hostile and careless inputs (issue 12): sizes whose arithmetic overflows, views past their
// storage, zero-size batches, NaN to int, 0-d corner cases, hook cycles. Each case once crashed,
// wrote out of bounds or returned a wrong shape; expected values are PyTorch 1.13's where it has
// one.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <tapegrad/ops/registry.h>
#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using tg::Shape;
using tg::Tensor;
using tg_test::error_of;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// The ValueError fn throws starts with "[op]" (empty string when it throws none or another type).
bool value_error_from(const char* op, auto&& fn) {
  const std::string msg = error_of<tg::ValueError>(fn);
  INFO(msg);
  return msg.starts_with(std::string("[") + op + "]");
}

}  // namespace

TEST_CASE("sizes: products that overflow int64 raise instead of wrapping (issue 12, defect 1)") {
  // Once: numel() == 0 with no storage, and select(0, 7).sum() segfaulted.
  CHECK(value_error_from("zeros", [] { tg::zeros({1LL << 40, 1LL << 40}); }));
  // Once: 0 bytes of storage.
  CHECK(value_error_from("zeros", [] { tg::zeros({1LL << 61}, tg::kFloat64); }));
  CHECK(value_error_from("ones", [] { tg::ones({3, 1LL << 62}); }));
  CHECK(value_error_from("full", [] { tg::full({1LL << 62}, 2.0); }));
  CHECK(value_error_from("empty", [] { tg::empty({-1}); }));
  CHECK(value_error_from("rand", [] { tg::rand({1LL << 31, 1LL << 31}); }));
  CHECK(value_error_from("randint", [] { tg::randint(0, 3, {1LL << 62}); }));
  CHECK(value_error_from("eye", [] { tg::eye(1LL << 32, 1LL << 32); }));
  // A 0-size tensor whose strides would overflow is rejected too (no bytes, but strides).
  CHECK(value_error_from("zeros", [] { tg::zeros({0, 1LL << 40, 1LL << 40}); }));
  CHECK(tg::zeros({0, 1LL << 20, 1LL << 20}).numel() == 0);
  // Once: accepted, the product wrapping to 4.
  Tensor x = tg::arange(0, 4, 1, tg::kFloat32);
  CHECK(value_error_from("reshape", [&] { x.reshape({(1LL << 62) + 1, 4}); }));
  CHECK(value_error_from("view", [&] { x.view({(1LL << 62) + 1, 4}); }));
  CHECK(value_error_from("reshape", [&] { x.reshape({-1, 1LL << 62, 1LL << 62}); }));
  // An empty tensor viewed with sizes whose contiguous strides overflow (found by fuzz_op).
  CHECK(value_error_from("view", [] { tg::zeros({0}).view({0, 3, 1LL << 62}); }));
  CHECK(value_error_from("reshape", [] { tg::zeros({0, 2}).reshape({3, 0, 1LL << 62}); }));
  CHECK(tg::zeros({0}).view({0, 3, 1LL << 20}).shape() == Shape{0, 3, 1LL << 20});
  // Once: shape [9223372036854775807].
  CHECK(error_of<tg::IndexError>([] { tg::ones({5}).narrow(0, 1, kMax); }).starts_with("[narrow]"));
  // Once: numel() == -4.
  CHECK(value_error_from("expand", [] { tg::ones({1}).expand({4, kMax, 1}); }));
  CHECK(tg::ones({1}).expand({kMax}).numel() == kMax);  // one element, repeated: fine
  // A raw Shape of untrusted sizes does not wrap either.
  CHECK(value_error_from("numel", [] { return Shape{1LL << 40, 1LL << 40}.numel(); }));
}

TEST_CASE("sizes: the allocator and the public raw constructors validate (issue 12, defect 2)") {
  // Once: the byte count rounded to 0 and the thread-local free list was read at index -1.
  CHECK(value_error_from("empty", [] { tg::empty({(1LL << 62) - 1}); }));
  CHECK(value_error_from("empty_strided",
                         [] { tg::empty_strided(Shape{3}, Shape{-1}, tg::kFloat32); }));
  CHECK(value_error_from("empty_strided", [] {
    tg::empty_strided(Shape{2, 2}, Shape{kMax, 1}, tg::kFloat32);
  }));
  CHECK(
      value_error_from("empty_strided", [] { tg::empty_strided(Shape{2}, Shape{}, tg::kInt32); }));
  Tensor s = tg::empty_strided(Shape{2, 3}, Shape{1, 2}, tg::kFloat64);  // column-major: 6 elements
  CHECK(s.impl()->storage->nbytes == 6 * sizeof(double));
  // make_view: every element it can reach lies in the storage.
  Tensor base = tg::zeros({6});
  CHECK(tg::make_view(base, Shape{2, 3}, Shape{3, 1}, 0).numel() == 6);
  CHECK(tg::make_view(base, Shape{3}, Shape{-2}, 4).numel() == 3);  // elements 4, 2, 0
  CHECK(value_error_from("make_view", [&] { tg::make_view(base, Shape{2, 3}, Shape{3, 1}, 1); }));
  CHECK(value_error_from("make_view", [&] { tg::make_view(base, Shape{3}, Shape{-2}, 3); }));
  CHECK(value_error_from("make_view", [&] { tg::make_view(base, Shape{1}, Shape{1}, -1); }));
  CHECK(value_error_from("make_view", [&] { tg::make_view(base, Shape{2}, Shape{kMax}, 0); }));
  CHECK(value_error_from("make_view", [&] { tg::make_view(base, Shape{2}, Shape{1, 1}, 0); }));
}

TEST_CASE("matmul: a zero-size batch broadcasts to zero, not one (issue 12, defect 3)") {
  // PyTorch: [0, 5]; once [1, 5], with a heap-buffer-overflow under ASan.
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32, tg::kInt64, tg::kInt32}) {
    CAPTURE(tg::dtype_name(dt));
    CHECK(tg::matmul(tg::zeros({0, 5, 2}, dt), tg::ones({2}, dt)).shape() == Shape{0, 5});
    CHECK(tg::matmul(tg::zeros({0, 5, 2}, dt), tg::ones({0, 2, 3}, dt)).shape() == Shape{0, 5, 3});
    CHECK(tg::matmul(tg::ones({2}, dt), tg::zeros({0, 2, 3}, dt)).shape() == Shape{0, 3});
    CHECK(tg::matmul(tg::ones({3, 2}, dt), tg::zeros({0, 2, 3}, dt)).shape() == Shape{0, 3, 3});
    CHECK(tg::matmul(tg::ones({1, 3, 2}, dt), tg::zeros({0, 2, 3}, dt)).shape() == Shape{0, 3, 3});
  }
  Tensor a = tg::zeros({0, 5, 2}, tg::kFloat64).requires_grad_();
  Tensor b = tg::ones({2}, tg::kFloat64).requires_grad_();
  tg::matmul(a, b).sum().backward();
  CHECK(a.grad().shape() == Shape{0, 5, 2});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{0, 0});
}

TEST_CASE("softmax family: an empty tensor with a huge other dim returns at once (fuzz finding)") {
  // Once: 2^50 empty rows walked one block at a time, hours of work for nothing to write.
  for (const Shape& shape : {Shape{3, 0, 4, 1LL << 48}, Shape{1LL << 50, 0}, Shape{0, 1LL << 50}})
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
      CAPTURE(shape);
      CAPTURE(dim);
      Tensor x = tg::zeros(shape).requires_grad_();
      Tensor y = tg::softmax(x, dim);
      CHECK(y.shape() == shape);
      CHECK(tg::log_softmax(x, dim).shape() == shape);
      CHECK(tg::softmax_backward(y, y, dim).shape() == shape);
      CHECK(tg::log_softmax_backward(y, y, dim).shape() == shape);
      y.sum().backward();
      CHECK(x.grad().shape() == shape);
    }
}

TEST_CASE(
    "reductions: an empty expanded tensor whose other dims overflow together (fuzz finding)") {
  // Once: 4 * 2 * 3 * 2^61 multiplied before the 0, a signed overflow in the reduce layout.
  Tensor x = tg::tensor(2.0).requires_grad_();
  Tensor big = x.expand({4, 2, 3, 1LL << 61, 0});
  CHECK(tg::sum(big).item<double>() == 0.0);
  CHECK(tg::sum(big, {3, 4}).shape() == Shape{4, 2, 3});
  // Kept dims whose strides overflow even with the 0 (PyTorch: an empty [1, 2, 3, 2^61, 0]): a
  // typed error here, not a wrong stride.
  CHECK_THROWS_AS(tg::sum(big, {0}, /*keepdim=*/true), tg::ValueError);
  CHECK_THROWS_AS(tg::sum(big, {4}), tg::ValueError);  // 3 * 2^64 elements: too many
  tg::sum(big).backward();
  CHECK(x.grad().item<double>() == 0.0);
}

TEST_CASE("masked ops: a broadcast too large to hold is a typed error (fuzz finding)") {
  // Once: std::bad_alloc (untyped) sizing the count table of 2^61 broadcast mask elements.
  // float64, so the size check rejects 2^64 bytes before any allocation (under ASan too).
  Tensor self = tg::ones({1}, tg::kFloat64).expand({1LL << 61});
  Tensor mask = tg::ones({1}, tg::kBool);
  CHECK_THROWS_AS(tg::masked_select(self, mask), tg::ValueError);
  CHECK_THROWS_AS(tg::masked_scatter(self, mask, tg::ones({1}, tg::kFloat64)), tg::ValueError);
  CHECK(tg::masked_select(tg::ones({3}), tg::tensor(std::vector<double>{1, 0, 1}).to(tg::kBool))
            .numel() == 2);
}

TEST_CASE("conversion: NaN, inf and out-of-range floats to int are defined (issue 12, defect 8)") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  // PyTorch 1.13 on x86: the target's lowest value for each of these.
  Tensor x = tg::tensor(std::vector<double>{nan, inf, -inf, 3e9, -3e9, 1e19, -1e19, 2.7, -2.7});
  CHECK(x.to(tg::kInt32).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                             INT32_MIN, 2, -2});
  CHECK(x.to(tg::kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{INT64_MIN, INT64_MIN, INT64_MIN, 3000000000, -3000000000, INT64_MIN,
                             INT64_MIN, 2, -2});
  CHECK(x.to(tg::kFloat32).to(tg::kInt32).to_vector<int32_t>() ==
        x.to(tg::kInt32).to_vector<int32_t>());
  CHECK(x.to(tg::kBool).to_vector<bool>() == std::vector<bool>(9, true));
  // The edges: 2^31 - 1 fits int32, 2^31 does not; -2^63 fits int64.
  CHECK(tg::tensor(std::vector<double>{2147483647.9, 2147483648.0, -2147483648.0})
            .to(tg::kInt32)
            .to_vector<int32_t>() == std::vector<int32_t>{INT32_MAX, INT32_MIN, INT32_MIN});
  CHECK(tg::tensor(std::vector<double>{-0x1p63, 0x1p63}).to(tg::kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{INT64_MIN, INT64_MIN});
  // Filling and scalars convert the same way.
  CHECK(tg::full({2}, nan, tg::kInt32).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MIN, INT32_MIN});
  CHECK(tg::Scalar(inf).to_int() == INT64_MIN);
}

TEST_CASE("conversion: long float runs to int take the vector loops, with the same rule") {
  // 1003 values (vector bodies and a tail) cycling through in-range, edge and out-of-range
  // values, float32 and float64 to int32 and int64, against the rule value by value.
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> cycle{nan,          inf,    -inf,    3e9,   -3e9,     1e19,
                                  -1e19,        2.7,    -2.7,    0.0,   -0.0,     2147483520.,
                                  -2147483648., 0x1p63, -0x1p63, 1e-30, 123456.75};
  std::vector<double> v;
  for (size_t i = 0; i < 1003; ++i) v.push_back(cycle[(i * 7) % cycle.size()]);
  auto want = [](double x, double lowest) {
    return x >= lowest && x < -lowest ? static_cast<double>(std::trunc(x)) : lowest;
  };
  for (const tg::DType from : {tg::kFloat64, tg::kFloat32}) {
    CAPTURE(from);
    const Tensor x = tg::tensor(v).to(from);
    const std::vector<double> xs = x.to_vector<double>();  // the values as float32 rounded them
    const std::vector<int32_t> i32 = x.to(tg::kInt32).to_vector<int32_t>();
    const std::vector<int64_t> i64 = x.to(tg::kInt64).to_vector<int64_t>();
    int64_t wrong = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      wrong += static_cast<double>(i32[i]) != want(xs[i], -0x1p31);
      wrong += static_cast<double>(i64[i]) != want(xs[i], -0x1p63);
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE(
    "views and ranges: a huge step or bound neither wraps nor overflows (issue 12, defect 8)") {
  // Once [0]: e - s + step - 1 overflowed. One element, as the Python slice [0:5:huge] means.
  Tensor s = tg::arange(0, 5, 1, tg::kFloat64).slice(0, 0, 5, kMax);
  CHECK(s.shape() == Shape{1});
  CHECK(s.to_vector<double>() == std::vector<double>{0});
  CHECK(tg::arange(0, 5, 1, tg::kFloat64).slice(0, 1, 5, kMax - 1).to_vector<double>() ==
        std::vector<double>{1});
  CHECK(tg::arange(0, 7, 1, tg::kFloat64).slice(0, 0, std::nullopt, 3).to_vector<double>() ==
        std::vector<double>{0, 3, 6});
  // Once a float-to-int64 overflow computing the length.
  CHECK(value_error_from("arange", [] { tg::arange(0, 1e19); }));
  CHECK(
      value_error_from("arange", [] { tg::arange(0.0, std::numeric_limits<double>::infinity()); }));
  CHECK(value_error_from("arange", [] { tg::arange(-1e308, 1e308, 1e-300); }));
  CHECK(value_error_from("arange", [] { tg::arange(int64_t{0}, kMax, int64_t{1}); }));
  CHECK(value_error_from("arange", [] { tg::arange(std::nan(""), 1.0); }));
  // Integral ranges near the ends of int64 are exact.
  CHECK(tg::arange(kMax - 2, kMax).to_vector<int64_t>() ==
        std::vector<int64_t>{kMax - 2, kMax - 1});
  CHECK(tg::arange(INT64_MIN, INT64_MIN + 4, 3).to_vector<int64_t>() ==
        std::vector<int64_t>{INT64_MIN, INT64_MIN + 3});
  CHECK(tg::arange(INT64_MIN, kMax, kMax).to_vector<int64_t>() ==
        std::vector<int64_t>{INT64_MIN, -1, kMax - 1});
}

TEST_CASE(
    "0-d: index_select of a 0-d self is 0-d, and tensor(values, {}) too (issue 12, defect 9)") {
  Tensor self = tg::scalar_tensor(3.0, tg::kFloat64).requires_grad_();
  Tensor idx1 = tg::tensor(std::vector<int64_t>{0});
  Tensor r = tg::index_select(self, 0, idx1);  // PyTorch: shape []; once [1]
  CHECK(r.shape() == Shape{});
  CHECK(r.item<double>() == 3.0);
  r.backward();  // once failed on the [1]-shaped gradient
  CHECK(self.grad().shape() == Shape{});
  CHECK(self.grad().item<double>() == 1.0);
  CHECK(tg::index_select(self, 0, tg::tensor(std::vector<int64_t>{0}, {})).shape() == Shape{});

  Tensor z = tg::tensor(std::vector<double>{2.5}, {});
  CHECK(z.dim() == 0);
  CHECK(z.item<double>() == 2.5);
  CHECK(tg::tensor(std::vector<bool>{true}, {}).dim() == 0);
  CHECK(tg::tensor(std::vector<int32_t>{7}, {}).dim() == 0);
  CHECK(error_of<tg::ValueError>([] {
          tg::tensor(std::vector<double>{1, 2}, {});
        }).find("an empty shape is a 0-d tensor of one value") != std::string::npos);
  CHECK(tg::tensor(std::vector<double>{1, 2}).shape() == Shape{2});  // no shape: 1-d
  CHECK(tg::tensor(std::vector<float>{}).shape() == Shape{0});
}

TEST_CASE("hooks: a hook that captures its own tensor does not leak it (issue 12, defect 11)") {
  std::weak_ptr<tg::TensorImpl> watched;
  Tensor x = tg::ones({4}, tg::kFloat64).requires_grad_();
  int calls = 0;
  {
    Tensor y = x * 2.0;
    y.register_hook([y, &calls](const Tensor& g) {  // y -> its node -> this hook -> y
      ++calls;
      return g * y.detach();
    });
    watched = y.impl_ptr();
    y.sum().backward();
  }
  CHECK(calls == 1);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{4, 4, 4, 4});
  CHECK(watched.expired());  // once kept alive by the cycle: 594 MB after 1,000 iterations
}

// The engine's queue holds no owning copy of a node: the edge that reached it keeps it alive.
// Here the hook holds the only handle on y while backward runs y's node and then drops the hook;
// the node must stay alive through the rest of its turn (ASan would see a use after free).
TEST_CASE("hooks: a node whose only tensor lives in its own hook survives its backward turn") {
  Tensor x = tg::ones({3}, tg::kFloat64).requires_grad_();
  std::weak_ptr<tg::TensorImpl> watched;
  Tensor loss;
  {
    Tensor y = x * 3.0;
    y.register_hook([y](const Tensor& g) { return g * y.detach(); });
    watched = y.impl_ptr();
    loss = y.sum();
  }
  CHECK_FALSE(watched.expired());  // y -> its node -> the hook -> y
  loss.backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{9, 9, 9});
  CHECK(watched.expired());
}

TEST_CASE("index_reduce: backward with an empty inner dim reads no gradient (issue 12, defect 6)") {
  // Once the row kernel read g[0] of the 0-element gradient (heap-buffer-overflow under ASan with
  // TG_ALLOCATOR=exact).
  for (const char* reduce : {"amax", "amin", "prod", "mean"}) {
    CAPTURE(reduce);
    Tensor self = tg::zeros({3, 4, 0}, tg::kFloat64).requires_grad_();
    Tensor src = tg::zeros({3, 2, 0}, tg::kFloat64).requires_grad_();
    Tensor index = tg::tensor(std::vector<int64_t>{1, 3});
    Tensor out = tg::index_reduce(self, 1, index, src, reduce);
    CHECK(out.shape() == Shape{3, 4, 0});
    out.sum().backward();
    CHECK(self.grad().shape() == Shape{3, 4, 0});
    CHECK(src.grad().shape() == Shape{3, 2, 0});
  }
}

TEST_CASE("in-place: an expanded self raises instead of writing one element twice (defect 7)") {
  const std::string overlap =
      "unsupported operation: more than one element of the written-to "
      "tensor refers to a single memory location";
  Tensor idx = tg::tensor(std::vector<int64_t>{0, 1, 2, 3});
  Tensor ones = tg::ones({4, 3});
  Tensor mask = tg::ones({4, 3}, tg::kBool);
  std::vector<std::pair<const char*, std::function<void(const Tensor&)>>> ops = {
      {"index_add_", [&](const Tensor& t) { t.index_add_(0, idx, ones); }},
      {"index_copy_", [&](const Tensor& t) { t.index_copy_(0, idx, ones); }},
      {"index_fill_", [&](const Tensor& t) { t.index_fill_(0, idx, tg::scalar_tensor(2.0)); }},
      {"scatter_",
       [&](const Tensor& t) {
         t.scatter_(0, idx.view({4, 1}).expand({4, 3}), ones);
       }},
      {"masked_scatter_", [&](const Tensor& t) { t.masked_scatter_(mask, ones); }},
      {"add_", [&](const Tensor& t) { t.add_(ones); }},
      {"mul_", [&](const Tensor& t) { t.mul_(ones); }},
      {"index_fill_scalar_", [&](const Tensor& t) { t.index_fill_scalar_(0, idx, 2.0); }},
      {"exp_", [&](const Tensor& t) { t.exp_(); }},
      {"copy_", [&](const Tensor& t) { t.copy_(ones); }},
  };
  for (auto& op : ops) {
    const std::string& name = op.first;
    const auto& fn = op.second;
    CAPTURE(name);
    Tensor b = tg::zeros({1, 3});
    const std::string msg = error_of<tg::ValueError>([&] { fn(b.expand({4, 3})); });
    CHECK(msg.starts_with(std::string("[") + name + "] " + overlap));
    CHECK(b.to_vector<float>() == std::vector<float>{0, 0, 0});  // unchanged
  }
  // fill_ writes one value everywhere: well-defined, allowed (as PyTorch).
  Tensor b = tg::zeros({1, 3});
  b.expand({4, 3}).fill_(5.0);
  CHECK(b.to_vector<float>() == std::vector<float>{5, 5, 5});
  // A size-1 dim with stride 0, or a transposed self, is no overlap.
  Tensor c = tg::zeros({3, 1});
  c.expand({3, 1}).add_(tg::ones({3, 1}));
  tg::zeros({2, 3}).t().add_(tg::ones({3, 2}));
}

TEST_CASE("integer arithmetic wraps modulo 2^bits instead of overflowing (op fuzzer finding)") {
  // Signed overflow in the kernels was undefined behaviour (UBSan: -5 * 2147483647 in add with
  // alpha). Expected values from PyTorch 1.13, whose integer tensors wrap.
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  const int64_t max64 = std::numeric_limits<int64_t>::max();
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  const Tensor big = tg::tensor(std::vector<int32_t>{max32});
  const Tensor small = tg::tensor(std::vector<int32_t>{min32});
  const Tensor one = tg::tensor(std::vector<int32_t>{1});
  CHECK(tg::add(tg::zeros({1}, tg::kInt32), big, -5).to_vector<int32_t>() ==
        std::vector<int32_t>{-2147483643});
  CHECK(tg::add(big, one).to_vector<int32_t>() == std::vector<int32_t>{min32});
  CHECK(tg::sub(small, one).to_vector<int32_t>() == std::vector<int32_t>{max32});
  CHECK(tg::neg(small).to_vector<int32_t>() == std::vector<int32_t>{min32});
  CHECK(tg::abs(small).to_vector<int32_t>() == std::vector<int32_t>{min32});
  const Tensor t65536 = tg::tensor(std::vector<int32_t>{65536});
  CHECK(tg::mul(t65536, t65536).to_vector<int32_t>() == std::vector<int32_t>{0});
  CHECK(tg::pow_scalar(t65536, 2).to_vector<int32_t>() == std::vector<int32_t>{0});
  const Tensor top = tg::tensor(std::vector<int64_t>{max64});
  const Tensor bottom = tg::tensor(std::vector<int64_t>{min64});
  const Tensor one64 = tg::tensor(std::vector<int64_t>{1});
  CHECK(tg::add(top, one64).to_vector<int64_t>() == std::vector<int64_t>{min64});
  CHECK(tg::sub(bottom, one64).to_vector<int64_t>() == std::vector<int64_t>{max64});
  Tensor inplace = big.clone();
  inplace.add_(one);
  CHECK(inplace.to_vector<int32_t>() == std::vector<int32_t>{min32});
}

TEST_CASE("pow backward with the most negative int64 exponent (op fuzzer finding)") {
  // e - 1 of e = -2^63 overflowed int64 in the backward formula (UBSan, CI's short fuzz). Expected
  // values from PyTorch 1.13, which takes the exponent as double there.
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  const Tensor x = tg::tensor(std::vector<double>{1.0, 2.0, -1.0, 0.5}).requires_grad_(true);
  const Tensor y = tg::pow_scalar(x, min64);
  CHECK(y.to_vector<double>() ==
        std::vector<double>{1.0, 0.0, 1.0, std::numeric_limits<double>::infinity()});
  y.sum().backward();
  const std::vector<double> grad = x.grad().to_vector<double>();
  CHECK(grad[0] == -9223372036854775808.0);
  CHECK(grad[1] == 0.0);
  CHECK(std::signbit(grad[1]));
  CHECK(grad[2] == -9223372036854775808.0);
  CHECK(grad[3] == -std::numeric_limits<double>::infinity());
}

TEST_CASE("one_hot: a class value of INT64_MAX with num_classes inferred (op fuzzer finding)") {
  // num_classes = largest + 1 overflowed int64 (UBSan, the exploratory fuzz of 2026-11-25).
  // PyTorch 1.13 fails too, with a message about SymInt; here it is a typed [one_hot] error.
  const int64_t max64 = std::numeric_limits<int64_t>::max();
  const Tensor classes = tg::tensor(std::vector<int64_t>{0, max64, 1, 2}).reshape({2, 2});
  CHECK_THROWS_WITH_AS(tg::one_hot(classes, -1), doctest::Contains("[one_hot]"), tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::one_hot(classes.t(), -1), doctest::Contains("overflows int64"),
                       tg::ValueError);
  CHECK_THROWS_AS(tg::one_hot(classes, 3), tg::IndexError);  // explicit: out of range, as before
}

TEST_CASE("index_fill: a dim of 2^62 + 1 in an expanded tensor (op fuzzer finding)") {
  // A flag per position along dim asked for 2^62 bytes (std::bad_alloc, untyped; the exploratory
  // fuzz of 2026-11-25). The filled positions are a sorted list now: the value's gradient sums
  // the three distinct filled slices, and a fill of the expanded self is the allocator's typed
  // error for its result.
  const int64_t n = (int64_t{1} << 62) + 1;
  const Tensor grad = tg::full({}, 1.5, tg::kFloat64).expand({n});
  const Tensor index = tg::tensor(std::vector<int64_t>{0, 5, 0, -1});
  CHECK(tg::index_fill_value_backward(grad, 0, index).item<double>() == 4.5);
  CHECK_THROWS_AS(tg::index_fill_scalar(grad, 0, index, 2.0), tg::Error);
}

TEST_CASE("index_fill_value_backward: outer dims of 2^61 in an expanded gradient (fuzz finding)") {
  // The list of filled rows was built before anything else: 2^61 entries for an empty gradient
  // [2^61, 1, 0] (libFuzzer's out-of-memory, the exploratory fuzz of 2026-11-28). An empty
  // gradient now sums to 0 at once, one value repeated sums in closed form, and any other
  // expanded gradient is read from a dense copy first (the allocator's typed error when it
  // cannot be held).
  const int64_t n = int64_t{1} << 61;
  const Tensor index = tg::tensor(std::vector<int64_t>{0});
  const Tensor empty = tg::full({}, 1.0f, tg::kFloat32).expand({n, 1, 0});
  CHECK(tg::index_fill_value_backward(empty, -2, index).item<float>() == 0.0f);
  const Tensor one_value = tg::full({}, 0.5, tg::kFloat64).expand({n, 1, 1});
  CHECK(tg::index_fill_value_backward(one_value, 1, index).item<double>() == 0x1p60);
  const Tensor row = tg::tensor(std::vector<double>{1, 2}).reshape({1, 1, 2}).expand({n, 1, 2});
  CHECK_THROWS_AS(tg::index_fill_value_backward(row, 1, index), tg::Error);
  // The closed form gives the loop's bits where the loop is exact (float32: under 2^29 copies),
  // and +0 for -0 as the loop's sum does.
  for (const float v : {0.1f, -3.7f, -0.0f, 1e30f}) {
    const Tensor grad = tg::full({}, v, tg::kFloat32).expand({6, 4, 5});
    const Tensor idx = tg::tensor(std::vector<int64_t>{3, 1, 3});
    const float expanded = tg::index_fill_value_backward(grad, 1, idx).item<float>();
    const float dense = tg::index_fill_value_backward(grad.contiguous(), 1, idx).item<float>();
    CHECK(std::bit_cast<uint32_t>(expanded) == std::bit_cast<uint32_t>(dense));
  }
}

TEST_CASE("batch_norm: the running statistics it writes are declared, and checked as in place") {
  // The op fuzzer saw batch_norm change an input (its running_var) after a successful call: the
  // documented update of the running statistics when training, which the spec now declares
  // ("writes"), so the fuzzer and any other caller of the registry can tell it from a bug.
  for (const auto& op : tg::registry::all_ops())
    for (const auto& arg : op.args) {
      CAPTURE(op.name);
      CAPTURE(arg.name);
      const bool running =
          op.name == "batch_norm" && (arg.name == "running_mean" || arg.name == "running_var");
      CHECK(arg.writes == running);
    }
  // An expanded running statistic would take several updates in one element: the in-place
  // overlap error, before anything is written.
  const Tensor x = tg::arange(0, 6, 1, tg::kFloat64).reshape({3, 2});
  const Tensor mean = tg::zeros({1}, tg::kFloat64);
  const Tensor var = tg::ones({2}, tg::kFloat64);
  CHECK_THROWS_WITH_AS(tg::batch_norm(x, mean.expand({2}), var, {}, {}, true),
                       doctest::Contains("[batch_norm] unsupported operation"), tg::ValueError);
  CHECK_THROWS_AS(tg::batch_norm(x, var, mean.expand({2}), {}, {}, true), tg::ValueError);
  CHECK(mean.item<double>() == 0.0);
  CHECK(var.to_vector<double>() == std::vector<double>{1, 1});
  // Read-only in eval mode: an expanded running statistic is fine there.
  CHECK(tg::batch_norm(x, mean.expand({2}), var).shape() == tg::Shape{3, 2});
  // Training updates both, by momentum (unbiased variance: column var of {0,2,4} is 4).
  tg::batch_norm(x, tg::zeros({2}, tg::kFloat64), var, {}, {}, true, 0.5);
  for (const double v : var.to_vector<double>()) CHECK(v == doctest::Approx(2.5));
}

TEST_CASE("tril/triu: a diagonal at the int64 limits keeps or zeroes all (op fuzzer finding)") {
  // i + diagonal overflowed (UB) for a diagonal near INT64_MAX / INT64_MIN; PyTorch accepts any
  // int64 diagonal.
  const Tensor x = tg::arange(1, 7, 1, tg::kFloat64).reshape({2, 3});
  const Tensor zero = tg::zeros({2, 3}, tg::kFloat64);
  const int64_t max64 = std::numeric_limits<int64_t>::max();
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  CHECK(tg::tril(x, max64).to_vector<double>() == x.to_vector<double>());
  CHECK(tg::triu(x, max64).to_vector<double>() == zero.to_vector<double>());
  CHECK(tg::tril(x, min64).to_vector<double>() == zero.to_vector<double>());
  CHECK(tg::triu(x, min64).to_vector<double>() == x.to_vector<double>());
}

TEST_CASE("a value out of an integer dtype's range converts as .to() does (short fuzz finding)") {
  // masked_fill of an int32 tensor with a float64 value 1e19 converted it with a plain cast (UB);
  // now the rule of .to(): NaN, inf and out-of-range values become the dtype's lowest value.
  const Tensor x = tg::zeros({3}, tg::kInt32);
  const Tensor mask = tg::tensor(std::vector<bool>{true, false, true});
  const Tensor value = tg::full({}, 1e19, tg::kFloat64);
  const int32_t as_to = value.to(tg::kInt32).to_vector<int32_t>()[0];
  const std::vector<int32_t> expected{as_to, 0, as_to};
  CHECK(tg::masked_fill(x, mask, value).to_vector<int32_t>() == expected);
  CHECK(tg::masked_fill_scalar(x, mask, 1e19).to_vector<int32_t>() == expected);
}

TEST_CASE("masked_scatter_backward: a stride-0 gradient of 2^62 elements (CI fuzz finding)") {
  // The per-chunk table of trues for the walk was sized by the broadcast shape, 2^47 entries for
  // 2^62 elements (std::bad_alloc, untyped; CI's short fuzz of 2026-11-25). The count of a
  // periodic mask is now worked out from one period, and a walk happens only over memory the
  // call holds.
  const int64_t n = int64_t{1} << 62;
  const Tensor grad = tg::full({}, 2.5, tg::kFloat64).expand({n});
  const Tensor no = tg::full({}, false, tg::kBool);
  const Tensor yes = tg::full({}, true, tg::kBool);
  CHECK(tg::masked_scatter_backward(grad, no, {3}).to_vector<double>() ==
        std::vector<double>{0, 0, 0});
  CHECK_THROWS_AS(tg::masked_scatter_backward(grad, yes, {3}), tg::ValueError);
  // A gradient that is not one value over a mask that selects none: zeros, no walk.
  const Tensor rows = tg::tensor(std::vector<double>{1, 2}).reshape({1, 2}).expand({n / 2, 2});
  const Tensor pattern = tg::tensor(std::vector<bool>{false, false});
  CHECK(tg::masked_scatter_backward(rows, pattern, {2}).to_vector<double>() ==
        std::vector<double>{0, 0});
  const Tensor half = tg::tensor(std::vector<bool>{true, false});
  CHECK_THROWS_AS(tg::masked_scatter_backward(rows, half, {2}), tg::ValueError);
}

TEST_CASE("matmul: a contraction over 2^61 expanded elements (op fuzzer finding)") {
  // The blocked loop's work estimate overflowed int64 (UBSan), and the loop itself would have
  // run 2^61 products over two stride-0 vectors (the exploratory fuzz of 2026-11-25). An
  // expanded contraction dim is read from a dense copy now: a typed error for this size, the
  // right dot product for a small one.
  const int64_t n = int64_t{1} << 61;
  const Tensor big = tg::full({}, 1.0f, tg::kFloat32).expand({n});
  CHECK_THROWS_AS(tg::matmul(big, big), tg::Error);
  const Tensor twos = tg::full({}, 2.0, tg::kFloat64).expand({5});
  const Tensor ramp = tg::arange(0, 5, 1, tg::kFloat64);
  CHECK(tg::matmul(twos, ramp).item<double>() == 20.0);
  CHECK(tg::matmul(ramp.reshape({1, 5}), twos.reshape({5, 1})).item<double>() == 20.0);
  const Tensor rows = tg::full({}, 3, tg::kInt64).expand({2, 4});  // the non-BLAS loop
  CHECK(tg::matmul(rows, tg::ones({4, 1}, tg::kInt64)).to_vector<int64_t>() ==
        std::vector<int64_t>{12, 12});
}

TEST_CASE("row ops on an empty expanded tensor with a dim of 2^62 + 1 (op fuzzer finding)") {
  // softmax of [2^62 + 1, 4, 0, 3] multiplied 2^62 + 1 by 4 before it met the 0 (UBSan; the
  // exploratory fuzz of 2026-11-25, fourth session). The row layout now stops at the 0; the
  // result's shape is then the allocator's typed error, as PyTorch 1.13 fails on the shape
  // ("numel: integer multiplication overflow", already at expand).
  const int64_t n = (int64_t{1} << 62) + 1;
  const Tensor x = tg::full({}, 1.0, tg::kFloat64).expand({n, 4, 0, 3});
  for (const int64_t dim : {int64_t{-1}, int64_t{2}, int64_t{0}}) {
    CAPTURE(dim);
    CHECK_THROWS_AS(tg::softmax(x, dim), tg::Error);
    CHECK_THROWS_AS(tg::log_softmax(x, dim), tg::Error);
    CHECK_THROWS_AS(tg::cumsum(x, dim), tg::Error);
    CHECK_THROWS_AS(tg::sort(x, dim), tg::Error);
  }
}
