#pragma once
// The tile kernel of conv_direct.h for one instruction set. Included only by
// conv_direct_<isa>.cpp, each compiled with its ISA's flags (and -ffp-contract=fast, so that
// acc += w * x is one FMA); everything here has internal linkage, as in conv_winograd_impl.h.
#include <tapegrad/backends/cpu/conv_direct.h>

namespace tg::cpu::direct {
namespace {

// Tiles of up to kRows output channels x NV vectors of W positions: kRows * NV accumulators, NV
// input vectors and one broadcast weight must fit the ISA's registers (AVX2: 12 + 2 + 1 of 16).
template <int W, int NV> struct Tiles {
  typedef float Vec __attribute__((vector_size(W * sizeof(float))));
  static constexpr int kCols = W * NV;  // the narrowest tile's positions
  // Input channels per pass over a block's tiles: a block's weights for them (kSteps channel-taps
  // of kRows floats, 16 KiB) stay in L1 however many channels the conv has.
  static constexpr int64_t kSteps = 4096 / kRows;

  static Vec load(const float* p) {
    Vec v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, Vec v) { __builtin_memcpy(p, &v, sizeof v); }

  // The tile of output rows [o0, o0 + R) and positions [l0, l0 + cols), V vectors wide, over
  // input channels [c0, c1): it starts from the bias (c0 = 0) or from what y holds (a later
  // pass) and stores into y. R is the block's row count: the last block of a conv whose
  // channels are not a multiple of kRows runs only its own rows, on wider tiles (below).
  template <int R, int V> static void tile(const Rows& p, const float* packed, int64_t o0,
                                           int64_t l0, int64_t cols, int64_t c0, int64_t c1) {
    constexpr int kTile = V * W;
    Vec acc[R][V];
    float* y = p.y + o0 * p.y_row + l0;
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      if (c0 > 0) {  // a later pass: the sums so far, exactly as the last pass left them
        float part[kTile] = {};
        const float* from = y + r * p.y_row;
        if (cols < kTile) {
          for (int64_t l = 0; l < cols; ++l) part[l] = from[l];
          from = part;
        }
#pragma GCC unroll 32
        for (int v = 0; v < V; ++v) acc[r][v] = load(from + v * W);
        continue;
      }
      const float init = p.bias ? p.bias[o0 + r] : 0.0f;
#pragma GCC unroll 32
      for (int v = 0; v < V; ++v) acc[r][v] = Vec{} + init;
    }
    const float* wp = packed + c0 * p.taps * kRows;
    for (int64_t c = c0; c < c1; ++c) {
      const float* xr = p.stage + c * p.stride + l0;
      for (int64_t j = 0; j < p.taps; ++j, wp += kRows) {
        const float* xj = xr + j * p.dilation;
        Vec xv[V];
#pragma GCC unroll 32
        for (int v = 0; v < V; ++v) xv[v] = load(xj + v * W);
#pragma GCC unroll 32
        for (int r = 0; r < R; ++r) {
          const Vec b = wp[r] - Vec{};  // a broadcast (0 + w would round -0 to +0 first)
#pragma GCC unroll 32
          for (int v = 0; v < V; ++v) acc[r][v] += b * xv[v];
        }
      }
    }
    for (int r = 0; r < R; ++r, y += p.y_row) {
      if (cols == kTile) {
#pragma GCC unroll 32
        for (int v = 0; v < V; ++v) store(y + v * W, acc[r][v]);
        continue;
      }
      float last[kTile];  // the row's tail: only its first `cols` positions are outputs
#pragma GCC unroll 32
      for (int v = 0; v < V; ++v) store(last + v * W, acc[r][v]);
      for (int64_t l = 0; l < cols; ++l) y[l] = last[l];
    }
  }

  // A block of R rows: tiles kRows / R times as wide as the narrowest where R is small (the
  // same registers; one or two rows on narrow tiles would wait on each FMA's latency), the rest
  // of the row on the narrowest tiles, which stop at the stage's rounded length.
  template <int R>
  static void block(const Rows& p, const float* packed, int64_t o0, int64_t c0, int64_t c1) {
    constexpr int kWide = NV * (kRows / R);
    int64_t l0 = 0;
    if constexpr (kWide > NV)
      for (; l0 + kWide * W <= p.len; l0 += kWide * W)
        tile<R, kWide>(p, packed, o0, l0, kWide * W, c0, c1);
    for (; l0 < p.len; l0 += kCols)
      tile<R, NV>(p, packed, o0, l0, p.len - l0 < kCols ? p.len - l0 : kCols, c0, c1);
  }

  // Passes over channel ranges outside, then blocks of output channels, so that a block's
  // packed weights stay in L1 while its tiles walk the staged rows.
  static void rows(const Rows& p) {
    const int64_t per_pass = kSteps / p.taps > 0 ? kSteps / p.taps : 1;
    for (int64_t c0 = 0; c0 < p.in; c0 += per_pass) {
      const int64_t c1 = p.in - c0 < per_pass ? p.in : c0 + per_pass;
      for (int64_t o0 = 0; o0 < p.out; o0 += kRows) {
        const float* packed = p.packed + o0 * p.in * p.taps;
        switch (p.out - o0 < kRows ? p.out - o0 : kRows) {
          case 1: block<1>(p, packed, o0, c0, c1); break;
          case 2: block<2>(p, packed, o0, c0, c1); break;
          case 3: block<3>(p, packed, o0, c0, c1); break;
          case 4: block<4>(p, packed, o0, c0, c1); break;
          case 5: block<5>(p, packed, o0, c0, c1); break;
          default: block<kRows>(p, packed, o0, c0, c1); break;
        }
      }
    }
  }
};

}  // namespace
}  // namespace tg::cpu::direct
