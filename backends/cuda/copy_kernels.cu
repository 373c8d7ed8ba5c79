// Device kernels behind copy_data / fill_data: strided, dtype-converting copy and fill.
#include "elementwise.cuh"

namespace tg::cuda::detail {
namespace {

template <typename Dst, typename Src> struct CopyOp {
  Dst* dst;
  const Src* src;
  __host__ __device__ void operator()(const int64_t* off) const {
    dst[off[0]] = static_cast<Dst>(src[off[1]]);
  }
};

template <typename T> struct FillOp {
  T* dst;
  T value;
  __host__ __device__ void operator()(const int64_t* off) const { dst[off[0]] = value; }
};

}  // namespace

void launch_copy(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n,
                 const StridedLayout<2>& layout) {
  visit_dtype("copy", dst_dtype, [&](auto dst_tag) {
    using Dst = typename decltype(dst_tag)::type;
    visit_dtype("copy", src_dtype, [&](auto src_tag) {
      using Src = typename decltype(src_tag)::type;
      CopyOp<Dst, Src> op{static_cast<Dst*>(dst), static_cast<const Src*>(src)};
      launch_elementwise("copy", n, layout, op);
    });
  });
}

void launch_fill(void* dst, DType dtype, const Scalar& value, int64_t n,
                 const StridedLayout<1>& layout) {
  visit_dtype("fill", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FillOp<T> op{static_cast<T*>(dst), value.to<T>()};
    launch_elementwise("fill", n, layout, op);
  });
}

}  // namespace tg::cuda::detail
