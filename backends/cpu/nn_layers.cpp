// CPU kernels of dropout, embedding and layer_norm: raw loops over contiguous data, split across
// the thread pool by independent elements or rows. Their arguments are checked before dispatch
// (ops/checks/nn.cpp); embedding checks its index values here (they are data).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>
#include <vector>

#include <tapegrad/backends/cpu/counter_random.h>
#include <tapegrad/backends/shared/norm_grads.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {

// ---- dropout -----------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> dropout(const Tensor& self, double p, bool train) {
  if (!train || p == 0) return {convert::clone(self), ones(self.shape(), kBool, self.device())};
  if (p == 1)
    return {zeros(self.shape(), self.dtype(), self.device()),
            zeros(self.shape(), kBool, self.device())};

  const Tensor x = self.contiguous();
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  Tensor mask = empty(self.shape(), kBool, self.device());
  const uint64_t seed = random_u64();  // one draw from the global generator per call
  const double keep = 1 - p;
  visit_floating("dropout", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    bool* m = mask.data<bool>();
    const T scale = T(1) / static_cast<T>(keep);
    parallel_for(0, x.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        m[i] = uniform_at(seed, static_cast<uint64_t>(i)) < keep;
        o[i] = in[i] * (m[i] ? scale : T(0));  // as PyTorch's x * mask * scale (inf * 0 is nan)
      }
    });
  });
  return {out, mask};
}

// ---- embedding ---------------------------------------------------------------------------------

// padding_idx matters to the backward only (its row gets no gradient).
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t>) {
  constexpr const char* op = "embedding";
  const int64_t num = weight.size(0), dim = weight.size(1);
  const Tensor index =
      indices.to(kInt64).contiguous();  // no copy when already int64 and contiguous
  const int64_t* idx = index.data<int64_t>();
  const int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i)
    TG_CHECK(idx[i] >= 0 && idx[i] < num, IndexError, op, "index ", idx[i],
             " is out of range for weight with ", num, " rows (expected 0 <= index < ", num, ")");

  Shape shape = indices.shape();
  shape.push_back(dim);
  Tensor out = empty(shape, weight.dtype(), weight.device());
  if (out.numel() == 0) return out;
  const Tensor w = weight.contiguous();
  const size_t row_bytes = static_cast<size_t>(dim) * itemsize(weight.dtype());
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  // Result row i is weight row idx[i]: index_select(weight, 0, indices.flatten()), reshaped.
  parallel_for(0, n, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(dim, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end; ++i)
                   std::memcpy(dst + static_cast<size_t>(i) * row_bytes,
                               src + static_cast<size_t>(idx[i]) * row_bytes, row_bytes);
               });
  return out;
}

// ---- layer_norm --------------------------------------------------------------------------------

namespace {

// Row sums in double with kSumLanes independent accumulators: the compiler keeps them in vector
// registers, so no add waits on the one before (a single accumulator made the backward's sums a
// serial chain of n dependent adds per row).
constexpr int kSumLanes = 16;

// Sum of p[0, n) in double.
template <typename T> __attribute__((always_inline)) inline double lane_sum(const T* p, int64_t n) {
  double acc[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes)
    for (int k = 0; k < kSumLanes; ++k) acc[k] += static_cast<double>(p[j + k]);
  for (; j < n; ++j) acc[0] += static_cast<double>(p[j]);
  double total = 0;
  for (double v : acc) total += v;
  return total;
}

// Sum of (p[j] - mean)^2 over [0, n), the same way.
template <typename T>
__attribute__((always_inline)) inline double lane_sum_sq(const T* p, int64_t n, double mean) {
  double acc[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes)
    for (int k = 0; k < kSumLanes; ++k) {
      const double d = static_cast<double>(p[j + k]) - mean;
      acc[k] += d * d;
    }
  for (; j < n; ++j) {
    const double d = static_cast<double>(p[j]) - mean;
    acc[0] += d * d;
  }
  double total = 0;
  for (double v : acc) total += v;
  return total;
}

struct RowStats {
  double mean, rstd;
};
template <typename T>
__attribute__((always_inline)) inline RowStats row_stats(const T* xr, int64_t n, double eps) {
  const double mean = lane_sum(xr, n) / static_cast<double>(n);
  const double var = lane_sum_sq(xr, n, mean) / static_cast<double>(n);
  return {mean, 1 / std::sqrt(var + eps)};
}

// The forward of rows [begin, end): mean, then the biased variance around it (two passes in
// cache, exact), then the output; each row's mean and rstd are kept for the backward.
template <typename T>
__attribute__((always_inline)) inline void forward_rows(const T* in, const T* wp, const T* bp, T* o,
                                                        T* means, T* rstds, int64_t n, double eps,
                                                        int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const T* xr = in + r * n;
    T* orow = o + r * n;
    const RowStats st = row_stats(xr, n, eps);
    const T m = static_cast<T>(st.mean), rstd = static_cast<T>(st.rstd);
    means[r] = m;
    rstds[r] = rstd;
    for (int64_t j = 0; j < n; ++j) {
      T y = (xr[j] - m) * rstd;
      if (wp) y *= wp[j];
      if (bp) y += bp[j];
      orow[j] = y;
    }
  }
}

// One row of grad_input = rstd (g - mean(g) - x^ mean(g x^)), g = dy * w, x^ = (x - m) rstd.
template <typename T>
__attribute__((always_inline)) inline void grad_input_row(const T* xr, const T* dr, const T* wp,
                                                          T* gr, int64_t n, T m, T rstd, T mean_g,
                                                          T mean_gx) {
  for (int64_t j = 0; j < n; ++j) {
    const T g = wp ? dr[j] * wp[j] : dr[j];
    gr[j] = rstd * (g - mean_g - (xr[j] - m) * rstd * mean_gx);
  }
}

// The backward's first pass over rows [begin, end); see layer_norm_backward. One walk of the
// row, where the forward's statistics and then the gradient's sums took three: in double, with
// g = dy * w and the shift K = x[0], s1 = sum(x - K), s2 = sum((x - K)^2), a = sum(g) and
// c = sum(g (x - K)); then mean = K + s1/n, var = s2/n - (s1/n)^2 and
// sum(g x^) = rstd (c - (mean - K) a). The shift keeps the variance from cancelling:
// |x[0] - mean| <= std sqrt(n - 1) (Samuelson's inequality), so its relative error stays below
// about n 2^-53, the order of the error of summing n squares at all; mean and rstd agree with
// the forward's two-walk ones to that order (in float, almost always to the bit).
template <typename T>
__attribute__((always_inline)) inline void backward_rows(const T* xp, const T* dp, const T* wp,
                                                         T* gi, T* means, T* rstds, int64_t n,
                                                         double eps, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const T* xr = xp + r * n;
    const T* dr = dp + r * n;
    T* gr = gi + r * n;
    const double shift = static_cast<double>(xr[0]);
    double s1[kSumLanes] = {}, s2[kSumLanes] = {}, a[kSumLanes] = {}, c[kSumLanes] = {};
    int64_t j = 0;
    for (; j + kSumLanes <= n; j += kSumLanes)
      for (int k = 0; k < kSumLanes; ++k) {
        const double g = static_cast<double>(wp ? dr[j + k] * wp[j + k] : dr[j + k]);
        const double d = static_cast<double>(xr[j + k]) - shift;
        s1[k] += d;
        s2[k] += d * d;
        a[k] += g;
        c[k] += g * d;
      }
    for (; j < n; ++j) {
      const double g = static_cast<double>(wp ? dr[j] * wp[j] : dr[j]);
      const double d = static_cast<double>(xr[j]) - shift;
      s1[0] += d;
      s2[0] += d * d;
      a[0] += g;
      c[0] += g * d;
    }
    double t1 = 0, t2 = 0, ta = 0, tc = 0;
    for (int k = 0; k < kSumLanes; ++k) {
      t1 += s1[k];
      t2 += s2[k];
      ta += a[k];
      tc += c[k];
    }
    const double inv_n = 1 / static_cast<double>(n);
    const double centre = t1 * inv_n;  // mean - K
    const double rstd_d = 1 / std::sqrt(std::max(t2 * inv_n - centre * centre, 0.0) + eps);
    const T m = static_cast<T>(shift + centre), rstd = static_cast<T>(rstd_d);
    means[r] = m;
    rstds[r] = rstd;
    const T mean_g = static_cast<T>(ta * inv_n);
    const T mean_gx = static_cast<T>(rstd_d * (tc - centre * ta) * inv_n);
    grad_input_row(xr, dr, wp, gr, n, m, rstd, mean_g, mean_gx);
  }
}

// The backward's first pass over rows [begin, end) from the forward's saved mean and rstd: half
// the sums of backward_rows, a = sum(g) and c = sum(g (x - mean)) in double, then
// grad_input = rstd (g - a/n - x^ rstd c/n).
template <typename T>
__attribute__((always_inline)) inline void backward_rows_saved(const T* xp, const T* dp,
                                                               const T* wp, T* gi, const T* means,
                                                               const T* rstds, int64_t n,
                                                               int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const T* xr = xp + r * n;
    const T* dr = dp + r * n;
    T* gr = gi + r * n;
    const T m = means[r], rstd = rstds[r];
    const double mean = static_cast<double>(m);
    double a[kSumLanes] = {}, c[kSumLanes] = {};
    int64_t j = 0;
    for (; j + kSumLanes <= n; j += kSumLanes)
      for (int k = 0; k < kSumLanes; ++k) {
        const double g = static_cast<double>(wp ? dr[j + k] * wp[j + k] : dr[j + k]);
        a[k] += g;
        c[k] += g * (static_cast<double>(xr[j + k]) - mean);
      }
    for (; j < n; ++j) {
      const double g = static_cast<double>(wp ? dr[j] * wp[j] : dr[j]);
      a[0] += g;
      c[0] += g * (static_cast<double>(xr[j]) - mean);
    }
    double ta = 0, tc = 0;
    for (int k = 0; k < kSumLanes; ++k) {
      ta += a[k];
      tc += c[k];
    }
    const double inv_n = 1 / static_cast<double>(n);
    const T mean_g = static_cast<T>(ta * inv_n);
    const T mean_gx = static_cast<T>(static_cast<double>(rstd) * tc * inv_n);
    grad_input_row(xr, dr, wp, gr, n, m, rstd, mean_g, mean_gx);
  }
}

// The column sums of rows [0, rows): sw += grad_output x^ and sb += grad_output for the columns
// [lo, hi), walking each row's run in memory order. Four rows per walk, added together first, so
// that each walk loads and stores the double sums once per four rows (the loads and stores, not
// the arithmetic, bound this loop when the rows are in cache).
template <typename T>
__attribute__((always_inline)) inline void column_sums(const T* xp, const T* dp, const T* means,
                                                       const T* rstds, int64_t rows, int64_t n,
                                                       int64_t lo, int64_t hi, double* sw,
                                                       double* sb) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const T *x0 = xp + r * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;
    const T *d0 = dp + r * n, *d1 = d0 + n, *d2 = d1 + n, *d3 = d2 + n;
    const T m0 = means[r], m1 = means[r + 1], m2 = means[r + 2], m3 = means[r + 3];
    const T s0 = rstds[r], s1 = rstds[r + 1], s2 = rstds[r + 2], s3 = rstds[r + 3];
    for (int64_t j = lo; j < hi; ++j) {
      sw[j - lo] += (static_cast<double>(d0[j] * ((x0[j] - m0) * s0)) +
                     static_cast<double>(d1[j] * ((x1[j] - m1) * s1))) +
                    (static_cast<double>(d2[j] * ((x2[j] - m2) * s2)) +
                     static_cast<double>(d3[j] * ((x3[j] - m3) * s3)));
      sb[j - lo] += (static_cast<double>(d0[j]) + static_cast<double>(d1[j])) +
                    (static_cast<double>(d2[j]) + static_cast<double>(d3[j]));
    }
  }
  for (; r < rows; ++r) {
    const T* xr = xp + r * n;
    const T* dr = dp + r * n;
    const T m = means[r], rstd = rstds[r];
    for (int64_t j = lo; j < hi; ++j) {
      sw[j - lo] += static_cast<double>(dr[j] * ((xr[j] - m) * rstd));
      sb[j - lo] += static_cast<double>(dr[j]);
    }
  }
}

// The three passes compiled a second time for AVX2 (the library targets baseline x86-64, where
// a float -> double conversion handles two values per instruction), picked at run time.
#if defined(__x86_64__) && defined(__GNUC__)
template <typename T>
__attribute__((target("avx2"))) void forward_rows_avx2(const T* in, const T* wp, const T* bp, T* o,
                                                       T* means, T* rstds, int64_t n, double eps,
                                                       int64_t begin, int64_t end) {
  forward_rows(in, wp, bp, o, means, rstds, n, eps, begin, end);
}
template <typename T>
__attribute__((target("avx2"))) void backward_rows_avx2(const T* xp, const T* dp, const T* wp,
                                                        T* gi, T* means, T* rstds, int64_t n,
                                                        double eps, int64_t begin, int64_t end) {
  backward_rows(xp, dp, wp, gi, means, rstds, n, eps, begin, end);
}
template <typename T>
__attribute__((target("avx2"))) void backward_rows_saved_avx2(const T* xp, const T* dp, const T* wp,
                                                              T* gi, const T* means, const T* rstds,
                                                              int64_t n, int64_t begin,
                                                              int64_t end) {
  backward_rows_saved(xp, dp, wp, gi, means, rstds, n, begin, end);
}
template <typename T>
__attribute__((target("avx2"))) void column_sums_avx2(const T* xp, const T* dp, const T* means,
                                                      const T* rstds, int64_t rows, int64_t n,
                                                      int64_t lo, int64_t hi, double* sw,
                                                      double* sb) {
  column_sums(xp, dp, means, rstds, rows, n, lo, hi, sw, sb);
}
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The column sums again with 8-double vectors (a float -> double conversion of eight values per
// instruction). No contraction into fused multiply-adds, so every lane does what the AVX2 build
// does: the same bits.
template <typename T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), optimize("fp-contract=off"))) void
column_sums_avx512(const T* xp, const T* dp, const T* means, const T* rstds, int64_t rows,
                   int64_t n, int64_t lo, int64_t hi, double* sw, double* sb) {
  column_sums(xp, dp, means, rstds, rows, n, lo, hi, sw, sb);
}
bool has_avx512() { return cpu_runs_avx512(); }
#define TG_LAYER_NORM_AVX512 1
#endif

template <typename T> void forward_dispatch(const T* in, const T* wp, const T* bp, T* o, T* means,
                                            T* rstds, int64_t n, double eps, int64_t begin,
                                            int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return forward_rows_avx2(in, wp, bp, o, means, rstds, n, eps, begin, end);
#endif
  forward_rows(in, wp, bp, o, means, rstds, n, eps, begin, end);
}

template <typename T> void backward_dispatch(const T* xp, const T* dp, const T* wp, T* gi, T* means,
                                             T* rstds, int64_t n, double eps, int64_t begin,
                                             int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return backward_rows_avx2(xp, dp, wp, gi, means, rstds, n, eps, begin, end);
#endif
  backward_rows(xp, dp, wp, gi, means, rstds, n, eps, begin, end);
}

template <typename T> void backward_saved_dispatch(const T* xp, const T* dp, const T* wp, T* gi,
                                                   const T* means, const T* rstds, int64_t n,
                                                   int64_t begin, int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return backward_rows_saved_avx2(xp, dp, wp, gi, means, rstds, n, begin, end);
#endif
  backward_rows_saved(xp, dp, wp, gi, means, rstds, n, begin, end);
}

template <typename T> void column_dispatch(const T* xp, const T* dp, const T* means, const T* rstds,
                                           int64_t rows, int64_t n, int64_t lo, int64_t hi,
                                           double* sw, double* sb) {
#ifdef TG_LAYER_NORM_AVX512
  if (has_avx512()) return column_sums_avx512(xp, dp, means, rstds, rows, n, lo, hi, sw, sb);
#endif
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return column_sums_avx2(xp, dp, means, rstds, rows, n, lo, hi, sw, sb);
#endif
  column_sums(xp, dp, means, rstds, rows, n, lo, hi, sw, sb);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& self, IntArrayRef normalized_shape,
                                              const Tensor& weight, const Tensor& bias,
                                              double eps) {
  const shared::NormOutputs outs = shared::layer_norm_outputs(self, normalized_shape.size());
  const int64_t n = Shape(normalized_shape).numel();
  if (self.numel() == 0) return outs.all();
  const int64_t rows = self.numel() / n;
  const Tensor x = self.contiguous();
  const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  visit_floating("layer_norm", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    const T* wp = w.defined() ? w.data<T>() : nullptr;
    const T* bp = b.defined() ? b.data<T>() : nullptr;
    T* o = outs.out.data<T>();
    T* means = outs.mean.data<T>();
    T* rstds = outs.rstd.data<T>();
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n),
                 [&](int64_t begin, int64_t end) {
                   forward_dispatch(in, wp, bp, o, means, rstds, n, eps, begin, end);
                 });
  });
  return outs.all();
}

}  // namespace tg::cpu

namespace tg::cpu {

namespace {

// Row blocks of the fused backward hold about this many elements: large enough that the blocks'
// partial column sums (2 n doubles each) stay a small part of the data, small enough that there
// are several blocks per thread. A fixed block size (not one block per thread) keeps the order of
// the sums, and so the result, the same whatever the thread count.
constexpr int64_t kBlockItems = 131072;
// Above this row length a row block would be only a few rows, its partial sums as large as the
// rows themselves: the column sums are then a second, column-split pass instead.
constexpr int64_t kFusedMaxCols = 4096;
// Rows whose column sums are taken right after their row pass, while they are in L2.
constexpr int64_t kGroupRows = 16;

}  // namespace

// One pass over the data, a row at a time in cache: the row's mean and rstd as the forward saved
// them (or, not given, recomputed as the forward computes them), a = sum(g) and b = sum(g x^)
// with g = grad_output * weight, then
// grad_input = rstd (g - a/n - x^ b/n); every kGroupRows rows, while they are still in cache,
// their grad_output x^ and grad_output are added into the row block's column sums, and
// grad_weight and grad_bias add up the blocks' sums in block order. Rows longer than
// kFusedMaxCols take a second pass instead, over column blocks of [rows, n] in memory order.
// Either way the order of the sums does not depend on the thread count.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_output,
                                                       const Tensor& self,
                                                       IntArrayRef normalized_shape,
                                                       const Tensor& weight, double eps,
                                                       const Tensor& mean, const Tensor& rstd) {
  const int64_t n = Shape(normalized_shape).numel();
  Tensor grad_input = empty(self.shape(), self.dtype(), self.device());
  Tensor grad_weight = zeros(Shape(normalized_shape), self.dtype(), self.device());
  Tensor grad_bias = zeros(Shape(normalized_shape), self.dtype(), self.device());
  if (self.numel() == 0) return {grad_input, grad_weight, grad_bias};
  const int64_t rows = self.numel() / n;
  const Tensor x = self.contiguous(), dy = grad_output.contiguous();
  const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  const bool saved = mean.defined();
  const Tensor saved_mean = saved ? mean.contiguous() : Tensor();
  const Tensor saved_rstd = saved ? rstd.contiguous() : Tensor();
  visit_floating("layer_norm_backward", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    const T* dp = dy.data<T>();
    const T* wp = w.defined() ? w.data<T>() : nullptr;
    T* gi = grad_input.data<T>();
    T* gw = grad_weight.data<T>();
    T* gb = grad_bias.data<T>();
    // Each row's mean and rstd: the saved ones, or recomputed by the row pass into these.
    std::vector<T> means(saved ? 0 : static_cast<size_t>(rows));
    std::vector<T> rstds(saved ? 0 : static_cast<size_t>(rows));
    const T* ms = saved ? saved_mean.data<T>() : means.data();
    const T* rs = saved ? saved_rstd.data<T>() : rstds.data();
    auto row_pass = [&](int64_t begin, int64_t end) {
      if (saved) return backward_saved_dispatch(xp, dp, wp, gi, ms, rs, n, begin, end);
      backward_dispatch(xp, dp, wp, gi, means.data(), rstds.data(), n, eps, begin, end);
    };
    if (n <= kFusedMaxCols) {
      const int64_t block = std::max<int64_t>(1, kBlockItems / n);
      const int64_t blocks = (rows + block - 1) / block;
      // Per block: its sums of grad_output x^ (n doubles), then of grad_output (n doubles).
      std::unique_ptr<double[]> partial(new double[static_cast<size_t>(blocks * 2 * n)]);
      parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t k = lo; k < hi; ++k) {
          double* sw = partial.get() + k * 2 * n;
          std::fill(sw, sw + 2 * n, 0.0);
          // Groups of kGroupRows rows: their column sums read them while they are in cache.
          for (int64_t r = k * block; r < std::min(rows, (k + 1) * block); r += kGroupRows) {
            const int64_t e = std::min({rows, (k + 1) * block, r + kGroupRows});
            row_pass(r, e);
            column_dispatch(xp + r * n, dp + r * n, ms + r, rs + r, e - r, n, int64_t{0}, n, sw,
                            sw + n);
          }
        }
      });
      parallel_for(0, n, std::max<int64_t>(1, kElementwiseGrain / blocks),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t j = lo; j < hi; ++j) {
                       double sw = 0, sb = 0;
                       for (int64_t k = 0; k < blocks; ++k) {
                         sw += partial[static_cast<size_t>(k * 2 * n + j)];
                         sb += partial[static_cast<size_t>(k * 2 * n + n + j)];
                       }
                       gw[j] = static_cast<T>(sw);
                       gb[j] = static_cast<T>(sb);
                     }
                   });
      return;
    }
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n), row_pass);
    // Column blocks of at least 256 (a thread reads 1 KiB or more of each row in order).
    const int64_t block = std::max<int64_t>(256, n / std::max(1, get_num_threads()));
    parallel_for(0, n, block, [&](int64_t lo, int64_t hi) {
      std::vector<double> sw(static_cast<size_t>(hi - lo)), sb(static_cast<size_t>(hi - lo));
      column_dispatch(xp, dp, ms, rs, rows, n, lo, hi, sw.data(), sb.data());
      for (int64_t j = lo; j < hi; ++j) {
        gw[j] = static_cast<T>(sw[static_cast<size_t>(j - lo)]);
        gb[j] = static_cast<T>(sb[static_cast<size_t>(j - lo)]);
      }
    });
  });
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace tg::cpu
