// Entry point of tg_bench and tg_bench_vs_torch. Registers every case as `tapegrad/<case>` and,
// in tg_bench_vs_torch, `libtorch/<case>` right after it, so ratios come from one run.
//   --threads=N (or TG_BENCH_THREADS=N): run the large cases with N threads (default 1).
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <tapegrad/core/parallel.h>

#include "bench_common.h"

namespace tg_bench {
namespace {
int g_threads = 1;

// Removes our own --threads=N flag from argv before Google Benchmark parses the rest.
int parse_threads(int& argc, char** argv) {
  int threads = 1;
  if (const char* env = std::getenv("TG_BENCH_THREADS")) threads = std::atoi(env);
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = std::atoi(argv[i] + 10);
    else
      argv[out++] = argv[i];
  }
  argc = out;
  return threads;
}

void register_case(const std::string& library, const Case& c, int threads) {
  if (threads > 1 && !c.large) return;  // small cases never split across threads
  std::string name = library + "/" + c.name;
  if (threads > 1) name += "/threads:" + std::to_string(threads);
  auto* b = benchmark::RegisterBenchmark(name.c_str(), c.fn);
  if (c.large) b->UseRealTime()->Unit(benchmark::kMillisecond);
  else b->Unit(benchmark::kNanosecond);
}
}  // namespace

int num_threads() { return g_threads; }

}  // namespace tg_bench

int main(int argc, char** argv) {
  using namespace tg_bench;
  g_threads = parse_threads(argc, argv);
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
    register_case("tapegrad", c, g_threads);
#ifdef TG_BENCH_WITH_LIBTORCH
    for (const Case& t : torch)
      if (t.name == c.name) register_case("libtorch", t, g_threads);
#endif
  }
  for (const Case& c : reference_cases()) register_case("reference", c, g_threads);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
