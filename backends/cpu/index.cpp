// CPU index_select, index_add, index_copy and index_reduce: the row form of the scatter engine
// (scatter_engine.h); index_select gathers through the 1-d index viewed as expanded to the
// result's shape (stride 0 off dim), which copies whole rows. Their arguments were checked before
// dispatch (ops/checks/index.cpp); the index values are checked here, before anything is written.
#include <tapegrad/core/factories.h>
#include <tapegrad/generated/kernels.h>

#include "scatter_engine.h"

namespace tg::cpu {
namespace {
using namespace scatter_engine;

// index_add, index_copy and index_reduce: self copied, then source scattered into the copy.
Tensor index_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& source, Reduce reduce, bool include_self,
                     const Scalar& alpha = 1) {
  const Tensor self1 = as_1d(self), source1 = as_1d(source);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  check_index_range(op, index, d, self1.size(d));  // the rows form reads every value unchecked
  Tensor out = fresh_copy(self1);
  if (index.numel() > 0) scatter_rows_into(out, d, index, source1, reduce, include_self, alpha);
  return self.dim() == 0 ? out.reshape({}) : out;
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = as_1d(self);
  const int64_t d = wrap_dim("index_select", dim, self1.dim());
  check_index_range("index_select", index, d, self1.size(d));
  Shape shape = self1.shape();
  shape[d] = index.numel();
  const Tensor result = gather_from("index_select", self1, d, expand_index(index, shape, d));
  return self.dim() == 0 && index.dim() == 0 ? result.reshape({}) : result;
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  return index_scatter("index_add", self, dim, index, source, Reduce::Sum, true, alpha);
}

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_scatter("index_copy", self, dim, index, source, Reduce::Assign, true);
}

Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const std::string& reduce, bool include_self) {
  return index_scatter("index_reduce", self, dim, index, source, parse_reduce(reduce),
                       include_self);
}

}  // namespace tg::cpu
