// CPU gather, scatter, scatter_add and scatter_reduce: their checks, then the walk-form engine
// (scatter_engine.h).
#include <tapegrad/generated/kernels.h>

#include "scatter_engine.h"

namespace tg::cpu {
namespace scatter_engine {

int64_t check_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor* src) {
  const int64_t d = wrap_dim(op, dim, self.dim());
  TG_CHECK(index.dim() == self.dim(), ValueError, op, "index must have as many dims as self (",
           self.dim(), "), got a ", index.dim(), "-d index");
  if (src) {
    TG_CHECK(src->dtype() == self.dtype(), TypeError, op, "src has dtype ",
             dtype_name(src->dtype()), ", expected self's dtype ", dtype_name(self.dtype()));
    TG_CHECK(src->dim() == self.dim(), ValueError, op, "src must have as many dims as self (",
             self.dim(), "), got ", src->dim());
  }
  for (int64_t k = 0; k < self.dim(); ++k) {
    TG_CHECK(k == d || index.size(k) <= self.size(k), ValueError, op,
             "shape mismatch: index has shape ", index.shape(), ", larger than self's shape ",
             self.shape(), " in dim ", k);
    TG_CHECK(!src || index.size(k) <= src->size(k), ValueError, op,
             "shape mismatch: index has shape ", index.shape(), ", larger than src's shape ",
             src->shape(), " in dim ", k);
  }
  return d;
}

}  // namespace scatter_engine

namespace {
using namespace scatter_engine;

// scatter, scatter_add and scatter_reduce: self copied, then src scattered into the copy.
Tensor scatter_op(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor& src, Reduce reduce, bool include_self) {
  const Tensor self1 = as_1d(self), index1 = as_1d(index), src1 = as_1d(src);
  const int64_t d = check_scatter(op, self1, dim, index1, &src1);
  Tensor out = fresh_copy(self1);
  if (index1.numel() > 0) scatter_into(op, out, d, index1, src1, reduce, include_self);
  return self.dim() == 0 ? out.reshape({}) : out;
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = as_1d(self), index1 = as_1d(index);
  const int64_t d = check_scatter("gather", self1, dim, index1, nullptr);
  const Tensor result = gather_from("gather", self1, d, index1);
  return index.dim() == 0 ? result.reshape({}) : result;
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter", self, dim, index, src, Reduce::Assign, true);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter_add", self, dim, index, src, Reduce::Sum, true);
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  return scatter_op("scatter_reduce", self, dim, index, src, parse_reduce(reduce), include_self);
}

}  // namespace tg::cpu
