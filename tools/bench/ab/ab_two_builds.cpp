// Old against new library build in one process, for changes worth a few per cent: each build's
// step library (a step_*.cpp compiled and linked against that build) is loaded into its own link
// namespace with dlmopen, so both copies of libtapegrad live side by side, and the two run in
// alternating blocks of calls. Each block pair gives a ratio new / old taken within milliseconds,
// so the host's slow and fast phases (which move whole runs by 10-50 % here) cancel out.
// Usage: ab_two_builds BLOCKS CALLS_PER_BLOCK OLD_STEP.so NEW_STEP.so (tools/bench/ab/ab.sh
// builds and runs it). Loading the same file twice measures the harness's own bias (about 1 %:
// run both orders).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Step = double (*)(int calls);

Step load(const char* path) {
  void* handle = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "%s\n", dlerror());
    std::exit(1);
  }
  return reinterpret_cast<Step>(dlsym(handle, "run_steps"));
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s BLOCKS CALLS_PER_BLOCK OLD_STEP.so NEW_STEP.so\n", argv[0]);
    return 2;
  }
  const int blocks = std::atoi(argv[1]), calls = std::atoi(argv[2]);
  const Step step[2] = {load(argv[3]), load(argv[4])};
  double sink = step[0](calls) + step[1](calls);  // warm both: first touches, lazy binding
  std::vector<double> ratio, per_call[2];
  for (int b = 0; b < blocks; ++b) {
    double us[2];
    for (int k = 0; k < 2; ++k) {
      const int which = b % 2 ? 1 - k : k;  // either build first, in turn
      const auto start = std::chrono::steady_clock::now();
      sink += step[which](calls);
      us[which] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
    }
    ratio.push_back(us[1] / us[0]);
    per_call[0].push_back(us[0] / calls);
    per_call[1].push_back(us[1] / calls);
  }
  std::printf(
      "old %.2f us, new %.2f us per call; new / old paired: median %.4f (quartiles %.4f - %.4f; "
      "checksum %g)\n",
      quantile(per_call[0], 0.5), quantile(per_call[1], 0.5), quantile(ratio, 0.5),
      quantile(ratio, 0.25), quantile(ratio, 0.75), sink);
}
