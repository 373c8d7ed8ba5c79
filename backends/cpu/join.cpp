// CPU cat and stack: allocate the result in the promoted dtype and copy each input into its slice
// of the result (copy_data converts dtypes and handles strides). The shapes are checked before
// dispatch (ops/checks/join.cpp).
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <tapegrad/backends/shared/join.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {
namespace {

// Copies n bytes. With AVX2, a plain loop of 32-byte loads and stores: glibc's memcpy takes
// `rep movsb` for runs of this length, which measured about 6 % slower on 2 MB runs here (the
// copy loop libtorch's cat runs is the same one). Streaming: non-temporal stores, for a result
// too large to stay cached (core/cpu_features.h); the caller fences after its last copy.
#if defined(__x86_64__) && defined(__GNUC__)
template <bool kStream> __attribute__((target("avx2"))) inline void put(char* at, __m256i v) {
  if constexpr (kStream)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(at), v);
  else
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), v);
}
template <bool kStream>
__attribute__((target("avx2"))) void copy_bytes_avx2(char* dst, const char* src, size_t n) {
  size_t i = 0;
  if constexpr (kStream) {  // non-temporal stores need 32-byte aligned addresses
    i = std::min(n, (32 - reinterpret_cast<uintptr_t>(dst) % 32) % 32);
    std::memcpy(dst, src, i);
  }
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    put<kStream>(dst + i, a);
    put<kStream>(dst + i + 32, b);
    put<kStream>(dst + i + 64, c);
    put<kStream>(dst + i + 96, d);
  }
  std::memcpy(dst + i, src + i, n - i);
}
#endif

void copy_bytes(char* dst, const char* src, size_t n, bool stream) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && n >= 4096)
    return stream ? copy_bytes_avx2<true>(dst, src, n) : copy_bytes_avx2<false>(dst, src, n);
#else
  (void)stream;
#endif
  std::memcpy(dst, src, n);
}

// Copies t into `slice`, its place in the contiguous result: `rows` runs of t.numel() / rows
// elements, `run_stride` elements apart. A contiguous t of the result's dtype (the common case)
// is copied run by run (copy_bytes); anything else element by element, converting.
void copy_into(const Tensor& slice, const Tensor& t, int64_t rows, int64_t run_stride,
               bool stream) {
  if (t.dtype() != slice.dtype() || !t.is_contiguous() || t.numel() == 0) {
    copy_data(slice, t);
    return;
  }
  const int64_t run = t.numel() / rows, item = static_cast<int64_t>(itemsize(t.dtype()));
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(slice.data_ptr());
  // Split by bytes, not by runs: a cat along dim 0 is one long run per input, which a split by
  // runs would leave to one thread.
  const int64_t run_bytes = run * item, stride_bytes = run_stride * item;
  parallel_for(0, rows * run_bytes, kCopyGrainBytes, [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t r = b / run_bytes, off = b - r * run_bytes;
      const int64_t len = std::min(run_bytes - off, e - b);
      copy_bytes(dst + r * stride_bytes + off, src + b, static_cast<size_t>(len), stream);
      b += len;
    }
    if (stream) stream_fence();
  });
}

// Each input lands in `rows` runs of the result, one per index of the dims before d.
void copy_slice(const Tensor& out, int64_t d, const Tensor& slice, const Tensor& t) {
  int64_t rows = 1;
  for (int64_t k = 0; k < d; ++k) rows *= out.size(k);
  const int64_t out_bytes = out.numel() * static_cast<int64_t>(itemsize(out.dtype()));
  copy_into(slice, t, rows, d > 0 ? out.strides()[static_cast<size_t>(d - 1)] : 0,
            streaming_stores_for(out_bytes));
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return shared::join(false, tensors, dim, copy_slice);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  return shared::join(true, tensors, dim, copy_slice);
}

}  // namespace tg::cpu
