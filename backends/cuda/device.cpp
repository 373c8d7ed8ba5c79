// tg::cuda device queries, the host side of the runtime (runtime.h) for the GPU and for the
// emulation, the host-sync counter and the device error record (device_errors.h).
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>

#include "cuda_utils.h"
#include "device_errors.h"

namespace tg::cuda {

namespace {
std::atomic<uint64_t> g_host_syncs{0};
std::atomic<bool> g_sync_checks{false};
}  // namespace

namespace detail {

void count_host_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }

#if defined(TG_CUDA_EMULATION)

// Device memory is host memory, 256-byte aligned like cudaMalloc's, of exactly the size asked
// (so that ASan sees an overrun past it).
// The emulated device holds at most kDeviceBytes: a larger request is out of device memory, as on a
// GPU, instead of reaching the host allocator (which, under ASan, aborts on huge sizes).
constexpr std::align_val_t kDeviceAlignment{256};
constexpr size_t kDeviceBytes = size_t{1} << 38;
void* rt_malloc(size_t nbytes) {
  if (nbytes > kDeviceBytes) return nullptr;
  return ::operator new(nbytes, kDeviceAlignment, std::nothrow);
}
void rt_free(void* ptr) { ::operator delete(ptr, kDeviceAlignment); }
void rt_mem_info(size_t& free_bytes, size_t& total_bytes) {
  free_bytes = 0;  // unknown: host memory is shared with everything else
  total_bytes = kDeviceBytes;
}
void rt_copy_to_host(void* dst, const void* src, size_t nbytes) {
  std::memcpy(dst, src, nbytes);
  count_host_sync();
  raise_device_errors();
}
void rt_copy_to_device(void* dst, const void* src, size_t nbytes) { std::memcpy(dst, src, nbytes); }
void rt_copy_on_device(void* dst, const void* src, size_t nbytes) {
  std::memmove(dst, src, nbytes);
}

#else

void check(cudaError_t err, const char* op, const char* what) {
  if (err == cudaSuccess) [[likely]]
    return;
  (void)cudaGetLastError();  // clear a non-sticky error so that later calls start clean
  fail<Error>(op, what, " failed: ", cudaGetErrorString(err));
}

void* rt_malloc(size_t nbytes) {
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, nbytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  check(err, "cuda", "cudaMalloc");
  return ptr;
}
void rt_free(void* ptr) { check(cudaFree(ptr), "cuda", "cudaFree"); }
void rt_mem_info(size_t& free_bytes, size_t& total_bytes) {
  free_bytes = total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
}
void rt_copy_to_host(void* dst, const void* src, size_t nbytes) {
  TG_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost), "copy");
  count_host_sync();
  raise_device_errors();
}
void rt_copy_to_device(void* dst, const void* src, size_t nbytes) {
  TG_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice), "copy");
}
void rt_copy_on_device(void* dst, const void* src, size_t nbytes) {
  TG_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToDevice), "copy");
}

#endif

// ---- the device error record -------------------------------------------------------------

namespace {
std::mutex g_names_mutex;
std::vector<const char*>& op_names() {
  static auto* names = new std::vector<const char*>();  // never destroyed (used at exit)
  return *names;
}
}  // namespace

ErrorRecord* error_record() {
  static ErrorRecord* record = [] {
    auto* r = static_cast<ErrorRecord*>(rt_malloc(sizeof(ErrorRecord)));
    TG_CHECK(r != nullptr, Error, "cuda", "out of memory allocating the device error record");
    const ErrorRecord clear{};
    rt_copy_to_device(r, &clear, sizeof clear);
    return r;
  }();
  return record;
}

int32_t op_id(const char* op) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  std::vector<const char*>& names = op_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == op || std::strcmp(names[i], op) == 0) return static_cast<int32_t>(i);
  names.push_back(op);
  return static_cast<int32_t>(names.size() - 1);
}

void raise_device_errors() {
  ErrorRecord* device = error_record();
  ErrorRecord r{};
#if defined(TG_CUDA_EMULATION)
  std::memcpy(&r, device, sizeof r);
#else
  TG_CUDA_CHECK(cudaMemcpy(&r, device, sizeof r, cudaMemcpyDeviceToHost), "cuda");
#endif
  if (r.code == kNoError) [[likely]]
    return;
  const ErrorRecord clear{};
  rt_copy_to_device(device, &clear, sizeof clear);
  const char* op = "cuda";
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    if (r.op >= 0 && static_cast<size_t>(r.op) < op_names().size()) op = op_names()[r.op];
  }
  // The same messages as the CPU backend's data checks (backends/cpu/indexing/data_checks.cpp).
  switch (r.code) {
    case kIndexOutOfRange:
      fail<IndexError>(op, "index ", r.value, " is out of range for dim ", r.dim, " of size ",
                       r.bound, " (valid: 0 to ", r.bound - 1,
                       "; negative indices are not accepted)");
    case kFillIndexOutOfRange:
      fail<IndexError>(op, "index ", r.value, " is out of range for dim ", r.dim, " of size ",
                       r.bound, " (expected an index in [", -r.bound, ", ", r.bound - 1, "])");
    case kSourceTooSmall:
      fail<ValueError>(op, "the mask selects ", r.value, " elements but source has only ", r.bound,
                       " (source needs at least ", r.value, " elements)");
    case kSourceShapeTooSmall:
      fail<ValueError>(op, "the mask selects ", r.value, " elements but source_shape has only ",
                       r.bound, " elements");
    case kEmbeddingIndex:
      fail<IndexError>(op, "index ", r.value, " is out of range for weight with ", r.bound,
                       " rows (expected 0 <= index < ", r.bound, ")");
    case kTargetOutOfRange:
      fail<IndexError>(op, "target ", r.value, " is out of range [0, ", r.bound, ") (sample ",
                       r.dim, "; ignore_index is ", r.extra, ")");
    case kClassOutOfRange:
      fail<IndexError>(op, "class values must be in [0, ", r.bound, "), got ", r.value);
    default: fail<Error>(op, "a device kernel recorded error code ", r.code);
  }
}

void checkpoint() {
  if (!g_sync_checks.load(std::memory_order_relaxed)) return;
  count_host_sync();
  raise_device_errors();
}

}  // namespace detail

#if defined(TG_CUDA_EMULATION)
int device_count() { return 1; }
std::string device_name() {
  return "tapegrad CUDA emulation (the CUDA kernels running on the CPU; not a GPU)";
}
void synchronize() {
  detail::count_host_sync();
  detail::raise_device_errors();
}
#else
int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver or no device: not an error here
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}
std::string device_name() {
  cudaDeviceProp prop{};
  TG_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0), "cuda");
  return prop.name;
}
void synchronize() {
  TG_CUDA_CHECK(cudaDeviceSynchronize(), "cuda");
  detail::count_host_sync();
  detail::raise_device_errors();
}
#endif

bool is_available() { return device_count() > 0; }
uint64_t host_sync_count() { return g_host_syncs.load(std::memory_order_relaxed); }
void set_sync_checks(bool on) { g_sync_checks.store(on, std::memory_order_relaxed); }
bool sync_checks() { return g_sync_checks.load(std::memory_order_relaxed); }

}  // namespace tg::cuda
