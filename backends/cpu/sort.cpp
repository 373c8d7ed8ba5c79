// CPU kernels of sort and topk. Each row along dim is gathered into a buffer of indices, ordered
// by a comparator that puts nan above every number and breaks ties by index (so both ops are
// stable: equal elements keep their order), and written back with its values. Whole rows of
// float32/float64/int32/int64 of 64 values and more take an LSD radix sort with the same order.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include <tapegrad/backends/cpu/softmax_rows.h>
#include <tapegrad/backends/shared/sort_plan.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// a before b in sort's order, nan above every number (as in PyTorch), bool false < true;
// without branches on the NaN tests: descending, a > b, a NaN above a number, nothing above a
// NaN; ascending the mirror image.
template <bool kDescending, typename T> bool better(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return kDescending ? (!(a <= b) & (b == b)) : ((a == a) & !(a >= b));
  else
    return kDescending ? b < a : a < b;
}

// The k first positions of a row of n values (value j at row[j * inner]) in sort's order, into
// best[0, k): one pass that keeps the best k so far in order, so most values cost one
// comparison, with the current k-th (a partial sort through a heap of indices compared each value
// through its index). Positions come in increasing order, so a tie never displaces an earlier
// one: the ties-by-index order of `before` below.
constexpr int64_t kFewBest = 32;
template <bool kDescending, typename T>
void few_best(const T* row, int64_t n, int64_t inner, int64_t k, int64_t* best) {
  T value[kFewBest];
  int64_t count = 0;
  for (int64_t j = 0; j < n; ++j) {
    const T v = row[j * inner];
    if (count == k && !better<kDescending>(v, value[k - 1])) continue;
    int64_t at = count < k ? count++ : k - 1;  // the free slot, or the k-th, which v displaces
    for (; at > 0 && better<kDescending>(v, value[at - 1]); --at) {
      value[at] = value[at - 1];
      best[at] = best[at - 1];
    }
    value[at] = v;
    best[at] = j;
  }
}

// ---- whole rows of numbers: an LSD radix sort ---------------------------------------------------
// Unsigned keys whose order is sort's: ascending, floats from -inf up with every nan one key at
// the top and -0.0 the key of 0.0 (the comparator ties them), signed integers with the sign bit
// flipped; descending, every bit flipped. The radix sort is stable, so ties keep index order in
// both directions, as the comparator's tie-break does: the same result as the comparison sort,
// in a few passes of bucketing instead of log2(n) passes of comparisons through indices.
template <typename T> constexpr bool kRadixSorts =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t>;
template <typename T> using RadixKey = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <typename T> RadixKey<T> radix_key(T v, bool descending) {
  using K = RadixKey<T>;
  constexpr K sign = K{1} << (8 * sizeof(T) - 1);
  K key;
  if constexpr (std::is_floating_point_v<T>) {
    if (v != v) {
      key = ~K{0};
    } else {
      const T value = v == 0 ? T(0) : v;  // -0.0 ties with 0.0
      K bits;
      std::memcpy(&bits, &value, sizeof bits);
      key = (bits & sign) ? ~bits : (bits | sign);
    }
  } else {
    key = static_cast<K>(v) ^ sign;
  }
  return descending ? static_cast<K>(~key) : key;
}

// The n positions of a row (value j at row[j * inner]) in sort's order, into order[0, n), by
// bytes of the key from the lowest; a byte every key shares is skipped. Buffers hold n each.
template <typename T> struct RadixBuffers {
  std::vector<RadixKey<T>> keys, keys_next;
  std::vector<uint32_t> positions, positions_next;
  explicit RadixBuffers(int64_t n)
      : keys(static_cast<size_t>(n)), keys_next(keys.size()), positions(keys.size()),
        positions_next(keys.size()) {}
};
template <typename T> void radix_order(const T* row, int64_t n, int64_t inner, bool descending,
                                       RadixBuffers<T>& b, int64_t* order) {
  constexpr int kBytes = sizeof(RadixKey<T>);
  uint32_t counts[kBytes][256] = {};
  for (int64_t j = 0; j < n; ++j) {
    const RadixKey<T> key = radix_key(row[j * inner], descending);
    b.keys[static_cast<size_t>(j)] = key;
    b.positions[static_cast<size_t>(j)] = static_cast<uint32_t>(j);
    for (int d = 0; d < kBytes; ++d) ++counts[d][(key >> (8 * d)) & 255];
  }
  for (int d = 0; d < kBytes; ++d) {
    if (counts[d][(b.keys[0] >> (8 * d)) & 255] == static_cast<uint32_t>(n)) continue;
    uint32_t start[256], total = 0;
    for (int v = 0; v < 256; ++v) {
      start[v] = total;
      total += counts[d][v];
    }
    for (int64_t j = 0; j < n; ++j) {
      const RadixKey<T> key = b.keys[static_cast<size_t>(j)];
      const uint32_t at = start[(key >> (8 * d)) & 255]++;
      b.keys_next[at] = key;
      b.positions_next[at] = b.positions[static_cast<size_t>(j)];
    }
    b.keys.swap(b.keys_next);
    b.positions.swap(b.positions_next);
  }
  for (int64_t j = 0; j < n; ++j) order[j] = b.positions[static_cast<size_t>(j)];
}

// Rows at least this long take the radix sort (shorter ones: the comparison sort's few
// comparisons cost less than the radix's 256-bucket passes).
constexpr int64_t kRadixMinRow = 64;

// Orders the first k positions of each row along dim (backends/shared/sort_plan.h) and writes
// their values and indices.
std::tuple<Tensor, Tensor> ordered_rows(const char* op, const Tensor& self,
                                        const shared::SortPlan& plan, bool descending) {
  const RowLayout& l = plan.rows;
  const int64_t k = plan.k;
  Tensor values = empty(plan.out_shape, self.dtype(), self.device());
  Tensor indices = empty(plan.out_shape, kInt64, self.device());
  if (values.numel() == 0) return {values, indices};
  const Tensor x = self.contiguous();
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = values.data<T>();
    int64_t* out_index = indices.data<int64_t>();
    parallel_items(l.rows(), l.size * 8, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(l.size));
      constexpr bool kRadix = kRadixSorts<T>;
      const bool radix = kRadix && k == l.size && l.size >= kRadixMinRow && l.size <= INT32_MAX;
      std::optional<RadixBuffers<T>> buffers;
      if constexpr (kRadix)
        if (radix) buffers.emplace(l.size);
      for (int64_t r = begin; r < end; ++r) {
        const T* row = in + l.start(r);
        // Ties go to the lower index in both directions: a total order, so the result is the
        // stable one whichever algorithm orders it.
        auto before = [&](int64_t a, int64_t b) {
          const T va = row[a * l.inner], vb = row[b * l.inner];
          if (descending ? better<true>(va, vb) : better<false>(va, vb)) return true;
          if (descending ? better<true>(vb, va) : better<false>(vb, va)) return false;
          return a < b;
        };
        if (radix) {
          if constexpr (kRadix)
            radix_order(row, l.size, l.inner, descending, *buffers, order.data());
        } else if (k <= kFewBest && k < l.size) {
          if (descending)
            few_best<true>(row, l.size, l.inner, k, order.data());
          else
            few_best<false>(row, l.size, l.inner, k, order.data());
        } else {
          std::iota(order.begin(), order.end(), int64_t{0});
          if (k == l.size)
            std::sort(order.begin(), order.end(), before);
          else
            std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        }
        const int64_t first = (r / l.inner) * k * l.inner + r % l.inner;
        for (int64_t j = 0; j < k; ++j) {
          out[first + j * l.inner] = row[order[j] * l.inner];
          out_index[first + j * l.inner] = order[j];
        }
      }
    });
  });
  return {values, indices};
}

}  // namespace

// Always stable: `stable` is there for PyTorch's signature.
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool /*stable*/) {
  return ordered_rows("sort", self, shared::sort_plan("sort", self, dim, std::nullopt), descending);
}

// sorted = false is accepted and still returns the k elements in order (one rule to test).
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool /*sorted*/) {
  return ordered_rows("topk", self, shared::sort_plan("topk", self, dim, k), largest);
}

}  // namespace tg::cpu
