// The CUDA copy and fill kernels behind copy_data / fill_data (core/copy.h), registered at
// load time. Both tensors are on the device; src is broadcast to dst's shape.
#include <tapegrad/core/copy.h>

#include "layout.h"

namespace tg::cuda {
namespace {

void copy_kernel(const TensorBase& dst, const TensorBase& src) {
  const Shape src_strides = broadcast_strides("copy", src, dst.shape());
  const auto layout = detail::make_layout<2>("copy", dst.shape(), {dst.strides(), src_strides});
  detail::launch_copy(dst.data_ptr(), dst.dtype(), src.data_ptr(), src.dtype(), dst.numel(),
                      layout);
}

void fill_kernel(const TensorBase& dst, const Scalar& value) {
  const auto layout = detail::make_layout<1>("fill", dst.shape(), {dst.strides()});
  detail::launch_fill(dst.data_ptr(), dst.dtype(), value, dst.numel(), layout);
}

struct CopyRegistrar {
  CopyRegistrar() {
    set_copy_kernel(DeviceType::CUDA, &copy_kernel);
    set_fill_kernel(DeviceType::CUDA, &fill_kernel);
  }
} copy_registrar;

}  // namespace
}  // namespace tg::cuda
