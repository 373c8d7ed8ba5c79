// Uses the installed headers and library: a gradient through a few ops, checked by gradcheck.
#include <tapegrad/tapegrad.h>

#include <iostream>

int main() {
  tg::Tensor x = tg::tensor({{0.1, 0.2}, {0.3, -0.4}}).requires_grad_();
  tg::Tensor loss = tg::sum(tg::tanh(tg::matmul(x, x)));
  loss.backward();
  auto r = tg::autograd::gradcheck(
      [](const std::vector<tg::Tensor>& in) {
        return std::vector<tg::Tensor>{tg::tanh(tg::matmul(in[0], in[0]))};
      },
      {x});
  std::cout << "consumer: loss " << loss.item<double>() << ", grad " << x.grad() << ", gradcheck "
            << (r.ok ? "ok" : r.report) << "\n";
  return r.ok ? 0 : 1;
}
