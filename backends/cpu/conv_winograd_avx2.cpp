// conv_winograd_impl.h built with -mavx2 -mfma; conv_winograd.cpp calls it only on CPUs with both.
// Blocks of 4 output channels: 8 accumulators of 8 floats, of the 16 registers AVX2 has.
#include <tapegrad/backends/cpu/conv_winograd_impl.h>
#include <tapegrad/backends/cpu/conv_winograd_packed.h>

namespace tg::cpu::winograd {

Kernels avx2_kernels() {
  return {&run_image<4>, &weight_image<4>, &packed_image<4>, &packed_weight<4>};
}

}  // namespace tg::cpu::winograd
