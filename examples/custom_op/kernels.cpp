// The CPU kernels and argument checks myops' specs name ("kernels": {"CPU": "cpu::softclip"},
// "check": "checks::softclip"), relative to the library's namespace. tg_opgen declares them in
// the generated kernels.h with the op's signature exactly; a kernel runs below autograd, on
// arguments the checks have accepted, and returns a fresh tensor.
#include <cmath>

#include <tapegrad/tapegrad.h>

namespace myops::checks {

void softclip(const tg::Tensor&, double limit) {
  TG_CHECK(limit > 0, tg::ValueError, "softclip", "limit must be positive, got ", limit);
}

void pairwise_sqdist(const tg::Tensor& x, const tg::Tensor& y) {
  TG_CHECK(x.dim() == 2, tg::ValueError, "pairwise_sqdist", "x must be 2-d, got shape ", x.shape());
  TG_CHECK(y.dim() == 2, tg::ValueError, "pairwise_sqdist", "y must be 2-d, got shape ", y.shape());
  TG_CHECK(x.shape()[1] == y.shape()[1], tg::ValueError, "pairwise_sqdist",
           "x and y need the same number of columns, got ", x.shape(), " and ", y.shape());
}

}  // namespace myops::checks

namespace myops::cpu {
namespace {

// Runs f<T> for the two dtypes the specs allow (the front end rejected every other dtype).
template <typename F> void floating(tg::DType dtype, F&& f) {
  if (dtype == tg::kFloat32) {
    f(float{});
  } else {
    f(double{});
  }
}

}  // namespace

tg::Tensor softclip(const tg::Tensor& self, double limit) {
  const tg::Tensor x = self.contiguous();  // any layout in, plain loops here
  tg::Tensor out = tg::empty(x.shape(), x.dtype());
  floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    const T l = static_cast<T>(limit);
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = l * std::tanh(in[i] / l);
  });
  return out;
}

tg::Tensor pairwise_sqdist(const tg::Tensor& x, const tg::Tensor& y) {
  const tg::Tensor a = x.contiguous(), b = y.contiguous();
  const int64_t n = a.shape()[0], m = b.shape()[0], d = a.shape()[1];
  tg::Tensor out = tg::empty({n, m}, a.dtype());
  floating(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T s = 0;
        for (int64_t k = 0; k < d; ++k)
          s += (pa[i * d + k] - pb[j * d + k]) * (pa[i * d + k] - pb[j * d + k]);
        o[i * m + j] = s;
      }
  });
  return out;
}

}  // namespace myops::cpu
