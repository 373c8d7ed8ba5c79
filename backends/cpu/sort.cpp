// CPU kernels of sort and topk. Each row along dim is gathered into a buffer of indices, ordered
// by a comparator that puts nan above every number and breaks ties by index (so both ops are
// stable: equal elements keep their order), and written back with its values.
#include <algorithm>
#include <numeric>
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
        if (k <= kFewBest && k < l.size) {
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
