// CPU kernel of linear: one matmul against the transposed weight (BLAS reads it in place), then
// the bias added row by row into the fresh result.
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/functions.h>
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
  const int64_t out_features = weight.size(0);  // shapes checked by checks::linear
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
