// Checks of the elementwise ops: arithmetic, comparisons, logical ops, where, clamp and the fused
// activation backwards (kernels: backends/cpu/binary.cpp, compare.cpp, unary.cpp,
// activation_backward.cpp, nn_activation.cpp). Mostly: the inputs broadcast together.
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {
namespace {

// add/sub's alpha must fit the result dtype, as in PyTorch. alpha 1 (the default) always does.
void alpha_fits(const char* op, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (alpha.is_integral() && alpha.to_int() == 1) return;
  const DType result = result_type(self, other);
  TG_CHECK(!alpha.is_bool() || result == kBool, TypeError, op,
           "a bool alpha needs a bool result, got result dtype ", dtype_name(result));
  TG_CHECK(is_floating(result) || !alpha.is_floating(), TypeError, op,
           "alpha must be an integer for a result of dtype ", dtype_name(result), ", got ", alpha);
}

}  // namespace

void add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  alpha_fits("add", self, other, alpha);
  broadcastable("add", self, other);
}

void sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  alpha_fits("sub", self, other, alpha);
  broadcastable("sub", self, other);
}

void mul(const Tensor& self, const Tensor& other) { broadcastable("mul", self, other); }
void div(const Tensor& self, const Tensor& other) { broadcastable("div", self, other); }
void pow(const Tensor& self, const Tensor& exponent) { broadcastable("pow", self, exponent); }

void pow_scalar(const Tensor& self, const Scalar& exponent) {
  TG_CHECK(!(is_integral(self.dtype()) && exponent.is_integral() && exponent.to_int() < 0),
           ValueError, "pow_scalar", "integers to negative integer powers are not allowed, got ",
           dtype_name(self.dtype()), " self and exponent ", exponent);
}

void eq(const Tensor& self, const Tensor& other) { broadcastable("eq", self, other); }
void ne(const Tensor& self, const Tensor& other) { broadcastable("ne", self, other); }
void lt(const Tensor& self, const Tensor& other) { broadcastable("lt", self, other); }
void le(const Tensor& self, const Tensor& other) { broadcastable("le", self, other); }
void gt(const Tensor& self, const Tensor& other) { broadcastable("gt", self, other); }
void ge(const Tensor& self, const Tensor& other) { broadcastable("ge", self, other); }

void logical_and(const Tensor& self, const Tensor& other) {
  broadcastable("logical_and", self, other);
}

void logical_or(const Tensor& self, const Tensor& other) {
  broadcastable("logical_or", self, other);
}

void where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const Shape first = condition.shape() == self.shape()
                          ? self.shape()
                          : broadcast_shapes("where", condition.shape(), self.shape());
  broadcast_shapes("where", first, other.shape());
}

void clamp(const Tensor&, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  TG_CHECK(min || max, ValueError, "clamp", "give at least one of min and max, got neither");
}

void relu_backward(const Tensor& grad_output, const Tensor& output) {
  broadcastable("relu_backward", grad_output, output);
}

void leaky_relu_backward(const Tensor& grad_output, const Tensor& self, const Scalar&) {
  broadcastable("leaky_relu_backward", grad_output, self);
}

void tanh_backward(const Tensor& grad_output, const Tensor& output) {
  broadcastable("tanh_backward", grad_output, output);
}

void sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  broadcastable("sigmoid_backward", grad_output, output);
}

void gelu_backward(const Tensor& grad_output, const Tensor& self, const std::string&) {
  broadcastable("gelu_backward", grad_output, self);
}

}  // namespace tg::checks
