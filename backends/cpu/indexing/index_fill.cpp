// CPU index_fill: the slices self.select(dim, i) for i in index set to one value, and the gradient
// of that value (index_fill_value_backward: the sum of grad over the filled slices).
//
// The index values are checked (the dim and the index's rank were checked before dispatch,
// ops/checks/index.cpp) and turned into one flag per position along dim (so a repeated index, or
// -1 next to n-1, fills its slice once); then the result is written row by row of
// [outer, n, inner] (rows.h): the value on filled rows, self's row elsewhere, in parallel.
#include <algorithm>
#include <vector>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

#include "data_checks.h"
#include "index_values.h"
#include "rows.h"

namespace tg::cpu {
namespace {
using indexing::Dims3;
using indexing::dims3;
using indexing::Rows;
using indexing::rows_of;

// The positions along dim d (already wrapped) that index names, each once and in order, after
// checking the index values, before any write. A list, not a flag per position: dim d of an
// expanded tensor can be far longer than anything that could be held (a fuzzer found 2^62).
std::vector<int64_t> filled_positions(const char* op, const Tensor& self, int64_t d,
                                      const Tensor& index) {
  const int64_t n = self.dim() == 0 ? 1 : self.shape()[static_cast<size_t>(d)];
  const std::vector<int64_t> values = indexing::index_values(index);
  indexing::check_fill_index(op, values, d, n);
  std::vector<int64_t> positions;
  positions.reserve(values.size());
  for (int64_t i : values) positions.push_back(i < 0 ? i + n : i);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  return positions;
}

// The slices to fill as positions along dim, with self seen as [outer, n, inner].
struct Filled {
  std::vector<int64_t> positions;  // sorted, each once
  Dims3 dims;
};

Filled filled_slices(const char* op, const Tensor& t, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(op, dim, t.dim());
  Filled f;
  f.positions = filled_positions(op, t, d, index);
  f.dims = dims3(t.dim() == 0 ? Shape{1} : t.shape(), d);
  return f;
}

// Row by row of [outer, n, inner]: the value on filled rows, self's row (read in place when
// contiguous or an expanded scalar) elsewhere; one pass, no separate copy of self.
template <typename T>
Tensor fill_slices(const char* op, const Tensor& self, int64_t dim, const Tensor& index, T value) {
  const Filled f = filled_slices(op, self, dim, index);
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  if (self.numel() == 0) return out;
  const Rows<T> rows = rows_of<T>(self, self.dim() == 0 ? 0 : wrap_dim(op, dim, self.dim()));
  const int64_t n = f.dims.mid, inner = f.dims.inner;
  std::vector<char> filled(static_cast<size_t>(n), 0);  // n <= out's numel: out exists
  for (int64_t j : f.positions) filled[static_cast<size_t>(j)] = 1;
  T* o = out.data<T>();
  parallel_for(0, f.dims.outer * n, std::max<int64_t>(1, kElementwiseGrain / inner),
               [&](int64_t first, int64_t last) {
                 for (int64_t row = first; row < last; ++row) {
                   T* dst = o + row * inner;
                   if (filled[static_cast<size_t>(row % n)])
                     std::fill_n(dst, inner, value);
                   else
                     std::copy_n(rows.row(row / n, row % n), inner, dst);
                 }
               });
  return out;
}

}  // namespace

Tensor index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index,
                         const Scalar& value) {
  return visit_dtype("index_fill_scalar", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fill_slices<T>("index_fill_scalar", self, dim, index, value.to<T>());
  });
}

Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return visit_dtype("index_fill", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fill_slices<T>("index_fill", self, dim, index, load_one<T>(value));
  });
}

}  // namespace tg::cpu

namespace tg::cpu {

Tensor index_fill_value_backward(const Tensor& grad_output, int64_t dim, const Tensor& index) {
  constexpr const char* op = "index_fill_value_backward";
  const Filled f = filled_slices(op, grad_output, dim, index);
  return visit_floating(op, grad_output.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto result = [&](double total) {
      return scalar_tensor(static_cast<T>(total), grad_output.dtype(), grad_output.device());
    };
    // The filled rows of [outer, n, inner] are row (k / P) * n + positions[k % P] for k < count.
    // Nothing is walked or sized by count before the gradient is known to be held in memory:
    // an expanded gradient's outer dims can be far longer than that (a fuzzer found 2^61 rows
    // of an empty gradient).
    const int64_t per_outer = static_cast<int64_t>(f.positions.size());
    if (grad_output.numel() == 0 || per_outer == 0) return result(0.0);
    const int64_t inner = f.dims.inner, count = f.dims.outer * per_outer;
    if (holds_one_value(grad_output))  // a sum's gradient: count * inner copies of one value
      return result(0.0 + static_cast<double>(*grad_output.data<T>()) *
                              static_cast<double>(count * inner));  // 0 + : -0 sums to +0
    const int64_t d = grad_output.dim() == 0 ? 0 : wrap_dim(op, dim, grad_output.dim());
    const Rows<T> g = rows_of<T>(grad_output, d);  // a dense copy if expanded: held memory
    std::vector<double> partial(static_cast<size_t>(count), 0.0);  // per row, summed in order
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / inner);
    parallel_for(0, count, grain, [&](int64_t first, int64_t last) {
      for (int64_t k = first; k < last; ++k) {
        const int64_t position = f.positions[static_cast<size_t>(k % per_outer)];
        const T* x = g.row(k / per_outer, position);
        double total = 0;
        for (int64_t j = 0; j < inner; ++j) total += static_cast<double>(x[j]);
        partial[static_cast<size_t>(k)] = total;
      }
    });
    double total = 0;
    for (double p : partial) total += p;
    return result(total);
  });
}

}  // namespace tg::cpu
