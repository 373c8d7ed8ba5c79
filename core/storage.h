#pragma once
// Refcounted, 64-byte-aligned storage with a version counter. Allocators are per device type;
// the CPU one keeps freed large blocks for reuse so that big temporaries do not page-fault anew.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

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
  uint64_t version = 0;            // bumped by every in-place write; checked by saved tensors
  Allocator* allocator = nullptr;  // null when `data` lives in this object's own block

  StorageImpl(size_t n, Device d, Allocator* a);
  StorageImpl(size_t n, Device d, void* own_bytes);  // data in the same block (make_storage)
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
};
using Storage = std::shared_ptr<StorageImpl>;

Storage make_storage(size_t nbytes, Device device, const char* op = "empty");

// Memory for the small objects every op makes (tensor impls, storages, autograd nodes), through
// std::allocate_shared: the CPU allocator's per-thread small-block lists, because a backward
// pass frees more objects of one size at once than glibc's per-thread cache keeps (7 a size).
// In exact mode (TG_ALLOCATOR=exact, sanitizer builds) every object gets its own block, so that
// AddressSanitizer sees a use after free of these objects too.
void* allocate_object(size_t nbytes);
void deallocate_object(void* p, size_t nbytes) noexcept;
template <typename T> struct ObjectAllocator {
  using value_type = T;
  ObjectAllocator() = default;
  template <typename U> ObjectAllocator(const ObjectAllocator<U>&) noexcept {}  // NOLINT
  T* allocate(size_t n) { return static_cast<T*>(allocate_object(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { deallocate_object(p, n * sizeof(T)); }
  template <typename U> bool operator==(const ObjectAllocator<U>&) const noexcept { return true; }
};
// std::make_shared with that memory.
template <typename T, typename... Args> std::shared_ptr<T> make_pooled(Args&&... args) {
  static_assert(alignof(T) <= 64, "the small-block lists hand out 64-byte-aligned blocks");
  return std::allocate_shared<T>(ObjectAllocator<T>{}, std::forward<Args>(args)...);
}

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
