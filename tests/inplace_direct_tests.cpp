// In-place arithmetic that writes straight into self when autograd does not record
// (core/inplace_target.h): the same values as the out-of-place op in every layout, self's
// storage reused, and the cases that must not write into self early (an input sharing self's
// storage, a transposed self, a dtype or shape the result cannot have) still correct.
#include <doctest/doctest.h>
#include <tapegrad/ops/overloads.h>
#include <tapegrad/tapegrad.h>

#include <vector>

using tg::Tensor;
using V = std::vector<double>;

namespace {

Tensor iota(int64_t n, tg::IntArrayRef shape) {
  return tg::arange(n, tg::kFloat64).reshape(shape).to(tg::kFloat32);
}

// a.op_(b) against op(a, b) computed first, and a's data pointer kept.
template <typename InPlace, typename OutOfPlace>
void check_same(Tensor a, const Tensor& b, InPlace in_place, OutOfPlace out_of_place) {
  const V want = out_of_place(a, b).template to_vector<double>();
  const void* data = a.data_ptr();
  in_place(a, b);
  CHECK(a.data_ptr() == data);
  CHECK(a.to_vector<double>() == want);
}

}  // namespace

TEST_CASE("in-place direct write: add_, mul_, sub_, div_ match the out-of-place ops") {
  auto add_ = [](Tensor& a, const Tensor& b) { a.add_(b); };
  auto add = [](const Tensor& a, const Tensor& b) { return tg::add(a, b); };
  auto mul_ = [](Tensor& a, const Tensor& b) { a.mul_(b); };
  auto mul = [](const Tensor& a, const Tensor& b) { return tg::mul(a, b); };
  check_same(iota(12, {3, 4}), iota(12, {3, 4}) * 0.5, add_, add);  // same shape
  check_same(iota(12, {3, 4}), iota(4, {4}) + 1.0, mul_, mul);      // broadcast row
  check_same(iota(12, {3, 4}), iota(3, {3, 1}) - 1.0, add_, add);   // broadcast column
  check_same(iota(12, {3, 4}), tg::scalar_tensor(2.5, tg::kFloat32), mul_, mul);  // scalar
  check_same(iota(12, {3, 4}), iota(12, {4, 3}).transpose(0, 1), add_, add);      // strided other
  check_same(iota(12, {3, 4}), iota(12, {3, 4}).to(tg::kInt64), add_, add);       // other converted
  check_same(iota(1 << 17, {1 << 17}), iota(1 << 17, {1 << 17}), mul_, mul);      // threads
  Tensor s = iota(6, {6});
  s.sub_(iota(6, {6}) * 2.0);
  CHECK(s.to_vector<double>() == V{0, -1, -2, -3, -4, -5});
  s.div_(tg::scalar_tensor(-1.0, tg::kFloat32));
  CHECK(s.to_vector<double>() == V{0, 1, 2, 3, 4, 5});
  s.exp_();
  CHECK(s.to_vector<double>() == tg::exp(iota(6, {6})).to_vector<double>());
}

TEST_CASE("in-place direct write: inputs sharing self's storage, and non-contiguous self") {
  Tensor a = iota(6, {6});
  a.add_(a);  // other is self
  CHECK(a.to_vector<double>() == V{0, 2, 4, 6, 8, 10});
  Tensor b = iota(4, {2, 2});
  b.add_(b.transpose(0, 1));  // b[1][0] reads b[0][1], written before it: must see the old value
  CHECK(b.to_vector<double>() == V{0, 3, 3, 6});
  Tensor c = iota(12, {4, 3}).transpose(0, 1);  // self transposed: written through its strides
  c.mul_(iota(4, {4}));
  CHECK(c.to_vector<double>() == V{0, 3, 12, 27, 0, 4, 14, 30, 0, 5, 16, 33});
  Tensor d = iota(4, {4});
  CHECK_THROWS_AS(d.add_(iota(8, {2, 4})), tg::ValueError);  // the result would not fit self
  CHECK(d.to_vector<double>() == V{0, 1, 2, 3});
}

TEST_CASE("in-place direct write: recorded in-place ops keep their history") {
  Tensor w = tg::tensor(V{1, 2, 3}).requires_grad_();
  Tensor y = w * 2.0;
  y.add_(tg::tensor(V{1, 1, 1}));
  y.sum().backward();
  CHECK(w.grad().to_vector<double>() == V{2, 2, 2});
}
