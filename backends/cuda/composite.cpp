// CUDA kernels made of other CUDA kernels: joins (copies into slices of the result), softmax and
// its relatives, argmax / argmin, mse_loss. Each calls the tg::cuda kernels directly (never the
// front end), so everything stays on the device with no host sync, and the arithmetic follows
// the CPU kernels' formulas (results agree to rounding). The calls name cuda:: explicitly: with
// tg::exp and friends also declared (functions.h, as in a unity build), argument-dependent lookup
// would find both.
#include <algorithm>
#include <limits>
#include <vector>

#include <tapegrad/backends/shared/join.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cuda {
namespace {

// cat and stack copy each input into its slice of the result (backends/shared/join.h).
void copy_slice(const Tensor& /*out*/, int64_t /*dim*/, const Tensor& slice, const Tensor& t) {
  copy_data(slice, t);
}

// self as a fresh contiguous 1-d tensor.
Tensor flattened(const Tensor& self) {
  Tensor dense = empty(self.shape(), self.dtype(), self.device());
  copy_data(dense, self);
  return make_view(dense, {self.numel()}, {1}, 0);
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return shared::join(false, tensors, dim, copy_slice);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  return shared::join(true, tensors, dim, copy_slice);
}

Tensor softmax(const Tensor& self, int64_t dim) {
  const Tensor e = cuda::exp(cuda::sub(self, cuda::amax(self, {dim}, true), 1));
  return cuda::div(e, cuda::sum(e, {dim}, true, std::nullopt));
}

Tensor log_softmax(const Tensor& self, int64_t dim) {
  const Tensor shifted = cuda::sub(self, cuda::amax(self, {dim}, true), 1);
  return cuda::sub(shifted, cuda::log(cuda::sum(cuda::exp(shifted), {dim}, true, std::nullopt)), 1);
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  const Tensor s = cuda::sum(cuda::mul(grad_output, output), {dim}, true, std::nullopt);
  return cuda::mul(output, cuda::sub(grad_output, s, 1));
}

Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  const Tensor s = cuda::sum(grad_output, {dim}, true, std::nullopt);
  return cuda::sub(grad_output, cuda::mul(cuda::exp(output), s), 1);
}

Tensor logsumexp(const Tensor& self_in, IntArrayRef dim, bool keepdim) {
  // Bool and integer inputs give float32, as exp does.
  Tensor self = self_in;
  if (!is_floating(self.dtype())) {
    self = empty(self_in.shape(), kFloat32, self_in.device());
    copy_data(self, self_in);
  }
  // The shift is the max, or 0 where the max is infinite (so that inf - inf makes no NaN).
  const Tensor m = cuda::amax(self, dim, true);
  const Tensor inf = scalar_to_tensor(std::numeric_limits<double>::infinity(), kCPU);
  const Tensor finite = cuda::lt(cuda::abs(m), inf);
  const Tensor shift = cuda::where(finite, m, zeros({}, m.dtype(), m.device()));
  const Tensor r =
      cuda::add(cuda::log(cuda::sum(cuda::exp(cuda::sub(self, shift, 1)), dim, true, std::nullopt)),
                shift, 1);
  if (keepdim) return r;
  return cuda::sum(r, dim, false, std::nullopt);  // drops the size-1 dims, values unchanged
}

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) return std::get<1>(cuda::max(self, *dim, keepdim));
  const Tensor flat = flattened(self);
  const Tensor index = std::get<1>(cuda::max(flat, 0, false));
  return keepdim ? Tensor(make_view(index, Shape(static_cast<size_t>(self.dim()), 1),
                                    Shape(static_cast<size_t>(self.dim()), 1), 0))
                 : index;
}

Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim) return std::get<1>(cuda::min(self, *dim, keepdim));
  const Tensor flat = flattened(self);
  const Tensor index = std::get<1>(cuda::min(flat, 0, false));
  return keepdim ? Tensor(make_view(index, Shape(static_cast<size_t>(self.dim()), 1),
                                    Shape(static_cast<size_t>(self.dim()), 1), 0))
                 : index;
}

Tensor mse_loss(const Tensor& self, const Tensor& target, const std::string& reduction) {
  const Tensor d = cuda::sub(self, target, 1);
  const Tensor loss = cuda::mul(d, d);
  if (reduction == "none") return loss;
  if (reduction == "sum") return cuda::sum(loss, {}, false, std::nullopt);
  return cuda::mean(loss, {}, false);
}

}  // namespace tg::cuda
