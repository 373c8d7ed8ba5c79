// tg::testing's device option (CheckOptions::device): the op check run on the CUDA device
// against the CPU backend, as tg_opcheck --device cuda runs it, through the library API.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <tapegrad/core/cuda.h>
#include <tapegrad/testing/check.h>

TEST_CASE("cuda opcheck: CheckOptions::device compares an op on the device with the CPU") {
  if (!tg::cuda::is_available()) {
    MESSAGE("no CUDA device: skipping");
    return;
  }
  tg::testing::CheckOptions options;
  options.device = tg::kCUDA;
  const tg::testing::OpReport r = tg::testing::check_op("scatter_reduce", options);
  CHECK_MESSAGE(r.ok, r);
  CHECK(r.has_kernel);
  CHECK(r.forward > 0);
  CHECK(r.gradchecks > 0);  // gradients compared with the CPU's
  CHECK(r.gradgradchecks > 0);
  CHECK(r.rejects > 0);
  // Every case records its comparisons, as the CPU check does.
  int forward_checks = 0;
  for (const auto& c : r.cases)
    for (const auto& check : c.checks) forward_checks += check.check == "forward" && check.ok;
  CHECK(forward_checks == r.forward);
  // Options still select: one dtype only.
  options.dtypes = {tg::kInt64};
  const tg::testing::OpReport ints = tg::testing::check_op("scatter_add", options);
  CHECK(ints.ok);
  CHECK(ints.forward > 0);
  CHECK(ints.gradchecks == 0);  // gradients are compared in float64 only
  for (const auto& c : ints.cases) CHECK(c.dtype == "int64");

  // An op with no CUDA kernel (if any is left) runs nothing and says so.
  for (const auto& op : tg::registry::all_ops()) {
    const auto& keys = op.kernel_keys;
    if (std::find(keys.begin(), keys.end(), "CUDA") != keys.end()) continue;
    options.dtypes.clear();
    const tg::testing::OpReport none = tg::testing::check_op(op, options);
    CHECK_MESSAGE(!none.has_kernel, op.name);
    CHECK(none.forward == 0);
    break;
  }
}
