#pragma once
// The CUDA device: whether one is usable, and the caching allocator's statistics. In a build
// without CUDA these still link: is_available() is false, device_count() is 0 and the others
// throw "[cuda] tapegrad was built without CUDA".
#include <cstddef>
#include <cstdint>
#include <string>

#include <tapegrad/core/optim_step.h>

namespace tg {
class TensorBase;
}

namespace tg::cuda {

// True when tapegrad was built with CUDA and at least one GPU is visible.
bool is_available();
// Number of visible GPUs (0 when none, or when the driver cannot be loaded).
int device_count();
// Blocks until every kernel and copy queued on the GPU has finished, then raises any error a
// kernel recorded on the device (an index out of range found without a sync; docs/SEMANTICS.md).
void synchronize();
// The device's name; in the emulation build (TG_CUDA_EMULATION) it says that it is an emulation
// running on the CPU.
std::string device_name();

// Host synchronisations so far: device-to-host copies (item(), .cpu(), reading a count back) and
// synchronize() calls. Tests read it before and after a call to prove the call made none.
uint64_t host_sync_count();
// Checked mode: an op whose arguments are checked against the data (index ranges, masked_scatter's
// source size) synchronises after its check kernel and raises the typed error before writing
// anything, so a rejected call leaves every input unchanged. Off by default: then the error is
// raised at the next synchronisation point instead, and the failing op's outputs are undefined.
void set_sync_checks(bool on);
bool sync_checks();

// Bytes held by the caching device allocator: `allocated` is in live tensors, `reserved` is
// everything taken from cudaMalloc (live plus cached for reuse), `peak` the highest `allocated`.
struct MemoryStats {
  size_t allocated = 0, reserved = 0, peak = 0;
};
MemoryStats memory_stats();
// Returns every cached (unused) block to the driver with cudaFree.
void empty_cache();

namespace detail {
// The optimizers' fused updates (nn/optim.cpp) of one contiguous float32 / float64 parameter on
// the device: one kernel per parameter, the buffers updated in place alongside it. grad is
// contiguous of the parameter's dtype; momentum_buffer (SGD) and max_exp_avg_sq (Adam without
// amsgrad) may be undefined. Nothing is read back to the host.
void sgd_step(const TensorBase& param, const TensorBase& grad, const TensorBase& momentum_buffer,
              const tg::detail::SgdStepArgs& args);
void adam_step(const TensorBase& param, const TensorBase& grad, const TensorBase& exp_avg,
               const TensorBase& exp_avg_sq, const TensorBase& max_exp_avg_sq,
               const tg::detail::AdamStepArgs& args);
}  // namespace detail

}  // namespace tg::cuda
