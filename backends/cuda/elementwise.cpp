// Elementwise CUDA ops: broadcasting and type promotion as on the CPU (backends/cpu/loops.h),
// inputs converted to the compute dtype on the device, then one launch of the generic strided
// kernel (elementwise_kernels.cu). Arguments were checked before dispatch (ops/checks).
#include <cstdint>
#include <limits>

#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"

namespace tg::cuda {
namespace {

using detail::BinaryKind;
using detail::UnaryKind;

// `t` (the operand called `name`) as a tensor of `dtype` on `device`. The only CPU tensor that
// may be mixed with CUDA tensors is a 0-d one, such as the wrapped number 2 in `x + 2`.
Tensor on_device(const char* op, const char* name, const Tensor& t, Device device, DType dtype) {
  Tensor r = t;
  if (t.device() != device) {
    TG_CHECK(t.device().is_cpu() && t.dim() == 0, ValueError, op, name, " is on ", t.device(),
             " (shape ", t.shape(), ") but the other operand is on ", device,
             "; only 0-d CPU tensors can be mixed with CUDA tensors");
    r = t.to(dtype).to(device);
  }
  return r.dtype() == dtype ? r : r.to(dtype);
}

Device device_of(const Tensor& a, const Tensor& b) {
  return a.device().is_cuda() ? a.device() : b.device();
}

// kind(self) computed in `dtype` (self converted first); out of `dtype` (bool for LogicalNot).
Tensor unary(const char* op, UnaryKind kind, const Tensor& self, DType dtype, const Scalar& p0 = 0,
             const Scalar& p1 = 0) {
  const Tensor in = on_device(op, "self", self, self.device(), dtype);
  Tensor out = empty(self.shape(), kind == UnaryKind::LogicalNot ? kBool : dtype, self.device());
  const auto layout = detail::make_layout<2>(op, self.shape(), {out.strides(), in.strides()});
  detail::launch_unary(kind, out.data_ptr(), in.data_ptr(), dtype, p0, p1, out.numel(), layout);
  return out;
}

DType floating_or_float32(DType t) { return is_floating(t) ? t : kFloat32; }

// kind(a, b) with broadcasting, computed in `compute`.
Tensor binary(const char* op, BinaryKind kind, const Tensor& self, const Tensor& other,
              DType compute, const Scalar& alpha = 1) {
  const Shape shape = broadcast_shapes(op, self.shape(), other.shape());
  const Device device = device_of(self, other);
  const Tensor a = on_device(op, "self", self, device, compute);
  const Tensor b = on_device(op, "other", other, device, compute);
  Tensor out = empty(shape, detail::is_bool_result(kind) ? kBool : compute, device);
  const auto layout = detail::make_layout<3>(op, shape,
                                             {out.strides(), broadcast_strides(op, a, shape),
                                              broadcast_strides(op, b, shape)});
  detail::launch_binary(kind, out.data_ptr(), a.data_ptr(), b.data_ptr(), compute, alpha,
                        out.numel(), layout);
  return out;
}

}  // namespace

Tensor neg(const Tensor& self) { return unary("neg", UnaryKind::Neg, self, self.dtype()); }
Tensor abs(const Tensor& self) { return unary("abs", UnaryKind::Abs, self, self.dtype()); }
Tensor sign(const Tensor& self) { return unary("sign", UnaryKind::Sign, self, self.dtype()); }
Tensor relu(const Tensor& self) { return unary("relu", UnaryKind::Relu, self, self.dtype()); }
Tensor logical_not(const Tensor& self) {
  return unary("logical_not", UnaryKind::LogicalNot, self, self.dtype());
}

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max) {
  // A floating bound makes an integer tensor's result float32, as on the CPU. A missing bound is
  // -inf / +inf (or the integer limits), which the kernel gets as the dtype's extremes.
  const DType dtype = promote_types(min ? result_type(self, *min) : self.dtype(),
                                    max ? result_type(self, *max) : self.dtype());
  Scalar lo = 0, hi = 0;
  if (is_floating(dtype)) {
    lo = min ? *min : Scalar(-std::numeric_limits<double>::infinity());
    hi = max ? *max : Scalar(std::numeric_limits<double>::infinity());
  } else {
    lo = min ? *min : Scalar(dtype == kInt32 ? int64_t{INT32_MIN} : INT64_MIN);
    hi = max ? *max : Scalar(dtype == kInt32 ? int64_t{INT32_MAX} : INT64_MAX);
  }
  return unary("clamp", UnaryKind::Clamp, self, dtype, lo, hi);
}

Tensor exp(const Tensor& self) {
  return unary("exp", UnaryKind::Exp, self, floating_or_float32(self.dtype()));
}
Tensor log(const Tensor& self) {
  return unary("log", UnaryKind::Log, self, floating_or_float32(self.dtype()));
}
Tensor sqrt(const Tensor& self) {
  return unary("sqrt", UnaryKind::Sqrt, self, floating_or_float32(self.dtype()));
}
Tensor rsqrt(const Tensor& self) {
  return unary("rsqrt", UnaryKind::Rsqrt, self, floating_or_float32(self.dtype()));
}
Tensor log1p(const Tensor& self) {
  return unary("log1p", UnaryKind::Log1p, self, floating_or_float32(self.dtype()));
}
Tensor expm1(const Tensor& self) {
  return unary("expm1", UnaryKind::Expm1, self, floating_or_float32(self.dtype()));
}
Tensor erf(const Tensor& self) {
  return unary("erf", UnaryKind::Erf, self, floating_or_float32(self.dtype()));
}
Tensor sigmoid(const Tensor& self) {
  return unary("sigmoid", UnaryKind::Sigmoid, self, floating_or_float32(self.dtype()));
}
Tensor tanh(const Tensor& self) {
  return unary("tanh", UnaryKind::Tanh, self, floating_or_float32(self.dtype()));
}
Tensor softplus(const Tensor& self) {
  return unary("softplus", UnaryKind::Softplus, self, floating_or_float32(self.dtype()));
}
Tensor gelu(const Tensor& self, const std::string& approximate) {
  return unary("gelu", approximate == "tanh" ? UnaryKind::GeluTanh : UnaryKind::GeluErf, self,
               floating_or_float32(self.dtype()));
}
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  return unary("leaky_relu", UnaryKind::LeakyRelu, self, self.dtype(), negative_slope);
}

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return binary("add", BinaryKind::Add, self, other, result_type(self, other), alpha);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return binary("sub", BinaryKind::Sub, self, other, result_type(self, other), alpha);
}
Tensor mul(const Tensor& self, const Tensor& other) {
  return binary("mul", BinaryKind::Mul, self, other, result_type(self, other));
}
Tensor div(const Tensor& self, const Tensor& other) {  // true division: int / int is float32
  return binary("div", BinaryKind::Div, self, other, floating_or_float32(result_type(self, other)));
}
Tensor pow(const Tensor& self, const Tensor& exponent) {
  return binary("pow", BinaryKind::Pow, self, exponent, result_type(self, exponent));
}
Tensor pow_scalar(const Tensor& self, const Scalar& exponent) {
  const Tensor e = scalar_to_tensor(exponent, kCPU);  // a wrapped number, moved by on_device
  return binary("pow_scalar", BinaryKind::Pow, self, e, result_type(self, e));
}
Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return binary("tanh_backward", BinaryKind::TanhBackward, grad_output, output,
                result_type(grad_output, output));
}
Tensor relu_backward(const Tensor& grad_output, const Tensor& output) {
  return binary("relu_backward", BinaryKind::ReluBackward, grad_output, output,
                result_type(grad_output, output));
}
Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self,
                           const Scalar& negative_slope) {
  return binary("leaky_relu_backward", BinaryKind::LeakyReluBackward, grad_output, self,
                result_type(grad_output, self), negative_slope);
}
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return binary("sigmoid_backward", BinaryKind::SigmoidBackward, grad_output, output,
                result_type(grad_output, output));
}
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self,
                     const std::string& approximate) {
  return binary("gelu_backward",
                approximate == "tanh" ? BinaryKind::GeluTanhBackward : BinaryKind::GeluErfBackward,
                grad_output, self, result_type(grad_output, self));
}

// Comparisons and logical ops compare in result_type(self, other) and give bool.
Tensor eq(const Tensor& self, const Tensor& other) {
  return binary("eq", BinaryKind::Eq, self, other, result_type(self, other));
}
Tensor ne(const Tensor& self, const Tensor& other) {
  return binary("ne", BinaryKind::Ne, self, other, result_type(self, other));
}
Tensor lt(const Tensor& self, const Tensor& other) {
  return binary("lt", BinaryKind::Lt, self, other, result_type(self, other));
}
Tensor le(const Tensor& self, const Tensor& other) {
  return binary("le", BinaryKind::Le, self, other, result_type(self, other));
}
Tensor gt(const Tensor& self, const Tensor& other) {
  return binary("gt", BinaryKind::Gt, self, other, result_type(self, other));
}
Tensor ge(const Tensor& self, const Tensor& other) {
  return binary("ge", BinaryKind::Ge, self, other, result_type(self, other));
}
Tensor logical_and(const Tensor& self, const Tensor& other) {
  return binary("logical_and", BinaryKind::LogicalAnd, self, other, result_type(self, other));
}
Tensor logical_or(const Tensor& self, const Tensor& other) {
  return binary("logical_or", BinaryKind::LogicalOr, self, other, result_type(self, other));
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const Shape shape =
      broadcast_shapes("where", broadcast_shapes("where", condition.shape(), self.shape()),
                       other.shape());
  const DType dtype = result_type(self, other);
  const Device device = condition.device().is_cuda() ? condition.device() : device_of(self, other);
  const Tensor c = on_device("where", "condition", condition, device, kBool);
  const Tensor a = on_device("where", "self", self, device, dtype);
  const Tensor b = on_device("where", "other", other, device, dtype);
  Tensor out = empty(shape, dtype, device);
  const auto layout = detail::make_layout<4>("where", shape,
                                             {out.strides(), broadcast_strides("where", c, shape),
                                              broadcast_strides("where", a, shape),
                                              broadcast_strides("where", b, shape)});
  detail::launch_where(out.data_ptr(), c.data<bool>(), a.data_ptr(), b.data_ptr(), dtype,
                       out.numel(), layout);
  return out;
}

}  // namespace tg::cuda
