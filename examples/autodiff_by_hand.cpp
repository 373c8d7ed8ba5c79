// Autodiff by hand: a tiny graph, the tape it records, the chain rule worked through step by step,
// and the same gradients from backward() and from finite differences (gradcheck).
//
//   f(a, b) = tanh(a * b + b)      at a = 0.5, b = -1.5
#include <tapegrad/tapegrad.h>

#include <cmath>
#include <cstdio>
#include <iostream>

int main() {
  const tg::Tensor a = tg::tensor({0.5}).requires_grad_().set_name("a");
  const tg::Tensor b = tg::tensor({-1.5}).requires_grad_().set_name("b");

  // Forward: every op is recorded on the tape with a sequence number.
  const tg::Tensor u = a * b;  // u = a b
  const tg::Tensor v = u + b;  // v = u + b
  const tg::Tensor f = tg::tanh(v).set_name("f");
  std::cout << "The tape (oldest first; backward runs it bottom-up):\n";
  tg::autograd::print_tape(f, std::cout);

  // Backward by hand: start from df/df = 1 and apply each entry's formula in reverse order.
  const double av = 0.5, bv = -1.5, uv = av * bv, vv = uv + bv, fv = std::tanh(vv);
  const double df_dv = 1 - fv * fv;  // TanhBackward: grad * (1 - result^2)
  const double df_du = df_dv;        // AddBackward:  self gets grad
  double df_db = df_dv;              //               other gets grad (b's first path)
  const double df_da = df_du * bv;   // MulBackward:  self gets grad * other
  df_db += df_du * av;               //               other gets grad * self (b's second path)
  std::printf("\nby hand:    f = %.6f  df/da = %.6f  df/db = %.6f\n", fv, df_da, df_db);

  // The engine does the same walk.
  f.backward();
  std::printf("backward(): f = %.6f  df/da = %.6f  df/db = %.6f\n", f.item<double>(),
              a.grad().item<double>(), b.grad().item<double>());

  // And central differences agree with both.
  const auto check = tg::autograd::gradcheck(
      [](const std::vector<tg::Tensor>& in) { return tg::tanh(in[0] * in[1] + in[1]); }, {a, b});
  std::printf("gradcheck:  %s\n", check.ok ? "ok (analytic == numeric)" : check.report.c_str());

  const bool same = std::abs(a.grad().item<double>() - df_da) < 1e-12 &&
                    std::abs(b.grad().item<double>() - df_db) < 1e-12;
  std::printf("by hand == backward(): %s\n", same ? "yes" : "NO");
  return check.ok && same ? 0 : 1;
}
