// conv_direct_impl.h built with -mavx512f; conv_direct.cpp calls it only on CPUs with AVX-512F.
// Tiles of 6 channels x 64 positions: 24 accumulators of 16 floats, of the 32 registers.
#include <tapegrad/backends/cpu/conv_direct_impl.h>

namespace tg::cpu::direct {

Kernels avx512_kernels() { return {&Tiles<16, 4>::rows, Tiles<16, 4>::kCols}; }

}  // namespace tg::cpu::direct
