#pragma once
// Shared by the benchmark programs: the case type, the sizes, and the per-library case lists.
// Each library's cases live in their own .cpp so tapegrad and libtorch headers never meet.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tg_bench {

// Elements in the large (memory-bound) cases: 64 MiB per float32 array.
inline constexpr int64_t kLargeN = int64_t{1} << 24;

// One benchmark case of one library. Large cases are memory-bound, reported in ms, and are the
// only ones run in multi-thread mode.
struct Case {
  std::string name;  // e.g. "add_1elem_grad"; the same name on every side
  void (*fn)(benchmark::State&);
  bool large = false;
};

std::vector<Case> tapegrad_cases();
std::vector<Case> indexing_tapegrad_cases();  // issue-3 ops, bench_indexing_tapegrad.cpp
std::vector<Case> mlp_tapegrad_cases();       // issue-4 training step, bench_mlp_tapegrad.cpp
std::vector<Case> reference_cases();  // hand-written loops (STREAM triad): the bandwidth ceiling

#ifdef TG_BENCH_WITH_LIBTORCH
std::vector<Case> libtorch_cases();
std::vector<Case> indexing_libtorch_cases();  // issue-3 ops, bench_indexing_libtorch.cpp
std::vector<Case> mlp_libtorch_cases();       // issue-4 training step, bench_mlp_libtorch.cpp
void libtorch_set_num_threads(int n);
#endif

// Threads for the current run (1 unless --threads=N or TG_BENCH_THREADS is given).
int num_threads();

}  // namespace tg_bench
