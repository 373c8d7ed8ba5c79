// A small CNN on the UCI handwritten digits, seen as 8x8 images: two 3x3 convolutions with batch
// norm and ReLU, a 2x2 max pool and a linear classifier (about 10 k parameters), trained with
// AdamW on the same 80/20 split and standardisation as `digits`. Reports test accuracy, draws the
// learning curves as SVG, saves the model (batch-norm buffers included) and checks that the
// reloaded model predicts the same.
//
//   ./build/examples/digits_cnn [--epochs N] [--seed S] [--min-accuracy A] [--out DIR]
//
// Writes DIR/digits_cnn_curves.svg and DIR/digits_cnn.safetensors. Exits non-zero if the test
// accuracy is below A (default 0.985) or the reloaded model disagrees.
#include <tapegrad/tapegrad.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "progress.h"
#include "svg_plot.h"

namespace {

struct Config {
  int epochs = 15;
  int64_t batch_size = 32;
  double lr = 2e-3;
  double weight_decay = 1e-2;
  double min_accuracy = 0.985;
  uint64_t seed = 0;  // initial weights and batch order (the split always uses seed 0)
  std::string out = TG_OUT_DIR;
};

Config parse_args(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) {
      c.epochs = std::stoi(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      c.seed = std::stoull(argv[++i]);
    } else if (a == "--min-accuracy" && i + 1 < argc) {
      c.min_accuracy = std::stod(argv[++i]);
    } else if (a == "--out" && i + 1 < argc) {
      c.out = argv[++i];
    } else {
      std::cerr << "usage: digits_cnn [--epochs N] [--seed S] [--min-accuracy A] [--out DIR]\n";
      std::exit(2);
    }
  }
  return c;
}

// [N, 1, 8, 8] -> conv 16 -> BN -> ReLU -> conv 32 -> BN -> ReLU -> max pool 2 -> [N, 32 * 4 * 4]
// -> linear 10. Keeping the 4x4 map (no global average) keeps where each stroke is.
std::shared_ptr<tg::nn::Sequential> make_model() {
  using namespace tg::nn;
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(1, 16, 3, ConvOptions{.padding = 1}),
      std::make_shared<BatchNorm2d>(16), std::make_shared<ReLU>(),
      std::make_shared<Conv2d>(16, 32, 3, ConvOptions{.padding = 1}),
      std::make_shared<BatchNorm2d>(32), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Flatten>(), std::make_shared<Linear>(32 * 4 * 4, 10)});
}

double accuracy(const tg::Tensor& logits, const tg::Tensor& labels) {
  return tg::mean((tg::argmax(logits, 1) == labels).to(tg::kFloat64)).item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  const Config cfg = parse_args(argc, argv);
  std::filesystem::create_directories(cfg.out);
  tg::manual_seed(cfg.seed);

  // The data exactly as `digits` prepares it, then each row of 64 pixels as a 1x8x8 image.
  const tg::Tensor table =
      tg::data::read_csv(std::string(TG_DATA_DIR) + "/digits.csv", {.header = false});
  const tg::Tensor pixels = table.narrow(1, 0, 64);
  const tg::Tensor labels = table.select(1, 64).to(tg::kInt64);
  const auto split = tg::data::train_test_split(table.size(0), 0.2, /*seed=*/0);
  tg::data::Standardizer scaler;
  const tg::Tensor x_train =
      scaler.fit_transform(pixels.index_select(0, split.train)).reshape({-1, 1, 8, 8});
  const tg::Tensor x_test =
      scaler.transform(pixels.index_select(0, split.test)).reshape({-1, 1, 8, 8});
  const tg::Tensor y_train = labels.index_select(0, split.train);
  const tg::Tensor y_test = labels.index_select(0, split.test);
  std::cout << "digits_cnn: " << x_train.size(0) << " train / " << x_test.size(0)
            << " test images of 1x8x8, 10 classes\n";

  auto model = make_model();
  std::cout << *model << "\n";
  tg::nn::AdamW optimizer(model->parameters(), {.lr = cfg.lr, .weight_decay = cfg.weight_decay});
  tg::nn::CosineAnnealingLR schedule(optimizer, cfg.epochs);
  tg::data::DataLoader loader(tg::data::TensorDataset({x_train, y_train}), cfg.batch_size,
                              {.shuffle = true, .seed = cfg.seed});

  examples::Progress progress(isatty(STDOUT_FILENO), cfg.epochs, loader.size());
  std::vector<double> train_loss, train_acc, test_acc;
  double train_seconds = 0;
  for (int epoch = 1; epoch <= cfg.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    model->train();
    double loss_sum = 0, correct = 0;
    int64_t seen = 0, batch_index = 0;
    for (const auto& batch : loader) {
      const tg::Tensor logits = (*model)(batch[0]);
      const tg::Tensor loss = tg::cross_entropy(logits, batch[1]);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();

      const int64_t n = batch[0].size(0);
      loss_sum += loss.item<double>() * static_cast<double>(n);
      correct += accuracy(logits.detach(), batch[1]) * static_cast<double>(n);
      seen += n;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress.batch(epoch, ++batch_index, loss_sum / seen, correct / seen, seen / elapsed);
    }
    schedule.step();
    train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    model->eval();  // batch norm now uses its running statistics
    tg::NoGradGuard no_grad;
    train_loss.push_back(loss_sum / seen);
    train_acc.push_back(correct / seen);
    test_acc.push_back(accuracy((*model)(x_test), y_test));
    progress.epoch_done(epoch, train_loss.back(), train_acc.back(), test_acc.back());
  }

  const double final_accuracy = test_acc.back();
  std::printf("test accuracy: %.2f %% (%lld of %lld)\n", 100 * final_accuracy,
              static_cast<long long>(final_accuracy * x_test.size(0) + 0.5),
              static_cast<long long>(x_test.size(0)));
  std::printf("training time: %.2f s for %d epochs\n", train_seconds, cfg.epochs);

  const std::string svg_path = cfg.out + "/digits_cnn_curves.svg";
  examples::write_curves_svg(svg_path, train_loss, train_acc, test_acc);
  std::cout << "curves: " << svg_path << "\n";

  // Save (parameters and batch-norm buffers), reload into a fresh model, compare predictions.
  const std::string model_path = cfg.out + "/digits_cnn.safetensors";
  tg::save(model->state_dict(), model_path, {{"model", "digits CNN"}, {"data", "UCI digits"}});
  auto reloaded = make_model();
  reloaded->load_state_dict(tg::load(model_path));
  reloaded->eval();
  tg::NoGradGuard no_grad;
  const bool same = (*model)(x_test).to_vector<float>() == (*reloaded)(x_test).to_vector<float>();
  std::cout << "model: " << model_path << " (" << model->num_parameters() << " parameters)\n"
            << "reloaded model: " << (same ? "same logits" : "DIFFERENT logits") << "\n";

  if (final_accuracy < cfg.min_accuracy)
    std::fprintf(stderr, "FAILED: test accuracy below %.2f %%\n", 100 * cfg.min_accuracy);
  return final_accuracy >= cfg.min_accuracy && same ? 0 : 1;
}
