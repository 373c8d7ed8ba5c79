// CPU kernels of the comparison ops (eq ne lt le gt ge) and the logical ops (logical_not,
// logical_and, logical_or): any dtypes in, bool out.
#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

Tensor eq(const Tensor& self, const Tensor& other) {
  return comparison_op("eq", self, other, [](auto a, auto b) { return a == b; });
}
Tensor ne(const Tensor& self, const Tensor& other) {
  return comparison_op("ne", self, other, [](auto a, auto b) { return a != b; });
}
Tensor lt(const Tensor& self, const Tensor& other) {
  return comparison_op("lt", self, other, [](auto a, auto b) { return a < b; });
}
Tensor le(const Tensor& self, const Tensor& other) {
  return comparison_op("le", self, other, [](auto a, auto b) { return a <= b; });
}
Tensor gt(const Tensor& self, const Tensor& other) {
  return comparison_op("gt", self, other, [](auto a, auto b) { return a > b; });
}
Tensor ge(const Tensor& self, const Tensor& other) {
  return comparison_op("ge", self, other, [](auto a, auto b) { return a >= b; });
}

// Logical ops read any value as true when nonzero (NaN included), as in PyTorch. & and | rather
// than && and ||: both sides are read anyway, and the compiler vectorises no short circuit.
Tensor logical_not(const Tensor& self) {
  return unary_bool_op("logical_not", self, [](auto x) { return !static_cast<bool>(x); });
}
Tensor logical_and(const Tensor& self, const Tensor& other) {
  return comparison_op("logical_and", self, other,
                       [](auto a, auto b) { return static_cast<bool>(a) & static_cast<bool>(b); });
}
Tensor logical_or(const Tensor& self, const Tensor& other) {
  return comparison_op("logical_or", self, other,
                       [](auto a, auto b) { return static_cast<bool>(a) | static_cast<bool>(b); });
}

}  // namespace tg::cpu
