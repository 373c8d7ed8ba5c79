// CUDA masked_fill (tensor and scalar value), masked_select, masked_scatter and
// masked_scatter_backward. The masked positions are numbered by an exclusive scan of the
// (broadcast) mask on the device; masked_scatter checks the source size there too, without a
// host sync (device_errors.h). masked_select alone reads the count back: its output's size is
// the count.
#include <tapegrad/generated/kernels.h>

#include "entries.h"

namespace tg::cuda {
namespace {

// t broadcast to `shape`, as a fresh contiguous tensor of dtype.
Tensor broadcast_copy(const Tensor& t, const Shape& shape, DType dtype) {
  Tensor out = empty(shape, dtype, t.device());
  copy_data(out, t);
  return out;
}
Tensor dense_mask(const Tensor& mask, const Shape& shape) {
  return broadcast_copy(mask, shape, kBool);
}

// positions (int64 [n]) and the count (int64 [1]) of a dense mask, on the device.
struct Positions {
  Tensor at, count;
};
Positions mask_positions(const Tensor& dense) {
  Positions p{empty({dense.numel()}, kInt64, dense.device()), zeros({1}, kInt64, dense.device())};
  detail::launch_mask_positions(dense.data<bool>(), p.at.data<int64_t>(), p.count.data<int64_t>(),
                                dense.numel());
  return p;
}

Tensor fill_where(const Tensor& self, const Tensor& mask, const Tensor& value) {
  const Tensor v = detail::dense(value.device() == self.device() ? value : value.to(self.device()),
                                 self.dtype());
  return where(mask, v, self);
}

}  // namespace

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return fill_where(self, mask, value);
}

Tensor masked_fill_scalar(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return fill_where(self, mask, scalar_to_tensor(value, self.device()));
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  const Shape shape = broadcast_shapes("masked_select", self.shape(), mask.shape());
  const Tensor m = dense_mask(mask, shape);
  const Tensor src = broadcast_copy(self, shape, self.dtype());
  const Positions p = mask_positions(m);
  const int64_t total = m.numel() == 0 ? 0 : p.count.item<int64_t>();  // a host sync
  Tensor out = empty({total}, self.dtype(), self.device());
  if (total > 0)
    detail::launch_compact(self.dtype(), out.data_ptr(), total, src.data_ptr(), m.data<bool>(),
                           p.at.data<int64_t>(), m.numel());
  return out;
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  constexpr const char* op = "masked_scatter";
  const Shape shape = broadcast_shapes(op, self.shape(), mask.shape());
  const Tensor m = dense_mask(mask, shape);
  Tensor out = broadcast_copy(self, shape, self.dtype());
  if (m.numel() == 0) return out;
  const Positions p = mask_positions(m);
  const Tensor src = detail::dense(source, self.dtype());
  detail::launch_check_count(op, false, p.count.data<int64_t>(), src.numel());
  detail::checkpoint();  // checked mode: "too few source elements" before any write
  detail::launch_masked_scatter(op, false, self.dtype(), out.data_ptr(), m.data<bool>(),
                                p.at.data<int64_t>(), p.count.data<int64_t>(), src.data_ptr(),
                                src.numel(), m.numel());
  return out;
}

Tensor masked_scatter_backward(const Tensor& grad_output, const Tensor& mask,
                               IntArrayRef source_shape) {
  constexpr const char* op = "masked_scatter_backward";
  const Shape out_shape(source_shape.begin(), source_shape.end());
  Tensor out = zeros(out_shape, grad_output.dtype(), grad_output.device());
  const Tensor m = dense_mask(mask, grad_output.shape());
  if (m.numel() == 0) return out;
  const Positions p = mask_positions(m);
  detail::launch_check_count(op, true, p.count.data<int64_t>(), out.numel());
  detail::checkpoint();
  const Tensor g = detail::dense(grad_output, grad_output.dtype());
  detail::launch_compact(grad_output.dtype(), out.data_ptr(), out.numel(), g.data_ptr(),
                         m.data<bool>(), p.at.data<int64_t>(), m.numel());
  return out;
}

}  // namespace tg::cuda
