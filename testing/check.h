#pragma once
// tapegrad::testing, the op check as a library: runs every sample of a registered op's spec (a
// built-in op, or one a user library added with tapegrad_add_ops) in every dtype it supports and
// checks the forward (function vs method), gradcheck and gradgradcheck in float64, the in-place
// variant against the out-of-place one (values and gradients), that reject samples throw the
// right tg::Error and leave every input unchanged, and, for an op whose backward has a fused
// kernel, that the fused gradients equal the composed formula's bit for bit. From each sample it
// also derives edge cases the spec did not write (non-contiguous and expanded inputs, 0-size,
// 0-d, an in-place self that is a view of a larger tensor; see derived.h).
//
//   tg::testing::OpReport r = tg::testing::check_op("my_op");
//   CHECK_MESSAGE(r.ok, r);   // doctest; EXPECT_TRUE(r.ok) << r; in GoogleTest
//
// With CheckOptions::device set to kCUDA it checks the op on that device against the CPU backend
// instead (device.cpp). tg_opcheck (tools/opcheck) is a thin program over check_all_ops.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <tapegrad/core/device.h>
#include <tapegrad/core/dtype.h>
#include <tapegrad/ops/registry.h>

namespace tg::testing {

struct CheckOptions {
  bool gradcheck = true;
  bool gradgradcheck = true;
  // Check the Jacobian through random projections (GradcheckOptions::fast_mode): a few
  // evaluations per input instead of one per element; a failure still names the element.
  bool fast_gradcheck = false;
  double atol = 1e-5, rtol = 1e-3;  // gradcheck tolerances (GradcheckOptions)
  // Where a plain backward runs a fused kernel (autograd/formulas/fused.h), compare its gradients
  // with the composed formula's, bit for bit, in every floating dtype.
  bool fused_vs_composed = true;
  // Run only that comparison (forward, then backward both ways), for every sample.
  bool only_fused_vs_composed = false;
  // Derive edge cases from each sample (derived.h); a spec opts a sample out with "derived".
  bool derived = true;
  std::vector<DType> dtypes;  // run only these dtypes (empty: every dtype a sample supports)
  uint64_t seed = 0;          // mixed into every sample's value seed (0: the spec's own values)
  bool verbose = false;       // also list the checks that passed in the report
  std::string only_op;        // check_all_ops: run this op only
  // Where the op is checked. A device other than the CPU (tg_opcheck --device cuda) runs every
  // sample there and on the CPU, the reference, and compares: forward outputs in every dtype
  // (integers and bool exactly, floating values to 1e-5 in float32 and 1e-10 in float64), in
  // float64 the gradients and second derivatives (the gradient of <grad, v>), the in-place
  // variant against the CPU's out-of-place result, and every reject sample (a typed [..] error,
  // inputs unchanged, in tg::cuda::set_sync_checks mode). The CPU-only checks (gradcheck by
  // finite differences, method, fused, derived) are not repeated there. An op with no kernel
  // for the device reports has_kernel = false and runs nothing.
  Device device = kCPU;
};
using Options = CheckOptions;

// One check of one case: "forward", "method", "inplace", "gradcheck", "gradgradcheck", "reject",
// "fused", "derived" (the derived case's own comparison).
struct CheckResult {
  std::string check;
  bool ok = true;
  std::string detail;  // the failure (or, when verbose, what passed)
};

// One case: a spec sample in one dtype, or an edge case derived from it.
struct CaseReport {
  size_t sample = 0;    // index in the spec's samples list
  std::string derived;  // "" for the spec's own sample, else "non-contiguous", "0-size", ...
  std::string dtype;    // "float64"
  std::string args;     // "self=float64[2, 3] dim=1" (T marks a non-contiguous tensor)
  bool reject = false;  // a reject sample
  std::string skipped;  // a derived case the op rejected with a tg::Error: why (not a failure)
  std::vector<CheckResult> checks;
  bool ok() const;
  std::string where() const;  // "sample 2 [float64] (self=...)", "sample 2 derived 0-d [...]"
};

struct OpReport {
  std::string op;
  bool ok = true;
  // Counts of checks run (a sample in two dtypes counts twice, except in `samples`).
  // fused: backward passes (sample, dtype, inputs asked for) that ran a fused kernel and were
  // compared with the composed formula. derived: derived cases run (skipped ones excluded).
  // On a device (CheckOptions::device), gradchecks and gradgradchecks count the comparisons of
  // gradients and second derivatives with the CPU's.
  int samples = 0, forward = 0, gradchecks = 0, gradgradchecks = 0, inplace = 0, rejects = 0,
      fused = 0, derived = 0, failures = 0;
  // A device check only: whether the op has a kernel for the device's dispatch key.
  bool has_kernel = true;
  std::vector<CaseReport> cases;
  std::string report;  // one line per failure (and per passed check when verbose)
  std::vector<std::string> failed_checks() const;  // "sample 1 [float64] ...: gradcheck: ..."
};

std::ostream& operator<<(std::ostream& os, const OpReport& r);
std::ostream& operator<<(std::ostream& os, const CaseReport& r);

/// Runs every check on one op.
OpReport check_op(const registry::OpInfo& op, const CheckOptions& options = {});
/// The same, by name; an unknown name is a failed report naming it.
OpReport check_op(const std::string& name, const CheckOptions& options = {});
/// check_op over every registered op (or options.only_op).
std::vector<OpReport> check_all_ops(const CheckOptions& options = {});
inline std::vector<OpReport> check_ops(const CheckOptions& options = {}) {
  return check_all_ops(options);
}
// ---- random mode (random.cpp) ----------------------------------------------------------------

struct RandomOptions {
  int cases = 100;        // random cases per op
  uint64_t seed = 1;      // the whole run is a function of it
  int64_t max_size = 8;   // sizes are drawn from [1, max_size]
  int max_shrinks = 200;  // candidate cases tried while shrinking a failure
};

struct RandomReport {
  std::string op;
  bool ok = true;
  int run = 0, discarded = 0;  // discarded: the op rejected the drawn arguments (a tg::Error)
  std::string failing_sample, shrunk_sample;  // JSON samples, when a case failed
  OpReport failure;                           // the op check of the shrunk case
};
std::ostream& operator<<(std::ostream& os, const RandomReport& r);

/// Random cases shaped like the op's spec samples: every size of a sample (except 0 and 1,
/// which broadcast and empty tensors depend on) mapped to a random size, equal sizes to equal
/// sizes so that the sample's shape relations hold, and values drawn afresh within each tensor's
/// declared constraints ("low"/"high", "distinct", "step", dtypes). A failing case is shrunk,
/// size by size, to the smallest that still fails, and reported with the op check's report.
RandomReport check_op_random(const registry::OpInfo& op, const RandomOptions& random = {},
                             const CheckOptions& options = {});

/// The table tg_opcheck prints: one row per op, then every failed op's report.
std::string summary_table(const std::vector<OpReport>& reports, bool verbose = false);

}  // namespace tg::testing
