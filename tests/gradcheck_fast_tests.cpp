// gradcheck's fast mode (random projections u^T J v) against the full Jacobian: the same verdict
// on every built-in op's samples, a wrong gradient caught and named by element, the evaluation
// counts that make it fast, inputs_to_check, nondet_tol, and the kink hint of the reports.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tapegrad/ops/registry.h>
#include <tapegrad/tapegrad.h>
#include <tapegrad/testing/check.h>

namespace {

using tg::Tensor;
using tg::autograd::GradcheckOptions;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

Tensor leaf(Tensor t) {
  t.requires_grad_(true);
  return t;
}

}  // namespace

// The full gradcheck passes on every one of these samples: the op check ("op check: <op>", the
// generated cases) runs it on the same samples with more (every dtype, the derived cases).
// Running it again here cost most of this file's time, so only the fast mode runs: it must pass
// where the full one does. That it fails where the full one fails is the next case's.
TEST_CASE("fast gradcheck passes on every built-in op's samples, as the full one does") {
  tg::testing::CheckOptions fast;
  fast.derived = false;
  fast.fused_vs_composed = false;
  fast.dtypes = {tg::kFloat64};
  fast.fast_gradcheck = true;
  int gradchecks = 0, gradgradchecks = 0;
  for (const auto& op : tg::registry::all_ops()) {
    if (op.library != "tapegrad") continue;
    const auto r = tg::testing::check_op(op, fast);
    INFO(op.name << "\nfast:\n" << r);
    CHECK(r.ok);
    gradchecks += r.gradchecks;
    gradgradchecks += r.gradgradchecks;
  }
  CHECK(gradchecks > 100);
  CHECK(gradgradchecks > 50);
}

TEST_CASE("fast gradcheck catches a wrong gradient and names the element from the full block") {
  // d(x * stop(x))/dx is stop(x), not 2x: the analytical gradient is half the numerical one.
  auto wrong = [](const std::vector<Tensor>& xs) { return xs[0] * xs[0].detach(); };
  GradcheckOptions opt;
  opt.fast_mode = true;
  const auto r = tg::autograd::gradcheck(wrong, {leaf(tg::tensor({0.5, -1.0, 2.0}))}, opt);
  CHECK_FALSE(r.ok);
  CHECK(contains(r.report, "gradcheck failed (fast mode)"));
  CHECK(contains(r.report, "fast mode: u^T J v for input 0 and output 0"));
  CHECK(contains(r.report, "d output 0[0] / d input 0[0]: numerical 1"));
  CHECK(contains(r.report, "analytical 0.5"));
}

TEST_CASE(
    "fast gradcheck needs a handful of evaluations where the full one needs two per element") {
  const Tensor a = leaf(tg::randn({64, 64}, tg::kFloat64));
  const Tensor b = leaf(tg::randn({64, 64}, tg::kFloat64));
  auto mm = [](const std::vector<Tensor>& xs) { return tg::matmul(xs[0], xs[1]); };
  GradcheckOptions opt;
  opt.fast_mode = true;
  const auto fast = tg::autograd::gradcheck(mm, {a, b}, opt);
  CHECK_MESSAGE(fast.ok, fast.report);
  CHECK(fast.fn_calls == 2 * opt.fast_projections * 2);  // two inputs, two projections
  CHECK(fast.backward_calls == opt.fast_projections);    // one output
  const Tensor a8 = leaf(tg::randn({8, 8}, tg::kFloat64)),
               b8 = leaf(tg::randn({8, 8}, tg::kFloat64));
  const auto full = tg::autograd::gradcheck(mm, {a8, b8});
  CHECK(full.ok);
  CHECK(full.fn_calls == 2 * (64 + 64));  // two per input element
  CHECK(full.backward_calls == 64);       // one per output element
}

TEST_CASE("gradcheck checks only inputs_to_check, and nondet_tol reruns backward") {
  // The gradient of input 1 is wrong (stop-gradient), input 0's is right.
  auto f = [](const std::vector<Tensor>& xs) { return xs[0] * xs[1] * xs[1].detach(); };
  const Tensor x = leaf(tg::tensor({0.3, -0.7})), y = leaf(tg::tensor({1.5, 0.25}));
  for (bool fast : {false, true}) {
    GradcheckOptions opt;
    opt.fast_mode = fast;
    CHECK_FALSE(tg::autograd::gradcheck(f, {x, y}, opt).ok);
    opt.inputs_to_check = {0};
    CHECK(tg::autograd::gradcheck(f, {x, y}, opt).ok);
    opt.inputs_to_check = {1};
    CHECK_FALSE(tg::autograd::gradcheck(f, {x, y}, opt).ok);
  }
  GradcheckOptions opt;
  opt.fast_mode = true;
  opt.nondet_tol = 1e-12;
  opt.inputs_to_check = {0};
  const auto r = tg::autograd::gradcheck(f, {x, y}, opt);
  CHECK(r.ok);
  CHECK(r.backward_calls == 2 * opt.fast_projections);  // each backward twice
}

TEST_CASE("a gradcheck failure at a kink says so") {
  // relu at exactly 0: the one-sided differences are 1 and 0, their mean 0.5 matches no gradient.
  auto relu = [](const std::vector<Tensor>& xs) { return tg::relu(xs[0]); };
  const auto r = tg::autograd::gradcheck(relu, {leaf(tg::tensor({0.0, 0.5}))});
  CHECK_FALSE(r.ok);
  CHECK(contains(r.report, "d output 0[0] / d input 0[0]: numerical 0.5"));
  CHECK(
      contains(r.report, "hint: the input sits on a kink (difference from above 1, from below 0)"));
}
