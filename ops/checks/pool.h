#pragma once
// The geometry of the 2-d pooling ops and their backward ops, shared by their checks (pool.cpp)
// and their kernels.
#include <cstdint>
#include <optional>

#include <tapegrad/core/tensor.h>

namespace tg::checks {

// Sizes of one 2-d pooling: planes = N * C (C when unbatched), each [h, w] -> [oh, ow].
struct PoolGeometry {
  bool batched = true;
  int64_t n = 1, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t oh = 0, ow = 0;
  int64_t planes() const { return n * c; }
  Shape output_shape() const;
};

// The output size along one dim as PyTorch's pooling_output_shape computes it (ceil_mode lets
// the last window start inside the input or its left padding, never in the right padding).
int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode);

// Geometry of checked arguments (an empty stride means stride = kernel_size).
PoolGeometry pool_geometry(const Shape& input_shape, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);

}  // namespace tg::checks
