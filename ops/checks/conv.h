#pragma once
// The geometry of conv1d, conv2d and their two backward ops, shared by their checks (spec key
// "check": checks::conv2d etc. in conv.cpp, declared by the generator) and their kernels. A conv1d
// is a conv2d with a height of 1, so one geometry serves both.
#include <cstdint>

#include <tapegrad/core/tensor.h>

namespace tg::checks {

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

// Checks every argument of a conv of input_shape with weight_shape (dims, channels, groups,
// stride / padding / dilation values, kernel within the padded input) and returns its geometry.
ConvGeometry check_conv(const char* op, int spatial, const Shape& input_shape,
                        const Shape& weight_shape, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef dilation, int64_t groups);

}  // namespace tg::checks
