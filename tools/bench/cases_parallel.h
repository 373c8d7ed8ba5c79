#pragma once
// The cost of one parallel region (issue 14: 2 threads must not be slower than 1): tapegrad's
// tg::parallel_for against libtorch's at::parallel_for (OpenMP) in the same binary. At 1 thread
// both run the range inline, so the 1-thread column is the floor; at 2 threads the difference is
// the hand-off to the worker and the wait for it.
#include <chrono>
#include <thread>
#include <vector>

#include "cases_common.h"

namespace tg_bench::parallel {

// Empty regions back to back, as in a loop of ops each splitting its work: the range [0, 1024)
// with grain 1 is split into one chunk per thread, each chunk writes one value.
template <class L> void region_back_to_back(benchmark::State& state) {
  std::vector<int64_t> out(1024);
  for (auto _ : state) {
    L::parallel_for(0, 1024, 1, [&](int64_t b, int64_t e) { out[static_cast<size_t>(b)] = e; });
    benchmark::DoNotOptimize(out.data());
  }
}

// One empty region after the pool has been idle for `idle_us` microseconds (a sleep, not timed):
// the region's cost when the workers may have gone to sleep. Manual time: only the region counts.
template <class L, int idle_us> void region_after_idle(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  std::vector<int64_t> out(1024);
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    const Clock::time_point start = Clock::now();
    L::parallel_for(0, 1024, 1, [&](int64_t b, int64_t e) { out[static_cast<size_t>(b)] = e; });
    benchmark::DoNotOptimize(out.data());
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
}

// A small region with real work: x[i] = x[i] * 0.5 + 1 over 64 Ki floats (256 KiB, in L2), grain
// 4096: worth splitting only when the hand-off costs well under the ~10 us the loop takes.
template <class L> void region_64k_f32(benchmark::State& state) {
  constexpr int64_t n = 65536;
  std::vector<float> x(n, 1.0f);
  for (auto _ : state) {
    L::parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        x[static_cast<size_t>(i)] = x[static_cast<size_t>(i)] * 0.5f + 1;
    });
    benchmark::DoNotOptimize(x.data());
  }
  set_bytes(state, 2 * n * kF32);
}

template <class L> std::vector<Case> cases() {
  // The idle cases sleep 0.2 s and 0.4 s per repetition in all.
  return {
      {"parallel_region_back_to_back", region_back_to_back<L>},
      {"parallel_region_after_idle_100us", region_after_idle<L, 100>, benchmark::kNanosecond, true,
       2000},
      {"parallel_region_after_idle_2ms", region_after_idle<L, 2000>, benchmark::kNanosecond, true,
       200},
      {"parallel_region_64k_f32", region_64k_f32<L>},
  };
}

}  // namespace tg_bench::parallel
