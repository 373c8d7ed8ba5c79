// conv_direct_impl.h built with -mavx2 -mfma; conv_direct.cpp calls it only on CPUs with both.
// Tiles of 6 channels x 16 positions: 12 accumulators of 8 floats, of the 16 registers AVX2 has.
#include <tapegrad/backends/cpu/conv_direct_impl.h>

namespace tg::cpu::direct {

Kernels avx2_kernels() { return {&Tiles<8, 2>::rows, Tiles<8, 2>::kCols}; }

}  // namespace tg::cpu::direct
