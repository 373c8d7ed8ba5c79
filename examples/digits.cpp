// The main job: train an MLP (64-128-10, ReLU, AdamW) on the UCI handwritten digits, report test
// accuracy, draw the learning curves as SVG, save the model as safetensors, reload it and check
// the reloaded model predicts the same.
//
//   ./build/examples/digits [--epochs N] [--out DIR] [--device cpu|cuda] [--quick]
//
// Writes DIR/digits_curves.svg, DIR/digits_mlp.safetensors and DIR/digits_loss.dot (the tape
// behind one batch's loss; render with `dot -Tsvg`). Exits non-zero if test accuracy < 96 % or
// the reloaded model disagrees. --device cuda trains on the GPU (or the emulated device of a
// TG_CUDA_EMULATION build): the model moves there with Module::to and each batch with .to.
// --quick trains 2 epochs and asks only for a clear improvement: test accuracy >= 90 % (chance is
// 10 %) and a last-epoch training loss below half the first's.
#include <tapegrad/tapegrad.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "progress.h"
#include "svg_plot.h"

namespace {

struct Config {
  int epochs = 30;
  int64_t batch_size = 32;
  double lr = 2e-3;
  double weight_decay = 1e-2;
  std::string out = TG_OUT_DIR;
  tg::Device device = tg::kCPU;
  double min_accuracy = 0.96;
  bool quick = false;
};

Config parse_args(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) {
      c.epochs = std::stoi(argv[++i]);
    } else if (a == "--out" && i + 1 < argc) {
      c.out = argv[++i];
    } else if (a == "--device" && i + 1 < argc &&
               (argv[i + 1] == std::string("cpu") || argv[i + 1] == std::string("cuda"))) {
      c.device = argv[++i] == std::string("cuda") ? tg::kCUDA : tg::kCPU;
    } else if (a == "--quick") {
      c.quick = true;
      c.epochs = 2;
      c.min_accuracy = 0.90;
    } else {
      std::cerr << "usage: digits [--epochs N] [--out DIR] [--device cpu|cuda] [--quick]\n";
      std::exit(2);
    }
  }
  if (c.device.is_cuda() && !tg::cuda::is_available()) {
    std::cerr << "digits: --device cuda, but no CUDA device is available\n";
    std::exit(2);
  }
  return c;
}

// Fraction of rows whose highest logit is the label.
double accuracy(const tg::Tensor& logits, const tg::Tensor& labels) {
  return tg::mean((tg::argmax(logits, 1) == labels).to(tg::kFloat64)).item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parse_args(argc, argv);
  std::filesystem::create_directories(cfg.out);
  tg::manual_seed(0);

  // Data: 1797 rows of 64 pixel values (0..16) and a label; 80/20 split, standardised features.
  const tg::Tensor table =
      tg::data::read_csv(std::string(TG_DATA_DIR) + "/digits.csv", {.header = false});
  const tg::Tensor pixels = table.narrow(1, 0, 64);
  const tg::Tensor labels = table.select(1, 64).to(tg::kInt64);
  const auto split = tg::data::train_test_split(table.size(0), 0.2, /*seed=*/0);
  tg::data::Standardizer scaler;
  const tg::Tensor x_train = scaler.fit_transform(pixels.index_select(0, split.train));
  const tg::Tensor x_test = scaler.transform(pixels.index_select(0, split.test));
  const tg::Tensor y_train = labels.index_select(0, split.train);
  const tg::Tensor y_test = labels.index_select(0, split.test);
  std::cout << "digits: " << x_train.size(0) << " train / " << x_test.size(0)
            << " test rows, 64 features, 10 classes\n";
  std::cout << "device: " << (cfg.device.is_cuda() ? tg::cuda::device_name() : std::string("cpu"))
            << "\n";
  // The test set lives on the training device; batches move there one at a time.
  const tg::Tensor x_test_dev = x_test.to(cfg.device), y_test_dev = y_test.to(cfg.device);

  auto model = tg::nn::MLP({64, 128, 10});
  model->to(cfg.device);  // before the optimizer, which then keeps its buffers there too
  std::cout << *model << "\n";
  tg::nn::AdamW optimizer(model->parameters(), {.lr = cfg.lr, .weight_decay = cfg.weight_decay});
  tg::nn::CosineAnnealingLR schedule(optimizer, cfg.epochs);
  tg::data::DataLoader loader(tg::data::TensorDataset({x_train, y_train}), cfg.batch_size,
                              {.shuffle = true, .seed = 0});

  examples::Progress progress(isatty(STDOUT_FILENO), cfg.epochs, loader.size());
  std::vector<double> train_loss, train_acc, test_acc;
  double train_seconds = 0;
  for (int epoch = 1; epoch <= cfg.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    model->train();
    double loss_sum = 0, correct = 0;
    int64_t seen = 0, batch_index = 0;
    for (const auto& batch : loader) {
      const tg::Tensor x = batch[0].to(cfg.device);
      const tg::Tensor y = batch[1].to(cfg.device);
      const tg::Tensor logits = (*model)(x);
      const tg::Tensor loss = tg::cross_entropy(logits, y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();

      const int64_t n = x.size(0);
      loss_sum += loss.item<double>() * static_cast<double>(n);
      correct += accuracy(logits.detach(), y) * static_cast<double>(n);
      seen += n;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.batch(epoch, ++batch_index, loss_sum / seen, correct / seen, seen / elapsed);
    }
    schedule.step();
    train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    model->eval();
    tg::NoGradGuard no_grad;
    train_loss.push_back(loss_sum / seen);
    train_acc.push_back(correct / seen);
    test_acc.push_back(accuracy((*model)(x_test_dev), y_test_dev));
    progress.epoch_done(epoch, train_loss.back(), train_acc.back(), test_acc.back());
  }

  const double final_accuracy = test_acc.back();
  std::printf("test accuracy: %.2f %% (%lld of %lld)\n", 100 * final_accuracy,
              static_cast<long long>(final_accuracy * x_test.size(0) + 0.5),
              static_cast<long long>(x_test.size(0)));
  std::printf("training time: %.2f s for %d epochs\n", train_seconds, cfg.epochs);

  // Learning curves.
  const std::string svg_path = cfg.out + "/digits_curves.svg";
  examples::write_curves_svg(svg_path, train_loss, train_acc, test_acc);
  std::cout << "curves: " << svg_path << "\n";

  // The tape behind one batch's loss, for the docs' picture.
  {
    model->eval();
    const tg::Tensor loss =
        tg::cross_entropy((*model)(x_test_dev.narrow(0, 0, 8)), y_test_dev.narrow(0, 0, 8));
    loss.set_name("loss");
    tg::autograd::write_dot(loss, cfg.out + "/digits_loss.dot");
  }

  // Save (device tensors are copied to the host), reload into a fresh model on the same device,
  // and compare predictions.
  const std::string model_path = cfg.out + "/digits_mlp.safetensors";
  tg::save(model->state_dict(), model_path,
           {{"model", "MLP 64-128-10 (ReLU)"}, {"data", "UCI digits"}});
  auto reloaded = tg::nn::MLP({64, 128, 10});
  reloaded->to(cfg.device);
  reloaded->load_state_dict(tg::load(model_path, cfg.device));
  reloaded->eval();
  tg::NoGradGuard no_grad;
  const tg::Tensor before = (*model)(x_test_dev), after = (*reloaded)(x_test_dev);
  const bool same_logits = before.to_vector<float>() == after.to_vector<float>();
  const bool same_predictions =
      tg::argmax(before, 1).to_vector<int64_t>() == tg::argmax(after, 1).to_vector<int64_t>();
  std::cout << "model: " << model_path << " (" << model->num_parameters() << " parameters)\n"
            << "reloaded model: "
            << (same_logits && same_predictions ? "same predictions and logits"
                                                : "DIFFERENT predictions")
            << "\n";

  const bool accurate = final_accuracy >= cfg.min_accuracy;
  if (!accurate) std::cerr << "FAILED: test accuracy below " << 100 * cfg.min_accuracy << " %\n";
  // The short schedule must also show the loss falling clearly, not just a lucky accuracy.
  const bool improved = !cfg.quick || train_loss.back() < 0.5 * train_loss.front();
  if (!improved) std::cerr << "FAILED: training loss did not halve\n";
  return accurate && improved && same_logits && same_predictions ? 0 : 1;
}
