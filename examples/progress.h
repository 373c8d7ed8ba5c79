#pragma once
// A one-line progress bar for training loops: redrawn in place on a terminal, plain lines (one
// per epoch) when the output is a file or a pipe.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace examples {

class Progress {
 public:
  Progress(bool on_terminal, int epochs, int64_t batches)
      : tty_(on_terminal), epochs_(epochs), batches_(batches) {}

  // After each batch: running loss and accuracy of this epoch, and throughput.
  void batch(int epoch, int64_t batch, double loss, double acc, double samples_per_s) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (batch != batches_ && now - last_draw_ < std::chrono::milliseconds(50)) return;
    last_draw_ = now;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * batch / batches_);
    std::printf("\repoch %*d/%d [%s%s] batch %*lld/%lld  loss %.4f  acc %5.1f%%  %7.0f samples/s",
                digits(epochs_), epoch, epochs_, std::string(filled, '#').c_str(),
                std::string(kWidth - filled, '.').c_str(), digits(batches_),
                static_cast<long long>(batch), static_cast<long long>(batches_), loss, 100 * acc,
                samples_per_s);
    std::fflush(stdout);
  }

  // After each epoch: ends the bar's line (terminal) or prints the epoch's line (plain).
  void epoch_done(int epoch, double loss, double train_acc, double test_acc) {
    if (tty_) {
      std::printf("  test %5.1f%%\n", 100 * test_acc);
    } else {
      std::printf("epoch %*d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%\n", digits(epochs_),
                  epoch, epochs_, loss, 100 * train_acc, 100 * test_acc);
    }
    std::fflush(stdout);
  }

 private:
  static int digits(int64_t n) { return static_cast<int>(std::to_string(n).size()); }
  bool tty_;
  int epochs_;
  int64_t batches_;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace examples
