// The caching device allocator and host<->device copies, registered for DeviceType::CUDA at
// load time. Freed blocks go to a free list per rounded size and are handed out again, so a
// training loop that allocates the same shapes every iteration stops calling cudaMalloc after
// the first one. All work runs on the default stream, in order, so reusing a block that a
// queued kernel still reads is safe: the next kernel to write it runs after that one.
#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/storage.h>

#include "cuda_utils.h"

namespace tg::cuda {
namespace {

class CachingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const size_t size = round_size(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    void* ptr = nullptr;
    std::vector<void*>& cached = free_blocks_[size];
    if (!cached.empty()) {
      ptr = cached.back();
      cached.pop_back();
    } else {
      ptr = cuda_malloc(size, nbytes);
    }
    live_blocks_[ptr] = size;
    stats_.allocated += size;
    stats_.peak = std::max(stats_.peak, stats_.allocated);
    return ptr;
  }

  // Keeps the block for reuse; never calls CUDA (it runs in destructors, maybe at exit).
  void deallocate(void* ptr, size_t /*nbytes*/) override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_blocks_.find(ptr);
    if (it == live_blocks_.end()) return;  // not ours: cannot happen; never throw from here
    const size_t size = it->second;
    live_blocks_.erase(it);
    stats_.allocated -= size;
    free_blocks_[size].push_back(ptr);
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached();
  }

 private:
  // Small requests round up to 512 bytes, large ones (over 1 MiB) to 2 MiB, so that similar
  // sizes share a free list.
  // In the emulation build under ASan (TG_ALLOCATOR_EXACT_DEFAULT) blocks keep their exact size,
  // so that a kernel reading past a tensor's end is reported instead of landing in the padding.
  static size_t round_size(size_t nbytes) {
#if defined(TG_CUDA_EMULATION) && defined(TG_ALLOCATOR_EXACT_DEFAULT)
    return nbytes;
#else
    constexpr size_t kSmallStep = 512, kLargeStep = size_t{2} << 20, kLargeFrom = size_t{1} << 20;
    const size_t step = nbytes > kLargeFrom ? kLargeStep : kSmallStep;
    return (nbytes + step - 1) / step * step;
#endif
  }

  // Driver memory of `size` bytes; on out-of-memory, frees the cache and tries once more.
  // Caller holds mutex_.
  void* cuda_malloc(size_t size, size_t requested) {
    void* ptr = detail::rt_malloc(size);
    if (ptr == nullptr) {
      release_cached();
      ptr = detail::rt_malloc(size);
    }
    if (ptr == nullptr) {
      size_t free_bytes = 0, total_bytes = 0;
      detail::rt_mem_info(free_bytes, total_bytes);
      fail<Error>("cuda", "out of memory: tried to allocate ", requested, " bytes (", size,
                  " rounded up); tapegrad holds ", stats_.allocated,
                  " bytes in tensors, the device has ", free_bytes, " of ", total_bytes,
                  " bytes free");
    }
    stats_.reserved += size;
    return ptr;
  }

  // Returns every cached block to the driver. Caller holds mutex_.
  void release_cached() {
    for (auto& [size, blocks] : free_blocks_) {
      while (!blocks.empty()) {
        detail::rt_free(blocks.back());
        blocks.pop_back();
        stats_.reserved -= size;
      }
    }
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // rounded size -> cached blocks
  std::unordered_map<void*, size_t> live_blocks_;               // block -> rounded size
  MemoryStats stats_;
};

// Never destroyed: tensors freed during static destruction must still find it.
CachingAllocator& caching_allocator() {
  static auto* allocator = new CachingAllocator();
  return *allocator;
}

// Synchronous copy between host and device memory, or within the device (never host to host:
// memcpy_between calls it only when one side is CUDA).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cuda()) {
    if (src_device.is_cuda()) {
      detail::rt_copy_on_device(dst, src, nbytes);
    } else {
      detail::rt_copy_to_device(dst, src, nbytes);
    }
  } else {
    detail::rt_copy_to_host(dst, src, nbytes);  // src is on the device: a host sync
  }
}

struct AllocatorRegistrar {
  AllocatorRegistrar() {
    set_allocator(DeviceType::CUDA, &caching_allocator());
    set_memcpy(DeviceType::CUDA, &copy_bytes);
  }
} allocator_registrar;

}  // namespace

namespace detail {
void* device_alloc(size_t nbytes) { return caching_allocator().allocate(nbytes); }
void device_free(void* ptr, size_t nbytes) { caching_allocator().deallocate(ptr, nbytes); }
}  // namespace detail

MemoryStats memory_stats() { return caching_allocator().stats(); }
void empty_cache() { caching_allocator().empty_cache(); }

}  // namespace tg::cuda
