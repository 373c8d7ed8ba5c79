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
MemoryStats memory_stats() { built_without_cuda(); }
void empty_cache() { built_without_cuda(); }

}  // namespace tg::cuda

#endif  // TG_WITH_CUDA
