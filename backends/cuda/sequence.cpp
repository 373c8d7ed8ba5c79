// CUDA tril, triu, cumsum, dropout (sequence_kernels.cu) and embedding (a row-form gather).
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"
#include "entries.h"

namespace tg::cuda {
namespace {

Tensor dense_copy(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

Tensor triangle(bool upper, const Tensor& self, int64_t diagonal) {
  const Tensor in = dense_as(self, self.dtype());
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  detail::launch_triangle(upper, self.dtype(), out.data_ptr(), in.data_ptr(), out.numel(),
                          self.size(-2), self.size(-1), diagonal);
  return out;
}

}  // namespace

Tensor tril(const Tensor& self, int64_t diagonal) { return triangle(false, self, diagonal); }
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle(true, self, diagonal); }

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  const DType out_dtype = dtype ? *dtype : is_floating(self.dtype()) ? self.dtype() : kInt64;
  const int64_t d = self.dim() == 0 ? 0 : wrap_dim("cumsum", dim, self.dim());
  const Tensor x = dense_as(self, out_dtype);
  Tensor out = empty(self.shape(), out_dtype, self.device());
  if (out.numel() == 0) return out;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= self.size(k);
  for (int64_t k = d + 1; k < self.dim(); ++k) inner *= self.size(k);
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  detail::launch_cumsum(out_dtype, out.data_ptr(), x.data_ptr(), outer, size, inner);
  return out;
}

std::tuple<Tensor, Tensor> dropout(const Tensor& self, double p, bool train) {
  if (!train || p == 0) return {dense_copy(self), ones(self.shape(), kBool, self.device())};
  if (p == 1)
    return {zeros(self.shape(), self.dtype(), self.device()),
            zeros(self.shape(), kBool, self.device())};
  const Tensor x = dense_as(self, self.dtype());
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  Tensor mask = empty(self.shape(), kBool, self.device());
  const uint64_t seed = random_u64();  // one draw from the global generator, as on the CPU
  detail::launch_dropout(self.dtype(), out.data_ptr(), mask.data<bool>(), x.data_ptr(), x.numel(),
                         seed, 1 - p);
  return {out, mask};
}

// weight's rows at indices: entries over [indices, dim] reading weight (a row-form gather).
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t>) {
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  Tensor out = empty(shape, weight.dtype(), weight.device());
  if (out.numel() == 0) return out;
  const Tensor idx = dense_as(indices, kInt64);
  const Shape iter{indices.numel(), weight.size(1)};
  const detail::Entries e =
      detail::make_entries("embedding", iter, Shape{1, 0}, Shape{0, 0}, weight.strides(), 0,
                           weight.size(0), idx, false, false, detail::kEmbeddingIndex);
  detail::launch_gather_slots(weight.dtype(), out.data_ptr(), weight.data_ptr(),
                              e.slots.data<int64_t>(), e.n);
  return out;
}

}  // namespace tg::cuda
