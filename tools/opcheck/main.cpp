// tg_opcheck: runs the op check over every registered op and prints one table row per op.
//   tg_opcheck [--op NAME] [--no-grad] [--no-gradgrad] [-v]
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "opcheck.h"

namespace {

void usage(std::ostream& os) {
  os << "usage: tg_opcheck [--op NAME] [--no-grad] [--no-gradgrad] [-v]\n"
        "  --op NAME       check only this op\n"
        "  --no-grad       skip gradcheck and gradgradcheck\n"
        "  --no-gradgrad   skip gradgradcheck\n"
        "  -v, --verbose   print every op's report, not only failures\n";
}

}  // namespace

int main(int argc, char** argv) {
  tg::opcheck::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--op" && i + 1 < argc) {
      options.only_op = argv[++i];
    } else if (arg == "--no-grad") {
      options.gradcheck = false;
    } else if (arg == "--no-gradgrad") {
      options.gradgradcheck = false;
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

  std::vector<tg::opcheck::OpReport> reports = tg::opcheck::check_ops(options);
  size_t width = 2;
  for (const auto& r : reports) width = std::max(width, r.op.size());
  std::printf("| %-*s | samples | forward | grad | gradgrad | inplace | rejects | status |\n",
              static_cast<int>(width), "op");
  std::printf("|%s|---------|---------|------|----------|---------|---------|--------|\n",
              std::string(width + 2, '-').c_str());
  int passed = 0, failed = 0;
  for (const auto& r : reports) {
    std::printf("| %-*s | %7d | %7d | %4d | %8d | %7d | %7d | %-6s |\n", static_cast<int>(width),
                r.op.c_str(), r.samples, r.forward, r.gradchecks, r.gradgradchecks, r.inplace,
                r.rejects, r.ok ? "ok" : "FAIL");
    (r.ok ? passed : failed) += 1;
  }
  for (const auto& r : reports)
    if ((!r.ok || options.verbose) && !r.report.empty())
      std::printf("\n== %s (%d failure%s)\n%s", r.op.c_str(), r.failures, r.failures == 1 ? "" : "s",
                  r.report.c_str());
  std::printf("\n%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
