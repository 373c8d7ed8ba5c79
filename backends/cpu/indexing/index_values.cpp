// Reading an index tensor; see index_values.h.
#include "index_values.h"

#include <algorithm>

#include "layout.h"

namespace tg::cpu::indexing {

std::vector<int64_t> index_values(const Tensor& index) {
  const Tensor flat = dense(index);
  std::vector<int64_t> values(static_cast<size_t>(flat.numel()));
  visit_index(flat, [&](auto tag) {
    const auto* p = flat.data<typename decltype(tag)::type>();
    for (size_t k = 0; k < values.size(); ++k) values[k] = p[k];
  });
  return values;
}

EntriesBySlot group_by_slot(const std::vector<int64_t>& ix, int64_t slots) {
  EntriesBySlot g{ScratchInt64(static_cast<size_t>(slots) + 1, 0), ScratchInt64(ix.size())};
  for (int64_t slot : ix) ++g.begin[static_cast<size_t>(slot) + 1];
  for (int64_t slot = 0; slot < slots; ++slot)
    g.begin[static_cast<size_t>(slot) + 1] += g.begin[static_cast<size_t>(slot)];
  // begin[b] is slot b's next free place while the entries go in (in index order), so it ends
  // at the start of slot b + 1: one shift right restores the starts, with no second array.
  for (size_t k = 0; k < ix.size(); ++k)
    g.order[static_cast<size_t>(g.begin[static_cast<size_t>(ix[k])]++)] = static_cast<int64_t>(k);
  if (slots > 0) std::copy_backward(g.begin.begin(), g.begin.end() - 2, g.begin.end() - 1);
  g.begin[0] = 0;
  return g;
}

}  // namespace tg::cpu::indexing
