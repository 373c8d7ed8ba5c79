// CPU gather, scatter, scatter_add and scatter_reduce, and the engine they share with the index ops
// (see scatter_engine.h for the line model).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <tapegrad/core/copy.h>
#include <tapegrad/core/factories.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>

#include "scatter_engine.h"

namespace tg::cpu {
namespace scatter_engine {
namespace {

// Offsets, in each of `n` tensors' strides, of line `line`: the row-major position `line` over
// every dim of `shape` but `dim`.
void line_offsets(int64_t line, const Shape& shape, int64_t dim, const Shape* const* strides, int n,
                  int64_t* offsets) {
  for (int t = 0; t < n; ++t) offsets[t] = 0;
  for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
    if (k == dim) continue;
    const int64_t coord = line % shape[k];
    line /= shape[k];
    for (int t = 0; t < n; ++t) offsets[t] += coord * (*strides[t])[k];
  }
}

// Runs fn(first_line, last_line) over the lines of `shape` along `dim`, in parallel when large.
template <typename Fn>
void for_lines(const Shape& shape, int64_t dim, Fn&& fn) {
  const int64_t length = shape[dim];
  if (shape.numel() == 0) return;
  const int64_t lines = shape.numel() / length;
  parallel_for(0, lines, std::max<int64_t>(1, kElementwiseGrain / length), fn);
}

// The identity a slot starts from when include_self is false.
template <typename T>
T identity(Reduce reduce) {
  switch (reduce) {
    case Reduce::Prod:
      return T(1);
    case Reduce::Amax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case Reduce::Amin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    default:
      return T(0);
  }
}

// One slot updated with one value; NaN wins amax/amin, as in PyTorch.
template <typename T>
void combine(T& slot, T value, Reduce reduce) {
  if constexpr (std::is_same_v<T, bool>) {
    slot = value;  // bool runs Assign only (the specs keep bool away from the
                   // reductions)
  } else {
    switch (reduce) {
      case Reduce::Assign:
        slot = value;
        break;
      case Reduce::Sum:
      case Reduce::Mean:
        slot = static_cast<T>(slot + value);
        break;
      case Reduce::Prod:
        slot = static_cast<T>(slot * value);
        break;
      case Reduce::Amax:
        if (value > slot || value != value) slot = value;
        break;
      case Reduce::Amin:
        if (value < slot || value != value) slot = value;
        break;
    }
  }
}

// Mean of a slot holding `total` over `count` contributions; integral values round down.
template <typename T>
T divide(T total, int64_t count) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(total / static_cast<T>(count));
  } else {
    const T c = static_cast<T>(count);
    T q = static_cast<T>(total / c);
    if ((total % c != 0) && ((total < 0) != (c < 0))) --q;
    return q;
  }
}

template <typename T, typename I>
void scatter_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                   Reduce reduce, bool include_self, T alpha) {
  const Shape& shape = index.shape();
  const int64_t length = shape[dim];
  const int64_t out_stride = out.stride(dim), idx_stride = index.stride(dim);
  const int64_t src_stride = src.stride(dim), slots = out.size(dim);
  const Shape* strides[3] = {&out.strides(), &index.strides(), &src.strides()};
  T* out_data = out.data<T>();
  const I* idx_data = index.data<I>();
  const T* src_data = src.data<T>();
  const bool counted = reduce == Reduce::Mean || !include_self;
  [[maybe_unused]] const bool scaled = alpha != T(1);
  for_lines(shape, dim, [&](int64_t first, int64_t last) {
    // contributions per slot of one line (cleared again at the end of each line)
    std::vector<int64_t> count(counted ? slots : 0, 0);
    for (int64_t line = first; line < last; ++line) {
      int64_t off[3];
      line_offsets(line, shape, dim, strides, 3, off);
      T* o = out_data + off[0];
      const I* ix = idx_data + off[1];
      const T* s = src_data + off[2];
      if (counted) {  // count, and reset the touched slots when self is left out
        for (int64_t k = 0; k < length; ++k) {
          const int64_t slot = ix[k * idx_stride];
          if (count[slot]++ == 0 && !include_self) o[slot * out_stride] = identity<T>(reduce);
        }
      }
      for (int64_t k = 0; k < length; ++k) {
        T value = s[k * src_stride];
        if constexpr (!std::is_same_v<T, bool>)
          if (scaled) value = static_cast<T>(value * alpha);
        combine(o[ix[k * idx_stride] * out_stride], value, reduce);
      }
      if (counted) {  // divide the means and clear the counts for the next line
        for (int64_t k = 0; k < length; ++k) {
          const int64_t slot = ix[k * idx_stride];
          if (count[slot] == 0) continue;
          if (reduce == Reduce::Mean) {
            if constexpr (!std::is_same_v<T, bool>) {
              T& v = o[slot * out_stride];
              v = divide(v, count[slot] + (include_self ? 1 : 0));
            }
          }
          count[slot] = 0;
        }
      }
    }
  });
}

template <typename T, typename I>
void gather_typed(const Tensor& result, const Tensor& self, int64_t dim, const Tensor& index) {
  const Shape& shape = index.shape();
  const int64_t length = shape[dim];
  const int64_t res_stride = result.stride(dim), idx_stride = index.stride(dim);
  const int64_t self_stride = self.stride(dim);
  const Shape* strides[3] = {&result.strides(), &index.strides(), &self.strides()};
  T* res_data = result.data<T>();
  const I* idx_data = index.data<I>();
  const T* self_data = self.data<T>();
  for_lines(shape, dim, [&](int64_t first, int64_t last) {
    for (int64_t line = first; line < last; ++line) {
      int64_t off[3];
      line_offsets(line, shape, dim, strides, 3, off);
      for (int64_t k = 0; k < length; ++k)
        res_data[off[0] + k * res_stride] =
            self_data[off[2] + idx_data[off[1] + k * idx_stride] * self_stride];
    }
  });
}

// Calls fn(TypeTag<I>{}) with I the index's C++ type (int32 or int64, as the specs allow).
template <typename Fn>
void visit_index(const Tensor& index, Fn&& fn) {
  if (index.dtype() == kInt32) return fn(TypeTag<int32_t>{});
  return fn(TypeTag<int64_t>{});
}

// The index ops on contiguous tensors, seen as [outer, slots, inner] (out) and [outer, n, inner]
// (source): entry k combines source row k into out row index[k], a whole run of `inner` values at a
// time. Tasks are (outer, column block) pairs: they write disjoint columns, so they run in
// parallel, and each walks the rows in index order (the last duplicate wins).
template <typename T, typename I>
void scatter_rows_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                        Reduce reduce, bool include_self, T alpha) {
  const int64_t slots = out.size(dim), n = index.numel();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < dim; ++k) outer *= out.size(k);
  for (int64_t k = dim + 1; k < out.dim(); ++k) inner *= out.size(k);
  const I* ix = index.data<I>();
  std::vector<int64_t> count(slots, 0);  // entries per slot (the same for every column)
  for (int64_t k = 0; k < n; ++k) ++count[ix[k]];
  const int64_t block = 256, blocks = (inner + block - 1) / block;
  T* out_data = out.data<T>();
  const T* src_data = src.data<T>();
  [[maybe_unused]] const bool scaled = alpha != T(1);
  parallel_for(0, outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (n * block)),
               [&](int64_t first, int64_t last) {
                 for (int64_t task = first; task < last; ++task) {
                   const int64_t o = task / blocks, j0 = (task % blocks) * block;
                   const int64_t j1 = std::min(inner, j0 + block);
                   T* o_base = out_data + o * slots * inner;
                   const T* s_base = src_data + o * n * inner;
                   if (!include_self)
                     for (int64_t slot = 0; slot < slots; ++slot)
                       if (count[slot] > 0)
                         std::fill(o_base + slot * inner + j0, o_base + slot * inner + j1,
                                   identity<T>(reduce));
                   for (int64_t k = 0; k < n; ++k) {
                     T* orow = o_base + ix[k] * inner;
                     const T* srow = s_base + k * inner;
                     for (int64_t j = j0; j < j1; ++j) {
                       T value = srow[j];
                       if constexpr (!std::is_same_v<T, bool>)
                         if (scaled) value = static_cast<T>(value * alpha);
                       combine(orow[j], value, reduce);
                     }
                   }
                   if constexpr (!std::is_same_v<T, bool>) {
                     if (reduce != Reduce::Mean) continue;
                     for (int64_t slot = 0; slot < slots; ++slot) {
                       if (count[slot] == 0) continue;
                       T* orow = o_base + slot * inner;
                       for (int64_t j = j0; j < j1; ++j)
                         orow[j] = divide(orow[j], count[slot] + (include_self ? 1 : 0));
                     }
                   }
                 }
               });
}

}  // namespace

Reduce parse_reduce(const std::string& name) {
  if (name == "sum") return Reduce::Sum;
  if (name == "prod") return Reduce::Prod;
  if (name == "mean") return Reduce::Mean;
  if (name == "amax") return Reduce::Amax;
  if (name == "amin") return Reduce::Amin;
  fail<ValueError>("scatter", "unknown reduce '", name, "'");
}

void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  const Tensor flat = index.contiguous();
  visit_index(flat, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* data = flat.data<I>();
    for (int64_t i = 0; i < flat.numel(); ++i)
      TG_CHECK(data[i] >= 0 && data[i] < size, IndexError, op, "index ", data[i],
               " is out of range for dim ", dim, " of size ", size, " (valid: 0 to ", size - 1,
               "; negative indices are not accepted)");
  });
}

void scatter_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                  Reduce reduce, bool include_self, const Scalar& alpha) {
  visit_dtype("scatter", out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_index(index, [&](auto itag) {
      using I = typename decltype(itag)::type;
      scatter_typed<T, I>(out, dim, index, src, reduce, include_self, alpha.to<T>());
    });
  });
}

bool scatter_rows_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                       Reduce reduce, bool include_self, const Scalar& alpha) {
  if (!src.is_contiguous() || !out.is_contiguous()) return false;
  const Tensor flat = index.contiguous();
  visit_dtype("scatter", out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_index(flat, [&](auto itag) {
      using I = typename decltype(itag)::type;
      scatter_rows_typed<T, I>(out, dim, flat, src, reduce, include_self, alpha.to<T>());
    });
  });
  return true;
}

Tensor select_rows(const Tensor& self, int64_t dim, const Tensor& index) {
  if (!self.is_contiguous()) return {};
  const Tensor flat = index.contiguous();
  Shape shape = self.shape();
  shape[dim] = flat.numel();
  Tensor result = empty(shape, self.dtype(), self.device());
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < dim; ++k) outer *= shape[k];
  for (int64_t k = dim + 1; k < self.dim(); ++k) inner *= shape[k];
  const int64_t n = flat.numel(), slots = self.size(dim);
  const int64_t bytes = inner * static_cast<int64_t>(itemsize(self.dtype()));
  const char* from = static_cast<const char*>(self.data_ptr());
  char* to = static_cast<char*>(result.data_ptr());
  visit_index(flat, [&](auto itag) {
    const auto* ix = flat.data<typename decltype(itag)::type>();
    parallel_for(0, outer * n,
                 std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner)),
                 [&](int64_t first, int64_t last) {
                   for (int64_t row = first; row < last; ++row) {
                     const int64_t o = row / n, k = row % n;
                     std::memcpy(to + row * bytes, from + (o * slots + ix[k]) * bytes, bytes);
                   }
                 });
  });
  return result;
}

Tensor gather_from(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor result = empty(index.shape(), self.dtype(), self.device());
  visit_dtype("gather", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_index(index, [&](auto itag) {
      gather_typed<T, typename decltype(itag)::type>(result, self, dim, index);
    });
  });
  return result;
}

Tensor fresh_copy(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

}  // namespace scatter_engine

namespace {
using namespace scatter_engine;

// The shared checks of gather/scatter*: index and src have self's rank, src has self's dtype, index
// fits in src (every dim) and in self (every dim but `dim`), and every index value is in range.
// Returns the wrapped dim. Tensors are the 0-d-as-[1] forms.
int64_t check_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor* src) {
  const int64_t d = wrap_dim(op, dim, self.dim());
  TG_CHECK(index.dim() == self.dim(), ValueError, op, "index must have as many dims as self (",
           self.dim(), "), got a ", index.dim(), "-d index");
  if (src) {
    TG_CHECK(src->dtype() == self.dtype(), TypeError, op, "src has dtype ",
             dtype_name(src->dtype()), ", expected self's dtype ", dtype_name(self.dtype()));
    TG_CHECK(src->dim() == self.dim(), ValueError, op, "src must have as many dims as self (",
             self.dim(), "), got ", src->dim());
  }
  for (int64_t k = 0; k < self.dim(); ++k) {
    TG_CHECK(k == d || index.size(k) <= self.size(k), ValueError, op,
             "shape mismatch: index has shape ", index.shape(), ", larger than self's shape ",
             self.shape(), " in dim ", k);
    TG_CHECK(!src || index.size(k) <= src->size(k), ValueError, op,
             "shape mismatch: index has shape ", index.shape(), ", larger than src's shape ",
             src->shape(), " in dim ", k);
  }
  check_index_range(op, index, d, self.size(d));
  return d;
}

// scatter, scatter_add and scatter_reduce: self copied, then src scattered into the copy.
Tensor scatter_op(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor& src, Reduce reduce, bool include_self) {
  const Tensor self1 = as_1d(self), index1 = as_1d(index), src1 = as_1d(src);
  const int64_t d = check_scatter(op, self1, dim, index1, &src1);
  Tensor out = fresh_copy(self1);
  if (index1.numel() > 0) scatter_into(out, d, index1, src1, reduce, include_self);
  return self.dim() == 0 ? out.reshape({}) : out;
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = as_1d(self), index1 = as_1d(index);
  const int64_t d = check_scatter("gather", self1, dim, index1, nullptr);
  const Tensor result = gather_from(self1, d, index1);
  return index.dim() == 0 ? result.reshape({}) : result;
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter", self, dim, index, src, Reduce::Assign, true);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter_add", self, dim, index, src, Reduce::Sum, true);
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  return scatter_op("scatter_reduce", self, dim, index, src, parse_reduce(reduce), include_self);
}

}  // namespace tg::cpu
