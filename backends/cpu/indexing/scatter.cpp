// CPU gather, scatter, scatter_add, scatter_reduce and gather_backward on the walk form of the
// engine (engine.h, walk.h). Their arguments were checked before dispatch (ops/checks/scatter.cpp);
// the engine checks the index values as it walks them. scatter_reduce's fused backward is in
// scatter_reduce_backward.cpp.
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "engine.h"
#include "layout.h"

namespace tg::cpu {
namespace {
using namespace indexing;

// scatter, scatter_add and scatter_reduce: self copied, then src scattered into the copy.
Tensor scatter_op(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor& src, Reduce reduce, bool include_self) {
  const Tensor self1 = as_1d(self), index1 = as_1d(index), src1 = as_1d(src);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  Tensor out = fresh_copy(self1);
  if (index1.numel() > 0) scatter_into(op, out, d, index1, src1, reduce, include_self);
  return self.dim() == 0 ? as_0d(out) : out;
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = as_1d(self), index1 = as_1d(index);
  const int64_t d = wrap_dim("gather", dim, self1.dim());
  const Tensor result = gather_from("gather", self1, d, index1);
  return index.dim() == 0 ? as_0d(result) : result;
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter", self, dim, index, src, Reduce::Assign, true);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter_add", self, dim, index, src, Reduce::Sum, true);
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  return scatter_op("scatter_reduce", self, dim, index, src, parse_reduce(reduce), include_self);
}

// grad_output added into zeros of self's shape at index along dim (duplicates accumulate).
Tensor gather_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                       const Tensor& index) {
  constexpr const char* op = "gather_backward";
  const Shape shape(self_shape.begin(), self_shape.end());
  const Tensor out =
      zeros(shape.empty() ? Shape{1} : shape, grad_output.dtype(), grad_output.device());
  const Tensor index1 = as_1d(index), grad1 = as_1d(grad_output);
  const int64_t d = wrap_dim(op, dim, out.dim());
  if (index1.numel() > 0) scatter_into(op, out, d, index1, grad1, Reduce::Sum, true);
  return shape.empty() ? as_0d(out) : out;
}

}  // namespace tg::cpu
