#pragma once
// Helpers myops' backward formulas call (tapegrad_add_ops(... HEADERS formulas.h)): the formula
// grammar has calls, operators and names, not braces, so a dim list lives in a helper. Public ops
// only, so double backward works through them too.
#include <tapegrad/tapegrad.h>

namespace myops {

// [n, m] -> [n, 1]: the sum of each row, kept 2-d.
inline tg::Tensor row_sums(const tg::Tensor& t) { return tg::sum(t, {1}, true); }
// [n, m] -> [m, 1]: the sum of each column, as a column.
inline tg::Tensor col_sums(const tg::Tensor& t) {
  return tg::transpose(tg::sum(t, {0}, true), 0, 1);
}

}  // namespace myops
