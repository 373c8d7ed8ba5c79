// The steps ab_two_builds.cpp times: run_steps(n) runs the op named by STEP_OP n times on
// inputs made once (STEP_THREADS pool threads). Compiled once per library build (ab.sh).
#include <tapegrad/tapegrad.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Inputs {
  tg::Tensor rows = tg::randn({4096, 1024});        // [4096, 1024]: the row ops
  tg::Tensor heads = tg::randn({32, 128, 12, 64});  // attention's [B, T, H, D]
  tg::Tensor a = tg::randn({1 << 22}), b = tg::randn({1 << 22});
  tg::Tensor mask = tg::gt(tg::randn({1 << 22}), tg::zeros({1}));
};

Inputs& inputs() {
  static Inputs* in = [] {
    const char* threads = std::getenv("STEP_THREADS");
    tg::set_num_threads(threads ? std::atoi(threads) : 1);
    tg::manual_seed(0);
    return new Inputs();
  }();
  return *in;
}

// (a * b + a).sum().backward() on fresh 1-element leaves: the per-op overhead.
double tiny_step() {
  tg::Tensor a = tg::full({1}, 1.5), b = tg::full({1}, 2.5);
  a.requires_grad_();
  b.requires_grad_();
  tg::sum(a * b + a).backward();
  return *a.grad().data<float>();
}

double one(const std::string& op) {
  if (op == "tiny") return tiny_step();
  Inputs& in = inputs();
  if (op == "cumsum") return tg::cumsum(in.rows, 1).data<float>()[3];
  if (op == "max") return static_cast<double>(std::get<1>(tg::max(in.rows, 1)).data<int64_t>()[3]);
  if (op == "prod") return tg::prod(in.rows, 1).data<float>()[3];
  if (op == "topk") return std::get<0>(tg::topk(in.rows, 8, 1)).data<float>()[3];
  if (op == "sum_dim1") return tg::sum(in.rows, {1}).data<float>()[3];
  if (op == "where") return tg::where(in.mask, in.a, in.b).data<float>()[3];
  if (op == "permute") return tg::permute(in.heads, {0, 2, 1, 3}).contiguous().data<float>()[3];
  std::abort();
}

}  // namespace

extern "C" double run_steps(int calls) {
  const char* op = std::getenv("STEP_OP");
  const std::string name = op ? op : "tiny";
  double sum = 0;
  for (int i = 0; i < calls; ++i) sum += one(name);
  return sum;
}
