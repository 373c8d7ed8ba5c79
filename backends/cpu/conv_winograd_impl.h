#pragma once
// The F(2x2, 3x3) kernels of conv_winograd.h for one instruction set. Included only by
// conv_winograd_<isa>.cpp, each compiled with its ISA's flags; everything here has internal
// linkage and uses no std templates, so the linker cannot hand an AVX-512 copy of an inline
// function to a caller on a narrower CPU.
//
// One image at a time: its padded planes are staged with even and odd columns apart (tile b
// reads columns 2b .. 2b + 3, i.e. even[b], odd[b], even[b + 1], odd[b + 1]), so the transforms
// run over 16 tiles of a tile row per vector. A group of 16 tiles goes through the input
// transform V = B^T d B for every channel, 16 small products M[p] = U[p] V[p] (p: the 4x4
// positions), and the output transform A^T M A, one block of output channels at a time, all in L1.
#include <tapegrad/backends/cpu/conv_winograd.h>

namespace tg::cpu::winograd {
namespace {

// 16 lanes: one AVX-512 register or two AVX2 ones (GCC vector extensions, which clang shares).
typedef float Vec __attribute__((vector_size(64)));
constexpr int kLanes = 16;

// The arithmetic runs on vectors of the ISA's own width (Native, kParts to a Vec): on AVX2, GCC
// kept arrays of 16-float vectors (the products' sums, the transforms' rows) in memory and rebuilt
// each through general registers, which made the conv 5-6 times slower. Vec stays the unit of the
// layouts and of the packed layout's shuffles.
#ifdef __AVX512F__
constexpr int kNative = 16;
#else
constexpr int kNative = 8;
#endif
typedef float Native __attribute__((vector_size(kNative * sizeof(float))));
constexpr int kParts = kLanes / kNative;

template <typename V> inline V load_as(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <typename V> inline void store_as(float* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
inline Vec load(const float* p) { return load_as<Vec>(p); }
inline void store(float* p, Vec v) { store_as(p, v); }
inline Native nload(const float* p) { return load_as<Native>(p); }
inline void nstore(float* p, Native v) { store_as(p, v); }
inline float* lanes(Vec* v) { return reinterpret_cast<float*>(v); }
inline const float* lanes(const Vec* v) { return reinterpret_cast<const float*>(v); }
inline int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// The scratch of one image: staged planes, V [16][C] vectors, M [16][kBlock] vectors.
struct Buffers {
  float* stage;
  Vec* v;
  Vec* m;
};
Buffers split(const Problem& p, float* scratch) {
  float* stage = scratch;
  float* v = stage + round16(p.c * p.stage_h * 2 * p.stage_w);
  float* m = v + 16 * p.c * kLanes;
  return {stage, reinterpret_cast<Vec*>(v), reinterpret_cast<Vec*>(m)};
}

// Row y of channel c's padded plane: even columns at stage[0, stage_w), odd ones after them.
void stage_image(const Problem& p, const float* x, float* stage) {
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t y = 0; y < p.stage_h; ++y) {
      float* even = stage + (c * p.stage_h + y) * 2 * p.stage_w;
      float* odd = even + p.stage_w;
      const int64_t iy = y - p.ph;
      if (iy < 0 || iy >= p.h) {
        for (int64_t k = 0; k < 2 * p.stage_w; ++k) even[k] = 0.0f;
        continue;
      }
      const float* src = x + (c * p.h + iy) * p.w;
      // Pairs [lo, hi) lie inside the row: a plain loop the compiler vectorises; the edges test.
      const int64_t lo = (p.pw + 1) / 2, hi = (p.w - 2 + p.pw) / 2 + 1;
      const auto edge = [&](int64_t k) {
        const int64_t col = 2 * k - p.pw;
        even[k] = col >= 0 && col < p.w ? src[col] : 0.0f;
        odd[k] = col + 1 >= 0 && col + 1 < p.w ? src[col + 1] : 0.0f;
      };
      for (int64_t k = 0; k < lo; ++k) edge(k);
      const float* pair = src + 2 * lo - p.pw;
      for (int64_t k = lo; k < hi; ++k) {
        even[k] = pair[2 * (k - lo)];
        odd[k] = pair[2 * (k - lo) + 1];
      }
      for (int64_t k = hi > lo ? hi : lo; k < p.stage_w; ++k) edge(k);
    }
}

// V[q][c] = (B^T d B)[q] for the 16 tiles of tile row tr starting at tile t0, every channel.
// (Lane-wise, so it runs on native vectors, lanes [off, off + kNative) at a time.)
void input_tiles(const Problem& p, const float* stage, int64_t tr, int64_t t0, Vec* v) {
  for (int64_t c = 0; c < p.c; ++c)
    for (int off = 0; off < kLanes; off += kNative) {
      const float* rows = stage + (c * p.stage_h + 2 * tr) * 2 * p.stage_w + t0 + off;
      Native h[4][4];  // d B: row r of the tiles, columns transformed
      for (int r = 0; r < 4; ++r) {
        const float* even = rows + r * 2 * p.stage_w;
        const float* odd = even + p.stage_w;
        const Native e0 = nload(even), e1 = nload(even + 1), o0 = nload(odd), o1 = nload(odd + 1);
        h[r][0] = e0 - e1;
        h[r][1] = o0 + e1;
        h[r][2] = e1 - o0;
        h[r][3] = o0 - o1;
      }
      const auto at = [&](int q) { return lanes(v + q * p.c + c) + off; };
      for (int q = 0; q < 4; ++q) {
        nstore(at(0 + q), h[0][q] - h[2][q]);
        nstore(at(4 + q), h[1][q] + h[2][q]);
        nstore(at(8 + q), h[2][q] - h[1][q]);
        nstore(at(12 + q), h[1][q] - h[3][q]);
      }
    }
}

// M[q][j] = sum_c U[q][c][k0 + j] V[q][c] for the kBlock output channels from k0.
// Each vector of 16 tiles is kParts native vectors, so the sums stay in registers.
template <int kBlock> void products(const Problem& p, const Vec* v, int64_t k0, Vec* m) {
  for (int q = 0; q < 16; ++q) {
    Native acc[kBlock][kParts] = {};
    const float* u = p.u + q * p.c * p.k + k0;
    const float* vq = lanes(v + q * p.c);
    for (int64_t c = 0; c < p.c; ++c) {
      Native vc[kParts];
      for (int h = 0; h < kParts; ++h) vc[h] = nload(vq + c * kLanes + h * kNative);
      for (int j = 0; j < kBlock; ++j) {
        const Native b = u[c * p.k + j] - Native{};  // a broadcast (0 + u would turn -0 into +0)
        for (int h = 0; h < kParts; ++h) acc[j][h] += vc[h] * b;
      }
    }
    float* mq = lanes(m + q * kBlock);
    for (int j = 0; j < kBlock; ++j)
      for (int h = 0; h < kParts; ++h) nstore(mq + j * kLanes + h * kNative, acc[j][h]);
  }
}

// out[2 a + b] = (A^T M A)[a][b] + bias for 16 tiles, M[q] the 16 floats at m + q * step.
inline void output_transform(const float* m, int64_t step, float bias, float (*out)[kLanes]) {
  for (int off = 0; off < kLanes; off += kNative) {
    const auto at = [&](int q) { return nload(m + q * step + off); };
    Native s0[4], s1[4];  // A^T M: the two output rows, columns not yet transformed
    for (int q = 0; q < 4; ++q) {
      s0[q] = at(q) + at(4 + q) + at(8 + q);
      s1[q] = at(4 + q) - at(8 + q) - at(12 + q);
    }
    nstore(out[0] + off, s0[0] + s0[1] + s0[2] + bias);
    nstore(out[1] + off, s0[1] - s0[2] - s0[3] + bias);
    nstore(out[2] + off, s1[0] + s1[1] + s1[2] + bias);
    nstore(out[3] + off, s1[1] - s1[2] - s1[3] + bias);
  }
}

// Output row `row` of 16 tiles from t0: columns 2t (a) and 2t + 1 (b), the last tile's right
// column dropped when OW is odd.
void write_row(const Problem& p, float* row, const float* ea, const float* eb, int64_t t0) {
  const int64_t count = p.tiles - t0 < kLanes ? p.tiles - t0 : kLanes;
  const int64_t pairs = 2 * (t0 + count) > p.ow ? count - 1 : count;
  float* out = row + 2 * t0;
  for (int64_t l = 0; l < pairs; ++l) {
    out[2 * l] = ea[l];
    out[2 * l + 1] = eb[l];
  }
  if (pairs < count) out[2 * pairs] = ea[pairs];
}

// y = A^T M A + bias for output channels k0 .. k0 + kBlock, tile row tr, tiles from t0.
template <int kBlock>
void output_tiles(const Problem& p, const Vec* m, int64_t k0, int64_t tr, int64_t t0, float* y) {
  for (int j = 0; j < kBlock; ++j) {
    const float bias = p.bias ? p.bias[k0 + j] : 0.0f;
    float out[4][kLanes];  // the tiles' 2x2 outputs y00, y01, y10, y11
    output_transform(lanes(m + j), kBlock * kLanes, bias, out);
    float* row = y + ((k0 + j) * p.oh + 2 * tr) * p.ow;
    write_row(p, row, out[0], out[1], t0);
    if (2 * tr + 1 < p.oh) write_row(p, row + p.ow, out[2], out[3], t0);
  }
}

template <int kBlock> void run_image(const Problem& p, const float* x, float* y, float* scratch) {
  const Buffers buf = split(p, scratch);
  stage_image(p, x, buf.stage);
  for (int64_t tr = 0; tr < p.tile_rows; ++tr)
    for (int64_t t0 = 0; t0 < p.tiles; t0 += kLanes) {
      input_tiles(p, buf.stage, tr, t0, buf.v);
      int64_t k0 = 0;
      for (; k0 + kBlock <= p.k; k0 += kBlock) {
        products<kBlock>(p, buf.v, k0, buf.m);
        output_tiles<kBlock>(p, buf.m, k0, tr, t0, y);
      }
      for (; k0 < p.k; ++k0) {
        products<1>(p, buf.v, k0, buf.m);
        output_tiles<1>(p, buf.m, k0, tr, t0, y);
      }
    }
}

// ---- the weight gradient: gw[o][c] = G^T (sum over tiles of DY[q][o] V[q][c]) G -------------
// DY = A dy A^T of each 2x2 output-gradient tile, over 16 tiles per vector as above; V = B^T d B
// with the channels in the lanes instead (the sum runs over tiles, so one side must hold them
// as scalars): x is staged channels-last, C a multiple of 16.

// Channel-last padded image: xs[(y * cols + x) * C + c], zero outside the input.
void stage_channels_last(const Problem& p, const float* x, float* xs, int64_t cols) {
  for (int64_t y = 0; y < p.stage_h; ++y)
    for (int64_t col = 0; col < cols; ++col) {
      float* dst = xs + (y * cols + col) * p.c;
      const int64_t iy = y - p.ph, ix = col - p.pw;
      const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
      for (int64_t c = 0; c < p.c; ++c) dst[c] = inside ? x[(c * p.h + iy) * p.w + ix] : 0.0f;
    }
}

// dy[(q * K + o) * 16 + t] = (A d A^T)[q] for 16 tiles whose 2x2 values d00, d01, d10, d11 are
// the 16 floats at the four pointers.
inline void grad_transform(const float* d00, const float* d01, const float* d10, const float* d11,
                           int64_t k, int64_t o, float* dy) {
  for (int off = 0; off < kLanes; off += kNative) {
    const Native e[2] = {nload(d00 + off), nload(d10 + off)};
    const Native od[2] = {nload(d01 + off), nload(d11 + off)};
    Native h[2][4];  // A applied to the columns of each of the tiles' two rows
    for (int r = 0; r < 2; ++r) {
      h[r][0] = e[r];
      h[r][1] = e[r] + od[r];
      h[r][2] = e[r] - od[r];
      h[r][3] = -od[r];
    }
    const auto at = [&](int q) { return dy + (q * k + o) * kLanes + off; };
    for (int j = 0; j < 4; ++j) {
      nstore(at(0 + j), h[0][j]);
      nstore(at(4 + j), h[0][j] + h[1][j]);
      nstore(at(8 + j), h[0][j] - h[1][j]);
      nstore(at(12 + j), -h[1][j]);
    }
  }
}

// dy[(q * K + o) * 16 + t]: A dy A^T for the 16 tiles from t0 of tile row tr, every channel o.
void grad_tiles(const Problem& g, const float* stage, int64_t tr, int64_t t0, float* dy) {
  for (int64_t o = 0; o < g.c; ++o) {
    const float* rows = stage + (o * g.stage_h + 2 * tr) * 2 * g.stage_w + t0;
    grad_transform(rows, rows + g.stage_w, rows + 2 * g.stage_w, rows + 3 * g.stage_w, g.c, o, dy);
  }
}

// vt[(q * 16 + t) * cvecs + cv]: B^T d B of the tile at tile row tr, tile column tc, channels
// 16 cv .. 16 cv + 15.
void channel_tile(const Problem& p, const float* xs, int64_t cols, int64_t tr, int64_t tc,
                  int64_t t, Vec* vt) {
  const int64_t cvecs = p.c / kLanes;
  for (int64_t cv = 0; cv < cvecs; ++cv)
    for (int off = 0; off < kLanes; off += kNative) {
      Native d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          d[i][j] = nload(xs + ((2 * tr + i) * cols + 2 * tc + j) * p.c + cv * kLanes + off);
      Native h[4][4];  // B^T d
      for (int j = 0; j < 4; ++j) {
        h[0][j] = d[0][j] - d[2][j];
        h[1][j] = d[1][j] + d[2][j];
        h[2][j] = d[2][j] - d[1][j];
        h[3][j] = d[1][j] - d[3][j];
      }
      const int64_t step = kLanes * cvecs;  // vectors from one q to the next
      for (int i = 0; i < 4; ++i) {
        float* out = lanes(vt + ((i * 4) * kLanes + t) * cvecs + cv) + off;
        nstore(out, h[i][0] - h[i][2]);
        nstore(out + step * kLanes, h[i][1] + h[i][2]);
        nstore(out + 2 * step * kLanes, h[i][2] - h[i][1]);
        nstore(out + 3 * step * kLanes, h[i][1] - h[i][3]);
      }
    }
}

// The 16 tiles from t0 of tile row tr.
void channel_tiles(const Problem& p, const float* xs, int64_t cols, int64_t tr, int64_t t0,
                   Vec* vt) {
  for (int64_t t = 0; t < kLanes; ++t) channel_tile(p, xs, cols, tr, t0 + t, t, vt);
}

// to[(q * cvecs + cv) * K + o] = from[same] (nullptr: 0) + the sum over the 16 tiles of
// dy[q][o][t] vt[q][t][cv]; with add, that sum is added to to[] instead of stored.
template <int kBlock> void weight_products(const Problem& p, const float* dy, const Vec* vt,
                                           int64_t o0, const Vec* from, Vec* to, bool add) {
  const int64_t cvecs = p.c / kLanes;
  for (int q = 0; q < 16; ++q)
    for (int64_t cv = 0; cv < cvecs; ++cv) {
      const int64_t at = (q * cvecs + cv) * p.k + o0;
      Native sum[kBlock][kParts];  // native parts, as in products
      for (int j = 0; j < kBlock; ++j)
        for (int h = 0; h < kParts; ++h)
          sum[j][h] = from ? nload(lanes(from + at + j) + h * kNative) : Native{};
      const float* dq = dy + (q * p.k + o0) * kLanes;
      for (int t = 0; t < kLanes; ++t) {
        const float* v = lanes(vt + (q * kLanes + t) * cvecs + cv);
        Native vh[kParts];
        for (int h = 0; h < kParts; ++h) vh[h] = nload(v + h * kNative);
        for (int j = 0; j < kBlock; ++j) {
          const Native b = dq[j * kLanes + t] - Native{};  // a broadcast, as in products
          for (int h = 0; h < kParts; ++h) sum[j][h] += vh[h] * b;
        }
      }
      for (int j = 0; j < kBlock; ++j) {
        float* out = lanes(to + at + j);
        for (int h = 0; h < kParts; ++h) {
          const Native total = add ? nload(out + h * kNative) + sum[j][h] : sum[j][h];
          nstore(out + h * kNative, total);
        }
      }
    }
}

// Adds one image's sums to acc (16 * C * K floats, [q][c / 16][K][16 channels]).
template <int kBlock>
void weight_image(const Problem& p, const float* x, const float* gy, float* acc, float* scratch) {
  Problem g = p;  // gy as planes to stage: K channels of [OH, OW], no padding
  g.c = p.k;
  g.h = p.oh;
  g.w = p.ow;
  g.ph = g.pw = 0;
  const int64_t cols = 2 * p.vectors * kLanes + 2;
  float* stage = scratch;
  float* xs = stage + round16(g.c * g.stage_h * 2 * g.stage_w);
  float* dy = xs + round16(p.stage_h * cols * p.c);
  Vec* vt = reinterpret_cast<Vec*>(dy + 16 * p.k * kLanes);
  Vec* a = reinterpret_cast<Vec*>(acc);
  stage_image(g, gy, stage);
  stage_channels_last(p, x, xs, cols);
  for (int64_t tr = 0; tr < p.tile_rows; ++tr)
    for (int64_t t0 = 0; t0 < p.tiles; t0 += kLanes) {
      grad_tiles(g, stage, tr, t0, dy);
      channel_tiles(p, xs, cols, tr, t0, vt);
      int64_t o0 = 0;
      for (; o0 + kBlock <= p.k; o0 += kBlock) weight_products<kBlock>(p, dy, vt, o0, a, a, false);
      for (; o0 < p.k; ++o0) weight_products<1>(p, dy, vt, o0, a, a, false);
    }
}

}  // namespace
}  // namespace tg::cpu::winograd
