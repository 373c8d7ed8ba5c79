#pragma once
// Argument checks of the sequence family (tril, triu, cumsum, sort, topk, one_hot), run once
// before any backend kernel (the check convention of HELPERS.md). Each has exactly its op's
// parameter list and throws a tg::Error starting with "[op]". one_hot's class values are data:
// they are checked where the data is, in the kernel.
#include <cstdint>
#include <optional>

#include <tapegrad/core/dtype.h>
#include <tapegrad/core/tensor.h>

namespace tg::checks {

void tril(const Tensor& self, int64_t diagonal);
void triu(const Tensor& self, int64_t diagonal);
void cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype);
void sort(const Tensor& self, int64_t dim, bool descending, bool stable);
void topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted);
void one_hot(const Tensor& self, int64_t num_classes);

}  // namespace tg::checks
