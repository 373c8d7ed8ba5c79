// CPU reductions: sum, mean, prod, amax, amin, and max/min along a dim with indices.
//
// Every reduction is brought to one shape: the input's memory read as a contiguous block
// [outer, size, inner], where out[o, i] reduces in[o, :, i]. inner == 1 reduces rows (many
// accumulators per row); inner > 1 reduces columns, a block of accumulators advancing row by row.
// Both loops vectorize. Transposed and permuted inputs are read in place, in memory order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include <tapegrad/backends/cpu/reduce_row_simd.h>
#include <tapegrad/backends/cpu/wrapping.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {
namespace {

// ---- which dims --------------------------------------------------------------------------------

// reduced[d] for each dim of a tensor with `ndim` dims; an empty `dims` reduces all of them.
// A 0-d tensor accepts dim 0 or -1 (and reduces nothing), as in PyTorch. The dims were checked
// before dispatch (ops/checks/reduce.cpp: in range, none twice, no empty slot where the reduction
// has no identity).
std::vector<bool> reduced_dims(const char* op, int64_t ndim, IntArrayRef dims) {
  std::vector<bool> reduced(ndim, dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, ndim);
    if (ndim > 0) reduced[w] = true;
  }
  return reduced;
}

// ---- the [outer, size, inner] layout -------------------------------------------------------

struct ReduceLayout {
  Tensor input;  // its data is read as a contiguous [outer, size, inner] block
  int64_t outer = 1, size = 1, inner = 1;
  Shape out_shape, out_strides;  // the result, laid out so that out[o * inner + i] lines up
};

// The dims of t of size > 1 in memory order (outermost first) when t's elements fill its memory
// without gaps, as for contiguous, transposed and permuted tensors; nullopt otherwise.
std::optional<std::vector<int64_t>> dense_order(const Tensor& t) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) order.push_back(d);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return t.strides()[a] > t.strides()[b]; });
  int64_t expected = 1;
  for (size_t j = order.size(); j-- > 0;) {
    if (t.strides()[order[j]] != expected) return std::nullopt;
    expected *= t.size(order[j]);
  }
  return order;
}

ReduceLayout make_layout(const Tensor& self, const std::vector<bool>& reduced, bool keepdim) {
  const Shape& shape = self.shape();
  ReduceLayout l;
  l.input = self;
  std::optional<std::vector<int64_t>> found = dense_order(self);
  if (!found) {  // gaps or repeats (slices, expanded dims): copy to row-major first
    l.input = self.contiguous();
    found.emplace();
    for (int64_t d = 0; d < self.dim(); ++d)
      if (shape[d] != 1) found->push_back(d);
  }
  std::vector<int64_t> order = *found;
  // The reduced dims must be adjacent in memory order; otherwise gather them last with a copy.
  auto reduced_span = [&](int64_t& first, int64_t& last) {
    first = last = -1;
    for (int64_t j = 0; j < static_cast<int64_t>(order.size()); ++j) {
      if (!reduced[order[j]]) continue;
      if (first < 0) first = j;
      last = j;
    }
    for (int64_t j = std::max<int64_t>(first, 0); j <= last; ++j)
      if (!reduced[order[j]]) return false;
    return true;
  };
  int64_t first = -1, last = -1;
  if (!reduced_span(first, last)) {
    std::vector<int64_t> kept_first;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t d : order)
        if (reduced[d] == (pass == 1)) kept_first.push_back(d);
    Shape perm_shape, perm_strides;
    for (int64_t d : kept_first) {
      perm_shape.push_back(shape[d]);
      perm_strides.push_back(l.input.strides()[d]);
    }
    const Tensor permuted = make_view(l.input, perm_shape, perm_strides, l.input.storage_offset());
    l.input = permuted.contiguous();
    order = kept_first;
    reduced_span(first, last);
  }
  // An empty tensor's other dims may be huge (an expanded 0-size gradient): a group holding a 0
  // is 0, and a product that overflows saturates; the output's allocation then rejects it.
  auto group = [&](int64_t j) -> int64_t& {
    return first < 0 || j < first ? l.outer : j <= last ? l.size : l.inner;
  };
  for (int64_t j = 0; j < static_cast<int64_t>(order.size()); ++j)
    if (shape[order[j]] == 0) group(j) = 0;
  for (int64_t j = 0; j < static_cast<int64_t>(order.size()); ++j) {
    int64_t& g = group(j);
    if (g != 0 && __builtin_mul_overflow(g, shape[order[j]], &g))
      g = std::numeric_limits<int64_t>::max();
  }
  // Output strides: kept dims in the input's memory order (row-major for row-major inputs).
  Shape keep_shape;
  for (size_t d = 0; d < shape.size(); ++d) keep_shape.push_back(reduced[d] ? 1 : shape[d]);
  Shape strides = contiguous_strides(keep_shape);
  int64_t step = 1;
  for (size_t j = order.size(); j-- > 0;) {
    if (reduced[order[j]]) continue;
    strides[order[j]] = step;
    if (__builtin_mul_overflow(step, std::max<int64_t>(shape[order[j]], 1), &step))
      step = std::numeric_limits<int64_t>::max();  // empty output, or empty_strided rejects it
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d] && !keepdim) continue;
    l.out_shape.push_back(keep_shape[d]);
    l.out_strides.push_back(strides[d]);
  }
  return l;
}

Tensor empty_output(const ReduceLayout& l, DType dtype, const Tensor& self) {
  return empty_strided(l.out_shape, l.out_strides, dtype, self.device());
}

// Reduced dims that are not adjacent in memory (mean over (0, 2, 3) of an NCHW batch): the
// innermost run of them, which a first pass reduces in place (keeping them as size-1 dims), and
// then every reduced dim of that pass's small result. make_layout would otherwise gather the
// input with a copy first (3-4x libtorch's time for the NCHW mean). nullopt where one pass reads
// the input in place already, and for inputs with gaps (make_layout copies those anyway) or no
// elements.
struct SplitReduction {
  std::vector<bool> inner;  // the first pass's dims
  int64_t inner_count = 1;  // values per result of the first pass
};
std::optional<SplitReduction> split_reduction(const Tensor& self,
                                              const std::vector<bool>& reduced) {
  const std::optional<std::vector<int64_t>> order = dense_order(self);
  if (!order || self.numel() == 0) return std::nullopt;
  SplitReduction s{std::vector<bool>(reduced.size(), false)};
  auto j = static_cast<int64_t>(order->size()) - 1;
  while (j >= 0 && !reduced[(*order)[j]]) --j;
  for (; j >= 0 && reduced[(*order)[j]]; --j) {
    s.inner[(*order)[j]] = true;
    s.inner_count *= self.size((*order)[j]);
  }
  for (; j >= 0; --j)
    if (reduced[(*order)[j]]) return s;
  return std::nullopt;  // one run (size-1 dims aside): make_layout reads it in place
}

// ---- reduction policies: identity, one step, and merging two partial results ---------------

template <typename T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// Integer accumulators wrap around on overflow (wrapping.h).
template <typename Acc> struct SumOp {
  static Acc identity() { return Acc(0); }
  template <typename T> static Acc step(Acc a, T v) { return wrapping_add(a, static_cast<Acc>(v)); }
  static Acc merge(Acc a, Acc b) { return wrapping_add(a, b); }
};

template <typename Acc> struct ProdOp {
  static Acc identity() { return Acc(1); }
  template <typename T> static Acc step(Acc a, T v) { return wrapping_mul(a, static_cast<Acc>(v)); }
  static Acc merge(Acc a, Acc b) { return wrapping_mul(a, b); }
};

// max (Greater) or min (Less); NaN wins, as in PyTorch.
template <typename T, bool Greater> struct ExtremeOp {
  static T identity() {
    if constexpr (std::is_same_v<T, bool>)
      return !Greater;
    else if constexpr (std::is_floating_point_v<T>)
      return Greater ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else
      return Greater ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  static bool better(T v, T best) {
    return (Greater ? v > best : v < best) || (is_nan(v) && !is_nan(best));
  }
  static T step(T a, T v) { return better(v, a) ? v : a; }
  static T merge(T a, T b) { return step(a, b); }
  static constexpr bool kGreater = Greater;  // marks the extreme ops for reduce_row_lanes
};

// ---- the reduction driver --------------------------------------------------------------------

constexpr int64_t kGrain = kElementwiseGrain;  // elements read per parallel task, at least
constexpr int64_t kColumnBlock = 4096;         // most accumulators per column task (one row
                                               // of them is read as one long contiguous run)
constexpr int64_t kMinColumnBlock = 64;
// Rows per partial result of a column reduction, and values per partial result of a long row.
// Both are fixed, so that the order of additions depends on the shape alone: a result has the
// same bits at every thread count. The partial results are then merged in order.
constexpr int64_t kRowBlock = 256;
constexpr int64_t kRowChunk = kGrain;

// One row with kLanes independent accumulators: the compiler turns them into vector registers.
// Two cases have their own loops, which the compiler vectorises where the generic one does not
// (or only with conversions):
// - float32 sums: each lane adds kSumBlock values in float32, then into its double accumulator.
//   A lane's float32 partial sum of 8 values is off by at most 7 u sum|x| (u = 2^-24), so a sum's
//   error is at most 7 u sum|x_i| plus the final rounding to float32 (the double additions add
//   n 2^-53 sum|x_i|); docs/SEMANTICS.md states it. The 32 double lanes are merged by the fixed
//   tree of merge_sum_lanes, which the vector kernels below compute with whole vectors: a chain
//   of 32 dependent additions cost as much as the rest of a 1024-value row. (The double
//   additions are exact for most data, as float32 partials of similar magnitude have spare bits
//   in a double, so the merge order rarely changes a result.)
// - max/min of floating values: a plain compare-and-select per lane, and a separate "NaN seen"
//   flag per lane; a row with a NaN returns its first NaN (NaN wins, as in PyTorch). Ties keep the
//   first value per lane, as the generic loop does. (The AVX2 build uses extreme_row_avx2 below.)
// The sum of the 32 double lanes of a float32 row sum, in the tree that 4-lane (AVX2) vectors
// compute: u[e] = (L[e] + L[8+e]) + (L[16+e] + L[24+e]) for e < 8 (vectors of lanes 8k .. 8k+7
// added), v[e] = u[e] + u[4+e], then (v[0] + v[2]) + (v[1] + v[3]).
inline double merge_sum_lanes(const double* lane) {
  double u[8], v[4];
  for (int e = 0; e < 8; ++e) u[e] = (lane[e] + lane[8 + e]) + (lane[16 + e] + lane[24 + e]);
  for (int e = 0; e < 4; ++e) v[e] = u[e] + u[4 + e];
  return (v[0] + v[2]) + (v[1] + v[3]);
}

template <typename Op, typename Acc, typename T>
__attribute__((always_inline)) inline Acc reduce_row_lanes(const T* p, int64_t n) {
  constexpr int kLanes = 32;
  if constexpr (std::is_same_v<Op, SumOp<double>> && std::is_same_v<T, float>) {
    constexpr int kSumBlock = 8;
    double acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes * kSumBlock <= n; i += kLanes * kSumBlock) {
      float part[kLanes];  // from the first value, not 0 + it: the same double sum
      for (int k = 0; k < kLanes; ++k) part[k] = p[i + k];
      for (int b = 1; b < kSumBlock; ++b)
        for (int k = 0; k < kLanes; ++k) part[k] += p[i + b * kLanes + k];
      for (int k = 0; k < kLanes; ++k) acc[k] += part[k];
    }
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += p[i + k];
    double result = merge_sum_lanes(acc);
    for (; i < n; ++i) result += p[i];
    return result;
  } else if constexpr (requires { Op::kGreater; } && std::is_floating_point_v<T>) {
    T acc[kLanes];
    int nan[kLanes] = {};
    for (T& a : acc) a = Op::identity();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) {
        const T v = p[i + k];
        acc[k] = (Op::kGreater ? v > acc[k] : v < acc[k]) ? v : acc[k];
        nan[k] |= v != v;
      }
    T result = Op::identity();
    int any_nan = 0;
    for (int k = 0; k < kLanes; ++k) {
      result = (Op::kGreater ? acc[k] > result : acc[k] < result) ? acc[k] : result;
      any_nan |= nan[k];
    }
    for (; i < n; ++i) {
      result = (Op::kGreater ? p[i] > result : p[i] < result) ? p[i] : result;
      any_nan |= p[i] != p[i];
    }
    if (any_nan)
      for (int64_t j = 0; j < n; ++j)
        if (p[j] != p[j]) return p[j];
    return result;
  } else {
    Acc acc[kLanes];
    for (Acc& a : acc) a = Op::identity();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] = Op::step(acc[k], p[i + k]);
    // Lanes merged by folding halves (lane k with k + 16, then k + 8, ...): five dependent
    // steps where a chain through the 32 lanes took about as long as the rest of a 1024-value
    // row, and each step is whole vectors of adjacent lanes.
    for (int half = kLanes / 2; half > 0; half /= 2)
      for (int k = 0; k < half; ++k) acc[k] = Op::merge(acc[k], acc[k + half]);
    Acc result = acc[0];
    for (; i < n; ++i) result = Op::step(result, p[i]);
    return result;
  }
}

// The same loops written with AVX2 (and AVX-512 for long rows) intrinsics in reduce_row_simd.h,
// picked at run time on CPUs that have them (the build targets baseline x86-64, where a float ->
// double sum converts two values per instruction, not four). All do the same additions in the
// same order, so the results are bit-identical. Below: the AVX2 kernels for one row
// (reduce_row_avx2) and for rows b .. e - 1 of an [outer, size] block (reduce_rows_avx2, which
// inlines the kernel in its loop: no call and no dispatch per row).
#if defined(__x86_64__) && defined(__GNUC__)
using row_simd::extreme_long_row_avx512;
using row_simd::extreme_row_avx2;
using row_simd::sum_long_row_avx512;
using row_simd::sum_row_avx2;

template <typename Op, typename T>
constexpr bool kHasRowKernel = (requires { Op::kGreater; } &&
                                (std::is_same_v<T, float> || std::is_same_v<T, double>)) ||
                               (std::is_same_v<Op, SumOp<double>> && std::is_same_v<T, float>);
template <typename Op, typename Acc, typename T>
__attribute__((target("avx2"), always_inline)) inline Acc row_avx2(const T* p, int64_t n) {
  if constexpr (requires { Op::kGreater; } &&
                (std::is_same_v<T, float> || std::is_same_v<T, double>))
    return extreme_row_avx2<Op::kGreater>(p, n);
  else if constexpr (std::is_same_v<Op, SumOp<double>> && std::is_same_v<T, float>)
    return sum_row_avx2(p, n);
  else
    return reduce_row_lanes<Op, Acc>(p, n);
}
template <typename Op, typename Acc, typename T>
__attribute__((target("avx2"))) Acc reduce_row_avx2(const T* p, int64_t n) {
  return row_avx2<Op, Acc>(p, n);
}
// float32 products with 512-bit vectors: the lanes' loop converts every value to double, and
// an AVX-512 vector converts twice as many per instruction (the same lanes: the same bits).
// (Clang, the sanitizer builds' compiler, takes no vector width in the attribute.)
#if defined(__clang__)
#define TG_AVX512_LANES __attribute__((target("avx512f,avx512dq")))
#else
#define TG_AVX512_LANES __attribute__((target("avx512f,avx512dq,prefer-vector-width=512")))
#endif
template <typename Op, typename Acc, typename T>
TG_AVX512_LANES Acc reduce_row_avx512(const T* p, int64_t n) {
  return reduce_row_lanes<Op, Acc>(p, n);
}
#undef TG_AVX512_LANES
template <typename Op, typename Acc, typename T, typename Out, typename Finish>
__attribute__((target("avx2"))) void reduce_rows_avx2(const T* in, Out* out, int64_t b, int64_t e,
                                                      int64_t size, const Finish& finish) {
  for (int64_t o = b; o < e; ++o)
    out[o] = static_cast<Out>(finish(row_avx2<Op, Acc>(in + o * size, size)));
}
#endif

// Float32 column sums: acc[j] += rows r0 .. r1 - 1 of column j (row r at in + r * inner), each
// group of kColumnSumRows rows added in float32 first (row by row, the first row not added to
// 0), then that partial sum in double: the error bound of the row sums (7 u sum|x| per group),
// and an eighth of the double loads and stores of acc, which bound the plain loop. Groups start
// at r0 (a multiple of kRowBlock), so the order depends on the shape alone; lanes are columns,
// so every instruction set gives the same bits.
constexpr int64_t kColumnSumRows = 8;
// acc[j] += the float32 sum of `rows` rows from p (a constant count in the loop below, so the
// compiler unrolls it).
__attribute__((always_inline)) inline void add_row_group(const float* p, int64_t inner,
                                                         int64_t rows, int64_t len, double* acc) {
  for (int64_t j = 0; j < len; ++j) {
    float part = p[j];
    for (int64_t k = 1; k < rows; ++k) part += p[k * inner + j];
    acc[j] += part;
  }
}
__attribute__((always_inline)) inline void sum_columns_lanes(const float* in, int64_t inner,
                                                             int64_t r0, int64_t r1, int64_t len,
                                                             double* acc) {
  int64_t r = r0;
  for (; r + kColumnSumRows <= r1; r += kColumnSumRows)
    add_row_group(in + r * inner, inner, kColumnSumRows, len, acc);
  if (r < r1) add_row_group(in + r * inner, inner, r1 - r, len, acc);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void sum_columns_avx2(const float* in, int64_t inner, int64_t r0,
                                                      int64_t r1, int64_t len, double* acc) {
  sum_columns_lanes(in, inner, r0, r1, len, acc);
}
#endif
void sum_columns(const float* in, int64_t inner, int64_t r0, int64_t r1, int64_t len, double* acc) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return sum_columns_avx2(in, inner, r0, r1, len, acc);
#endif
  sum_columns_lanes(in, inner, r0, r1, len, acc);
}

// acc[j] = step(acc[j], row r's column j) for rows r0 .. r1 - 1: the column loop of the
// reductions without their own (max, min and prod), also built for AVX2 and picked at run time
// (8 float lanes per compare-and-select instead of 4, 4 double products instead of 2; each
// column's steps in the same order, so the same bits). The baseline loop's speed moved by a third
// with the library's code layout.
template <typename Op, typename Acc, typename T>
__attribute__((always_inline)) inline void step_columns_lanes(const T* in, int64_t inner,
                                                              int64_t r0, int64_t r1, int64_t len,
                                                              Acc* acc) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* row = in + r * inner;
    for (int64_t j = 0; j < len; ++j) acc[j] = Op::step(acc[j], row[j]);
  }
}
#if defined(__x86_64__) && defined(__GNUC__)
template <typename Op, typename Acc, typename T>
__attribute__((target("avx2"))) void step_columns_avx2(const T* in, int64_t inner, int64_t r0,
                                                       int64_t r1, int64_t len, Acc* acc) {
  step_columns_lanes<Op>(in, inner, r0, r1, len, acc);
}
#endif
template <typename Op, typename Acc, typename T>
void step_columns(const T* in, int64_t inner, int64_t r0, int64_t r1, int64_t len, Acc* acc) {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (kHasRowKernel<Op, T> || std::is_same_v<Op, ProdOp<double>>)
    if (cpu_has_avx2()) return step_columns_avx2<Op>(in, inner, r0, r1, len, acc);
#endif
  step_columns_lanes<Op>(in, inner, r0, r1, len, acc);
}

// One row reduced whole: a full reduction's chunks (or all of a small one), and rows without a
// row kernel.
template <typename Op, typename Acc, typename T> Acc reduce_row(const T* p, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (std::is_same_v<Op, SumOp<double>> && std::is_same_v<T, float>)
    if (cpu_runs_avx512()) return sum_long_row_avx512(p, n);
  if constexpr (requires { Op::kGreater; } && std::is_same_v<T, float>)
    if (cpu_runs_avx512()) return extreme_long_row_avx512<Op::kGreater>(p, n);
  if constexpr (std::is_same_v<Op, ProdOp<double>> && std::is_same_v<T, float>)
    if (cpu_runs_avx512()) return reduce_row_avx512<Op, Acc>(p, n);
  if (cpu_has_avx2()) return reduce_row_avx2<Op, Acc>(p, n);
#endif
  return reduce_row_lanes<Op, Acc>(p, n);
}

// Runs fn(line, i0, len) for blocks of `len` adjacent columns i0 .. i0 + len - 1 of each of
// outer * row_blocks lines (line = o * row_blocks + row block), in parallel. Tasks of one line are
// adjacent, so that a thread reads whole rows; blocks narrow when there are fewer lines than
// threads so that every thread has work.
template <typename Fn>
void for_column_blocks(const ReduceLayout& l, int64_t row_blocks, int64_t rows, Fn fn) {
  int64_t block = std::min(kColumnBlock, l.inner);
  const int64_t threads = get_num_threads();
  const int64_t lines = l.outer * row_blocks;
  if (lines < threads)
    block = std::min(block, std::max(kMinColumnBlock, (l.inner + threads - 1) / threads));
  const int64_t blocks = (l.inner + block - 1) / block;
  const int64_t work = std::max<int64_t>(rows * block, 1);
  parallel_for(0, lines * blocks, std::max<int64_t>(1, kGrain / work), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t i0 = (t % blocks) * block;
      fn(t / blocks, i0, std::min(block, l.inner - i0));
    }
  });
}

// out[o * inner + i] = finish(reduction of in[o, :, i]) over the layout.
template <typename Op, typename Acc, typename T, typename Out, typename Finish>
void reduce_kernel(const T* in, Out* out, const ReduceLayout& l, Finish finish) {
  const int64_t outer = l.outer, size = l.size, inner = l.inner;
  if (inner == 1 && size >= 2 * kRowChunk) {
    // Long rows (a full reduction): chunks of every row in parallel, merged in order.
    const int64_t chunks = (size + kRowChunk - 1) / kRowChunk;
    std::unique_ptr<Acc[]> partial(new Acc[outer * chunks]);
    parallel_for(0, outer * chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t start = (t % chunks) * kRowChunk;
        partial[t] = reduce_row<Op, Acc>(in + (t / chunks) * size + start,
                                         std::min(kRowChunk, size - start));
      }
    });
    for (int64_t o = 0; o < outer; ++o) {
      Acc acc = partial[o * chunks];
      for (int64_t c = 1; c < chunks; ++c) acc = Op::merge(acc, partial[o * chunks + c]);
      out[o] = static_cast<Out>(finish(acc));
    }
  } else if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(size, 1)),
                 [&](int64_t b, int64_t e) {
#if defined(__x86_64__) && defined(__GNUC__)
                   if constexpr (kHasRowKernel<Op, T>)
                     if (cpu_has_avx2())
                       return reduce_rows_avx2<Op, Acc>(in, out, b, e, size, finish);
#endif
                   for (int64_t o = b; o < e; ++o)
                     out[o] = static_cast<Out>(finish(reduce_row<Op, Acc>(in + o * size, size)));
                 });
  } else {
    // Columns: blocks of kRowBlock rows give partial results per column (so that threads split
    // rows, each reading whole rows, rather than columns), merged in row order.
    const int64_t row_blocks = size > kRowBlock ? (size + kRowBlock - 1) / kRowBlock : 1;
    const int64_t rows = row_blocks > 1 ? kRowBlock : size;
    // Not a std::vector: Acc may be bool (amax of bool), whose vector has no data().
    std::unique_ptr<Acc[]> partial(row_blocks > 1 ? new Acc[outer * row_blocks * inner] : nullptr);
    for_column_blocks(l, row_blocks, rows, [&](int64_t line, int64_t i0, int64_t len) {
      const int64_t o = line / row_blocks, r0 = (line % row_blocks) * rows;
      Acc acc[kColumnBlock];
      for (int64_t j = 0; j < len; ++j) acc[j] = Op::identity();
      if constexpr (std::is_same_v<Op, SumOp<double>> && std::is_same_v<T, float>) {
        sum_columns(in + o * size * inner + i0, inner, r0, std::min(size, r0 + rows), len, acc);
      } else {
        step_columns<Op>(in + o * size * inner + i0, inner, r0, std::min(size, r0 + rows), len,
                         acc);
      }
      if (row_blocks > 1) {
        std::copy(acc, acc + len, partial.get() + line * inner + i0);
        return;
      }
      Out* dst = out + o * inner + i0;
      for (int64_t j = 0; j < len; ++j) dst[j] = static_cast<Out>(finish(acc[j]));
    });
    if (row_blocks == 1) return;
    parallel_for(0, outer * inner, kGrain / row_blocks + 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const Acc* p = partial.get() + (t / inner) * row_blocks * inner + t % inner;
        Acc acc = p[0];
        for (int64_t rb = 1; rb < row_blocks; ++rb) acc = Op::merge(acc, p[rb * inner]);
        out[t] = static_cast<Out>(finish(acc));
      }
    });
  }
}

// Reduces `self` over `reduced` into a new tensor of dtype out_dtype, accumulating in
// double (floating outputs) or int64 (integral and bool outputs).
template <template <typename> class Op>
Tensor accumulate(const char* op, const Tensor& self, const std::vector<bool>& reduced,
                  bool keepdim, DType out_dtype, bool divide_by_count = false,
                  double values_per_input = 1) {
  if (const std::optional<SplitReduction> split = split_reduction(self, reduced)) {
    // The first pass keeps its results in the accumulator's type (float64 or int64), so the
    // second adds them as the one pass would have: one rounding to out_dtype, at the end.
    const DType partial_dtype = is_floating(out_dtype) ? kFloat64 : kInt64;
    const Tensor partial = accumulate<Op>(op, self, split->inner, true, partial_dtype);
    return accumulate<Op>(op, partial, reduced, keepdim, out_dtype, divide_by_count,
                          static_cast<double>(split->inner_count));
  }
  const ReduceLayout l = make_layout(self, reduced, keepdim);
  Tensor out = empty_output(l, out_dtype, self);
  if (out.numel() == 0) return out;
  // mean's divisor: the values behind each result (values_per_input: each input value is itself
  // a sum of that many, from a first pass)
  const double count = static_cast<double>(l.size) * values_per_input;
  visit_dtype(op, self.dtype(), [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    visit_dtype(op, out_dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      if constexpr (std::is_floating_point_v<Out>) {
        reduce_kernel<Op<double>, double>(l.input.data<T>(), out.data<Out>(), l, [&](double a) {
          return divide_by_count ? a / count : a;
        });
      } else {
        reduce_kernel<Op<int64_t>, int64_t>(l.input.data<T>(), out.data<Out>(), l,
                                            [](int64_t a) { return a; });
      }
    });
  });
  return out;
}

// amax / amin: same dtype in and out, no identity.
template <bool Greater>
Tensor extreme(const char* op, const Tensor& self, const std::vector<bool>& reduced, bool keepdim) {
  if (const std::optional<SplitReduction> split = split_reduction(self, reduced))
    return extreme<Greater>(op, extreme<Greater>(op, self, split->inner, true), reduced, keepdim);
  const ReduceLayout l = make_layout(self, reduced, keepdim);
  Tensor out = empty_output(l, self.dtype(), self);
  if (out.numel() == 0) return out;
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_kernel<ExtremeOp<T, Greater>, T>(l.input.data<T>(), out.data<T>(), l,
                                            [](T a) { return a; });
  });
  return out;
}

// The first r < n with matches(p[r]); one must match. Blocks of values are tested whole (a loop
// without an exit, which the compiler vectorises), then the block with a match value by value.
template <typename T, typename Matches>
int64_t first_match(const T* p, int64_t n, const Matches& matches) {
  constexpr int64_t kBlock = 32;
  int64_t r = 0;
  for (; r + kBlock <= n; r += kBlock) {
    int any = 0;  // an int: with a bool, GCC 12 leaves the loop scalar
    for (int64_t k = 0; k < kBlock; ++k) any |= static_cast<int>(matches(p[r + k]));
    if (any) break;
  }
  while (!matches(p[r])) ++r;
  return r;
}

// max / min along one dim: values and the first index of the extreme (the first NaN if any).
template <bool Greater> std::tuple<Tensor, Tensor> extreme_with_index(const char* op,
                                                                      const Tensor& self,
                                                                      int64_t dim, bool keepdim) {
  const std::vector<bool> reduced = reduced_dims(op, self.dim(), {dim});
  const ReduceLayout l = make_layout(self, reduced, keepdim);
  Tensor values = empty_output(l, self.dtype(), self);
  Tensor indices = empty_output(l, kInt64, self);
  if (values.numel() == 0) return {values, indices};
  const int64_t size = l.size, inner = l.inner;
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Cmp = ExtremeOp<T, Greater>;
    const T* in = l.input.data<T>();
    T* val = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    if (inner == 1) {
      // The row's extreme from the vectorised row kernel (amax's), then its first position: a
      // compare-and-branch per value ran at a few times that cost. The first value equal to the
      // extreme is the one the sequential scan keeps (ties, and -0 against +0, keep the first);
      // with a NaN, the extreme is the first NaN.
      parallel_for(0, l.outer, std::max<int64_t>(1, kGrain / size), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* row = in + o * size;
          const T extreme = reduce_row<Cmp, T>(row, size);
          const int64_t best = is_nan(extreme)
                                   ? first_match(row, size, [](T v) { return is_nan(v); })
                                   : first_match(row, size, [&](T v) { return v == extreme; });
          val[o] = row[best];
          idx[o] = best;
        }
      });
      return;
    }
    for_column_blocks(l, 1, size, [&](int64_t o, int64_t i0, int64_t len) {
      T* best = val + o * inner + i0;
      int64_t* best_r = idx + o * inner + i0;
      std::copy(in + o * size * inner + i0, in + o * size * inner + i0 + len, best);
      std::fill(best_r, best_r + len, 0);
      for (int64_t r = 1; r < size; ++r) {
        const T* row = in + (o * size + r) * inner + i0;
        for (int64_t j = 0; j < len; ++j) {
          const bool take = Cmp::better(row[j], best[j]);
          best[j] = take ? row[j] : best[j];
          best_r[j] = take ? r : best_r[j];
        }
      }
    });
  });
  return {values, indices};
}

// The dtype sum and prod return: integral and bool inputs give int64, as in PyTorch.
DType accumulate_dtype(DType in, std::optional<DType> requested) {
  if (requested) return *requested;
  return is_floating(in) ? in : kInt64;
}

}  // namespace

Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  // Fast path: a full reduction of a small contiguous float tensor (no layout, no allocation).
  if (dim.empty() && !keepdim && !dtype && self.numel() <= kGrain && self.is_contiguous() &&
      (self.dtype() == kFloat32 || self.dtype() == kFloat64)) {
    Tensor out = empty({}, self.dtype(), self.device());
    if (self.dtype() == kFloat32)
      *out.data<float>() =
          static_cast<float>(reduce_row<SumOp<double>, double>(self.data<float>(), self.numel()));
    else
      *out.data<double>() = reduce_row<SumOp<double>, double>(self.data<double>(), self.numel());
    return out;
  }
  const std::vector<bool> reduced = reduced_dims("sum", self.dim(), dim);
  const DType out_dtype = accumulate_dtype(self.dtype(), dtype);
  // With an explicit dtype the input is converted first (sum(x, dtype=bool) is an "any").
  const Tensor input = dtype && *dtype != self.dtype() ? self.to(*dtype) : self;
  return accumulate<SumOp>("sum", input, reduced, keepdim, out_dtype);
}

Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const std::vector<bool> reduced = reduced_dims("mean", self.dim(), dim);
  return accumulate<SumOp>("mean", self, reduced, keepdim, self.dtype(), /*divide_by_count=*/true);
}

Tensor prod(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const std::vector<bool> reduced =
      dim ? reduced_dims("prod", self.dim(), {*dim}) : reduced_dims("prod", self.dim(), {});
  return accumulate<ProdOp>("prod", self, reduced, keepdim,
                            accumulate_dtype(self.dtype(), std::nullopt));
}

Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return extreme<true>("amax", self, reduced_dims("amax", self.dim(), dim), keepdim);
}

Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return extreme<false>("amin", self, reduced_dims("amin", self.dim(), dim), keepdim);
}

std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_with_index<true>("max", self, dim, keepdim);
}

std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_with_index<false>("min", self, dim, keepdim);
}

}  // namespace tg::cpu
