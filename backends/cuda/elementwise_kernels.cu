// Elementwise arithmetic kernels (inputs already converted to the result dtype).
#include "elementwise.cuh"

namespace tg::cuda::detail {
namespace {

// out = a + alpha * b. For bool this is a logical or (alpha is then bool too).
template <typename T> struct AddOp {
  T* out;
  const T* a;
  const T* b;
  T alpha;
  __device__ void operator()(const int64_t* off) const {
    out[off[0]] = static_cast<T>(a[off[1]] + alpha * b[off[2]]);
  }
};

}  // namespace

void launch_add(void* out, const void* a, const void* b, DType dtype, const Scalar& alpha,
                int64_t n, const StridedLayout<3>& layout) {
  visit_dtype("add", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    AddOp<T> op{static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b),
                alpha.to<T>()};
    launch_elementwise("add", n, layout, op);
  });
}

}  // namespace tg::cuda::detail
