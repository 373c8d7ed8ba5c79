#pragma once
// Shared by the benchmark programs: the case type, the sizes, and the per-library entry points.
// The cases are written once, as templates over a library adapter (cases.h); bench_tapegrad.cpp
// and bench_libtorch.cpp each hold one adapter and instantiate the list with it, so tapegrad's
// and libtorch's headers never meet in one translation unit.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tg_bench {

// Elements in the large (memory-bound) cases: 64 MiB per float32 array.
inline constexpr int64_t kLargeN = int64_t{1} << 24;

// One benchmark case of one library, registered as `<library>/<case>` and, with --threads=N
// (N > 1), `<library>/<case>/threads:N`.
struct Case {
  std::string name;  // e.g. "add_1elem_grad"; the same name on every side
  void (*fn)(benchmark::State&);
  // Unit of the printed times: milliseconds for the large cases, nanoseconds for the rest.
  benchmark::TimeUnit unit = benchmark::kNanosecond;
  // The case times its iterations itself (state.SetIterationTime): only part of each counts.
  bool manual_time = false;
  // A fixed iteration count (0: Google Benchmark picks one): for cases that sleep between the
  // timed parts, which --benchmark_min_time would otherwise multiply.
  int64_t iterations = 0;
};

inline constexpr benchmark::TimeUnit kMs = benchmark::kMillisecond;

std::vector<Case> tapegrad_cases();   // cases.h instantiated with the tapegrad adapter
std::vector<Case> reference_cases();  // hand-written loops (STREAM triad, floors)

#ifdef TG_BENCH_WITH_LIBTORCH
std::vector<Case> libtorch_cases();  // cases.h instantiated with the libtorch adapter
void libtorch_set_num_threads(int n);
#endif

// Threads for the current run (1 unless --threads=N or TG_BENCH_THREADS is given).
int num_threads();

}  // namespace tg_bench
