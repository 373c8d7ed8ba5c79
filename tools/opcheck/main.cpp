// tg_opcheck: runs the op check (tapegrad::testing) over every registered op and prints one table
// row per op, then the report of every op that failed.
//   tg_opcheck [--load LIB]... [--op NAME] [--no-grad] [--no-gradgrad] [--no-derived] [--fast]
//   [--dtype D]...
//              [--random N [--seed S]] [--fused-vs-composed] [--threads N] [-v]
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <tapegrad/core/cuda.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/ops/registry.h>
#include <tapegrad/testing/check.h>

#include "device_check.h"

namespace {

void usage(std::ostream& os) {
  os << "usage: tg_opcheck [--load LIB]... [--op NAME] [--no-grad] [--no-gradgrad] [--no-derived] "
        "[--fast]\n"
        "                  [--dtype D]... [--random N [--seed S]] [--fused-vs-composed]\n"
        "                  [--threads N] [--device cuda] [-v]\n"
        "  --op NAME              check only this op\n"
        "  --no-grad              skip gradcheck and gradgradcheck\n"
        "  --no-gradgrad          skip gradgradcheck\n"
        "  --no-derived           skip the derived edge cases (non-contiguous, expanded,\n"
        "                         0-size, 0-d, in-place into a view)\n"
        "  --fast                 gradcheck through random projections (fast mode)\n"
        "  --dtype D              run only dtype D (repeatable)\n"
        "  --load LIB             load a user op library (tapegrad_add_ops) first, so that its\n"
        "                         ops are checked too (repeatable)\n"
        "  --random N             N random cases per op, shaped like its samples with random\n"
        "                         sizes and values; a failure is shrunk and printed\n"
        "  --seed S               the random mode's seed (default 1): same seed, same cases\n"
        "  --fused-vs-composed    only compare, sample by sample, the gradients of every fused\n"
        "                         backward kernel with its composed formula's (bit for bit), and\n"
        "                         print each comparison\n"
        "  --threads N            run the kernels on N threads (tg::set_num_threads)\n"
        "  --device cuda          run every sample on the device and compare with the CPU\n"
        "  -v, --verbose          print every op's report, not only failures\n";
}

// --random: every op (or --op), N random cases each; prints one line per op and each failure.
int run_random(const tg::testing::CheckOptions& options, const tg::testing::RandomOptions& random) {
  int failed = 0, ops = 0;
  for (const auto& op : tg::registry::all_ops()) {
    if (!options.only_op.empty() && op.name != options.only_op) continue;
    ++ops;
    const tg::testing::RandomReport r = tg::testing::check_op_random(op, random, options);
    std::cout << r;
    failed += r.ok ? 0 : 1;
  }
  std::printf("\nrandom mode, seed %llu: %d ops, %d failed\n",
              static_cast<unsigned long long>(random.seed), ops, failed);
  return failed == 0 && ops > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  tg::testing::CheckOptions options;
  tg::testing::RandomOptions random;
  random.cases = 0;
  std::string device;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--op" && i + 1 < argc) {
      options.only_op = argv[++i];
    } else if (arg == "--no-grad") {
      options.gradcheck = false;
    } else if (arg == "--no-gradgrad") {
      options.gradgradcheck = false;
    } else if (arg == "--no-derived") {
      options.derived = false;
    } else if (arg == "--fast") {
      options.fast_gradcheck = true;
    } else if (arg == "--dtype" && i + 1 < argc) {
      try {
        options.dtypes.push_back(tg::dtype_from_name(argv[++i]));
      } catch (const std::exception& e) {
        std::cerr << "tg_opcheck: " << e.what() << "\n";
        return 2;
      }
    } else if (arg == "--load" && i + 1 < argc) {
      // The library registers its ops while it loads (registry::register_library_at_load).
      if (!dlopen(argv[++i], RTLD_NOW | RTLD_GLOBAL)) {
        std::cerr << "tg_opcheck: cannot load " << argv[i] << ": " << dlerror() << "\n";
        return 2;
      }
    } else if ((arg == "--random" || arg == "--seed") && i + 1 < argc) {
      const long long n = std::atoll(argv[++i]);
      if (n < 0 || (arg == "--random" && n < 1)) {
        std::cerr << "tg_opcheck: " << arg << " needs a positive number\n";
        return 2;
      }
      if (arg == "--random")
        random.cases = static_cast<int>(n);
      else
        random.seed = static_cast<uint64_t>(n);
    } else if (arg == "--fused-vs-composed") {
      options.only_fused_vs_composed = true;
      options.verbose = true;
    } else if (arg == "--threads" && i + 1 < argc) {
      const int n = std::atoi(argv[++i]);
      if (n < 1) {
        std::cerr << "tg_opcheck: --threads needs a positive count\n";
        return 2;
      }
      tg::set_num_threads(n);
    } else if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
      if (device != "cuda" && device != "cpu") {
        std::cerr << "tg_opcheck: --device takes cuda or cpu\n";
        return 2;
      }
    } else if (arg == "-v" || arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "tg_opcheck: unknown argument '" << arg << "'\n";
      usage(std::cerr);
      return 2;
    }
  }

  if (device == "cuda") {
    if (!tg::cuda::is_available()) {
      std::cerr << "tg_opcheck: no CUDA device (tapegrad built without CUDA, or no GPU)\n";
      return 2;
    }
    std::printf("device: %s\n", tg::cuda::device_name().c_str());
    options.device = tg::kCUDA;
    return tg::opcheck::run_device_check(options);
  }
  if (random.cases > 0) return run_random(options, random);
  std::vector<tg::testing::OpReport> reports = tg::testing::check_all_ops(options);
  if (options.only_fused_vs_composed) {  // the ops with a fused backward, and any failure
    std::erase_if(reports, [](const auto& r) { return r.ok && r.fused == 0; });
    if (reports.empty()) {
      std::printf("no op's backward ran a fused kernel: nothing was compared\n");
      return 1;
    }
  }
  std::fputs(tg::testing::summary_table(reports, options.verbose).c_str(), stdout);
  int failed = 0;
  for (const auto& r : reports) failed += r.ok ? 0 : 1;
  std::printf("\n%d passed, %d failed\n", static_cast<int>(reports.size()) - failed, failed);
  return failed == 0 ? 0 : 1;
}
