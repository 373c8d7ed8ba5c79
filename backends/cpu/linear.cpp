// CPU kernel of linear: one matmul against the transposed weight (BLAS reads it in place), then
// the bias added row by row into the fresh result.
#include <tapegrad/core/error.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {
template <typename T> void add_bias_rows(T* out, const T* bias, int64_t rows, int64_t cols) {
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   T* row = out + r * cols;
                   for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
                 }
               });
}
}  // namespace

Tensor linear(const Tensor& self, const Tensor& weight, const Tensor& bias) {
  TG_CHECK(self.dim() >= 1, ValueError, "linear", "self needs at least 1 dim, got shape ",
           self.shape());
  TG_CHECK(weight.dim() == 2 && weight.size(1) == self.size(-1), ValueError, "linear",
           "expected weight [out, in] with in = ", self.size(-1), " (self's last dim), got shape ",
           weight.shape());
  TG_CHECK(self.dtype() == weight.dtype(), TypeError, "linear", "self and weight must have the same dtype, got ",
           dtype_name(self.dtype()), " and ", dtype_name(weight.dtype()));
  const int64_t out_features = weight.size(0);
  if (bias.defined()) {
    TG_CHECK(bias.dim() == 1 && bias.size(0) == out_features, ValueError, "linear",
             "expected bias of shape [", out_features, "], got ", bias.shape());
    TG_CHECK(bias.dtype() == self.dtype(), TypeError, "linear", "bias must have self's dtype ",
             dtype_name(self.dtype()), ", got ", dtype_name(bias.dtype()));
  }
  Tensor result = cpu::matmul(self, weight.t());
  if (!bias.defined() || result.numel() == 0) return result;
  const Tensor b = bias.contiguous();
  const int64_t rows = result.numel() / out_features;
  if (result.dtype() == kFloat32)
    add_bias_rows(result.data<float>(), b.data<float>(), rows, out_features);
  else
    add_bias_rows(result.data<double>(), b.data<double>(), rows, out_features);
  return result;
}

}  // namespace tg::cpu
