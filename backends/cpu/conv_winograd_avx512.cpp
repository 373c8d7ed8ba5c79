// conv_winograd_impl.h built with -mavx512f; conv_winograd.cpp calls it only on CPUs with it.
// Blocks of 8 output channels: 8 accumulators of the 32 registers AVX-512 has.
#include <tapegrad/backends/cpu/conv_winograd_impl.h>
#include <tapegrad/backends/cpu/conv_winograd_packed.h>

namespace tg::cpu::winograd {

Kernels avx512_kernels() {
  return {&run_image<8>, &weight_image<8>, &packed_image<8>, &packed_weight<8>};
}

}  // namespace tg::cpu::winograd
