#pragma once
// float32 convs with 1 x k kernels and stride 1 (every conv1d of stride 1, and the 1 x k convs of
// a conv2d) computed directly instead of by im2col + GEMM: each tile of 6 output channels x one
// or more vectors of positions keeps its sums in registers while it walks the input channels and
// taps, reading shifted windows of the input's rows (staged with their zero padding), so no
// column matrix is written and read again, and nothing is packed per call but the small weight
// matrix. The input gradient of such a conv is itself one (over the output gradient, padded by
// (k - 1) * dilation - padding, with the weights' channels swapped and their taps reversed), so
// the same kernel serves both. On CPUs with AVX2 + FMA only (TG_SIMD=sse2 / scalar keep im2col).
// Sums run over channels, then taps, in order, with FMAs: results differ from the GEMM path's
// by rounding only.
#include <cstdint>

#include <tapegrad/core/conv_geometry.h>

namespace tg::cpu::direct {

// Whether forward and backward_input take this float32 conv on this CPU.
bool fits(const ConvGeometry& g);
void forward(const float* x, const float* w, const float* bias, const ConvGeometry& g, float* y);
void backward_input(const float* gy, const float* w, const ConvGeometry& g, float* gx);

// Output channels per tile, the block of the packed weights: the same for every ISA.
inline constexpr int kRows = 6;

// One task as the per-ISA kernels see it: `out` output rows of `len` positions,
//   y[o * y_row + l] = bias[o] + sum over c < in, j < taps of
//                      w(o, c, j) * stage[c * stride + l + j * dilation].
struct Rows {
  const float* packed;  // w as [ceil(out / kRows)][in][taps][kRows], zeros past `out`
  const float* bias;    // [out], or nullptr for none
  const float* stage;   // readable up to round_up(len, cols) + (taps - 1) * dilation per row
  int64_t in, out, taps, dilation, stride, len;
  float* y;
  int64_t y_row;
};
struct Kernels {
  void (*rows)(const Rows& p);
  int64_t cols;  // positions per tile
};
Kernels avx2_kernels();
Kernels avx512_kernels();

}  // namespace tg::cpu::direct
