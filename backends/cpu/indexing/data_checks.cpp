// The indexing kernels' checks on data; see data_checks.h.
#include "data_checks.h"

#include <tapegrad/core/error.h>

#include "index_values.h"
#include "layout.h"

namespace tg::cpu::indexing {

void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  const Tensor flat = dense(index);
  visit_index(flat, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* data = flat.data<I>();
    const int64_t n = flat.numel();
    // A branch-free scan first (it vectorises); the slow loop below only names the bad value.
    bool bad = false;
    for (int64_t i = 0; i < n; ++i) bad |= (data[i] < 0) | (data[i] >= size);
    if (!bad) return;
    for (int64_t i = 0; i < n; ++i)
      TG_CHECK(data[i] >= 0 && data[i] < size, IndexError, op, "index ", data[i],
               " is out of range for dim ", dim, " of size ", size, " (valid: 0 to ", size - 1,
               "; negative indices are not accepted)");
  });
}

void check_fill_index(const char* op, const std::vector<int64_t>& values, int64_t dim,
                      int64_t size) {
  for (int64_t i : values)
    TG_CHECK(i >= -size && i < size, IndexError, op, "index ", i, " is out of range for dim ", dim,
             " of size ", size, " (expected an index in [", -size, ", ", size - 1, "])");
}

void check_source_count(const char* op, int64_t selected, int64_t source_numel) {
  TG_CHECK(selected <= source_numel, ValueError, op, "the mask selects ", selected,
           " elements but source has only ", source_numel, " (source needs at least ", selected,
           " elements)");
}

void check_source_shape_count(const char* op, int64_t selected, int64_t source_numel) {
  TG_CHECK(selected <= source_numel, ValueError, op, "the mask selects ", selected,
           " elements but source_shape has only ", source_numel, " elements");
}

}  // namespace tg::cpu::indexing
