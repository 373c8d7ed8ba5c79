#include <tapegrad/core/storage.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <map>
#include <mutex>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <tapegrad/core/error.h>

namespace tg {

namespace {

// Small blocks (up to 4 KiB) are recycled through per-thread free lists, one per 64-byte size
// class, linked through the freed blocks themselves: tiny tensors then cost no malloc at all.
struct SmallBlockCache {
  static constexpr size_t kMaxBytes = 4096;
  static constexpr int kClasses = kMaxBytes / 64;
  static constexpr int kMaxPerClass = 64;
  void* head[kClasses] = {};
  int count[kClasses] = {};

  // n: a multiple of 64, at most kMaxBytes. A kept block of that size, or null.
  void* pop(size_t n) {
    const size_t c = n / 64 - 1;
    void* p = head[c];
    if (p) {
      head[c] = *static_cast<void**>(p);
      --count[c];
    }
    return p;
  }
  // Keeps the block unless its list is full (then the caller frees it).
  bool push(void* p, size_t n) {
    const size_t c = n / 64 - 1;
    if (count[c] >= kMaxPerClass) return false;
    *static_cast<void**>(p) = head[c];
    head[c] = p;
    ++count[c];
    return true;
  }
};
__attribute__((tls_model("initial-exec"))) thread_local SmallBlockCache
    small_cache;  // trivially destructible: safe during thread exit

// Block sizes are multiples of 64 (the alignment); n must be at most SIZE_MAX - 63.
size_t round_up_64(size_t n) { return n == 0 ? 64 : (n + 63) / 64 * 64; }

// CPU allocator: 64-byte aligned. Blocks of 64 KiB and more are kept on free lists keyed by size
// (up to 2 GiB cached), so repeated temporaries reuse warm pages instead of page-faulting. Not
// only the large ones: glibc trims the top of its heap once the free space there passes twice
// its (adaptive) mmap threshold, so a training step's activations of 128-256 KiB came back as
// fresh pages every step (a small CNN's step spent about a quarter of its time in page faults).
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kCacheMin = size_t{1} << 16;
  static constexpr size_t kCacheMax = size_t{2} << 30;
  static constexpr size_t kMaxBytes = size_t{PTRDIFF_MAX} - 64;
  // Blocks from here up start on a 2 MiB boundary and ask for transparent huge pages.
  static constexpr size_t kHugeMin = size_t{4} << 20, kHugePage = size_t{2} << 20;

  // exact: every block allocated at its exact size and freed at once, no size classes and no
  // reuse, so that AddressSanitizer sees every overrun of a tensor's bytes (rounding to 64 bytes
  // and recycling blocks would hide small ones). Fixed for the life of the process, as blocks
  // must be freed the way they were allocated.
  explicit CpuAllocator(bool exact) : exact_(exact) {}
  bool exact() const { return exact_; }

  void* allocate(size_t nbytes) override {
    // Byte counts are checked where tensors are made; a larger one here (from a direct caller)
    // must not wrap in round_up_64 into a small size class.
    if (nbytes > kMaxBytes)
      fail<Error>("empty", "out of memory allocating ", nbytes, " bytes on cpu");
    if (exact_) return allocate_exact(nbytes);
    size_t n = round_up_64(nbytes);
    if (n <= SmallBlockCache::kMaxBytes) {
      if (void* p = small_cache.pop(n)) return p;
      void* fresh = std::aligned_alloc(64, n);
      if (!fresh) fail<Error>("empty", "out of memory allocating ", nbytes, " bytes on cpu");
      return fresh;
    }
    if (n >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      // the most recently freed block of that size (multimap keeps equal keys in insertion
      // order): its lines are the likeliest to be still in cache. The oldest one, which find()
      // returns, made a loop that frees and reallocates a result cycle through every cached block
      // of its size, each one cold (index_select of 16 MiB after other 16 MiB cases: 2x slower).
      const auto [first, last] = free_.equal_range(n);
      if (first != last) {
        const auto it = std::prev(last);
        void* p = it->second;
        free_.erase(it);
        stats_.cached -= n;
        note_alloc(n);
        return p;
      }
    }
    void* p = n >= kHugeMin ? allocate_huge(n) : std::aligned_alloc(64, n);
    if (!p) fail<Error>("empty", "out of memory allocating ", nbytes, " bytes on cpu");
    if (n >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      note_alloc(n);
    }
    return p;
  }

  void deallocate(void* p, size_t nbytes) override {
    if (exact_) return std::free(p);
    size_t n = round_up_64(nbytes);
    if (n <= SmallBlockCache::kMaxBytes) {
      if (!small_cache.push(p, n)) std::free(p);
      return;
    }
    if (n >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.allocated -= n;
      if (stats_.cached + n <= kCacheMax) {
        free_.emplace(n, p);
        stats_.cached += n;
        return;
      }
    }
    std::free(p);
  }

  CpuAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [n, p] : free_) std::free(p);
    free_.clear();
    stats_.cached = 0;
  }

 private:
  static void* allocate_exact(size_t nbytes) {
    void* p = nullptr;
    // posix_memalign, not aligned_alloc: it takes sizes that are not a multiple of the alignment.
    if (posix_memalign(&p, 64, nbytes) != 0 || (!p && nbytes > 0))
      fail<Error>("empty", "out of memory allocating ", nbytes, " bytes on cpu");
    return p;
  }
  // A large block on huge pages where the kernel offers them (THP "madvise" mode, Debian's
  // default): a stream over 64 MiB then walks 32 TLB entries instead of 16384 (a 4096^2 float
  // memcpy ran 1.4x faster, a transposed copy 1.1x, measured here), and its first touch
  // faults 32 times, not 16384. Only the start is aligned: a tail under 2 MiB stays on small
  // pages, so no block holds more than its own bytes.
  static void* allocate_huge(size_t n) {
    void* p = nullptr;
    if (posix_memalign(&p, kHugePage, n) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
    madvise(p, n / 4096 * 4096, MADV_HUGEPAGE);  // advice only: a refusal changes nothing
#endif
    return p;
  }
  const bool exact_;
  void note_alloc(size_t n) {
    stats_.allocated += n;
    stats_.peak = std::max(stats_.peak, stats_.allocated);
  }
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  CpuAllocatorStats stats_;
};

// TG_ALLOCATOR=exact or =caching picks the CPU allocator's mode; the default is caching, or exact
// in builds configured with TG_SANITIZE=address (CMake defines TG_ALLOCATOR_EXACT_DEFAULT).
bool exact_from_environment() {
#ifdef TG_ALLOCATOR_EXACT_DEFAULT
  bool exact = true;
#else
  bool exact = false;
#endif
  if (const char* v = std::getenv("TG_ALLOCATOR")) {
    const std::string mode(v);
    if (mode == "exact")
      exact = true;
    else if (mode == "caching")
      exact = false;
    else if (!mode.empty())
      fail<ValueError>("allocator", "TG_ALLOCATOR is '", mode, "', expected 'exact' or 'caching'");
  }
  return exact;
}

CpuAllocator& cpu_allocator() {
  // never destroyed: storages may outlive statics
  static CpuAllocator* a = new CpuAllocator(exact_from_environment());
  return *a;
}

Allocator* g_allocators[2] = {nullptr, nullptr};
MemcpyFn g_memcpy[2] = {nullptr, nullptr};

void cpu_memcpy(void* dst, Device, const void* src, Device, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

}  // namespace

Allocator* get_allocator(DeviceType type, const char* op) {
  if (type == DeviceType::CPU) return &cpu_allocator();
  Allocator* a = g_allocators[static_cast<int>(type)];
  TG_CHECK(a != nullptr, Error, op, "no allocator for ", Device(type).str(),
           " (tapegrad was built without this backend, or no device is present)");
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) {
  g_allocators[static_cast<int>(type)] = allocator;
}

StorageImpl::StorageImpl(size_t n, Device d, Allocator* a) : nbytes(n), device(d), allocator(a) {
  data = allocator->allocate(n);
}
StorageImpl::StorageImpl(size_t n, Device d, void* own_bytes)
    : data(own_bytes), nbytes(n), device(d) {}
StorageImpl::~StorageImpl() {
  if (allocator) allocator->deallocate(data, nbytes);
}

namespace {
// The storage of a small CPU tensor (scalars, losses, the gradients of scalars) with its bytes in
// the same block: one allocation per tensor instead of two. Aligned like the allocator's blocks.
struct StorageWithBytes final : StorageImpl {
  static constexpr size_t kBytes = 64;
  alignas(64) unsigned char bytes[kBytes];
  explicit StorageWithBytes(size_t n) : StorageImpl(n, Device(kCPU), static_cast<void*>(bytes)) {}
};
}  // namespace

Storage make_storage(size_t nbytes, Device device, const char* op) {
  // Not in exact mode: there every tensor's bytes are a block of their own size, so that
  // AddressSanitizer sees an overrun of them.
  if (device.is_cpu() && nbytes <= StorageWithBytes::kBytes && !cpu_allocator().exact())
    return make_pooled<StorageWithBytes>(nbytes);
  return make_pooled<StorageImpl>(nbytes, device, get_allocator(device.type, op));
}

void* allocate_object(size_t nbytes) {
  // A kept block first, without the allocator's checks for large sizes (objects are small). In
  // exact mode the lists stay empty (every block is freed at once), so this finds none there.
  if (nbytes <= SmallBlockCache::kMaxBytes)
    if (void* p = small_cache.pop(round_up_64(nbytes))) return p;
  return cpu_allocator().allocate(nbytes);
}
void deallocate_object(void* p, size_t nbytes) noexcept {
  CpuAllocator& a = cpu_allocator();
  if (!a.exact() && nbytes <= SmallBlockCache::kMaxBytes &&
      small_cache.push(p, round_up_64(nbytes)))
    return;  // kept, as deallocate would, without its other branches
  a.deallocate(p, nbytes);
}

void set_memcpy(DeviceType type, MemcpyFn fn) { g_memcpy[static_cast<int>(type)] = fn; }

void memcpy_between(void* dst, Device dst_device, const void* src, Device src_device,
                    size_t nbytes) {
  if (dst_device.is_cpu() && src_device.is_cpu())
    return cpu_memcpy(dst, dst_device, src, src_device, nbytes);
  DeviceType other = dst_device.is_cpu() ? src_device.type : dst_device.type;
  MemcpyFn fn = g_memcpy[static_cast<int>(other)];
  TG_CHECK(fn != nullptr, Error, "copy", "no copy routine for ", Device(other).str(),
           " (tapegrad was built without this backend)");
  fn(dst, dst_device, src, src_device, nbytes);
}

CpuAllocatorStats cpu_allocator_stats() { return cpu_allocator().stats(); }
bool cpu_allocator_is_exact() { return cpu_allocator().exact(); }
void cpu_empty_cache() { cpu_allocator().empty_cache(); }

}  // namespace tg
