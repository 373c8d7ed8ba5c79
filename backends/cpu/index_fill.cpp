// CPU index_fill: the slices self.select(dim, i) for i in index set to one value.
//
// The index is checked and turned into one flag per position along dim (so a repeated index, or
// -1 next to n-1, fills its slice once); then the result is a copy of self (one fast contiguous
// copy) with the value written over the filled slices, in parallel over the outer dims.
#include <algorithm>
#include <vector>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {
namespace {

// filled[j] for each position j along dim d (already wrapped); every index check happens here,
// before any write.
std::vector<char> filled_positions(const char* op, const Tensor& self, int64_t d, const Tensor& index) {
  TG_CHECK(index.dim() <= 1, ValueError, op, "index must be 0-d or 1-d, got a ", index.dim(),
           "-d tensor of shape ", index.shape());
  const int64_t n = self.dim() == 0 ? 1 : self.shape()[static_cast<size_t>(d)];
  std::vector<char> filled(static_cast<size_t>(n), 0);
  for (int64_t i : index.to_vector<int64_t>()) {
    TG_CHECK(i >= -n && i < n, IndexError, op, "index ", i, " is out of range for dim ", d,
             " of size ", n, " (expected an index in [", -n, ", ", n - 1, "])");
    filled[static_cast<size_t>(i < 0 ? i + n : i)] = 1;
  }
  return filled;
}

template <typename T>
Tensor fill_slices(const char* op, const Tensor& self, int64_t dim, const Tensor& index, T value) {
  const int64_t d = wrap_dim(op, dim, self.dim());
  const std::vector<char> filled = filled_positions(op, self, d, index);
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  if (self.numel() == 0) return out;
  copy_data(out, self);
  // out is [outer, n, inner]; write value into the [inner] runs of the filled positions.
  std::vector<int64_t> positions;
  for (size_t j = 0; j < filled.size(); ++j)
    if (filled[j]) positions.push_back(static_cast<int64_t>(j));
  if (positions.empty()) return out;
  const int64_t n = static_cast<int64_t>(filled.size());
  int64_t inner = 1;
  for (int64_t k = d + 1; k < self.dim(); ++k) inner *= self.shape()[static_cast<size_t>(k)];
  const int64_t outer = self.numel() / (n * inner);
  const int64_t per_outer = static_cast<int64_t>(positions.size()) * inner;  // elements written
  T* o = out.data<T>();
  parallel_for(0, outer, std::max<int64_t>(1, kElementwiseGrain / per_outer), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t j : positions) std::fill_n(o + (r * n + j) * inner, inner, value);
  });
  return out;
}

}  // namespace

Tensor index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return visit_dtype("index_fill_scalar", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fill_slices<T>("index_fill_scalar", self, dim, index, value.to<T>());
  });
}

Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  TG_CHECK(value.dim() == 0, ValueError, "index_fill", "value must be a 0-d tensor, got shape ",
           value.shape(), " (use a Scalar or value.reshape({}) for one element)");
  return visit_dtype("index_fill", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fill_slices<T>("index_fill", self, dim, index, load_one<T>(value));
  });
}

}  // namespace tg::cpu
