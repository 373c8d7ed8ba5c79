// CPU kernels of conv1d / conv2d and their two backward ops, by im2col and one GEMM per group
// through cpu::matmul (OpenBLAS when built in). The column matrix of a group is [K, N * L]
// (K = in_channels / groups * kH * kW, L = OH * OW): the whole batch in one GEMM, so the small
// images of a CNN still make one large product. conv1d runs as a conv2d of height 1 (the same
// memory: every tensor below is contiguous).
//
// With BLAS, float32/float64 convolutions run in chunks of images instead (ConvBlas below): a
// chunk's column matrix stays in cache between im2col and the GEMM that reads it, a single
// image's GEMM writes the output (or reads the output gradient) in place, each pass builds only
// the matrices it needs, and the chunks run in parallel across the pool (one small GEMM per
// thread scales where OpenBLAS's own threading of those small GEMMs does not).
//
// float32 3x3 stride-1 convs whose 2x2 tiles fill most of 16 lanes, by tile rows (23 to 32 wide,
// 47 to 64, ...) or by whole small images (8x8: 16 tiles), go to Winograd's F(2x2, 3x3) instead
// (conv_winograd.h) on CPUs with AVX2: for the small channel counts of a CNN, im2col's copies and
// GEMMs of 16 or 32 rows cost more.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include <tapegrad/backends/cpu/conv_depthwise.h>
#include <tapegrad/backends/cpu/conv_direct.h>
#include <tapegrad/backends/cpu/conv_winograd.h>
#include <tapegrad/backends/cpu/serial_blas.h>
#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#ifdef TG_WITH_BLAS
#include <cblas.h>
#endif

namespace tg::cpu {

namespace {

// floor(a / b) for b > 0 and any sign of a.
int64_t div_floor(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The output columns [lo, hi) whose input column ow * s - p + off lies inside [0, size).
void valid_range(int64_t size, int64_t out, int64_t s, int64_t p, int64_t off, int64_t& lo,
                 int64_t& hi) {
  lo = std::clamp<int64_t>(div_floor(p - off + s - 1, s), 0, out);
  hi = std::clamp<int64_t>(div_floor(size - 1 + p - off, s) + 1, lo, out);
}

// Rows of work per task so that a task touches about kElementwiseGrain elements.
int64_t grain_for(int64_t row) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row, 1));
}

// cols[(c, i, j)][n * L + oh * OW + ow] = x[n, c, oh * sh - ph + i * dh, ow * sw - pw + j * dw],
// 0 in the padding. Row (c, i, j) of the whole matrix is row (c % Cg, i, j) of group c / Cg's.
template <typename T> void im2col(const T* x, const ConvGeometry& g, T* cols) {
  const int64_t L = g.oh * g.ow, NL = g.n * L, taps = g.kh * g.kw;
  // One task per row (c, i, j) of the matrix, all images inside it: the index arithmetic
  // (divisions) runs once per row, not once per image.
  parallel_for(0, g.c * taps, grain_for(NL), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t c = r / taps, i = (r / g.kw) % g.kh, j = r % g.kw;
      int64_t ow_lo, ow_hi;
      valid_range(g.w, g.ow, g.sw, g.pw, j * g.dw, ow_lo, ow_hi);
      for (int64_t n = 0; n < g.n; ++n) {
        const T* plane = x + (n * g.c + c) * g.h * g.w;
        T* dst = cols + r * NL + n * L;
        // Rows are short in a small CNN (8 columns for the digits): plain loops, not a fill
        // and a memcpy call per row segment.
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          T* drow = dst + oh * g.ow;
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= g.h) {
            for (int64_t ow = 0; ow < g.ow; ++ow) drow[ow] = T(0);
            continue;
          }
          const int64_t base = ih * g.w - g.pw + j * g.dw;  // + ow * sw: column ow's element
          for (int64_t ow = 0; ow < ow_lo; ++ow) drow[ow] = T(0);
          if (g.sw == 1) {
            const T* src = plane + base + ow_lo;  // base + ow_lo >= 0: the first column inside
            for (int64_t k = 0; k < ow_hi - ow_lo; ++k) drow[ow_lo + k] = src[k];
          } else {
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) drow[ow] = plane[base + ow * g.sw];
          }
          for (int64_t ow = ow_hi; ow < g.ow; ++ow) drow[ow] = T(0);
        }
      }
    }
  });
}

// The adjoint of im2col: gx[n, c] = the sum of every column entry taken from it. One task per
// (n, c) plane, so no two tasks write the same element.
template <typename T> void col2im(const T* cols, const ConvGeometry& g, T* gx) {
  const int64_t L = g.oh * g.ow, NL = g.n * L, taps = g.kh * g.kw, plane_size = g.h * g.w;
  parallel_for(0, g.n * g.c, grain_for(taps * L), [&](int64_t lo_task, int64_t hi_task) {
    for (int64_t t = lo_task; t < hi_task; ++t) {
      const int64_t n = t / g.c, c = t % g.c;
      T* plane = gx + t * plane_size;
      std::fill(plane, plane + plane_size, T(0));
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const T* src = cols + ((c * g.kh + i) * g.kw + j) * NL + n * L;
          int64_t ow_lo, ow_hi;
          valid_range(g.w, g.ow, g.sw, g.pw, j * g.dw, ow_lo, ow_hi);
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            const int64_t ih = oh * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            const int64_t base = ih * g.w - g.pw + j * g.dw;
            const T* srow = src + oh * g.ow;
            if (g.sw == 1) {  // contiguous on both sides: a loop the compiler vectorises
              T* prow = plane + base + ow_lo;  // base + ow_lo >= 0: the first column inside
              const T* from = srow + ow_lo;
              for (int64_t k = 0; k < ow_hi - ow_lo; ++k) prow[k] += from[k];
            } else {
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow) plane[base + ow * g.sw] += srow[ow];
            }
          }
        }
    }
  });
}

// [N, OC, L] -> [OC, N * L]: the layout the GEMMs read the output gradient in.
template <typename T> void to_channel_major(const T* y, const ConvGeometry& g, T* out) {
  const int64_t L = g.oh * g.ow, NL = g.n * L;
  parallel_for(0, g.n * g.oc, grain_for(L), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t n = t / g.oc, o = t % g.oc;
      std::memcpy(out + o * NL + n * L, y + t * L, static_cast<size_t>(L) * sizeof(T));
    }
  });
}

// [OC, N * L] -> [N, OC, L], adding bias[o] (when given) on the way.
template <typename T>
void from_channel_major(const T* in, const T* bias, const ConvGeometry& g, T* y) {
  const int64_t L = g.oh * g.ow, NL = g.n * L;
  parallel_for(0, g.n * g.oc, grain_for(L), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t n = t / g.oc, o = t % g.oc;
      const T* src = in + o * NL + n * L;
      T* dst = y + t * L;
      const T b = bias ? bias[o] : T(0);
      for (int64_t l = 0; l < L; ++l) dst[l] = src[l] + b;
    }
  });
}

// The column matrix of x, shaped [groups, K, N * L].
Tensor columns(const Tensor& input, const ConvGeometry& g) {
  const Tensor x = input.contiguous();
  Tensor cols = empty({g.groups, g.cols_rows(), g.n * g.oh * g.ow}, x.dtype(), x.device());
  visit_floating("conv", x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    im2col(x.data<T>(), g, cols.data<T>());
  });
  return cols;
}

// grad_output as [groups, OC / groups, N * L].
Tensor channel_major(const Tensor& grad_output, const ConvGeometry& g) {
  const Tensor gy = grad_output.contiguous();
  Tensor out = empty({g.groups, g.oc / g.groups, g.n * g.oh * g.ow}, gy.dtype(), gy.device());
  visit_floating("conv", gy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    to_channel_major(gy.data<T>(), g, out.data<T>());
  });
  return out;
}

// weight [OC, Cg, kH, kW] as [groups, OC / groups, K] (a view of its contiguous form).
Tensor weight_matrices(const Tensor& weight, const ConvGeometry& g) {
  const Tensor w = weight.contiguous();
  const int64_t K = g.cols_rows(), ocg = g.oc / g.groups;
  return make_view(w, {g.groups, ocg, K}, {ocg * K, K, 1}, w.storage_offset());
}

// m [B, R, C] transposed to [B, C, R], as a view (BLAS reads it in place).
Tensor transposed(const Tensor& m) {
  return make_view(m, {m.size(0), m.size(2), m.size(1)},
                   {m.strides()[0], m.strides()[2], m.strides()[1]}, m.storage_offset());
}

#ifdef TG_WITH_BLAS
// ---- the BLAS path: chunks of images ----------------------------------------------------------

// C = A' B' + beta C, row-major, A' = A or A^T (M x K), B' = B or B^T (K x N).
template <typename T> void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A,
                                int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const auto a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, a, b, i(M), i(N), i(K), 1.0f, A, i(lda), B, i(ldb), beta, C, i(ldc));
  else
    cblas_dgemm(CblasRowMajor, a, b, i(M), i(N), i(K), 1.0, A, i(lda), B, i(ldb), beta, C, i(ldc));
}

// Images per chunk: chunks whose column matrices hold about 2^17 elements (L2-sized; smaller
// ones make OpenBLAS's GEMMs less efficient), their count rounded up to a multiple of 4 so that
// 2 or 4 threads get equal shares; a batch of under 2^15 elements of column matrix stays one
// chunk. It depends on the geometry only, so a result does not depend on the thread count.
int64_t images_per_chunk(const ConvGeometry& g) {
  const int64_t per_image = std::max<int64_t>(1, g.c * g.kh * g.kw * g.oh * g.ow);
  const int64_t n = std::max<int64_t>(g.n, 1), target = int64_t{1} << 17;
  if (per_image >= target) return 1;
  int64_t chunks = (n * per_image + target - 1) / target;  // n * per_image < 2^17 * n: no overflow
  if (n * per_image >= target / 4) chunks = (chunks + 3) / 4 * 4;
  chunks = std::clamp<int64_t>(chunks, 1, n);
  return (n + chunks - 1) / chunks;
}

// Whether conv_blas takes the call: BLAS's int sizes hold, and no size is 0 (those keep the
// general path's explicit zeros).
bool blas_fits(const ConvGeometry& g) {
  const int64_t rows = g.c * g.kh * g.kw, cols = images_per_chunk(g) * g.oh * g.ow;
  return g.n > 0 && g.c > 0 && g.oc > 0 && cols > 0 && rows * cols <= INT32_MAX &&
         g.oc * cols <= INT32_MAX;
}

// Scratch memory of one task, every element of which is written before it is read, aligned to
// 64 bytes as tensors are (OpenBLAS's packing and the vector loops are faster on aligned rows).
// Buffers up to 2^20 elements stay with their thread between calls (slot: which of a task's
// buffers), so a call does not fault in fresh pages each time; larger ones live for the call.
template <typename T> class Scratch {
 public:
  Scratch(int slot, int64_t n) {
    static constexpr int64_t kPad = 64 / sizeof(T);
    thread_local std::vector<T> kept[2];
    T* base;
    if (n <= (int64_t{1} << 20)) {
      std::vector<T>& v = kept[slot];
      if (static_cast<int64_t>(v.size()) < n + kPad) v.resize(static_cast<size_t>(n + kPad));
      base = v.data();
    } else {
      own_ = std::make_unique_for_overwrite<T[]>(static_cast<size_t>(n + kPad));
      base = own_.get();
    }
    const auto address = reinterpret_cast<uintptr_t>(base);
    ptr_ = base + ((64 - address % 64) % 64) / sizeof(T);
  }
  T* get() const { return ptr_; }

 private:
  std::unique_ptr<T[]> own_;
  T* ptr_ = nullptr;
};

// The three passes over chunks of images. Chunks run in parallel across the pool, each task with
// its own column buffer; sub is g restricted to images [n0, n0 + sub.n).
template <typename T> struct ConvBlas {
  const ConvGeometry& g;
  int64_t L = g.oh * g.ow, K = g.cols_rows(), ocg = g.oc / g.groups, in_plane = g.c * g.h * g.w;
  int64_t chunk = images_per_chunk(g), chunks = (g.n + chunk - 1) / chunk;

  // Buffers of one task: the column matrix of a chunk, and (for more than one image) the
  // chunk's output or output gradient as [OC, n * L].
  struct Buffers {
    Scratch<T> cols, out;
  };
  Buffers buffers() const {
    return {Scratch<T>(0, g.groups * K * chunk * L),
            Scratch<T>(1, chunk > 1 ? g.oc * chunk * L : 0)};
  }
  // Runs task(lo, hi) over [0, tasks) across the pool; OpenBLAS single-threaded meanwhile when
  // the tasks do spread over several threads.
  template <typename Fn> void parallel(int64_t tasks, Fn task) const {
    SerialBlas serial(get_num_threads() > 1 && tasks > 1);
    parallel_for(0, tasks, 1, task);
  }
  // gemm<T>, its output columns in fixed blocks across the pool when `split` (a pass that runs
  // as one task), OpenBLAS single-threaded meanwhile: its own threading splits the product by
  // the thread count, and its edge kernels round differently, so a single image's conv changed
  // in its last bits between 1 and 2 threads. Blocks fixed by the shape give the same bits.
  static void gemm_columns(bool split, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
                           int64_t ldc) {
    constexpr int64_t kBlock = 512;
    if (!split || N <= kBlock) {
      SerialBlas serial(split && get_num_threads() > 1);
      gemm<T>(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
      return;
    }
    SerialBlas serial(get_num_threads() > 1);
    parallel_for(0, (N + kBlock - 1) / kBlock, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const int64_t j0 = b * kBlock, n = std::min(kBlock, N - j0);
        gemm<T>(ta, tb, M, n, K, A, lda, tb ? B + j0 * ldb : B + j0, ldb, beta, C + j0, ldc);
      }
    });
  }
  ConvGeometry chunk_geometry(int64_t c) const {
    ConvGeometry sub = g;
    sub.n = std::min(chunk, g.n - c * chunk);
    return sub;
  }
  // gy's chunk as [OC, n * L]: itself for one image, else through out.
  static const T* channel_major_chunk(const T* gy, const ConvGeometry& sub, T* out) {
    if (sub.n == 1) return gy;
    to_channel_major(gy, sub, out);
    return out;
  }

  void forward(const T* x, const T* w, const T* bias, T* y) const {
    parallel(chunks, [&](int64_t lo, int64_t hi) {
      Buffers buf = buffers();
      for (int64_t c = lo; c < hi; ++c) {
        const ConvGeometry sub = chunk_geometry(c);
        const int64_t n0 = c * chunk, NL = sub.n * L;
        im2col(x + n0 * in_plane, sub, buf.cols.get());
        T* yc = y + n0 * g.oc * L;
        // One image: the GEMM writes y in place, onto the bias written first (beta = 1), so
        // neither a zero fill nor a second pass to add the bias.
        const bool direct = sub.n == 1;
        T* out = direct ? yc : buf.out.get();
        if (direct && bias)
          for (int64_t o = 0; o < g.oc; ++o) std::fill(yc + o * L, yc + (o + 1) * L, bias[o]);
        const T beta = direct && bias ? T(1) : T(0);
        for (int64_t gi = 0; gi < g.groups; ++gi)
          gemm_columns(chunks == 1, false, false, ocg, NL, K, w + gi * ocg * K, K,
                       buf.cols.get() + gi * K * NL, NL, beta, out + gi * ocg * NL, NL);
        if (!direct) from_channel_major(out, bias, sub, yc);
      }
    });
  }
  void backward_input(const T* gy, const T* w, T* gx) const {
    parallel(chunks, [&](int64_t lo, int64_t hi) {
      Buffers buf = buffers();
      for (int64_t c = lo; c < hi; ++c) {
        const ConvGeometry sub = chunk_geometry(c);
        const int64_t n0 = c * chunk, NL = sub.n * L;
        const T* gym = channel_major_chunk(gy + n0 * g.oc * L, sub, buf.out.get());
        for (int64_t gi = 0; gi < g.groups; ++gi)
          gemm_columns(chunks == 1, true, false, K, NL, ocg, w + gi * ocg * K, K,
                       gym + gi * ocg * NL, NL, T(0), buf.cols.get() + gi * K * NL, NL);
        col2im(buf.cols.get(), sub, gx + n0 * in_plane);
      }
    });
  }
  // The weight gradient in `parts` partial sums over consecutive chunks (each in chunk order),
  // added in part order: the parts depend on the geometry only, so the result is the same
  // whatever the thread count. Their count is capped so the partial sums stay small.
  int64_t weight_parts() const {
    const int64_t budget =
        std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(g.oc * K, 1));
    return std::clamp<int64_t>(std::min<int64_t>(chunks, budget), 1, 8);
  }
  void backward_weight(const T* gy, const T* x, T* gw) const {
    const int64_t parts = weight_parts(), wsize = g.oc * K;
    std::unique_ptr<T[]> partial =
        std::make_unique_for_overwrite<T[]>(static_cast<size_t>((parts - 1) * wsize + 1));
    parallel(parts, [&](int64_t lo, int64_t hi) {
      Buffers buf = buffers();
      for (int64_t p = lo; p < hi; ++p) {
        T* dst = p == 0 ? gw : partial.get() + (p - 1) * wsize;
        const int64_t c_lo = p * chunks / parts, c_hi = (p + 1) * chunks / parts;
        for (int64_t c = c_lo; c < c_hi; ++c) {
          const ConvGeometry sub = chunk_geometry(c);
          const int64_t n0 = c * chunk, NL = sub.n * L;
          im2col(x + n0 * in_plane, sub, buf.cols.get());
          const T* gym = channel_major_chunk(gy + n0 * g.oc * L, sub, buf.out.get());
          for (int64_t gi = 0; gi < g.groups; ++gi)
            gemm_columns(parts == 1, false, true, ocg, K, NL, gym + gi * ocg * NL, NL,
                         buf.cols.get() + gi * K * NL, NL, T(c == c_lo ? 0 : 1), dst + gi * ocg * K,
                         K);
        }
      }
    });
    if (parts == 1) return;
    parallel_for(0, wsize, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t p = 1; p < parts; ++p) {
        const T* src = partial.get() + (p - 1) * wsize;
        for (int64_t i = lo; i < hi; ++i) gw[i] += src[i];
      }
    });
  }
};
#endif

Tensor conv_forward(const Tensor& self, const Tensor& weight, const Tensor& bias,
                    const ConvGeometry& g) {
  Tensor y = empty(g.output_shape(), self.dtype(), self.device());
  if (y.numel() == 0) return y;
  if (depthwise::fits(g)) {
    const Tensor x = self.contiguous(), w = weight.contiguous();
    const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
    visit_floating("conv", self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      depthwise::forward(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, g,
                         y.data<T>());
    });
    return y;
  }
  if (self.dtype() == kFloat32 && direct::fits(g)) {
    const Tensor x = self.contiguous(), w = weight.contiguous();
    const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
    direct::forward(x.data<float>(), w.data<float>(), b.defined() ? b.data<float>() : nullptr, g,
                    y.data<float>());
    return y;
  }
  if (self.dtype() == kFloat32 && winograd::fits(g)) {
    const Tensor x = self.contiguous(), w = weight.contiguous();
    const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
    winograd::forward(x.data<float>(), w.data<float>(), b.defined() ? b.data<float>() : nullptr, g,
                      y.data<float>());
    return y;
  }
#ifdef TG_WITH_BLAS
  if (blas_fits(g)) {
    const Tensor x = self.contiguous(), w = weight.contiguous();
    const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
    visit_floating("conv", self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ConvBlas<T>{g}.forward(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr,
                             y.data<T>());
    });
    return y;
  }
#endif
  // [groups, OCg, K] @ [groups, K, N * L] = [OC, N * L]; with K = 0 the product is zeros.
  const Tensor out = cpu::matmul(weight_matrices(weight, g), columns(self, g));
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  visit_floating("conv", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    from_channel_major(out.data<T>(), b.defined() ? b.data<T>() : nullptr, g, y.data<T>());
  });
  return y;
}

}  // namespace

Tensor conv1d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(self, weight, bias,
                      conv_geometry(1, self.shape(), weight.shape(), stride, padding, dilation,
                                    groups));
}

Tensor conv2d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(self, weight, bias,
                      conv_geometry(2, self.shape(), weight.shape(), stride, padding, dilation,
                                    groups));
}

Tensor conv_backward_input(const Tensor& grad_output, const Tensor& weight, IntArrayRef input_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           int64_t groups) {
  const ConvGeometry g = conv_geometry(static_cast<int>(weight.dim()) - 2, input_size,
                                       weight.shape(), stride, padding, dilation, groups);
  Tensor gx = empty(input_size, grad_output.dtype(), grad_output.device());
  if (gx.numel() == 0) return gx;
  if (grad_output.numel() == 0) {  // no output channels: the input had no influence
    fill_data(gx, 0);
    return gx;
  }
  if (depthwise::fits(g)) {
    const Tensor gy = grad_output.contiguous(), w = weight.contiguous();
    visit_floating("conv_backward_input", gx.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      depthwise::backward_input(gy.data<T>(), w.data<T>(), g, gx.data<T>());
    });
    return gx;
  }
  if (gx.dtype() == kFloat32 && direct::fits(g)) {
    const Tensor gy = grad_output.contiguous(), w = weight.contiguous();
    direct::backward_input(gy.data<float>(), w.data<float>(), g, gx.data<float>());
    return gx;
  }
  if (gx.dtype() == kFloat32 && winograd::fits(g)) {
    const Tensor gy = grad_output.contiguous(), w = weight.contiguous();
    winograd::backward_input(gy.data<float>(), w.data<float>(), g, gx.data<float>());
    return gx;
  }
#ifdef TG_WITH_BLAS
  if (blas_fits(g)) {
    const Tensor gy = grad_output.contiguous(), w = weight.contiguous();
    visit_floating("conv_backward_input", gx.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ConvBlas<T>{g}.backward_input(gy.data<T>(), w.data<T>(), gx.data<T>());
    });
    return gx;
  }
#endif
  // [groups, K, OCg] @ [groups, OCg, N * L] = the column matrix of the input's gradient.
  const Tensor gcols =
      cpu::matmul(transposed(weight_matrices(weight, g)), channel_major(grad_output, g));
  visit_floating("conv_backward_input", gx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    col2im(gcols.data<T>(), g, gx.data<T>());
  });
  return gx;
}

Tensor conv_backward_weight(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                            int64_t groups) {
  const ConvGeometry g = conv_geometry(static_cast<int>(weight_size.size()) - 2, input.shape(),
                                       weight_size, stride, padding, dilation, groups);
  Tensor gw = empty(weight_size, grad_output.dtype(), grad_output.device());
  if (gw.numel() == 0) return gw;
  if (grad_output.numel() == 0) {  // an empty batch: no contribution
    fill_data(gw, 0);
    return gw;
  }
  if (depthwise::fits(g)) {
    const Tensor gy = grad_output.contiguous(), x = input.contiguous();
    visit_floating("conv_backward_weight", gw.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      depthwise::backward_weight(gy.data<T>(), x.data<T>(), g, gw.data<T>());
    });
    return gw;
  }
  if (gw.dtype() == kFloat32 && winograd::fits_weight(g)) {
    const Tensor gy = grad_output.contiguous(), x = input.contiguous();
    winograd::backward_weight(gy.data<float>(), x.data<float>(), g, gw.data<float>());
    return gw;
  }
#ifdef TG_WITH_BLAS
  if (blas_fits(g)) {
    const Tensor gy = grad_output.contiguous(), x = input.contiguous();
    visit_floating("conv_backward_weight", gw.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ConvBlas<T>{g}.backward_weight(gy.data<T>(), x.data<T>(), gw.data<T>());
    });
    return gw;
  }
#endif
  // [groups, OCg, N * L] @ [groups, N * L, K] = [groups, OCg, K] = the weight's layout.
  const Tensor m = cpu::matmul(channel_major(grad_output, g), transposed(columns(input, g)));
  copy_data(gw, make_view(m, gw.shape(), gw.strides(), m.storage_offset()));
  return gw;
}

}  // namespace tg::cpu
