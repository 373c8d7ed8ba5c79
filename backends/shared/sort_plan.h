#pragma once
// What sort and topk order, the same on both backends: the first k elements of each row along
// dim (k = the row's length for sort), into results whose dim has size k. Arguments were checked
// before dispatch (ops/checks/sequence.cpp). Also one_hot's inferred class count.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include <tapegrad/core/error.h>
#include <tapegrad/generated/tensor.h>

#include "row_layout.h"

namespace tg::shared {

struct SortPlan {
  RowLayout rows;
  int64_t k = 0;
  Shape out_shape;
};

// topk_k: topk's k, or nullopt for sort. A 0-d self is one row of 1 and gives itself for topk's
// k = 0 as well as k = 1, as in PyTorch.
inline SortPlan sort_plan(const char* op, const Tensor& self, int64_t dim,
                          std::optional<int64_t> topk_k) {
  SortPlan p;
  const int64_t d = self.dim() == 0 ? 0 : wrap_dim(op, dim, self.dim());
  p.rows = row_layout(self.shape(), d);
  p.k = self.dim() == 0 ? 1 : topk_k ? *topk_k : p.rows.size;
  p.out_shape = self.shape();
  if (self.dim() > 0) p.out_shape[static_cast<std::size_t>(d)] = p.k;
  return p;
}

// one_hot with num_classes = -1: the largest class value plus one, from the smallest and largest
// values the backend read (class values are data, so each backend reads them its own way).
inline int64_t one_hot_inferred_classes(int64_t smallest, int64_t largest) {
  TG_CHECK(smallest >= 0, IndexError, "one_hot", "class values must be non-negative, got ",
           smallest);
  TG_CHECK(largest < std::numeric_limits<int64_t>::max(), ValueError, "one_hot", "the class value ",
           largest, " leaves no num_classes (one more than it overflows int64)");
  return largest + 1;
}

}  // namespace tg::shared
