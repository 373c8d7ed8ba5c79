// Checks of tril, triu, cumsum, sort, topk and one_hot (kernels: backends/cpu/sequence.cpp,
// sort.cpp). one_hot's class values are data: the kernel checks them.
#include <optional>

#include <tapegrad/core/dtype.h>
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

namespace {

void check_matrix(const char* op, const Tensor& self) {
  TG_CHECK(self.dim() >= 2, ValueError, op,
           "self must have at least 2 dims (a matrix or a batch of them), got shape ",
           self.shape());
}

}  // namespace

void tril(const Tensor& self, int64_t) { check_matrix("tril", self); }
void triu(const Tensor& self, int64_t) { check_matrix("triu", self); }

void cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  wrap_dim("cumsum", dim, self.dim());
  TG_CHECK(!dtype || *dtype != kBool, TypeError, "cumsum",
           "dtype must be a number type (int32, int64, float32, float64), got bool");
}

void sort(const Tensor& self, int64_t dim, bool, bool) { wrap_dim("sort", dim, self.dim()); }

void topk(const Tensor& self, int64_t k, int64_t dim, bool, bool) {
  const int64_t d = wrap_dim("topk", dim, self.dim());
  const int64_t n = self.dim() == 0 ? 1 : self.size(d);
  TG_CHECK(k >= 0 && k <= n, ValueError, "topk", "k must be in [0, ", n, "] (the size of dim ", d,
           "), got ", k);
}

void one_hot(const Tensor& self, int64_t num_classes) {
  TG_CHECK(num_classes >= -1, ValueError, "one_hot",
           "num_classes must be -1 (one more than the largest class) or >= 0, got ", num_classes);
  TG_CHECK(num_classes != -1 || self.numel() > 0, ValueError, "one_hot",
           "cannot infer num_classes from an empty tensor; pass num_classes");
}

}  // namespace tg::checks
