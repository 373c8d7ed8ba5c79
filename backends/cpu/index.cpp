// CPU index_select, index_add, index_copy and index_reduce: the row form of the scatter engine
// (scatter_engine.h); index_select gathers through the 1-d index viewed as expanded to the
// result's shape (stride 0 off dim), which copies whole rows.
#include <tapegrad/core/factories.h>
#include <tapegrad/generated/kernels.h>

#include "scatter_engine.h"

namespace tg::cpu {
namespace scatter_engine {

int64_t check_index_op(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(op, dim, self.dim());
  TG_CHECK(index.dim() <= 1, ValueError, op, "index must be 0-d or 1-d, got a ", index.dim(),
           "-d index of shape ", index.shape());
  check_index_range(op, index, d, self.size(d));
  return d;
}

void check_source(const char* op, const Tensor& self, int64_t d, const Tensor& index,
                  const Tensor& source) {
  TG_CHECK(source.dtype() == self.dtype(), TypeError, op, "source has dtype ",
           dtype_name(source.dtype()), ", expected self's dtype ", dtype_name(self.dtype()));
  Shape expected = self.shape();
  expected[d] = index.numel();
  TG_CHECK(source.shape() == expected, ValueError, op, "shape mismatch: source has shape ",
           source.shape(), ", expected ", expected, " (self's shape with index's ", index.numel(),
           " entries at dim ", d, ")");
}

}  // namespace scatter_engine

namespace {
using namespace scatter_engine;

// index_add, index_copy and index_reduce: self copied, then source scattered into the copy.
Tensor index_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& source, Reduce reduce, bool include_self,
                     const Scalar& alpha = 1) {
  const Tensor self1 = as_1d(self), source1 = as_1d(source);
  // check_index_op validates the dim and index first, so their errors come before the source's.
  const int64_t d = check_index_op(op, self1, dim, index);
  check_source(op, self1, d, index, source1);
  Tensor out = fresh_copy(self1);
  if (index.numel() > 0) scatter_rows_into(out, d, index, source1, reduce, include_self, alpha);
  return self.dim() == 0 ? out.reshape({}) : out;
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = as_1d(self);
  const int64_t d = check_index_op("index_select", self1, dim, index);
  Shape shape = self1.shape();
  shape[d] = index.numel();
  const Tensor result = gather_from("index_select", self1, d, expand_index(index, shape, d));
  // A 0-d self gives a 0-d result whatever the index's dims (one entry either way), as PyTorch.
  return self.dim() == 0 ? result.reshape({}) : result;
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
