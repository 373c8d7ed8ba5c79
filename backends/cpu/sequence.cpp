// CPU kernels of tril, triu, cumsum and one_hot: plain loops over contiguous data, split across
// the thread pool by independent rows.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <tapegrad/backends/cpu/softmax_rows.h>
#include <tapegrad/backends/shared/sort_plan.h>
#include <tapegrad/backends/cpu/wrapping.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// A contiguous copy of self with, in each row i of each matrix, the columns [lo(i), hi(i))
// zeroed (all-zero bytes are 0 in every dtype).
template <typename Range> Tensor zero_columns(const Tensor& self, Range range) {
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  out.copy_(self);
  const int64_t n = self.size(-2), m = self.size(-1);
  if (out.numel() == 0) return out;
  const size_t item = itemsize(self.dtype());
  char* data = static_cast<char*>(out.data_ptr());
  parallel_items(out.numel() / m, m, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const auto [lo, hi] = range(r % n, m);
      if (lo < hi) std::memset(data + (r * m + lo) * item, 0, static_cast<size_t>(hi - lo) * item);
    }
  });
  return out;
}

// a + b saturated to the int64 range: a diagonal past every row and column (any int64 is a valid
// diagonal, as in PyTorch) then keeps or zeroes everything instead of overflowing.
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace

// Row i keeps columns j <= i + diagonal.
Tensor tril(const Tensor& self, int64_t diagonal) {
  return zero_columns(self, [diagonal](int64_t i, int64_t m) {
    return std::pair{std::clamp<int64_t>(saturating_add(saturating_add(i, diagonal), 1), 0, m), m};
  });
}

// Row i keeps columns j >= i + diagonal.
Tensor triu(const Tensor& self, int64_t diagonal) {
  return zero_columns(self, [diagonal](int64_t i, int64_t m) {
    return std::pair{int64_t{0}, std::clamp<int64_t>(saturating_add(i, diagonal), 0, m)};
  });
}

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  const DType out_dtype = dtype ? *dtype : is_floating(self.dtype()) ? self.dtype() : kInt64;
  const RowLayout l = row_layout(self.shape(), wrap_dim("cumsum", dim, self.dim()));
  const Tensor x = self.to(out_dtype).contiguous();
  Tensor out = empty(self.shape(), out_dtype, self.device());
  if (out.numel() == 0) return out;
  visit_dtype("cumsum", out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Sums run in double (floating) or int64 (integral, wrapping like PyTorch's), as PyTorch's CPU
    // kernel does, so a long float32 sum loses no more than its final rounding.
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    if (l.inner == 1) {  // along contiguous rows
      // A row's running sum is a chain of dependent additions, one add's latency per element.
      // Rows are independent: kRows of them advance together, element by element, so that the
      // out-of-order core overlaps their chains and the prefetcher sees 2 kRows streams walked
      // in step. Four, not more: rows a power of two apart in bytes share one L1 set, and the
      // lines of 8 rows of input and output would evict each other (8 ways).
      constexpr int64_t kRows = 4;
      parallel_items((l.outer + kRows - 1) / kRows, kRows * l.size, [&](int64_t b, int64_t e) {
        for (int64_t g = b; g < e; ++g) {
          const int64_t r0 = g * kRows, rows = std::min(kRows, l.outer - r0);
          const T* x = in + r0 * l.size;
          T* y = o + r0 * l.size;
          if (rows == kRows) {
            Acc acc[kRows] = {};
            for (int64_t j = 0; j < l.size; ++j)
#pragma GCC unroll 4
              for (int64_t r = 0; r < kRows; ++r) {
                acc[r] = wrapping_add(acc[r], static_cast<Acc>(x[r * l.size + j]));
                y[r * l.size + j] = static_cast<T>(acc[r]);
              }
            continue;
          }
          for (int64_t r = 0; r < rows; ++r) {  // the last rows, one at a time
            Acc acc = 0;
            for (int64_t j = 0; j < l.size; ++j) {
              acc = wrapping_add(acc, static_cast<Acc>(x[r * l.size + j]));
              y[r * l.size + j] = static_cast<T>(acc);
            }
          }
        }
      });
      return;
    }
    // One task per (outer index, block of inner columns); the columns of a block advance together
    // along dim, so memory is read in order.
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (l.inner + kBlock - 1) / kBlock;
    parallel_items(l.outer * blocks, l.size * std::min(kBlock, l.inner), [&](int64_t b, int64_t e) {
      Acc acc[kBlock];
      for (int64_t t = b; t < e; ++t) {
        const int64_t i0 = (t % blocks) * kBlock, len = std::min(kBlock, l.inner - i0);
        const int64_t base = (t / blocks) * l.size * l.inner + i0;
        std::fill(acc, acc + len, Acc(0));
        for (int64_t j = 0; j < l.size; ++j)
          for (int64_t k = 0; k < len; ++k) {
            const int64_t p = base + j * l.inner + k;
            acc[k] = wrapping_add(acc[k], static_cast<Acc>(in[p]));
            o[p] = static_cast<T>(acc[k]);
          }
      }
    });
  });
  return out;
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  const Tensor x = self.contiguous();
  const int64_t* idx = x.data<int64_t>();
  const int64_t n = x.numel();
  // The class values are data: checked here, before anything is written.
  if (num_classes == -1) {
    num_classes = shared::one_hot_inferred_classes(*std::min_element(idx, idx + n),
                                                   *std::max_element(idx, idx + n));
  } else {
    for (int64_t i = 0; i < n; ++i)
      TG_CHECK(idx[i] >= 0 && idx[i] < num_classes, IndexError, "one_hot",
               "class values must be in [0, ", num_classes, "), got ", idx[i]);
  }
  Shape shape = self.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, kInt64, self.device());
  int64_t* o = out.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) o[i * num_classes + idx[i]] = 1;
  return out;
}

}  // namespace tg::cpu
