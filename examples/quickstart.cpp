// Quickstart: fit a linear model to Fisher's iris data by gradient descent, then check its
// gradient against finite differences. Predicts petal width from the other three measurements.
#include <tapegrad/tapegrad.h>

#include <fstream>
#include <iostream>
#include <sstream>

int main() {
  // Load data/iris.csv: a header line, then 4 measurements and a class per row.
  std::ifstream in(std::string(TG_DATA_DIR) + "/iris.csv");
  std::string line;
  std::getline(in, line);
  std::vector<double> features, target;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    std::string cell;
    for (int col = 0; col < 4 && std::getline(row, cell, ','); ++col)
      (col < 3 ? features : target).push_back(std::stod(cell));
  }
  const int64_t n = static_cast<int64_t>(target.size());
  tg::Tensor x = tg::tensor(features, {n, 3});
  tg::Tensor y = tg::tensor(target, {n, 1});

  // Model: y ≈ x @ w + b, trained by plain gradient descent on the mean squared error.
  tg::manual_seed(0);
  tg::Tensor w = (tg::randn({3, 1}, tg::kFloat64) * 0.1).requires_grad_();
  tg::Tensor b = tg::zeros({1}, tg::kFloat64).requires_grad_();
  auto loss_fn = [&](const tg::Tensor& w_, const tg::Tensor& b_) {
    tg::Tensor err = tg::matmul(x, w_) + b_ - y;
    return tg::mean(err * err);
  };
  // Gradient descent on this loss is stable for lr < 2 / 121 (121: the largest eigenvalue of its
  // Hessian, 2 X^T X / n with the bias column); 0.01 reaches mse 0.036, the least-squares optimum.
  const double lr = 0.01;
  double final_mse = 0;
  for (int step = 0; step <= 2000; ++step) {
    tg::Tensor loss = loss_fn(w, b);
    final_mse = loss.item<double>();
    loss.backward();
    {
      tg::NoGradGuard no_grad;  // the update itself is not part of the model
      w -= w.grad() * lr;
      b -= b.grad() * lr;
      w.grad().zero_();
      b.grad().zero_();
    }
    if (step % 500 == 0) std::cout << "step " << step << "  mse " << loss.item<double>() << "\n";
  }
  std::cout << "w = " << w.detach() << "\nb = " << b.detach() << "\n";

  // The gradient autograd computes agrees with central differences.
  auto check =
      tg::autograd::gradcheck([&](const std::vector<tg::Tensor>& p) { return loss_fn(p[0], p[1]); },
                              {w, b});
  std::cout << "gradcheck: " << (check.ok ? "ok" : check.report) << "\n";
  // The least-squares optimum is mse 0.0359; anything far above it means training went wrong.
  return check.ok && final_mse < 0.04 ? 0 : 1;
}
