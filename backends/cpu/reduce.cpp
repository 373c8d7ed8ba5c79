// CPU reductions: sum, mean, prod, amax, amin, and max/min along a dim with indices.
//
// Every reduction is brought to one shape: a contiguous block [outer, size, inner] where
// out[o, i] reduces in[o, :, i]. inner == 1 is a row reduction (several accumulators per row);
// inner > 1 reduces columns, with a block of accumulators advancing row by row (vectorizes).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <tapegrad/core/factories.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {
namespace {

// ---- which dims, and the output shape --------------------------------------------------------

// reduced[d] for each dim of a tensor with `ndim` dims; an empty `dims` reduces all of them.
// A 0-d tensor accepts dim 0 or -1 (and reduces nothing), as in PyTorch.
std::vector<bool> reduced_dims(const char* op, int64_t ndim, IntArrayRef dims) {
  std::vector<bool> reduced(ndim, dims.empty());
  std::vector<bool> seen(std::max<int64_t>(ndim, 1), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op, d, std::max<int64_t>(ndim, 1));
    TG_CHECK(!seen[w], ValueError, op, "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (ndim > 0) reduced[w] = true;
  }
  return reduced;
}

// The shape of the result: reduced dims become 1 (keepdim) or disappear.
Shape reduced_shape(const Shape& shape, const std::vector<bool>& reduced, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Reductions with no identity (amax, max, ...) reject an empty slot, as PyTorch does.
void check_nonempty_slots(const char* op, const Shape& shape, const std::vector<bool>& reduced) {
  for (size_t d = 0; d < shape.size(); ++d)
    TG_CHECK(!reduced[d] || shape[d] != 0, ValueError, op, "cannot reduce over dim ", d,
             " of size 0 (shape ", shape, "): the operation has no identity");
}

// ---- the [outer, size, inner] layout ---------------------------------------------------------

struct ReduceLayout {
  Tensor input;  // contiguous
  int64_t outer = 1, size = 1, inner = 1;
};

// When the reduced dims form one block (dims of size 1 may sit anywhere), the contiguous input
// already is [outer, size, inner]; otherwise move the reduced dims last and copy.
ReduceLayout make_layout(const Tensor& self, const std::vector<bool>& reduced) {
  const Shape& shape = self.shape();
  const int64_t ndim = self.dim();
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d] || shape[d] == 1) continue;
    if (first < 0) first = d;
    last = d;
  }
  ReduceLayout l;
  if (first < 0) {  // nothing (of size > 1) reduced: every element is its own slot
    l.input = self.contiguous();
    l.outer = self.numel();
    return l;
  }
  bool block = true;
  for (int64_t d = first; d <= last; ++d) block = block && (reduced[d] || shape[d] == 1);
  if (block) {
    l.input = self.contiguous();
    for (int64_t d = 0; d < ndim; ++d) {
      int64_t& part = d < first ? l.outer : d <= last ? l.size : l.inner;
      part *= shape[d];
    }
    return l;
  }
  Shape perm_shape, perm_strides;
  for (int pass = 0; pass < 2; ++pass) {  // kept dims first, then reduced dims
    for (int64_t d = 0; d < ndim; ++d) {
      if (reduced[d] != (pass == 1)) continue;
      perm_shape.push_back(shape[d]);
      perm_strides.push_back(self.strides()[d]);
      (pass == 0 ? l.outer : l.size) *= shape[d];
    }
  }
  l.input = make_view(self, perm_shape, perm_strides, self.storage_offset()).contiguous();
  return l;
}

// ---- reduction policies: identity, one step, and merging two partial results ----------------

template <typename T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

template <typename Acc> struct SumOp {
  static Acc identity() { return Acc(0); }
  template <typename T> static Acc step(Acc a, T v) { return a + static_cast<Acc>(v); }
  static Acc merge(Acc a, Acc b) { return a + b; }
};

template <typename Acc> struct ProdOp {
  static Acc identity() { return Acc(1); }
  template <typename T> static Acc step(Acc a, T v) { return a * static_cast<Acc>(v); }
  static Acc merge(Acc a, Acc b) { return a * b; }
};

// max (Greater) or min (Less); NaN wins, as in PyTorch.
template <typename T, bool Greater> struct ExtremeOp {
  static T identity() {
    if constexpr (std::is_same_v<T, bool>) return !Greater;
    else if constexpr (std::is_floating_point_v<T>)
      return Greater ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else return Greater ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  static bool better(T v, T best) {
    return (Greater ? v > best : v < best) || (is_nan(v) && !is_nan(best));
  }
  static T step(T a, T v) { return better(v, a) ? v : a; }
  static T merge(T a, T b) { return step(a, b); }
};

// ---- the reduction driver ---------------------------------------------------------------------

constexpr int64_t kGrain = kElementwiseGrain;  // elements read per parallel task, at least
constexpr int64_t kColumnBlock = 256;          // accumulators per column task

// One row with 8 independent accumulators (they vectorize and hide add latency).
template <typename Op, typename Acc, typename T> Acc reduce_row(const T* p, int64_t n) {
  constexpr int kLanes = 8;
  Acc acc[kLanes];
  for (Acc& a : acc) a = Op::identity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] = Op::step(acc[k], p[i + k]);
  for (; i < n; ++i) acc[0] = Op::step(acc[0], p[i]);
  for (int k = 1; k < kLanes; ++k) acc[0] = Op::merge(acc[0], acc[k]);
  return acc[0];
}

// out[o * inner + i] = finish(reduction of in[o, :, i]) over the layout.
template <typename Op, typename Acc, typename T, typename Out, typename Finish>
void reduce_kernel(const T* in, Out* out, const ReduceLayout& l, Finish finish) {
  const int64_t outer = l.outer, size = l.size, inner = l.inner;
  if (inner == 1 && outer < get_num_threads() && size >= 2 * kGrain) {
    // Few long rows (a full reduction): split each row among the threads, merge in order.
    const int64_t chunks = std::min<int64_t>(get_num_threads(), size / kGrain);
    const int64_t chunk = (size + chunks - 1) / chunks;
    std::vector<Acc> partial(chunks);
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = in + o * size;
      parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          const int64_t start = c * chunk, len = std::min(chunk, size - start);
          partial[c] = reduce_row<Op, Acc>(row + start, std::max<int64_t>(len, 0));
        }
      });
      Acc acc = partial[0];
      for (int64_t c = 1; c < chunks; ++c) acc = Op::merge(acc, partial[c]);
      out[o] = static_cast<Out>(finish(acc));
    }
  } else if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(size, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o)
                     out[o] = static_cast<Out>(finish(reduce_row<Op, Acc>(in + o * size, size)));
                 });
  } else {
    // Columns: a task owns up to kColumnBlock adjacent outputs and walks the rows.
    const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
    const int64_t work = std::max<int64_t>(size * std::min(inner, kColumnBlock), 1);
    parallel_for(0, outer * blocks, std::max<int64_t>(1, kGrain / work), [&](int64_t b, int64_t e) {
      Acc acc[kColumnBlock];
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / blocks, i0 = (t % blocks) * kColumnBlock;
        const int64_t len = std::min(kColumnBlock, inner - i0);
        for (int64_t j = 0; j < len; ++j) acc[j] = Op::identity();
        for (int64_t r = 0; r < size; ++r) {
          const T* row = in + (o * size + r) * inner + i0;
          for (int64_t j = 0; j < len; ++j) acc[j] = Op::step(acc[j], row[j]);
        }
        for (int64_t j = 0; j < len; ++j) out[o * inner + i0 + j] = static_cast<Out>(finish(acc[j]));
      }
    });
  }
}

// Reduces `self` over `reduced` into a new tensor of dtype out_dtype, accumulating in
// double (floating outputs) or int64 (integral and bool outputs).
template <template <typename> class Op>
Tensor accumulate(const char* op, const Tensor& self, const std::vector<bool>& reduced,
                  bool keepdim, DType out_dtype, bool divide_by_count = false) {
  Tensor out = empty(reduced_shape(self.shape(), reduced, keepdim), out_dtype, self.device());
  if (out.numel() == 0) return out;
  const ReduceLayout l = make_layout(self, reduced);
  const double count = static_cast<double>(l.size);
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
Tensor extreme(const char* op, const Tensor& self, IntArrayRef dim, bool keepdim) {
  const std::vector<bool> reduced = reduced_dims(op, self.dim(), dim);
  check_nonempty_slots(op, self.shape(), reduced);
  Tensor out = empty(reduced_shape(self.shape(), reduced, keepdim), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const ReduceLayout l = make_layout(self, reduced);
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_kernel<ExtremeOp<T, Greater>, T>(l.input.data<T>(), out.data<T>(), l,
                                            [](T a) { return a; });
  });
  return out;
}

// max / min along one dim: values and the first index of the extreme (the first NaN if any).
template <bool Greater>
std::tuple<Tensor, Tensor> extreme_with_index(const char* op, const Tensor& self, int64_t dim,
                                              bool keepdim) {
  const std::vector<bool> reduced = reduced_dims(op, self.dim(), {dim});
  check_nonempty_slots(op, self.shape(), reduced);
  const Shape shape = reduced_shape(self.shape(), reduced, keepdim);
  Tensor values = empty(shape, self.dtype(), self.device());
  Tensor indices = empty(shape, kInt64, self.device());
  if (values.numel() == 0) return {values, indices};
  const ReduceLayout l = make_layout(self, reduced);
  const int64_t size = l.size, inner = l.inner;
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Cmp = ExtremeOp<T, Greater>;
    const T* in = l.input.data<T>();
    T* val = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    // One output per (o, i); rows of the slot advance by `inner`.
    parallel_for(0, l.outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(size, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t t = b; t < e; ++t) {
                     const T* p = in + (t / inner) * size * inner + t % inner;
                     T best = p[0];
                     int64_t best_r = 0;
                     for (int64_t r = 1; r < size; ++r) {
                       if (Cmp::better(p[r * inner], best)) {
                         best = p[r * inner];
                         best_r = r;
                       }
                     }
                     val[t] = best;
                     idx[t] = best_r;
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
  const std::vector<bool> reduced = reduced_dims("sum", self.dim(), dim);
  const DType out_dtype = accumulate_dtype(self.dtype(), dtype);
  // With an explicit dtype the input is converted first (sum(x, dtype=bool) is an "any").
  const Tensor input = dtype && *dtype != self.dtype() ? self.to(*dtype) : self;
  return accumulate<SumOp>("sum", input, reduced, keepdim, out_dtype);
}

Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim) {
  TG_CHECK(is_floating(self.dtype()), TypeError, "mean",
           "self must have a floating dtype, got ", dtype_name(self.dtype()));
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
  return extreme<true>("amax", self, dim, keepdim);
}

Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return extreme<false>("amin", self, dim, keepdim);
}

std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_with_index<true>("max", self, dim, keepdim);
}

std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_with_index<false>("min", self, dim, keepdim);
}

}  // namespace tg::cpu
