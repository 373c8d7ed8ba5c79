// Hand-written references: the memory-bandwidth ceiling, a STREAM triad a[i] = b[i] + s * c[i]
// over three 64 MiB arrays on transparent huge pages (as tapegrad's blocks of 4 MiB and more are:
// on 4 KiB pages the triad ran 1.5x slower here, a floor our tensors would beat), split into
// equal contiguous chunks over num_threads() std::threads;
// the floor of scatter_reduce's issue-3 case (1 thread): its scatter-add and the gather that
// is src's gradient as bare loops (no checks, no allocation, no framework);
// and, with OpenBLAS, the floor of the matmul cases: cblas_sgemm alone on buffers allocated once
// (OpenBLAS's own threads, num_threads() of them), which both libraries call.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "bench_common.h"

#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef TG_BENCH_WITH_BLAS
#include <cblas.h>
#endif

namespace tg_bench {
namespace {

// n floats set to v, 2 MiB aligned, with MADV_HUGEPAGE where the kernel takes the advice.
class HugeArray {
 public:
  HugeArray(int64_t n, float v) {
    void* p = nullptr;
    const auto bytes = static_cast<size_t>(n) * sizeof(float);
    if (posix_memalign(&p, size_t{2} << 20, bytes) != 0) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, bytes / 4096 * 4096, MADV_HUGEPAGE);
#endif
    data_.reset(static_cast<float*>(p));
    std::fill(data_.get(), data_.get() + n, v);
  }
  float* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
};

void triad_chunk(float* a, const float* b, const float* c, float s, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

void stream_triad(benchmark::State& state) {
  const int64_t n = kLargeN;
  const HugeArray a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);  // reused every iteration
  const float s = 3.0f;
  const int threads = num_threads();
  for (auto _ : state) {
    if (threads == 1) {
      triad_chunk(a.data(), b.data(), c.data(), s, 0, n);
    } else {
      std::vector<std::thread> pool;
      const int64_t chunk = (n + threads - 1) / threads;
      for (int t = 1; t < threads; ++t)
        pool.emplace_back(triad_chunk, a.data(), b.data(), c.data(), s, t * chunk,
                          std::min(n, (t + 1) * chunk));
      triad_chunk(a.data(), b.data(), c.data(), s, 0, std::min(n, chunk));
      for (auto& th : pool) th.join();
    }
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * int64_t{sizeof(float)} * n);
}

// The scatter_reduce case of cases_indexing.h: src [1024, 1024] into [1024, 256] along dim 1,
// int64 index in [0, 256).
struct ScatterCase {
  static constexpr int64_t kRows = 1024, kLength = 1024, kSlots = 256;
  std::vector<int64_t> index = std::vector<int64_t>(kRows * kLength);
  std::vector<float> src = std::vector<float>(kRows * kLength, 1.0f);
  std::vector<float> out = std::vector<float>(kRows * kSlots, 0.0f);
  std::vector<float> gathered = std::vector<float>(kRows * kLength, 0.0f);
  ScatterCase() {
    std::mt19937 rng(0);
    for (int64_t& v : index) v = static_cast<int64_t>(rng() % kSlots);
  }
};

void floor_scatter_add(benchmark::State& state) {
  ScatterCase c;
  for (auto _ : state) {
    for (int64_t row = 0; row < c.kRows; ++row) {
      float* o = c.out.data() + row * c.kSlots;
      const int64_t* ix = c.index.data() + row * c.kLength;
      const float* s = c.src.data() + row * c.kLength;
      for (int64_t k = 0; k < c.kLength; ++k) o[ix[k]] += s[k];
    }
    benchmark::DoNotOptimize(c.out.data());
    benchmark::ClobberMemory();
  }
}

void floor_gather(benchmark::State& state) {
  ScatterCase c;
  for (auto _ : state) {
    for (int64_t row = 0; row < c.kRows; ++row) {
      const float* o = c.out.data() + row * c.kSlots;
      const int64_t* ix = c.index.data() + row * c.kLength;
      float* g = c.gathered.data() + row * c.kLength;
      for (int64_t k = 0; k < c.kLength; ++k) g[k] = o[ix[k]];
    }
    benchmark::DoNotOptimize(c.gathered.data());
    benchmark::ClobberMemory();
  }
}

#ifdef TG_BENCH_WITH_BLAS
// C[m, n] = A[m, k] B[k, n], float32, row-major: the call under matmul's cases.
template <int M, int K, int N> void floor_sgemm(benchmark::State& state) {
  std::vector<float> a(size_t{M} * K, 0.5f), b(size_t{K} * N, 0.25f), c(size_t{M} * N);
  openblas_set_num_threads(num_threads());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data(), K, b.data(), N,
                0.0f, c.data(), N);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}
#endif

}  // namespace

std::vector<Case> reference_cases() {
  return {
      {"stream_triad_1<<24", stream_triad, kMs},
      {"floor_scatter_reduce_sum_fwd", floor_scatter_add, kMs},
      {"floor_scatter_reduce_src_grad", floor_gather, kMs},
#ifdef TG_BENCH_WITH_BLAS
      {"floor_sgemm_512x512x512", floor_sgemm<512, 512, 512>, kMs},
      {"floor_sgemm_64x784x256", floor_sgemm<64, 784, 256>, kMs},
#endif
  };
}

}  // namespace tg_bench
