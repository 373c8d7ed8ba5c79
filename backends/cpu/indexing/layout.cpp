// Layout helpers of the indexing kernels; see layout.h.
#include "layout.h"

#include <tapegrad/core/parallel.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu::indexing {

Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? Tensor(make_view(t, {1}, {1}, t.storage_offset())) : t;
}

Tensor as_0d(const Tensor& t) { return make_view(t, {}, {}, t.storage_offset()); }

Tensor fresh_copy(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  if (t.numel() == 0) return out;
  visit_dtype("copy", t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = t.data<T>();
    T* dst = out.data<T>();
    if (t.is_contiguous()) {  // in parallel chunks, so two threads copy twice as fast
      parallel_for(0, t.numel(), 8 * kElementwiseGrain, [&](int64_t first, int64_t last) {
        std::memcpy(dst + first, src + first, static_cast<size_t>(last - first) * sizeof(T));
      });
      return;
    }
    // Row by row (every dim but the last), each row a memcpy, a fill or a strided loop: an
    // expanded or transposed tensor copies at memory speed (core copy_data visits it element
    // by element).
    const Shape& shape = t.shape();
    const int64_t nd = t.dim(), width = nd == 0 ? 1 : shape[nd - 1];
    const int64_t step = nd == 0 ? 1 : t.stride(nd - 1), rows = t.numel() / width;
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / width),
                 [&](int64_t first, int64_t last) {
                   for (int64_t row = first; row < last; ++row) {
                     int64_t offset = 0, rest = row;
                     for (int64_t k = nd - 2; k >= 0; --k) {
                       offset += (rest % shape[k]) * t.stride(k);
                       rest /= shape[k];
                     }
                     copy_run(dst + row * width, src + offset, width, step);
                   }
                 });
  });
  return out;
}

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : fresh_copy(t); }

Tensor expand_index(const Tensor& index, const Shape& shape, int64_t dim) {
  Shape strides(shape.size(), 0);
  strides[dim] = index.dim() == 0 ? 0 : index.stride(0);
  return make_view(index, shape, strides, index.storage_offset());
}

}  // namespace tg::cpu::indexing
