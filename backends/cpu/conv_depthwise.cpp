// The depthwise convs of conv_depthwise.h: one task per channel plane (forward, input gradient)
// or per channel (weight gradient), each in the AVX2 build where the CPU has it.
#include <tapegrad/backends/cpu/conv_depthwise.h>
#include <tapegrad/backends/cpu/conv_depthwise_stage.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <tapegrad/core/parallel.h>
#include <tapegrad/core/widest.h>

namespace tg::cpu::depthwise {

namespace {

// The outputs [lo, hi) whose input o * stride + off lies inside [0, size).
void inside(int64_t size, int64_t out, int64_t stride, int64_t off, int64_t& lo, int64_t& hi) {
  lo = std::clamp<int64_t>((stride - 1 - off) / stride, 0, out);
  hi = off >= size ? lo : std::clamp<int64_t>((size - 1 - off) / stride + 1, lo, out);
}

}  // namespace

// Each tap column's [lo, hi) of inside(), computed once per task (not per row: two divisions).
// Outside the anonymous namespace: the kernels' lambdas capture it, and in a unity build GCC
// warns of a type with internal linkage inside those of the function templates.
struct TapColumns {
  std::vector<int64_t> lo, hi;
  explicit TapColumns(const ConvGeometry& g)
      : lo(static_cast<size_t>(g.kw)), hi(static_cast<size_t>(g.kw)) {
    for (int64_t j = 0; j < g.kw; ++j)
      inside(g.w, g.ow, g.sw, j * g.dw - g.pw, lo[static_cast<size_t>(j)],
             hi[static_cast<size_t>(j)]);
  }
};

namespace {

// y[k * ys] += a * x[k * xs] for k < n; one vector at a time where both strides are 1 (the same
// roundings as the scalar loop: a multiply, then an add).
template <typename T>
[[gnu::always_inline]] inline void madd(T a, const T* x, int64_t xs, T* y, int64_t ys, int64_t n) {
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 32 / sizeof(T);
  int64_t k = 0;
  if (xs == 1 && ys == 1)
    for (; k + kLanes <= n; k += kLanes) {
      Vec xv, yv;
      __builtin_memcpy(&xv, x + k, sizeof xv);
      __builtin_memcpy(&yv, y + k, sizeof yv);
      yv += a * xv;
      __builtin_memcpy(y + k, &yv, sizeof yv);
    }
  for (; k < n; ++k) y[k * ys] += a * x[k * xs];
}

// acc (one vector's lanes, tail: the same lanes for a row's last partial vector) += a[k] b[k * bs]
// for k < n, k's lane being k mod the vector's width.
template <typename T, typename Vec>
[[gnu::always_inline]] inline void add_products(const T* a, const T* b, int64_t bs, int64_t n,
                                                Vec& acc, T* tail) {
  constexpr int kLanes = sizeof(Vec) / sizeof(T);
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Vec av, bv;
    __builtin_memcpy(&av, a + k, sizeof av);
    if (bs == 1) {
      __builtin_memcpy(&bv, b + k, sizeof bv);
    } else {
      for (int i = 0; i < kLanes; ++i) bv[i] = b[(k + i) * bs];
    }
    acc += av * bv;
  }
  for (int i = 0; k < n; ++k, ++i) tail[i] += a[k] * b[k * bs];
}

// fn(tap, in_at, lo, count) for each tap of output row oh that reads inside the input, in (i, j)
// order: tap = i * kw + j (the weight's index in its filter), count outputs from column lo read
// the input plane's elements in_at, in_at + sw, ...
template <typename Fn> [[gnu::always_inline]] inline void row_taps(const ConvGeometry& g,
                                                                   const TapColumns& cols,
                                                                   int64_t oh, const Fn& fn) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t lo = cols.lo[static_cast<size_t>(j)], hi = cols.hi[static_cast<size_t>(j)];
      if (lo < hi) fn(i * g.kw + j, ih * g.w + lo * g.sw + j * g.dw - g.pw, lo, hi - lo);
    }
  }
}

// Planes per task so that a task does at least ~2^15 multiply-adds.
int64_t grain(const ConvGeometry& g) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(g.oh * g.ow * g.kh * g.kw, 1));
}

// ---- Planes as dense stencils ---------------------------------------------------------------
// With strides of 1 or 2 every output of a plane is init + the sum over all taps of w times a
// staged plane's value (conv_depthwise_stage.h), the taps in a fixed order, each output a vector
// lane: no bounds checks, no per-tap axpy over short rows (rows of 28: 3 vectors and 4 single
// values per tap, the row reloaded and stored each time). The taps that the axpy walk skips
// (outside the input) read staged zeros, whose products (+-0) leave the sums unchanged
// (stencil_plane says when). So the results are the axpy walk's bit for bit, given finite weights
// (inf or NaN times a zero is NaN: such channels keep the walk) and, in the forward, a bias that is
// not NaN (a signalling one would come out quieted where no tap reads inside).

// One tap of a stencil: out[r][c] += w * plane[(r * row_step + row) * width + c + col].
template <typename T> struct StencilTap {
  T w;
  const T* plane;
  int64_t row, col;
  int64_t phase;  // with a column stride s: which of the s column phases (stage_phases)
};
constexpr int kMaxStencilTaps = 64;

// out[r][c] (rows x cols, row stride cols) = init + the taps' products in order (output row r
// reads the taps' planes from row r * row_step), kVecs vectors of a row side by side (their
// chains of dependent adds overlap), the row's last vectors overlapping the ones before (the same
// value computed twice) instead of a scalar tail. cols >= lanes.
template <int kVecs, typename T>
[[gnu::always_inline]] inline void run_stencil_vecs(const StencilTap<T>* taps, int count, T init,
                                                    int64_t width, int64_t row_step, int64_t rows,
                                                    int64_t cols, T* out) {
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 32 / sizeof(T);
  const Vec start = init - Vec{};  // a broadcast (0 + init would turn -0 into +0)
  // Named sums, not an array (GCC 12 warns of the array as maybe uninitialised).
  const auto add = [](Vec & sum, const Vec& wv, const T* at) __attribute__((always_inline)) {
    Vec x;
    __builtin_memcpy(&x, at, sizeof x);
    sum += wv * x;  // a multiply, then an add: no FMA, as the walk
  };
  const T* first_row[kMaxStencilTaps];  // each tap's row for output row 0
  for (int t = 0; t < count; ++t) first_row[t] = taps[t].plane + taps[t].row * width + taps[t].col;
  const int64_t row_stride = row_step * width;
  for (int64_t r = 0; r < rows; ++r, out += cols)
    for (int64_t c = 0; c < cols; c += kVecs * kLanes) {
      int64_t at[4];
      for (int k = 0; k < 4; ++k)
        at[k] = std::min(c + std::min(k, kVecs - 1) * kLanes, cols - kLanes);
      Vec a0 = start, a1 = start, a2 = start, a3 = start;
      for (int t = 0; t < count; ++t) {
        const Vec wv = taps[t].w - Vec{};
        const T* row = first_row[t] + r * row_stride;
        add(a0, wv, row + at[0]);
        add(a1, wv, row + at[1]);
        if constexpr (kVecs > 2) add(a2, wv, row + at[2]);
        if constexpr (kVecs > 3) add(a3, wv, row + at[3]);
      }
      __builtin_memcpy(out + at[0], &a0, sizeof a0);
      __builtin_memcpy(out + at[1], &a1, sizeof a1);
      if constexpr (kVecs > 2) __builtin_memcpy(out + at[2], &a2, sizeof a2);
      if constexpr (kVecs > 3) __builtin_memcpy(out + at[3], &a3, sizeof a3);
    }
}

// run_stencil_vecs with as many vectors side by side as a row needs, up to 4 (rows of 14 floats
// as 4 vectors computed two of them twice).
template <typename T>
[[gnu::always_inline]] inline void run_stencil(const StencilTap<T>* taps, int count, T init,
                                               int64_t width, int64_t row_step, int64_t rows,
                                               int64_t cols, T* out) {
  constexpr int64_t kLanes = 32 / sizeof(T);
  if (cols <= 2 * kLanes)
    run_stencil_vecs<2>(taps, count, init, width, row_step, rows, cols, out);
  else if (cols <= 3 * kLanes)
    run_stencil_vecs<3>(taps, count, init, width, row_step, rows, cols, out);
  else
    run_stencil_vecs<4>(taps, count, init, width, row_step, rows, cols, out);
}

// out (rows x cols) = init + taps[0, count) in order over the region of src (an [h, w] plane)
// from row r0, column c0, output (r, c) reading row r * sh + tap.row, column (c * sw + the
// tap's phase + tap.col * sw) of it, reach_rows and reach_cols the largest row and column offsets
// (taps' planes are set here). A sum that starts other than -0 never becomes -0 (x + y is -0 only
// for x = y = -0), and adding either zero to it changes nothing: one copy of the region, padded
// with +0, serves every tap. From -0 (a -0 bias) the region is staged twice, padded with -0 and
// with +0, and each tap reads the copy whose padding times its weight is -0.
template <typename T>
[[gnu::always_inline]] inline void stencil_plane(const T* src, int64_t h, int64_t w, int64_t r0,
                                                 int64_t c0, int64_t reach_rows, int64_t reach_cols,
                                                 int64_t sh, int64_t sw, StencilTap<T>* taps,
                                                 int count, T init, int64_t rows, int64_t cols,
                                                 std::vector<T>& stage, T* out) {
  const int64_t region_rows = (rows - 1) * sh + reach_rows + 1, width = cols + reach_cols / sw;
  const int64_t copy = sw * region_rows * width;  // one staged copy: sw phases
  const bool from_minus_zero = init == T(0) && std::signbit(init);
  const size_t need = static_cast<size_t>((from_minus_zero ? 2 : 1) * copy);
  if (stage.size() < need) stage.resize(need);
  T* plus = stage.data();
  stage_phases(src, h, w, r0, region_rows, c0, width, sw, T(0), plus);
  for (int t = 0; t < count; ++t) taps[t].plane = plus + taps[t].phase * region_rows * width;
  if (from_minus_zero) {
    T* minus = plus + copy;
    stage_phases(src, h, w, r0, region_rows, c0, width, sw, T(-0.0), minus);
    for (int t = 0; t < count; ++t)
      if (!std::signbit(taps[t].w)) taps[t].plane = minus + taps[t].phase * region_rows * width;
  }
  run_stencil(taps, count, init, width, sh, rows, cols, out);
}

// Whether the stencils take this conv (else the axpy walk; with a stride, the input gradient
// also needs strided_grad_fits): strides of at most 2 (a CNN's downsampling; a
// larger one would stage columns no tap reads), rows of at least a vector, and at least 3/4 of
// the taps' reads inside the input. A stencil computes every tap at every
// output, the walk only those that read inside: on a 3x3 over images of one row (a third inside)
// the stencils took 1.63x the walk's time, of two rows (2/3) 0.98x, of three (7/9) 0.81x, of 8x8
// and 28x28 (0.84, 0.95) 0.46x, forward and both gradients; a causal conv1d on rows of 1024 1.00x.
constexpr int64_t kMaxStencilStride = 2;

template <typename T> bool stencil_fits(const ConvGeometry& g) {
  constexpr int64_t kLanes = 32 / sizeof(T);
  if (g.sh > kMaxStencilStride || g.sw > kMaxStencilStride || g.kh * g.kw > kMaxStencilTaps ||
      g.ow < kLanes || g.w < kLanes)
    return false;
  // The taps' reads inside: (rows inside summed over i) x (columns inside summed over j).
  double rows = 0, cols = 0;
  for (int64_t i = 0; i < g.kh; ++i) {
    int64_t lo, hi;
    inside(g.h, g.oh, g.sh, i * g.dh - g.ph, lo, hi);
    rows += static_cast<double>(hi - lo);
  }
  for (int64_t j = 0; j < g.kw; ++j) {
    int64_t lo, hi;
    inside(g.w, g.ow, g.sw, j * g.dw - g.pw, lo, hi);
    cols += static_cast<double>(hi - lo);
  }
  return 4 * rows * cols >= 3 * static_cast<double>(g.kh * g.oh) * static_cast<double>(g.kw * g.ow);
}

// ---- The input gradient with a stride ------------------------------------------------------
// gx[ih][iw] sums w[i][j] gy[oh][ow] over the taps with oh sh + i dh = ih + ph and ow sw + j dw =
// iw + pw. Split gx into classes by (ih + ph) mod sh = a and (iw + pw) mod sw = b: a class's
// elements (ih + ph = a + m sh, iw + pw = b + n sw) take only the taps with i dh = a mod sh and
// j dw = b mod sw, reading gy[m - (i dh - a) / sh][n - (j dw - b) / sw]: a stride-1 stencil over
// gy per class, its sums then written to their places in gx. The taps in the walk's order (i
// from the last, j in order), so the bits are the walk's.

// The class's m (or n) range [lo, lo + count): those with a + m s - pad inside [0, size).
void class_range(int64_t size, int64_t pad, int64_t s, int64_t a, int64_t& lo, int64_t& count) {
  lo = -floor_div(a - pad, s);  // the smallest m with a + m s >= pad
  count = std::max<int64_t>(floor_div(pad + size - 1 - a, s) + 1 - lo, 0);
}

// Whether every class has rows of at least a vector (the stencil's need).
template <typename T> bool strided_grad_fits(const ConvGeometry& g) {
  constexpr int64_t kLanes = 32 / sizeof(T);
  for (int64_t b = 0; b < g.sw; ++b) {
    int64_t lo, count;
    class_range(g.w, g.pw, g.sw, b, lo, count);
    if (count < kLanes) return false;
  }
  return true;
}

template <typename T>
[[gnu::always_inline]] inline void strided_input_grad(const ConvGeometry& g, const T* gyp,
                                                      const T* wc, std::vector<T>& stage,
                                                      std::vector<T>& sums, T* gxp) {
  // The classes' ranges (strides of at most 2) and where each class's sums go in `sums`.
  int64_t m_lo[2], rows[2], n_lo[2], cols[2], at[2][2];
  for (int64_t a = 0; a < g.sh; ++a) class_range(g.h, g.ph, g.sh, a, m_lo[a], rows[a]);
  for (int64_t b = 0; b < g.sw; ++b) class_range(g.w, g.pw, g.sw, b, n_lo[b], cols[b]);
  int64_t total = 0;
  for (int64_t a = 0; a < g.sh; ++a)
    for (int64_t b = 0; b < g.sw; ++b) {
      at[a][b] = total;
      total += rows[a] * cols[b];
    }
  if (sums.size() < static_cast<size_t>(total)) sums.resize(static_cast<size_t>(total));
  for (int64_t a = 0; a < g.sh; ++a)
    for (int64_t b = 0; b < g.sw; ++b) {
      if (rows[a] == 0 || cols[b] == 0) continue;
      StencilTap<T> taps[kMaxStencilTaps];
      int count = 0;
      int64_t reach_rows = 0, reach_cols = 0;  // the largest (i dh - a) / sh, (j dw - b) / sw
      for (int64_t i = g.kh - 1; i >= 0; --i)
        for (int64_t j = 0; j < g.kw; ++j)
          if ((i * g.dh) % g.sh == a && (j * g.dw) % g.sw == b) {
            const int64_t k = (i * g.dh - a) / g.sh, l = (j * g.dw - b) / g.sw;
            taps[count++] = {wc[i * g.kw + j], nullptr, k, l, 0};
            reach_rows = std::max(reach_rows, k);
            reach_cols = std::max(reach_cols, l);
          }
      for (int t = 0; t < count; ++t) {  // offsets from the region's start
        taps[t].row = reach_rows - taps[t].row;
        taps[t].col = reach_cols - taps[t].col;
      }
      stencil_plane(gyp, g.oh, g.ow, m_lo[a] - reach_rows, n_lo[b] - reach_cols, reach_rows,
                    reach_cols, 1, 1, taps, count, T(0), rows[a], cols[b], stage,
                    sums.data() + at[a][b]);
    }
  // gx row by row. With a column stride of 2 the row interleaves two classes' rows: the one of
  // its even columns (b = pw mod 2) from their first element, the other's likewise, a vector pair
  // at a time (one value at a time, a third of the time went to writing gx).
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 32 / sizeof(T);
  for (int64_t ih = 0; ih < g.h; ++ih) {
    const int64_t a = (ih + g.ph) % g.sh, m = (ih + g.ph - a) / g.sh - m_lo[a];
    T* to = gxp + ih * g.w;
    if (g.sw == 1) {
      const T* from = sums.data() + at[a][0] + m * cols[0];
      for (int64_t n = 0; n < g.w; ++n) to[n] = from[n];
      continue;
    }
    const int64_t even = g.pw % 2;
    const T* e = sums.data() + at[a][even] + m * cols[even];
    const T* o = sums.data() + at[a][1 - even] + m * cols[1 - even];
    int64_t k = 0;
    for (; 2 * (k + kLanes) <= g.w; k += kLanes) {
      Vec ev, ov, lo, hi;
      __builtin_memcpy(&ev, e + k, sizeof ev);
      __builtin_memcpy(&ov, o + k, sizeof ov);
      join_even_odd<T>(ev, ov, lo, hi);
      __builtin_memcpy(to + 2 * k, &lo, sizeof lo);
      __builtin_memcpy(to + 2 * k + kLanes, &hi, sizeof hi);
    }
    for (; 2 * k < g.w; ++k) {
      to[2 * k] = e[k];
      if (2 * k + 1 < g.w) to[2 * k + 1] = o[k];
    }
  }
}

// The weight gradient's stencil: for each image, every tap's products gy[oh][ow] x[oh sh + i dh
// - ph][ow sw + j dw - pw] over the whole output grid (x staged by column phase), lane = ow mod the
// vector's width, in one vector per tap (rows padded to whole vectors with zeros, x's region staged
// with zeros outside the input). Padding adds only +-0 products to sums that start at +0, which
// changes nothing, when gy and x are finite (else that image keeps the walk: inf * 0 is NaN). Then
// the lanes, in order, into the tap's double total.
constexpr int kMaxWeightStencilTaps = 9;

template <int kTaps, typename T>
[[gnu::always_inline]] inline void weight_stencil(const ConvGeometry& g, const T* gys, const T* xs,
                                                  int64_t vecs, int64_t x_rows, int64_t x_width,
                                                  double* total) {
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int64_t kLanes = 32 / sizeof(T);
  int64_t at[kTaps];                            // each tap's offset in the staged x region
  const int64_t phase_size = x_rows * x_width;  // x staged by column phase (stage_phases)
  for (int t = 0; t < kTaps; ++t)
    at[t] = (t % g.kw) * g.dw % g.sw * phase_size + (t / g.kw) * g.dh * x_width +
            (t % g.kw) * g.dw / g.sw;
  Vec acc[kTaps] = {};
  for (int64_t r = 0; r < g.oh; ++r)
    for (int64_t v = 0; v < vecs; ++v) {
      Vec gv;
      __builtin_memcpy(&gv, gys + (r * vecs + v) * kLanes, sizeof gv);
      const T* xr = xs + r * g.sh * x_width + v * kLanes;
      for (int t = 0; t < kTaps; ++t) {
        Vec xv;
        __builtin_memcpy(&xv, xr + at[t], sizeof xv);
        acc[t] += gv * xv;  // a multiply, then an add, as the walk's
      }
    }
  for (int t = 0; t < kTaps; ++t) {
    T lanes[kLanes];
    __builtin_memcpy(lanes, &acc[t], sizeof lanes);
    for (int64_t l = 0; l < kLanes; ++l) total[t] += static_cast<double>(lanes[l]);
  }
}

template <typename T>
[[gnu::always_inline]] inline void weight_stencil_any(int taps, const ConvGeometry& g, const T* gys,
                                                      const T* xs, int64_t vecs, int64_t x_rows,
                                                      int64_t x_width, double* total) {
  switch (taps) {
    case 1: return weight_stencil<1>(g, gys, xs, vecs, x_rows, x_width, total);
    case 2: return weight_stencil<2>(g, gys, xs, vecs, x_rows, x_width, total);
    case 3: return weight_stencil<3>(g, gys, xs, vecs, x_rows, x_width, total);
    case 4: return weight_stencil<4>(g, gys, xs, vecs, x_rows, x_width, total);
    case 5: return weight_stencil<5>(g, gys, xs, vecs, x_rows, x_width, total);
    case 6: return weight_stencil<6>(g, gys, xs, vecs, x_rows, x_width, total);
    case 7: return weight_stencil<7>(g, gys, xs, vecs, x_rows, x_width, total);
    case 8: return weight_stencil<8>(g, gys, xs, vecs, x_rows, x_width, total);
    default: return weight_stencil<9>(g, gys, xs, vecs, x_rows, x_width, total);
  }
}

}  // namespace

bool fits(const ConvGeometry& g) {
  return g.groups == g.c && g.oc == g.c && g.n > 0 && g.c > 0 && g.oh > 0 && g.ow > 0;
}

template <typename T>
void forward(const T* x, const T* w, const T* bias, const ConvGeometry& g, T* y) {
  const bool stencil = stencil_fits<T>(g);
  parallel_for(0, g.n * g.c, grain(g), [&](int64_t lo_plane, int64_t hi_plane) {
    const TapColumns cols(g);
    std::vector<T> stage;  // the stencils' staged planes, sized by stencil_plane
    run_widest([&]() __attribute__((always_inline)) {
      for (int64_t p = lo_plane; p < hi_plane; ++p) {
        const int64_t c = p % g.c;
        const T* xp = x + p * g.h * g.w;
        const T* wc = w + c * g.kh * g.kw;
        const T b = bias ? bias[c] : T(0);
        if (stencil && b == b && all_finite(wc, g.kh * g.kw)) {
          // x's rows from -ph and columns from -pw; tap (i, j) at offset (i dh, j dw): column
          // phase j dw mod sw, column j dw / sw of it.
          StencilTap<T> taps[kMaxStencilTaps];
          for (int64_t i = 0; i < g.kh; ++i)
            for (int64_t j = 0; j < g.kw; ++j)
              taps[i * g.kw + j] = {wc[i * g.kw + j], nullptr, i * g.dh, j * g.dw / g.sw,
                                    j * g.dw % g.sw};
          stencil_plane(xp, g.h, g.w, -g.ph, -g.pw, (g.kh - 1) * g.dh, (g.kw - 1) * g.dw, g.sh,
                        g.sw, taps, static_cast<int>(g.kh * g.kw), b, g.oh, g.ow, stage,
                        y + p * g.oh * g.ow);
          continue;
        }
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          T* yr = y + (p * g.oh + oh) * g.ow;
          std::fill(yr, yr + g.ow, bias ? bias[c] : T(0));
          row_taps(
              g, cols, oh,
              [&](int64_t tap, int64_t in_at, int64_t lo, int64_t count) __attribute__((
                  always_inline)) { madd(wc[tap], xp + in_at, g.sw, yr + lo, 1, count); });
        }
      }
    });
  });
}

// gx[ih][ow * sw + off] += w[i][j] gy[oh][ow] over the taps in (oh, i, j) order: the adjoint
// of forward, each plane's sums in one task.
template <typename T> void backward_input(const T* gy, const T* w, const ConvGeometry& g, T* gx) {
  const bool strided = g.sh > 1 || g.sw > 1;
  const bool stencil = stencil_fits<T>(g) && (!strided || strided_grad_fits<T>(g));
  parallel_for(0, g.n * g.c, grain(g), [&](int64_t lo_plane, int64_t hi_plane) {
    const TapColumns cols(g);
    std::vector<T> stage, sums;  // staged planes (sized by stencil_plane), the classes' sums
    run_widest([&]() __attribute__((always_inline)) {
      for (int64_t p = lo_plane; p < hi_plane; ++p) {
        const int64_t c = p % g.c;
        T* gxp = gx + p * g.h * g.w;
        const T* wc = w + c * g.kh * g.kw;
        if (stencil && strided && all_finite(wc, g.kh * g.kw)) {
          strided_input_grad(g, gy + p * g.oh * g.ow, wc, stage, sums, gxp);
          continue;
        }
        if (stencil && !strided && all_finite(wc, g.kh * g.kw)) {
          // gx[ih][iw] sums w[i][j] gy[ih + ph - i dh][iw + pw - j dw] with i from the last (the
          // walk adds output rows in order), j in order: gy's rows from ph - (kh - 1) dh and
          // columns from pw - (kw - 1) dw, tap (i, j) at offset ((kh - 1 - i) dh, (kw - 1 - j) dw).
          StencilTap<T> taps[kMaxStencilTaps];
          int count = 0;
          for (int64_t i = g.kh - 1; i >= 0; --i)
            for (int64_t j = 0; j < g.kw; ++j)
              taps[count++] = {wc[i * g.kw + j], nullptr, (g.kh - 1 - i) * g.dh,
                               (g.kw - 1 - j) * g.dw, 0};
          const int64_t reach_rows = (g.kh - 1) * g.dh, reach_cols = (g.kw - 1) * g.dw;
          stencil_plane(gy + p * g.oh * g.ow, g.oh, g.ow, g.ph - reach_rows, g.pw - reach_cols,
                        reach_rows, reach_cols, 1, 1, taps, count, T(0), g.h, g.w, stage, gxp);
          continue;
        }
        std::fill(gxp, gxp + g.h * g.w, T(0));
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const T* gyr = gy + (p * g.oh + oh) * g.ow;
          row_taps(
              g, cols, oh,
              [&](int64_t tap, int64_t in_at, int64_t lo, int64_t count) __attribute__((
                  always_inline)) { madd(wc[tap], gyr + lo, 1, gxp + in_at, g.sw, count); });
        }
      }
    });
  });
}

// One image's products for one channel, tap by tap, into total[tap] (the walk: any stride, any
// values): gy's rows times x's rows shifted by the tap, in one vector's lanes.
template <typename T> [[gnu::always_inline]] inline void weight_walk(const ConvGeometry& g,
                                                                     const T* gyp, const T* xp,
                                                                     double* total) {
  typedef T Vec __attribute__((vector_size(32)));
  constexpr int kLanes = 32 / sizeof(T);
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t off = j * g.dw - g.pw;
      int64_t lo, hi;
      inside(g.w, g.ow, g.sw, off, lo, hi);
      if (lo >= hi) continue;
      Vec acc = {};
      T tail[kLanes] = {};
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t ih = oh * g.sh - g.ph + i * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        add_products(gyp + oh * g.ow + lo, xp + ih * g.w + lo * g.sw + off, g.sw, hi - lo, acc,
                     tail);
      }
      T lanes[kLanes];
      __builtin_memcpy(lanes, &acc, sizeof lanes);
      double& t = total[i * g.kw + j];
      for (int l = 0; l < kLanes; ++l) t += static_cast<double>(lanes[l]) + tail[l];
    }
}

// gw[c][i][j] = sum over images and output rows of gy's row times x's row shifted by the tap:
// each image's products in the lanes of one vector (float32 or float64 as the tensors), the
// images' sums added in order in double.
template <typename T> void backward_weight(const T* gy, const T* x, const ConvGeometry& g, T* gw) {
  constexpr int kLanes = 32 / sizeof(T);
  const int64_t taps = g.kh * g.kw;
  // The stencil's staged planes: gy's rows padded with zeros to whole vectors, x's region the
  // taps read, zero outside the input.
  const bool stencil = stencil_fits<T>(g) && taps <= kMaxWeightStencilTaps;
  const int64_t vecs = (g.ow + kLanes - 1) / kLanes;
  const int64_t x_rows = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  const int64_t x_width = vecs * kLanes + (g.kw - 1) * g.dw / g.sw;
  const int64_t per_channel = std::max<int64_t>(g.n * g.oh * g.ow * taps, 1);
  parallel_for(0, g.c, std::max<int64_t>(1, kElementwiseGrain / per_channel),
               [&](int64_t lo_c, int64_t hi_c) {
                 std::vector<T> stage(
                     stencil ? static_cast<size_t>(g.oh * vecs * kLanes + g.sw * x_rows * x_width)
                             : 0);
                 std::vector<double> total(static_cast<size_t>(taps));
                 run_widest([&]() __attribute__((always_inline)) {
                   for (int64_t c = lo_c; c < hi_c; ++c) {
                     std::fill(total.begin(), total.end(), 0.0);
                     for (int64_t n = 0; n < g.n; ++n) {
                       const int64_t p = n * g.c + c;
                       const T* gyp = gy + p * g.oh * g.ow;
                       const T* xp = x + p * g.h * g.w;
                       // Images with inf or NaN (seen while staging) keep the walk.
                       T* gys = stage.data();  // null when no stencil
                       T* xs = nullptr;
                       typename BitsLanes<T>::Vec nonfinite = {};
                       if (stencil) {
                         xs = gys + g.oh * vecs * kLanes;
                         stage_region(gyp, g.oh, g.ow, 0, g.oh, 0, vecs * kLanes, T(0), gys,
                                      &nonfinite);
                         stage_phases(xp, g.h, g.w, -g.ph, x_rows, -g.pw, x_width, g.sw, T(0), xs,
                                      &nonfinite);
                       }
                       if (stencil && !any_lane(nonfinite))
                         weight_stencil_any<T>(static_cast<int>(taps), g, gys, xs, vecs, x_rows,
                                               x_width, total.data());
                       else
                         weight_walk(g, gyp, xp, total.data());
                     }
                     for (int64_t t = 0; t < taps; ++t)
                       gw[c * taps + t] = static_cast<T>(total[static_cast<size_t>(t)]);
                   }
                 });
               });
}

template void forward(const float*, const float*, const float*, const ConvGeometry&, float*);
template void forward(const double*, const double*, const double*, const ConvGeometry&, double*);
template void backward_input(const float*, const float*, const ConvGeometry&, float*);
template void backward_input(const double*, const double*, const ConvGeometry&, double*);
template void backward_weight(const float*, const float*, const ConvGeometry&, float*);
template void backward_weight(const double*, const double*, const ConvGeometry&, double*);

}  // namespace tg::cpu::depthwise
