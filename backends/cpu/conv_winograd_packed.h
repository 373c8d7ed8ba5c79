#pragma once
// The packed layout of the F(2x2, 3x3) kernels (conv_winograd.h), for images whose tile rows are
// too short to fill a vector (an 8x8 output has 4 tiles a row, 16 in all): the 16 lanes take
// consecutive tiles of the image's tile grid in row-major order, t = tile_row * tiles + tile_col.
// Included only after conv_winograd_impl.h by the per-ISA files, with the same rules (internal
// linkage, no std templates).
//
// Each padded row is transformed along its columns once (d B: 4 values a tile) into planes
// H[a][q] (a: the row's parity, q: the column of d B), each laid out as [row / 2][tile_col].
// Rows 2 tr + i of 16 consecutive tiles are then the 16 floats from t0 + (i / 2) * tiles of
// plane H[i % 2][q], so B^T (d B) of a channel is 16 contiguous vector loads.
#include <tapegrad/backends/cpu/conv_winograd_impl.h>

namespace tg::cpu::winograd {
namespace {

// The 8 planes of every channel, plane floats apart: H[c][a][q][r][tc], zero past the image.
// row: 2 * tiles + 2 floats of scratch (one padded row).
void stage_packed(const Problem& p, const float* x, float* h, float* row) {
  const int64_t width = 2 * p.tiles + 2, used = (p.tile_rows + 1) * p.tiles;
  for (int64_t c = 0; c < p.c; ++c) {
    float* hc = h + c * 8 * p.plane;
    for (int64_t r = 0; r < p.stage_h; ++r) {
      const int64_t iy = r - p.ph;
      for (int64_t k = 0; k < width; ++k) row[k] = 0.0f;
      if (iy >= 0 && iy < p.h) {  // width >= w + 2 pw: the row fits whole
        const float* src = x + (c * p.h + iy) * p.w;
        for (int64_t k = 0; k < p.w; ++k) row[p.pw + k] = src[k];
      }
      float* out = hc + (r % 2) * 4 * p.plane + (r / 2) * p.tiles;
      for (int64_t tc = 0; tc < p.tiles; ++tc) {
        const float e0 = row[2 * tc], o0 = row[2 * tc + 1];
        const float e1 = row[2 * tc + 2], o1 = row[2 * tc + 3];
        out[tc] = e0 - e1;
        out[p.plane + tc] = o0 + e1;
        out[2 * p.plane + tc] = e1 - o0;
        out[3 * p.plane + tc] = o0 - o1;
      }
    }
    // The last group's lanes past the image read these: finite, and never written out.
    for (int64_t plane = 0; plane < 8; ++plane)
      for (int64_t k = used; k < p.plane; ++k) hc[plane * p.plane + k] = 0.0f;
  }
}

// V[q][c] = (B^T d B)[q] for the 16 tiles from t0, every channel.
void input_packed(const Problem& p, const float* h, int64_t t0, Vec* v) {
  for (int64_t c = 0; c < p.c; ++c) {
    const float* hc = h + c * 8 * p.plane + t0;
    for (int q = 0; q < 4; ++q) {
      const float* even = hc + q * p.plane;
      const float* odd = even + 4 * p.plane;
      const Vec r0 = load(even), r1 = load(odd), r2 = load(even + p.tiles),
                r3 = load(odd + p.tiles);
      v[(0 + q) * p.c + c] = r0 - r2;
      v[(4 + q) * p.c + c] = r1 + r2;
      v[(8 + q) * p.c + c] = r2 - r1;
      v[(12 + q) * p.c + c] = r1 - r3;
    }
  }
}

// Row a (0 or 1) of the tiles from t0 into one output plane: columns 2 tc (even) and 2 tc + 1
// (odd) interleaved, then one copy per tile row the 16 tiles touch.
void write_packed(const Problem& p, float* plane, int a, Vec even, Vec odd, int64_t t0) {
  float pairs[2 * kLanes];
  store(pairs,
        __builtin_shufflevector(even, odd, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
  store(pairs + kLanes, __builtin_shufflevector(even, odd, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
                                                29, 14, 30, 15, 31));
  const int64_t end = t0 + kLanes < p.flat_tiles ? t0 + kLanes : p.flat_tiles;
  for (int64_t t = t0; t < end;) {
    const int64_t tr = t / p.tiles, tc = t % p.tiles;
    const int64_t run = end - t < p.tiles - tc ? end - t : p.tiles - tc;
    const int64_t oy = 2 * tr + a;
    if (oy < p.oh) {
      const int64_t cols = 2 * run < p.ow - 2 * tc ? 2 * run : p.ow - 2 * tc;
      float* dst = plane + oy * p.ow + 2 * tc;
      const float* src = pairs + 2 * (t - t0);
      for (int64_t k = 0; k < cols; ++k) dst[k] = src[k];
    }
    t += run;
  }
}

// y = A^T M A + bias for output channels k0 .. k0 + kBlock, the 16 tiles from t0.
template <int kBlock>
void output_packed(const Problem& p, const Vec* m, int64_t k0, int64_t t0, float* y) {
  for (int j = 0; j < kBlock; ++j) {
    const auto at = [&](int q) { return m[q * kBlock + j]; };
    Vec s0[4], s1[4];  // A^T M: the two output rows, columns not yet transformed
    for (int q = 0; q < 4; ++q) {
      s0[q] = at(q) + at(4 + q) + at(8 + q);
      s1[q] = at(4 + q) - at(8 + q) - at(12 + q);
    }
    const float bias = p.bias ? p.bias[k0 + j] : 0.0f;
    float* plane = y + (k0 + j) * p.oh * p.ow;
    write_packed(p, plane, 0, s0[0] + s0[1] + s0[2] + bias, s0[1] - s0[2] - s0[3] + bias, t0);
    write_packed(p, plane, 1, s1[0] + s1[1] + s1[2] + bias, s1[1] - s1[2] - s1[3] + bias, t0);
  }
}

// Scratch: H planes, V [16][C] vectors, M [16][8] vectors, one padded row.
template <int kBlock>
void packed_image(const Problem& p, const float* x, float* y, float* scratch) {
  float* h = scratch;
  Vec* v = reinterpret_cast<Vec*>(h + p.c * 8 * p.plane);
  Vec* m = v + 16 * p.c;
  float* row = reinterpret_cast<float*>(m + 16 * 8);
  stage_packed(p, x, h, row);
  for (int64_t t0 = 0; t0 < p.flat_tiles; t0 += kLanes) {
    input_packed(p, h, t0, v);
    int64_t k0 = 0;
    for (; k0 + kBlock <= p.k; k0 += kBlock) {
      products<kBlock>(p, v, k0, m);
      output_packed<kBlock>(p, m, k0, t0, y);
    }
    for (; k0 < p.k; ++k0) {
      products<1>(p, v, k0, m);
      output_packed<1>(p, m, k0, t0, y);
    }
  }
}

// ---- the weight gradient over the packed layout (see weight_image) ---------------------------

// gy's 2x2 tiles: planes G[o][a][b][t] = gy[o][2 tr + a][2 tc + b], 16 * groups floats each,
// zero past the output.
void stage_grad_packed(const Problem& p, const float* gy, float* gs) {
  const int64_t len = kLanes * p.groups;
  for (int64_t o = 0; o < p.k; ++o) {
    float* go = gs + o * 4 * len;
    for (int64_t k = 0; k < 4 * len; ++k) go[k] = 0.0f;
    for (int64_t oy = 0; oy < p.oh; ++oy) {
      const float* src = gy + (o * p.oh + oy) * p.ow;
      float* even = go + 2 * (oy % 2) * len + (oy / 2) * p.tiles;
      float* odd = even + len;
      for (int64_t tc = 0; 2 * tc < p.ow; ++tc) even[tc] = src[2 * tc];
      for (int64_t tc = 0; 2 * tc + 1 < p.ow; ++tc) odd[tc] = src[2 * tc + 1];
    }
  }
}

// dy[(q * K + o) * 16 + t]: A dy A^T for the 16 tiles from t0, every channel o.
void grad_packed(const Problem& p, const float* gs, int64_t t0, float* dy) {
  const int64_t len = kLanes * p.groups;
  for (int64_t o = 0; o < p.k; ++o) {
    const float* go = gs + o * 4 * len + t0;
    Vec h[2][4];  // A applied to the columns of each of the tiles' two rows
    for (int r = 0; r < 2; ++r) {
      const Vec e = load(go + 2 * r * len), od = load(go + (2 * r + 1) * len);
      h[r][0] = e;
      h[r][1] = e + od;
      h[r][2] = e - od;
      h[r][3] = -od;
    }
    for (int j = 0; j < 4; ++j) {
      store(dy + ((0 + j) * p.k + o) * kLanes, h[0][j]);
      store(dy + ((4 + j) * p.k + o) * kLanes, h[0][j] + h[1][j]);
      store(dy + ((8 + j) * p.k + o) * kLanes, h[0][j] - h[1][j]);
      store(dy + ((12 + j) * p.k + o) * kLanes, -h[1][j]);
    }
  }
}

// Adds one image's sums to acc as weight_image does, C a multiple of 16.
template <int kBlock>
void packed_weight(const Problem& p, const float* x, const float* gy, float* acc, float* scratch) {
  const int64_t cols = 2 * p.tiles + 2, cvecs = p.c / kLanes;
  float* gs = scratch;
  float* xs = gs + round16(p.k * 4 * kLanes * p.groups);
  float* dy = xs + round16(p.stage_h * cols * p.c);
  Vec* vt = reinterpret_cast<Vec*>(dy + 16 * p.k * kLanes);
  Vec* a = reinterpret_cast<Vec*>(acc);
  stage_grad_packed(p, gy, gs);
  stage_channels_last(p, x, xs, cols);
  for (int64_t t0 = 0; t0 < p.flat_tiles; t0 += kLanes) {
    grad_packed(p, gs, t0, dy);
    for (int64_t t = 0; t < kLanes; ++t) {
      if (t0 + t < p.flat_tiles) {
        channel_tile(p, xs, cols, (t0 + t) / p.tiles, (t0 + t) % p.tiles, t, vt);
        continue;
      }
      // No tile: its dy lanes are zero, and so must these be (scratch may hold NaNs).
      for (int q = 0; q < 16; ++q)
        for (int64_t cv = 0; cv < cvecs; ++cv) vt[(q * kLanes + t) * cvecs + cv] = Vec{};
    }
    int64_t o0 = 0;
    for (; o0 + kBlock <= p.k; o0 += kBlock) weight_products<kBlock>(p, dy, vt, o0, a);
    for (; o0 < p.k; ++o0) weight_products<1>(p, dy, vt, o0, a);
  }
}

}  // namespace
}  // namespace tg::cpu::winograd
