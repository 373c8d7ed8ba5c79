#pragma once
// conv2d with 3x3 kernels, stride 1 and no dilation, by Winograd's F(2x2, 3x3): each 2x2 block of
// outputs costs 16 products per channel pair instead of 36. The input gradient of such a conv is
// itself one (over the output gradient, with the weights flipped and their channels swapped), so
// the same kernels serve both; the weight gradient is the transposed product, G^T (sum over
// tiles of (A dy A^T) (B^T x B)) G. float32 only, and only on CPUs with AVX2 + FMA: the transforms
// and products run over 16 tiles at a time, and scalar loops would lose to im2col + BLAS. Two
// layouts of those 16 lanes: 16 tiles of one tile row where the rows fill most of a vector (23 to
// 32 wide, 47 to 64, ...), else 16 consecutive tiles of the image's tile grid in row-major order
// where those fill most of their vectors (the packed layout: an 8x8 output is 16 tiles, one
// vector). Results differ from the direct sum by rounding only (on random data about 1.5x the
// GEMM path's error; the transformed values are larger).
#include <cstdint>

#include <tapegrad/core/conv_geometry.h>

namespace tg::cpu::winograd {

// Whether forward (and backward_input) take this float32 conv on this CPU.
bool fits(const ConvGeometry& g);
void forward(const float* x, const float* w, const float* bias, const ConvGeometry& g, float* y);
void backward_input(const float* gy, const float* w, const ConvGeometry& g, float* gx);
// The weight gradient takes the calls fits() takes whose input channels are a multiple of 16.
bool fits_weight(const ConvGeometry& g);
void backward_weight(const float* gy, const float* x, const ConvGeometry& g, float* gw);

// One image's stride-1 3x3 conv as the per-ISA kernels see it (conv_winograd_impl.h): x [C, H, W]
// zero-padded by (ph, pw) to [K, OH, OW]; every size is computed by conv_winograd.cpp, so the
// ISA files hold no shared inline code.
struct Problem {
  const float* u;     // transformed weights, [16][C][K]
  const float* bias;  // [K] or nullptr
  int64_t c, k, h, w, oh, ow, ph, pw;
  int64_t tile_rows;  // ceil(OH / 2)
  int64_t tiles;      // tiles per tile row, ceil(OW / 2)
  int64_t vectors;    // groups of 16 tiles per tile row
  int64_t stage_w;    // 16 * vectors + 1: one staged row's even (or odd) columns
  int64_t stage_h;    // 2 * tile_rows + 2 staged rows per channel
  // The packed layout (conv_winograd_packed.h), for images whose tile rows are short: lanes over
  // the image's tiles in row-major order.
  int64_t flat_tiles;  // tile_rows * tiles
  int64_t groups;      // groups of 16 of them
  int64_t plane;       // floats per staged plane: (tile_rows + 1) * tiles + 16, rounded up
};

// Per image: conv runs x -> y; weight adds the image's products to acc (16 * C * K floats). Their
// scratch holds kernel_scratch(p, packed) floats; scratch and acc are 64-byte aligned.
// The packed_ pair is the same over the packed layout, except that packed_weight adds to acc
// the image's own sums (kept apart in scratch first); both need a scratch that is zero at a
// task's first image.
struct Kernels {
  void (*conv)(const Problem& p, const float* x, float* y, float* scratch);
  void (*weight)(const Problem& p, const float* x, const float* gy, float* acc, float* scratch);
  void (*packed_conv)(const Problem& p, const float* x, float* y, float* scratch);
  void (*packed_weight)(const Problem& p, const float* x, const float* gy, float* acc,
                        float* scratch);
};
int64_t kernel_scratch(const Problem& p, bool packed);
Kernels avx2_kernels();
Kernels avx512_kernels();

}  // namespace tg::cpu::winograd
