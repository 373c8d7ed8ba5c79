// Entry point of tg_bench and tg_bench_vs_torch. Registers every case of cases.h as
// `tapegrad/<case>` and, in tg_bench_vs_torch, `libtorch/<case>` right after it, so ratios come
// from one run; then the hand-written references (`reference/<case>`).
//   --threads=N (or TG_BENCH_THREADS=N): run every case with N threads in both libraries
//     (default 1); names then end in /threads:N and times are wall-clock.
//   --libtorch_first: register `libtorch/<case>` just before `tapegrad/<case>` instead of just
//     after. Without random interleaving the two run back to back: passes that alternate the
//     order time each pair within a second of each other, each library first half the time.
//   --count_allocs: also report `allocs/iter`, calls to operator new per iteration (tensor
//     headers, autograd nodes, vectors; not the data buffers, which both libraries get from
//     their own allocators). Counting costs a little time: take timings from a run without it.
// Every repetition also reports `start_s`, the seconds from the program's start to its own
// start: when the host changed speed during a run shows in the repetitions' times against it.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <tapegrad/core/parallel.h>

#include "bench_common.h"

namespace tg_bench {
namespace {
int g_threads = 1;
bool g_libtorch_first = false;
std::atomic<bool> g_count_allocs{false};
std::atomic<int64_t> g_allocs{0};
const std::chrono::steady_clock::time_point g_program_start = std::chrono::steady_clock::now();

// Removes our own flags (--threads=N, --count_allocs, --libtorch_first) from argv before Google
// Benchmark parses the rest; returns the thread count.
int parse_own_flags(int& argc, char** argv) {
  int threads = 1;
  if (const char* env = std::getenv("TG_BENCH_THREADS")) threads = std::atoi(env);
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = std::atoi(argv[i] + 10);
    else if (std::strcmp(argv[i], "--count_allocs") == 0)
      g_count_allocs = true;
    else if (std::strcmp(argv[i], "--libtorch_first") == 0)
      g_libtorch_first = true;
    else
      argv[out++] = argv[i];
  }
  argc = out;
  return threads;
}

void register_case(const std::string& library, const Case& c, int threads) {
  std::string name = library + "/" + c.name;
  if (threads > 1) name += "/threads:" + std::to_string(threads);
  auto run = [fn = c.fn](benchmark::State& state) {
    const std::chrono::duration<double> start = std::chrono::steady_clock::now() - g_program_start;
    state.counters["start_s"] = start.count();
    const int64_t before = g_allocs.load();
    fn(state);
    if (g_count_allocs) {  // includes the case's setup, negligible over many iterations
      const auto allocs = static_cast<double>(g_allocs.load() - before);
      state.counters["allocs/iter"] =
          benchmark::Counter(allocs, benchmark::Counter::kAvgIterations);
    }
  };
  auto* b = benchmark::RegisterBenchmark(name.c_str(), run);
  // Time is this thread's CPU time (robust on a shared machine); with several threads only
  // wall-clock time counts them all.
  b->Unit(c.unit);
  if (c.manual_time)
    b->UseManualTime();
  else if (threads > 1)
    b->UseRealTime();
  if (c.iterations > 0) b->Iterations(c.iterations);
}
}  // namespace

int num_threads() { return g_threads; }

}  // namespace tg_bench

// Replaced global allocation functions (they serve libtapegrad and libtorch too): plain
// malloc/free, plus a count while --count_allocs is on.
void* operator new(std::size_t n) {
  if (tg_bench::g_count_allocs.load(std::memory_order_relaxed))
    tg_bench::g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

int main(int argc, char** argv) {
  using namespace tg_bench;
  g_threads = parse_own_flags(argc, argv);
  if (g_threads < 1) {
    std::cerr << "--threads must be at least 1\n";
    return 1;
  }
  tg::set_num_threads(g_threads);
#ifdef TG_BENCH_WITH_LIBTORCH
  libtorch_set_num_threads(g_threads);
  const std::vector<Case> torch = libtorch_cases();
#endif
  for (const Case& c : tapegrad_cases()) {
    if (!g_libtorch_first) register_case("tapegrad", c, g_threads);
#ifdef TG_BENCH_WITH_LIBTORCH
    for (const Case& t : torch)
      if (t.name == c.name) register_case("libtorch", t, g_threads);
#endif
    if (g_libtorch_first) register_case("tapegrad", c, g_threads);
  }
  for (const Case& c : reference_cases()) register_case("reference", c, g_threads);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
