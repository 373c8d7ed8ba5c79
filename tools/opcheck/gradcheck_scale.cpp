// tg_gradcheck_scale: full vs fast gradcheck (GradcheckOptions::fast_mode) on a [256, 256]
// matmul and a [4096] masked_scatter: wall time, evaluations of the function and backward passes,
// as a Markdown table for docs/PERFORMANCE.md. The full check of the matmul needs 262,144
// evaluations of a 256^3 product; with --estimate-full it is timed on a slice of its evaluations
// and extrapolated (marked "est."), otherwise it runs in full.
//   tg_gradcheck_scale [--estimate-full]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

namespace {

using tg::Tensor;
using tg::autograd::GradcheckOptions;

struct Row {
  double seconds = 0;
  int64_t fn_calls = 0, backward_calls = 0;
  bool ok = false, estimated = false;
};

Row run(const tg::autograd::GradcheckFn& fn, const std::vector<Tensor>& inputs, bool fast) {
  GradcheckOptions opt;
  opt.fast_mode = fast;
  const auto start = std::chrono::steady_clock::now();
  const auto r = tg::autograd::gradcheck(fn, inputs, opt);
  Row row;
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.fn_calls = r.fn_calls;
  row.backward_calls = r.backward_calls;
  row.ok = r.ok;
  return row;
}

// Times `n` evaluations and `m` backward passes of fn and scales them to the full check's counts.
Row estimate_full(const tg::autograd::GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  int64_t elements_in = 0, elements_out = 0;
  for (const Tensor& x : inputs) elements_in += x.numel();
  std::vector<Tensor> outs = fn(inputs);
  for (const Tensor& y : outs) elements_out += y.numel();
  const int n = 64;
  auto start = std::chrono::steady_clock::now();
  {
    tg::NoGradGuard no_grad;
    for (int k = 0; k < n; ++k) fn(inputs);
  }
  const double per_eval =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / n;
  Tensor y = outs[0];
  start = std::chrono::steady_clock::now();
  for (int k = 0; k < n; ++k) tg::autograd::grad({y}, inputs, {tg::ones_like(y)}, true);
  const double per_backward =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / n;
  Row row;
  row.fn_calls = 2 * elements_in;
  row.backward_calls = elements_out;
  row.seconds = per_eval * static_cast<double>(row.fn_calls) +
                per_backward * static_cast<double>(row.backward_calls);
  row.ok = true;
  row.estimated = true;
  return row;
}

void print(const char* name, const char* mode, const Row& r) {
  std::printf("| %s | %s | %s%.3g s | %lld | %lld | %s |\n", name, mode, r.estimated ? "est. " : "",
              r.seconds, static_cast<long long>(r.fn_calls),
              static_cast<long long>(r.backward_calls), r.estimated ? "-" : (r.ok ? "ok" : "FAIL"));
}

}  // namespace

int main(int argc, char** argv) {
  const bool estimate = argc > 1 && std::strcmp(argv[1], "--estimate-full") == 0;
  tg::manual_seed(0);
  auto leaf = [](Tensor t) {
    t.requires_grad_(true);
    return t;
  };
  const std::vector<Tensor> mm_in = {leaf(tg::randn({256, 256}, tg::kFloat64)),
                                     leaf(tg::randn({256, 256}, tg::kFloat64))};
  const tg::autograd::GradcheckFn mm = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{tg::matmul(x[0], x[1])};
  };
  const Tensor mask = tg::rand({4096}, tg::kFloat64) > 0.5;
  const std::vector<Tensor> ms_in = {leaf(tg::randn({4096}, tg::kFloat64)),
                                     leaf(tg::randn({4096}, tg::kFloat64))};
  const tg::autograd::GradcheckFn ms = [mask](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{tg::masked_scatter(x[0], mask, x[1])};
  };
  std::printf("| case | mode | time | evaluations | backward passes | result |\n");
  std::printf("|---|---|---|---|---|---|\n");
  print("matmul [256, 256] x [256, 256]", "full",
        estimate ? estimate_full(mm, mm_in) : run(mm, mm_in, false));
  print("matmul [256, 256] x [256, 256]", "fast", run(mm, mm_in, true));
  print("masked_scatter [4096]", "full", run(ms, ms_in, false));
  print("masked_scatter [4096]", "fast", run(ms, ms_in, true));
  return 0;
}
