#pragma once
#include <cstdint>

// Whether the kernels with AVX-512 builds may use them: this CPU runs the four subsets they need
// (F, BW, DQ, VL) and TG_SIMD does not cap the choice lower (avx2, sse2 or scalar), so that the
// tests reach the AVX2 builds on an AVX-512 CPU too. Read once per process.
namespace tg {

bool cpu_runs_avx512();

// Whether this CPU runs AVX2, for the kernels built twice (generic, and for AVX2 with
// __attribute__((target("avx2")))) that pick one per call: the flat loops, the row reductions
// and layer_norm's rows. TG_SIMD does not cap it: each AVX2 version gives the same bits as its
// generic twin (no FMA), so the choice changes only the speed. Read once per process.
bool cpu_has_avx2();

// Whether kernels write a fresh result of `result_bytes` with streaming (non-temporal) stores:
// when each thread's share of it (the pool's thread count, get_num_threads()) is at least
// streaming_store_min_bytes(), half the largest cache (the L3 on x86) as Linux reports it, or
// 16 MiB when it reports none (the environment variable TG_STREAMING_MIN_BYTES, a byte count,
// overrides it). A share that large and the input it is computed from fill that
// cache, so the result would not stay there for its reader anyway; skipping the read of each
// destination line then saves a third of the traffic. Per thread, because threads may each
// work in a cache of that size: on this project's 2-vCPU VM a 16 MiB result ran from cache at
// 2 threads and from memory at 1 (docs/PERFORMANCE.md has both measurements and the crossover
// with the result's reader included). A result written over its input (a += b) should keep
// cached stores: its lines were just read into the cache, there is no read to save.
bool streaming_stores_for(int64_t result_bytes);
// The same for a result made from only read_bytes of distinct input (a broadcast row expanded,
// one tensor concatenated with itself): streaming pays when result and input together outgrow
// twice streaming_store_min_bytes() per thread, the cache whose half the rule above assumes the
// input takes. With read_bytes >= result_bytes it is the rule above; with less, a result up to
// the whole cache stays there (expand().contiguous() to 16 MiB at 1 thread: 1.7 -> 0.97x
// libtorch's time).
bool streaming_stores_for(int64_t result_bytes, int64_t read_bytes);
int64_t streaming_store_min_bytes();  // read once per process

// Orders a thread's streaming (non-temporal) stores before its later stores, so that another
// thread that sees those (the pool's join) sees the streamed values too: streaming stores are
// weakly ordered. Once per thread's chunk: a fence per 4 KiB row stalled every row on its stores
// reaching memory, slower than cached stores.
void stream_fence();

}  // namespace tg
