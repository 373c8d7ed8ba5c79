// Checks of matmul and linear (kernels: backends/cpu/linalg.cpp, linear.cpp).
#include <algorithm>

#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

void matmul(const Tensor& self, const Tensor& other) {
  TG_CHECK(self.dim() >= 1 && other.dim() >= 1, ValueError, "matmul",
           "both arguments need at least 1 dim, got shapes ", self.shape(), " and ", other.shape());
  TG_CHECK(self.dtype() == other.dtype(), TypeError, "matmul",
           "self and other must have the same dtype, got ", dtype_name(self.dtype()), " and ",
           dtype_name(other.dtype()));
  // A 1-d self acts as a row [1, k], a 1-d other as a column [k, 1].
  const Shape a = self.dim() == 1 ? Shape{1, self.size(0)} : self.shape();
  const Shape b = other.dim() == 1 ? Shape{other.size(0), 1} : other.shape();
  const int64_t na = static_cast<int64_t>(a.size()) - 2, nb = static_cast<int64_t>(b.size()) - 2;
  const int64_t ka = a[a.size() - 1], kb = b[b.size() - 2];
  TG_CHECK(ka == kb, ValueError, "matmul", "shapes ", self.shape(), " and ", other.shape(),
           " cannot be multiplied (", ka, " != ", kb, ")");
  // Batch dims broadcast, right-aligned.
  const int64_t nbatch = std::max(na, nb);
  for (int64_t d = 0; d < nbatch; ++d) {
    const int64_t sa = d - (nbatch - na) >= 0 ? a[static_cast<size_t>(d - (nbatch - na))] : 1;
    const int64_t sb = d - (nbatch - nb) >= 0 ? b[static_cast<size_t>(d - (nbatch - nb))] : 1;
    TG_CHECK(sa == sb || sa == 1 || sb == 1, ValueError, "matmul", "batch dims of shapes ",
             self.shape(), " and ", other.shape(), " cannot be broadcast (", sa, " vs ", sb,
             " at batch dim ", d, ")");
  }
}

void linear(const Tensor& self, const Tensor& weight, const Tensor& bias) {
  TG_CHECK(self.dim() >= 1, ValueError, "linear", "self needs at least 1 dim, got shape ",
           self.shape());
  TG_CHECK(weight.dim() == 2 && weight.size(1) == self.size(-1), ValueError, "linear",
           "expected weight [out, in] with in = ", self.size(-1), " (self's last dim), got shape ",
           weight.shape());
  TG_CHECK(self.dtype() == weight.dtype(), TypeError, "linear",
           "self and weight must have the same dtype, got ", dtype_name(self.dtype()), " and ",
           dtype_name(weight.dtype()));
  if (!bias.defined()) return;
  const int64_t out_features = weight.size(0);
  TG_CHECK(bias.dim() == 1 && bias.size(0) == out_features, ValueError, "linear",
           "expected bias of shape [", out_features, "], got ", bias.shape());
  TG_CHECK(bias.dtype() == self.dtype(), TypeError, "linear", "bias must have self's dtype ",
           dtype_name(self.dtype()), ", got ", dtype_name(bias.dtype()));
}

}  // namespace tg::checks
