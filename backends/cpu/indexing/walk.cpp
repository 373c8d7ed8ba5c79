// The walk form's strides and offsets; see walk.h.
#include "walk.h"

namespace tg::cpu::indexing {

Walk::Walk(const Shape& shape, int64_t dim) : shape_(shape), dim_(dim), length_(shape[dim]) {
  for (int64_t k = 0; k < dim; ++k) outer_ *= shape[k];
  for (int64_t k = dim + 1; k < static_cast<int64_t>(shape.size()); ++k) {
    inner_ *= shape[k];
    if (shape[k] != 1) long_inner_.push_back(k);  // size-1 dims have no say in strides
  }
}

int Walk::add(const Tensor& t) { return add_strides(t.strides()); }

int Walk::add_dense(const Shape& shape) { return add_strides(contiguous_strides(shape)); }

int Walk::add_strides(const Shape& strides) {
  strides_[count_] = strides;
  along_[count_] = strides[dim_];
  inner_step_[count_] = long_inner_.empty() ? 0 : strides[long_inner_.back()];
  for (size_t i = 0; i + 1 < long_inner_.size(); ++i)  // the dims after dim collapse?
    if (strides[long_inner_[i]] != strides[long_inner_[i + 1]] * shape_[long_inner_[i + 1]])
      collapses_ = false;
  return count_++;
}

int64_t Walk::outer_offset(int t, int64_t o) const {
  int64_t offset = 0;
  for (int64_t k = dim_ - 1; k >= 0; --k) {
    offset += (o % shape_[k]) * strides_[t][k];
    o /= shape_[k];
  }
  return offset;
}

int64_t Walk::inner_offset(int t, int64_t i) const {
  int64_t offset = 0;
  for (int64_t k = static_cast<int64_t>(shape_.size()) - 1; k > dim_; --k) {
    offset += (i % shape_[k]) * strides_[t][k];
    i /= shape_[k];
  }
  return offset;
}

}  // namespace tg::cpu::indexing
