#pragma once
// The CUDA device: whether one is usable, and the caching allocator's statistics. In a build
// without CUDA these still link: is_available() is false, device_count() is 0 and the others
// throw "[cuda] tapegrad was built without CUDA".
#include <cstddef>

namespace tg::cuda {

// True when tapegrad was built with CUDA and at least one GPU is visible.
bool is_available();
// Number of visible GPUs (0 when none, or when the driver cannot be loaded).
int device_count();
// Blocks until every kernel and copy queued on the GPU has finished.
void synchronize();

// Bytes held by the caching device allocator: `allocated` is in live tensors, `reserved` is
// everything taken from cudaMalloc (live plus cached for reuse), `peak` the highest `allocated`.
struct MemoryStats {
  size_t allocated = 0, reserved = 0, peak = 0;
};
MemoryStats memory_stats();
// Returns every cached (unused) block to the driver with cudaFree.
void empty_cache();

}  // namespace tg::cuda
