#pragma once
// The op check on a device (tg_opcheck --device cuda): every sample of an op run on the device
// and on the CPU, compared. See device_check.cpp.
#include <string>
#include <vector>

#include <tapegrad/core/device.h>
#include <tapegrad/ops/registry.h>

#include <tapegrad/testing/check.h>

namespace tg::opcheck {

struct DeviceReport {
  std::string op;
  bool has_kernel = true;  // the op has a kernel for the device's dispatch key (or a Default one)
  bool ok = true;
  int samples = 0, forward = 0, grads = 0, gradgrads = 0, inplace = 0, rejects = 0, failures = 0;
  std::string report;  // one line per failure
};

// Every sample in every dtype: the forward outputs on `device` against the CPU's (exact for
// integers and bool, to rounding for floating dtypes), in float64 the gradients and second
// derivatives (the gradient of <grad, v>) against the CPU's, the in-place variant against the
// out-of-place result, and every reject sample: the same typed error, inputs unchanged (run with
// tg::cuda::set_sync_checks(true)).
DeviceReport check_op_on_device(const registry::OpInfo& op, Device device,
                                const testing::CheckOptions& options = {});

// tg_opcheck --device: every op (or options.only_op) on `device`, one table row per op, the
// failures' reports, the ops without a kernel, and "N passed, M failed, K without a <key>
// kernel". Returns the exit status (0 when nothing failed).
int run_device_check(const testing::CheckOptions& options, Device device);

}  // namespace tg::opcheck
