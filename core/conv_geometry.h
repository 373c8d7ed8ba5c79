#pragma once
// The shape arithmetic of the conv and pooling ops, shared by their argument checks
// (ops/checks/conv.cpp, pool.cpp) and their kernels (backends/cpu/conv.cpp, pool.cpp): pure
// functions of sizes, for arguments that were checked. A conv1d is a conv2d with a height of 1,
// so one geometry serves both.
#include <cstdint>

#include <tapegrad/core/shape.h>

namespace tg {

// Sizes of one convolution, always in 2-d form: a 1-d conv has h = kh = 1, sh = dh = 1, ph = 0,
// and an unbatched input has n = 1.
struct ConvGeometry {
  int spatial = 2;      // 1 (conv1d) or 2 (conv2d)
  bool batched = true;  // input [N, C, ...] rather than [C, ...]
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t oc = 0, groups = 1, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t oh = 0, ow = 0;

  Shape input_shape() const;   // as the user sees it ([N,] C, [H,] W)
  Shape output_shape() const;  // ([N,] OC, [OH,] OW)
  int64_t cols_rows() const { return (c / groups) * kh * kw; }  // K of one group's gemm
};

// The geometry of a conv with `spatial` spatial dims, input of input_shape and weight of
// weight_shape, assuming the arguments were checked (kernels call this).
ConvGeometry conv_geometry(int spatial, const Shape& input_shape, const Shape& weight_shape,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           int64_t groups);

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

}  // namespace tg
