// Uses myops like any tapegrad op: forward, backward, double backward, the tape.
#include <iostream>

#include <myops/functions.h>
#include <tapegrad/ops/registry.h>
#include <tapegrad/tapegrad.h>

int main() {
  tg::Tensor x = tg::tensor({{0.5, -2.0}, {3.0, 0.1}}).requires_grad_();
  tg::Tensor y = myops::softclip(x, 2.0);
  tg::Tensor loss = tg::sum(myops::pairwise_sqdist(y, x));
  tg::autograd::print_tape(loss, std::cout);
  // Double backward: the gradient is itself differentiable (the formulas use public ops).
  tg::Tensor g = tg::autograd::grad({loss}, {x}, {}, true, /*create_graph=*/true)[0];
  tg::Tensor gg = tg::autograd::grad({tg::sum(g * g)}, {x})[0];
  std::cout << "softclip(x, 2) = " << y << "\ndloss/dx = " << g << "\nd|g|^2/dx = " << gg << "\n";
  const tg::registry::OpInfo* op = tg::registry::find_op("softclip");
  std::cout << "registry: " << op->name << " from " << op->library << " (" << op->spec_file
            << "), backward " << op->formulas[0].second << "\n";
  return op->library == "myops" ? 0 : 1;
}
