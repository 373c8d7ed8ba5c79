// tg::cuda in a build without CUDA: nothing is available; asking for the device is an error.
// (With TG_WITH_CUDA, backends/cuda/ defines these functions instead.)
#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>

#ifndef TG_WITH_CUDA

namespace tg::cuda {

namespace {
[[noreturn]] void built_without_cuda() { fail<Error>("cuda", "tapegrad was built without CUDA"); }
}  // namespace

bool is_available() { return false; }
int device_count() { return 0; }
void synchronize() { built_without_cuda(); }
std::string device_name() { built_without_cuda(); }
uint64_t host_sync_count() { return 0; }
void set_sync_checks(bool) { built_without_cuda(); }
bool sync_checks() { return false; }
MemoryStats memory_stats() { built_without_cuda(); }
void empty_cache() { built_without_cuda(); }
void detail::sgd_step(const TensorBase&, const TensorBase&, const TensorBase&,
                      const tg::detail::SgdStepArgs&) {
  built_without_cuda();
}
void detail::adam_step(const TensorBase&, const TensorBase&, const TensorBase&, const TensorBase&,
                       const TensorBase&, const tg::detail::AdamStepArgs&) {
  built_without_cuda();
}

}  // namespace tg::cuda

#endif  // TG_WITH_CUDA
