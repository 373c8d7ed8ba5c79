// CPU cat and stack: allocate the result in the promoted dtype and copy each input into its slice
// of the result (copy_data converts dtypes and handles strides). The shapes are checked before
// dispatch (ops/checks/join.cpp).
#include <algorithm>
#include <cstdint>

#include <tapegrad/backends/shared/join.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {
namespace {

// Copies t into `slice`, its place in the contiguous result: `rows` runs of t.numel() / rows
// elements, `run_stride` elements apart. A contiguous t of the result's dtype (the common case)
// is copied run by run (copy_bytes); anything else element by element, converting.
void copy_into(const Tensor& slice, const Tensor& t, int64_t rows, int64_t run_stride,
               bool stream) {
  if (t.dtype() != slice.dtype() || !t.is_contiguous() || t.numel() == 0) {
    copy_data(slice, t);
    return;
  }
  const int64_t run = t.numel() / rows, item = static_cast<int64_t>(itemsize(t.dtype()));
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(slice.data_ptr());
  // Split by bytes, not by runs: a cat along dim 0 is one long run per input, which a split by
  // runs would leave to one thread.
  const int64_t run_bytes = run * item, stride_bytes = run_stride * item;
  parallel_for(0, rows * run_bytes, kCopyGrainBytes, [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t r = b / run_bytes, off = b - r * run_bytes;
      const int64_t len = std::min(run_bytes - off, e - b);
      copy_bytes(dst + r * stride_bytes + off, src + b, static_cast<size_t>(len), stream);
      b += len;
    }
    if (stream) stream_fence();
  });
}

// Each input lands in `rows` runs of the result, one per index of the dims before d.
void copy_slice(const Tensor& out, int64_t d, const Tensor& slice, const Tensor& t) {
  int64_t rows = 1;
  for (int64_t k = 0; k < d; ++k) rows *= out.size(k);
  const int64_t out_bytes = out.numel() * static_cast<int64_t>(itemsize(out.dtype()));
  copy_into(slice, t, rows, d > 0 ? out.strides()[static_cast<size_t>(d - 1)] : 0,
            streaming_stores_for(out_bytes));
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return shared::join(false, tensors, dim, copy_slice);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  return shared::join(true, tensors, dim, copy_slice);
}

}  // namespace tg::cpu
