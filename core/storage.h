#pragma once
// Refcounted, 64-byte-aligned storage with a version counter. Allocators are per device type;
// the CPU one keeps freed large blocks for reuse so that big temporaries do not page-fault anew.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <tapegrad/core/device.h>

namespace tg {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
};

// The allocator for a device type; throws "[op] no allocator for CUDA" when none is registered.
Allocator* get_allocator(DeviceType type, const char* op = "empty");
void set_allocator(DeviceType type, Allocator* allocator);

struct StorageImpl {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  uint64_t version = 0;  // bumped by every in-place write; checked by saved tensors
  Allocator* allocator = nullptr;

  StorageImpl(size_t n, Device d, Allocator* a);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
};
using Storage = std::shared_ptr<StorageImpl>;

Storage make_storage(size_t nbytes, Device device, const char* op = "empty");

// Raw copy of bytes between devices (host<->device, device<->device); registered by backends.
using MemcpyFn = void (*)(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t nbytes);
void set_memcpy(DeviceType type, MemcpyFn fn);
void memcpy_between(void* dst, Device dst_device, const void* src, Device src_device,
                    size_t nbytes);

// Statistics of the CPU caching allocator (bytes).
struct CpuAllocatorStats {
  size_t allocated = 0, cached = 0, peak = 0;
};
CpuAllocatorStats cpu_allocator_stats();
void cpu_empty_cache();
// Whether the CPU allocator gives every tensor a block of its exact size, never reused (for
// AddressSanitizer): TG_ALLOCATOR=exact, the default in TG_SANITIZE=address builds.
bool cpu_allocator_is_exact();

}  // namespace tg
