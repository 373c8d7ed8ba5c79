#pragma once
// tg_opcheck --device: the op check on a device (tg::testing::CheckOptions::device) over every
// op, printed as a table. See device_check.cpp.
#include <tapegrad/testing/check.h>

namespace tg::opcheck {

// Every op (or options.only_op) on options.device: one table row per op, the failures' reports,
// the ops without a kernel, and "N passed, M failed, K without a <key> kernel (on <device>)".
// Returns the exit status (0 when nothing failed).
int run_device_check(const testing::CheckOptions& options);

}  // namespace tg::opcheck
