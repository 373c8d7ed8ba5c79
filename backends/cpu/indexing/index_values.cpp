// Reading an index tensor; see index_values.h.
#include "index_values.h"

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
  EntriesBySlot g{std::vector<int64_t>(static_cast<size_t>(slots) + 1, 0),
                  std::vector<int64_t>(ix.size())};
  for (int64_t slot : ix) ++g.begin[static_cast<size_t>(slot) + 1];
  for (int64_t slot = 0; slot < slots; ++slot)
    g.begin[static_cast<size_t>(slot) + 1] += g.begin[static_cast<size_t>(slot)];
  std::vector<int64_t> next(g.begin.begin(), g.begin.end() - 1);
  for (size_t k = 0; k < ix.size(); ++k)
    g.order[static_cast<size_t>(next[static_cast<size_t>(ix[k])]++)] = static_cast<int64_t>(k);
  return g;
}

}  // namespace tg::cpu::indexing
