// CUDA kernels made of other CUDA kernels: joins (copies into slices of the result), softmax and
// its relatives, argmax / argmin, mse_loss. Each calls the tg::cuda kernels directly (never the
// front end), so everything stays on the device with no host sync, and the arithmetic follows
// the CPU kernels' formulas (results agree to rounding).
#include <algorithm>
#include <limits>
#include <vector>

#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cuda {
namespace {

DType promoted_dtype(const std::vector<Tensor>& tensors) {
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  return dtype;
}

// The view of out with `shape` starting `index` steps along dim (dim dropped for stack).
Tensor slice_of(const Tensor& out, const Shape& shape, int64_t dim, int64_t index, bool drop) {
  Shape strides = out.strides();
  const int64_t offset = out.storage_offset() + index * strides[static_cast<size_t>(dim)];
  if (drop) strides.erase(static_cast<size_t>(dim));
  return make_view(out, shape, strides, offset);
}

// self as a fresh contiguous 1-d tensor.
Tensor flattened(const Tensor& self) {
  Tensor dense = empty(self.shape(), self.dtype(), self.device());
  copy_data(dense, self);
  return make_view(dense, {self.numel()}, {1}, 0);
}

bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors)
    if (!ref && !skipped_by_cat(t)) ref = &t;
  const DType dtype = promoted_dtype(tensors);
  if (!ref) {
    wrap_dim("cat", dim, 1);
    return empty({0}, dtype, tensors[0].device());
  }
  const int64_t d = wrap_dim("cat", dim, ref->dim());
  Shape out_shape = ref->shape();
  out_shape[static_cast<size_t>(d)] = 0;
  for (const Tensor& t : tensors)
    if (!skipped_by_cat(t)) out_shape[static_cast<size_t>(d)] += t.size(d);
  Tensor out = empty(out_shape, dtype, ref->device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (skipped_by_cat(t)) continue;
    copy_data(slice_of(out, t.shape(), d, offset, false), t);
    offset += t.size(d);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  const Shape& shape = tensors[0].shape();
  const int64_t d = wrap_dim("stack", dim, tensors[0].dim() + 1);
  Shape out_shape = shape;
  out_shape.insert(static_cast<size_t>(d), static_cast<int64_t>(tensors.size()));
  Tensor out = empty(out_shape, promoted_dtype(tensors), tensors[0].device());
  for (size_t i = 0; i < tensors.size(); ++i)
    copy_data(slice_of(out, shape, d, static_cast<int64_t>(i), true), tensors[i]);
  return out;
}

Tensor softmax(const Tensor& self, int64_t dim) {
  const Tensor e = exp(sub(self, amax(self, {dim}, true), 1));
  return div(e, sum(e, {dim}, true, std::nullopt));
}

Tensor log_softmax(const Tensor& self, int64_t dim) {
  const Tensor shifted = sub(self, amax(self, {dim}, true), 1);
  return sub(shifted, log(sum(exp(shifted), {dim}, true, std::nullopt)), 1);
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  const Tensor s = sum(mul(grad_output, output), {dim}, true, std::nullopt);
  return mul(output, sub(grad_output, s, 1));
}

Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  const Tensor s = sum(grad_output, {dim}, true, std::nullopt);
  return sub(grad_output, mul(exp(output), s), 1);
}

Tensor logsumexp(const Tensor& self_in, IntArrayRef dim, bool keepdim) {
  // Bool and integer inputs give float32, as exp does.
  Tensor self = self_in;
  if (!is_floating(self.dtype())) {
    self = empty(self_in.shape(), kFloat32, self_in.device());
    copy_data(self, self_in);
  }
  // The shift is the max, or 0 where the max is infinite (so that inf - inf makes no NaN).
  const Tensor m = amax(self, dim, true);
  const Tensor inf = scalar_to_tensor(std::numeric_limits<double>::infinity(), kCPU);
  const Tensor finite = lt(abs(m), inf);
  const Tensor shift = where(finite, m, zeros({}, m.dtype(), m.device()));
  const Tensor r = add(log(sum(exp(sub(self, shift, 1)), dim, true, std::nullopt)), shift, 1);
  if (keepdim) return r;
  return sum(r, dim, false, std::nullopt);  // drops the size-1 dims, values unchanged
}

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) return std::get<1>(max(self, *dim, keepdim));
  const Tensor flat = flattened(self);
  const Tensor index = std::get<1>(max(flat, 0, false));
  return keepdim ? Tensor(make_view(index, Shape(static_cast<size_t>(self.dim()), 1),
                                    Shape(static_cast<size_t>(self.dim()), 1), 0))
                 : index;
}

Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) return std::get<1>(min(self, *dim, keepdim));
  const Tensor flat = flattened(self);
  const Tensor index = std::get<1>(min(flat, 0, false));
  return keepdim ? Tensor(make_view(index, Shape(static_cast<size_t>(self.dim()), 1),
                                    Shape(static_cast<size_t>(self.dim()), 1), 0))
                 : index;
}

Tensor mse_loss(const Tensor& self, const Tensor& target, const std::string& reduction) {
  const Tensor d = sub(self, target, 1);
  const Tensor loss = mul(d, d);
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss, {}, false, std::nullopt);
  return mean(loss, {}, false);
}

}  // namespace tg::cuda
