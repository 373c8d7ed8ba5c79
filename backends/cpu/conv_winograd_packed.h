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

// Where padded row r of a channel starts: rows in order, or with 4 tiles a row (8 wide), the
// even rows first, then the odd ones (stage_quads reads 4 rows of one parity at once).
inline int64_t padded_row(const Problem& p, int64_t r) {
  return p.tiles == 4 ? (r % 2) * (p.tile_rows + 1) + r / 2 : r;
}

// Every channel's padded plane, [C][stage_h][2 * tiles + 2], from a scratch whose padding is
// still zero: only the image's own positions are written, so the zeros around them stay.
void pad_packed(const Problem& p, const float* x, float* padded) {
  const int64_t width = 2 * p.tiles + 2;  // >= w + 2 pw: a row fits whole
  for (int64_t c = 0; c < p.c; ++c) {
    const float* src = x + c * p.h * p.w;
    float* plane = padded + c * p.stage_h * width + p.pw;
    for (int64_t iy = 0; iy < p.h; ++iy, src += p.w) {
      float* dst = plane + padded_row(p, iy + p.ph) * width;
      if (p.w == 8) {  // the digits' rows: one fixed-size copy, not a loop's setup
        __builtin_memcpy(dst, src, 8 * sizeof(float));
        continue;
      }
      for (int64_t k = 0; k < p.w; ++k) dst[k] = src[k];
    }
  }
}

// The 16 lanes of 4 rows of 10 (lanes 4 i + k: row i's column 2 k + off, off 0 to 3) from the
// 48 floats at a, b, c; rows 0 and 1 lie in a and b, rows 2 and 3 in b and c.
template <int kOff> Vec quad_columns(Vec a, Vec b, Vec c) {
  const Vec lo = __builtin_shufflevector(a, b, kOff, kOff + 2, kOff + 4, kOff + 6, kOff + 10,
                                         kOff + 12, kOff + 14, kOff + 16, 0, 0, 0, 0, 0, 0, 0, 0);
  const Vec hi = __builtin_shufflevector(b, c, kOff + 4, kOff + 6, kOff + 8, kOff + 10, kOff + 14,
                                         kOff + 16, kOff + 18, kOff + 20, 0, 0, 0, 0, 0, 0, 0, 0);
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
}

// stage_packed for 4 tiles a row: each padded row of parity a is 10 floats after the previous
// one, so 4 of them (one vector of tiles) transform at once.
void stage_quads(const Problem& p, const float* padded, float* h) {
  const int64_t rows = p.tile_rows + 1;  // of each parity
  for (int64_t c = 0; c < p.c; ++c)
    for (int a = 0; a < 2; ++a) {
      const float* plane = padded + (c * p.stage_h + a * rows) * 10;
      float* out = h + (c * 8 + 4 * a) * p.plane;
      for (int64_t r = 0; r < rows; r += 4) {
        const float* at = plane + r * 10;
        const Vec va = load(at), vb = load(at + kLanes), vc = load(at + 2 * kLanes);
        const Vec e0 = quad_columns<0>(va, vb, vc), o0 = quad_columns<1>(va, vb, vc);
        const Vec e1 = quad_columns<2>(va, vb, vc), o1 = quad_columns<3>(va, vb, vc);
        store(out + 4 * r, e0 - e1);
        store(out + p.plane + 4 * r, o0 + e1);
        store(out + 2 * p.plane + 4 * r, e1 - o0);
        store(out + 3 * p.plane + 4 * r, o0 - o1);
      }
    }
}

// The 8 planes of every channel, plane floats apart: H[c][a][q][r][tc]. A padded row's 16 tiles
// from tc0 read its columns 2 tc0 .. 2 tc0 + 33: two pairs of vectors, split into even and odd
// columns. Lanes past the row's tiles spill into the next row's place (written after) or past
// the plane's last row (plane leaves room); they read the next row or the zeros past the padded
// planes, so all stay finite.
void stage_packed(const Problem& p, const float* padded, float* h) {
  if (p.tiles == 4) return stage_quads(p, padded, h);
  const int64_t width = 2 * p.tiles + 2;
  for (int64_t c = 0; c < p.c; ++c) {
    float* hc = h + c * 8 * p.plane;
    for (int64_t r = 0; r < p.stage_h; ++r) {
      const float* row = padded + (c * p.stage_h + r) * width;
      float* out = hc + (r % 2) * 4 * p.plane + (r / 2) * p.tiles;
      for (int64_t tc0 = 0; tc0 < p.tiles; tc0 += kLanes) {
        const float* at = row + 2 * tc0;
        const Vec a = load(at), b = load(at + kLanes), a2 = load(at + 2),
                  b2 = load(at + 2 + kLanes);
        const Vec e0 = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                               26, 28, 30);
        const Vec o0 = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25,
                                               27, 29, 31);
        const Vec e1 = __builtin_shufflevector(a2, b2, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,
                                               24, 26, 28, 30);
        const Vec o1 = __builtin_shufflevector(a2, b2, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23,
                                               25, 27, 29, 31);
        store(out + tc0, e0 - e1);
        store(out + p.plane + tc0, o0 + e1);
        store(out + 2 * p.plane + tc0, e1 - o0);
        store(out + 3 * p.plane + tc0, o0 - o1);
      }
    }
  }
}

// V[q][c] = (B^T d B)[q] for the 16 tiles from t0, every channel.
void input_packed(const Problem& p, const float* h, int64_t t0, Vec* v) {
  for (int64_t c = 0; c < p.c; ++c) {
    const float* hc = h + c * 8 * p.plane + t0;
    for (int q = 0; q < 4; ++q)
      for (int off = 0; off < kLanes; off += kNative) {  // lane-wise: native vectors
        const float* even = hc + q * p.plane + off;
        const float* odd = even + 4 * p.plane;
        const Native r0 = nload(even), r1 = nload(odd), r2 = nload(even + p.tiles),
                     r3 = nload(odd + p.tiles);
        nstore(lanes(v + (0 + q) * p.c + c) + off, r0 - r2);
        nstore(lanes(v + (4 + q) * p.c + c) + off, r1 + r2);
        nstore(lanes(v + (8 + q) * p.c + c) + off, r2 - r1);
        nstore(lanes(v + (12 + q) * p.c + c) + off, r1 - r3);
      }
  }
}

// Row a (0 or 1) of the tiles from t0 into one output plane, from their columns interleaved
// (pairs: 2 tc, 2 tc + 1): one copy per tile row the 16 tiles touch.
void write_rows(const Problem& p, float* plane, int a, const float* pairs, int64_t t0) {
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

// The 2x2 outputs y[2 a + b] of the 16 tiles from t0 into one output plane: row a of the tiles
// as pairs (columns 2 tc, 2 tc + 1 interleaved). When the tiles are 4 or 8 whole tile rows of an
// even-sized output (the digits' 8x8), those pairs are the 64 consecutive floats from output row
// 2 t0 / tiles, in runs of 16 or 8. Plain loops over floats: GCC vectorises them with the ISA's
// own shuffles, where 16-float vector shuffles went through the stack on AVX2.
void write_tiles(const Problem& p, float* plane, const float (*y)[kLanes], int64_t t0) {
  float pairs[2][2 * kLanes];
  for (int a = 0; a < 2; ++a)
    for (int l = 0; l < kLanes; ++l) {
      pairs[a][2 * l] = y[2 * a][l];
      pairs[a][2 * l + 1] = y[2 * a + 1][l];
    }
  const bool whole = p.ow == 2 * p.tiles && 2 * (t0 / p.tiles + kLanes / p.tiles) <= p.oh &&
                     t0 + kLanes <= p.flat_tiles;
  if (whole && (p.tiles == 8 || p.tiles == 4)) {
    // Output rows of 2 * tiles: tile row k's rows 2k and 2k + 1 are pairs[0] and pairs[1]
    // from 2 * tiles * k.
    const int64_t row = 2 * p.tiles;
    float* out = plane + 2 * (t0 / p.tiles) * p.ow;
    for (int64_t k = 0; k < 2 * kLanes / row; ++k, out += 2 * row) {
      __builtin_memcpy(out, pairs[0] + k * row, static_cast<size_t>(row) * sizeof(float));
      __builtin_memcpy(out + row, pairs[1] + k * row, static_cast<size_t>(row) * sizeof(float));
    }
    return;
  }
  write_rows(p, plane, 0, pairs[0], t0);
  write_rows(p, plane, 1, pairs[1], t0);
}

// y = A^T M A + bias for output channels k0 .. k0 + kBlock, the 16 tiles from t0.
template <int kBlock>
void output_packed(const Problem& p, const Vec* m, int64_t k0, int64_t t0, float* y) {
  for (int j = 0; j < kBlock; ++j) {
    const float bias = p.bias ? p.bias[k0 + j] : 0.0f;
    float out[4][kLanes];
    output_transform(lanes(m + j), kBlock * kLanes, bias, out);
    write_tiles(p, y + (k0 + j) * p.oh * p.ow, out, t0);
  }
}

// Scratch: H planes, V [16][C] vectors, M [16][8] vectors, the padded planes and 48 floats past
// them; zero at a task's first image (the padding is never written).
template <int kBlock>
void packed_image(const Problem& p, const float* x, float* y, float* scratch) {
  float* h = scratch;
  Vec* v = reinterpret_cast<Vec*>(h + p.c * 8 * p.plane);
  Vec* m = v + 16 * p.c;
  float* padded = reinterpret_cast<float*>(m + 16 * 8);
  pad_packed(p, x, padded);
  stage_packed(p, padded, h);
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

// The 2x2 values y[2 a + b] of the 16 tiles from t0 of one [OH, OW] plane, zero past it:
// write_tiles' inverse, with the same shortcut for whole rows of 4 or 8 tiles.
void read_tiles(const Problem& p, const float* plane, int64_t t0, float (*y)[kLanes]) {
  const bool whole = p.ow == 2 * p.tiles && 2 * (t0 / p.tiles + kLanes / p.tiles) <= p.oh &&
                     t0 + kLanes <= p.flat_tiles;
  if (whole && (p.tiles == 4 || p.tiles == 8)) {
    const int64_t row = 2 * p.tiles;
    const float* in = plane + 2 * (t0 / p.tiles) * p.ow;
    float pairs[2][2 * kLanes];
    for (int64_t k = 0; k < 2 * kLanes / row; ++k, in += 2 * row) {
      __builtin_memcpy(pairs[0] + k * row, in, static_cast<size_t>(row) * sizeof(float));
      __builtin_memcpy(pairs[1] + k * row, in + row, static_cast<size_t>(row) * sizeof(float));
    }
    for (int a = 0; a < 2; ++a)
      for (int l = 0; l < kLanes; ++l) {
        y[2 * a][l] = pairs[a][2 * l];
        y[2 * a + 1][l] = pairs[a][2 * l + 1];
      }
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    const int64_t t = t0 + l, tr = t / p.tiles, tc = t % p.tiles;
    for (int ab = 0; ab < 4; ++ab) {
      const int64_t oy = 2 * tr + ab / 2, ox = 2 * tc + ab % 2;
      y[ab][l] = t < p.flat_tiles && oy < p.oh && ox < p.ow ? plane[oy * p.ow + ox] : 0.0f;
    }
  }
}

// dy[(q * K + o) * 16 + t]: A dy A^T for the 16 tiles from t0, every channel o.
void grad_packed(const Problem& p, const float* gy, int64_t t0, float* dy) {
  for (int64_t o = 0; o < p.k; ++o) {
    float d[4][kLanes];
    read_tiles(p, gy + o * p.oh * p.ow, t0, d);
    grad_transform(d[0], d[1], d[2], d[3], p.k, o, dy);
  }
}

// x channel-last as stage_channels_last lays it out, from a scratch whose padding is still zero:
// only the image's own positions are written.
void channels_last_packed(const Problem& p, const float* x, float* xs, int64_t cols) {
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t iy = 0; iy < p.h; ++iy) {
      const float* src = x + (c * p.h + iy) * p.w;
      float* dst = xs + ((iy + p.ph) * cols + p.pw) * p.c + c;
      for (int64_t ix = 0; ix < p.w; ++ix) dst[ix * p.c] = src[ix];
    }
}

// Adds one image's sums to acc as weight_image's caller does (the image's own sums first, in
// scratch, then added), C a multiple of 16. Scratch: channel-last x (zero at a task's first
// image: its padding is never written), DY, V, the image's sums.
template <int kBlock>
void packed_weight(const Problem& p, const float* x, const float* gy, float* acc, float* scratch) {
  const int64_t cols = 2 * p.tiles + 2, cvecs = p.c / kLanes;
  float* xs = scratch;
  float* dy = xs + round16(p.stage_h * cols * p.c);
  Vec* vt = reinterpret_cast<Vec*>(dy + 16 * p.k * kLanes);
  Vec* image = vt + 16 * kLanes * cvecs;
  Vec* a = reinterpret_cast<Vec*>(acc);
  channels_last_packed(p, x, xs, cols);
  for (int64_t t0 = 0; t0 < p.flat_tiles; t0 += kLanes) {
    grad_packed(p, gy, t0, dy);
    for (int64_t t = 0; t < kLanes; ++t) {
      if (t0 + t < p.flat_tiles) {
        channel_tile(p, xs, cols, (t0 + t) / p.tiles, (t0 + t) % p.tiles, t, vt);
        continue;
      }
      // No tile: its dy lanes are zero, and so must these be (scratch may hold NaNs).
      for (int q = 0; q < 16; ++q)
        for (int64_t cv = 0; cv < cvecs; ++cv) vt[(q * kLanes + t) * cvecs + cv] = Vec{};
    }
    // The image's sums: from zero at its first group, added to acc at its last.
    const bool first = t0 == 0, last = t0 + kLanes >= p.flat_tiles;
    const Vec* from = first ? nullptr : image;
    Vec* to = last ? a : image;
    int64_t o0 = 0;
    for (; o0 + kBlock <= p.k; o0 += kBlock) weight_products<kBlock>(p, dy, vt, o0, from, to, last);
    for (; o0 < p.k; ++o0) weight_products<1>(p, dy, vt, o0, from, to, last);
  }
}

}  // namespace
}  // namespace tg::cpu::winograd
