// tg_opcheck: runs the op check over every registered op and prints one table row per op.
//   tg_opcheck [--op NAME] [--no-grad] [--no-gradgrad] [--fused-vs-composed] [--threads N]
//              [--device cuda] [-v]
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <tapegrad/core/cuda.h>
#include <tapegrad/core/parallel.h>

#include "device_check.h"
#include "opcheck.h"

namespace {

void usage(std::ostream& os) {
  os << "usage: tg_opcheck [--op NAME] [--no-grad] [--no-gradgrad] [--fused-vs-composed]\n"
        "                  [--threads N] [--device cuda] [-v]\n"
        "  --op NAME              check only this op\n"
        "  --no-grad              skip gradcheck and gradgradcheck\n"
        "  --no-gradgrad          skip gradgradcheck\n"
        "  --fused-vs-composed    only compare, sample by sample, the gradients of every fused\n"
        "                         backward kernel with its composed formula's (bit for bit), and\n"
        "                         print each comparison\n"
        "  --threads N            run the kernels on N threads (tg::set_num_threads)\n"
        "  --device cuda          run every sample on the device and compare with the CPU\n"
        "  -v, --verbose          print every op's report, not only failures\n";
}

}  // namespace

// tg_opcheck --device: one row per op, then "N passed, M failed, K without a CUDA kernel".
int check_on_device(const tg::opcheck::Options& options, tg::Device device) {
  std::vector<tg::opcheck::DeviceReport> reports;
  for (const tg::registry::OpInfo& op : tg::registry::all_ops())
    if (options.only_op.empty() || op.name == options.only_op)
      reports.push_back(tg::opcheck::check_op_on_device(op, device, options));
  size_t width = 2;
  for (const auto& r : reports) width = std::max(width, r.op.size());
  std::printf("| %-*s | samples | forward | grad | gradgrad | inplace | rejects | status    |\n",
              static_cast<int>(width), "op");
  std::printf("|%s|---------|---------|------|----------|---------|---------|-----------|\n",
              std::string(width + 2, '-').c_str());
  int passed = 0, failed = 0, missing = 0;
  std::string without;
  for (const auto& r : reports) {
    const char* status = !r.has_kernel ? "no kernel" : r.ok ? "ok" : "FAIL";
    std::printf("| %-*s | %7d | %7d | %4d | %8d | %7d | %7d | %-9s |\n", static_cast<int>(width),
                r.op.c_str(), r.samples, r.forward, r.grads, r.gradgrads, r.inplace, r.rejects,
                status);
    if (!r.has_kernel) {
      ++missing;
      without += (without.empty() ? "" : " ") + r.op;
    } else {
      (r.ok ? passed : failed) += 1;
    }
  }
  for (const auto& r : reports)
    if (r.has_kernel && (!r.ok || options.verbose) && !r.report.empty())
      std::printf("\n== %s (%d failure%s)\n%s", r.op.c_str(), r.failures,
                  r.failures == 1 ? "" : "s", r.report.c_str());
  if (!without.empty())
    std::printf("\nwithout a %s kernel: %s\n", device.str().c_str(), without.c_str());
  std::printf("\n%d passed, %d failed, %d without a %s kernel (on %s)\n", passed, failed, missing,
              device.is_cuda() ? "CUDA" : "CPU", device.str().c_str());
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  tg::opcheck::Options options;
  std::string device;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--op" && i + 1 < argc) {
      options.only_op = argv[++i];
    } else if (arg == "--no-grad") {
      options.gradcheck = false;
    } else if (arg == "--no-gradgrad") {
      options.gradgradcheck = false;
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

  if (!device.empty()) {
    if (device == "cuda" && !tg::cuda::is_available()) {
      std::cerr << "tg_opcheck: no CUDA device (tapegrad built without CUDA, or no GPU)\n";
      return 2;
    }
    if (device == "cuda") std::printf("device: %s\n", tg::cuda::device_name().c_str());
    return check_on_device(options, device == "cuda" ? tg::Device(tg::kCUDA) : tg::Device());
  }
  std::vector<tg::opcheck::OpReport> reports = tg::opcheck::check_ops(options);
  if (options.only_fused_vs_composed) {  // the ops with a fused backward, and any failure
    std::erase_if(reports, [](const auto& r) { return r.ok && r.fused == 0; });
    if (reports.empty()) {
      std::printf("no op's backward ran a fused kernel: nothing was compared\n");
      return 1;
    }
  }
  size_t width = 2;
  for (const auto& r : reports) width = std::max(width, r.op.size());
  std::printf(
      "| %-*s | samples | forward | grad | gradgrad | inplace | rejects | fused | status |\n",
      static_cast<int>(width), "op");
  std::printf("|%s|---------|---------|------|----------|---------|---------|-------|--------|\n",
              std::string(width + 2, '-').c_str());
  int passed = 0, failed = 0;
  for (const auto& r : reports) {
    std::printf("| %-*s | %7d | %7d | %4d | %8d | %7d | %7d | %5d | %-6s |\n",
                static_cast<int>(width), r.op.c_str(), r.samples, r.forward, r.gradchecks,
                r.gradgradchecks, r.inplace, r.rejects, r.fused, r.ok ? "ok" : "FAIL");
    (r.ok ? passed : failed) += 1;
  }
  for (const auto& r : reports)
    if ((!r.ok || options.verbose) && !r.report.empty())
      std::printf("\n== %s (%d failure%s)\n%s", r.op.c_str(), r.failures,
                  r.failures == 1 ? "" : "s", r.report.c_str());
  std::printf("\n%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
