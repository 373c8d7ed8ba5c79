// tg_opcheck --device: the checks themselves are tapegrad::testing's (testing/device.cpp, run by
// check_all_ops when CheckOptions::device is set); this prints their summary.
#include "device_check.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace tg::opcheck {

int run_device_check(const testing::CheckOptions& options) {
  const Device device = options.device;
  const std::vector<testing::OpReport> reports = testing::check_all_ops(options);
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
                r.op.c_str(), r.samples, r.forward, r.gradchecks, r.gradgradchecks, r.inplace,
                r.rejects, status);
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
  const char* key = device.is_cuda() ? "CUDA" : "CPU";
  if (!without.empty()) std::printf("\nwithout a %s kernel: %s\n", key, without.c_str());
  std::printf("\n%d passed, %d failed, %d without a %s kernel (on %s)\n", passed, failed, missing,
              key, device.str().c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace tg::opcheck
