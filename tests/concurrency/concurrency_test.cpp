// Concurrency test (issue 12), built as a plain program: a ctest test in every build, and the
// program tools/ci/tsan.sh builds with -fsanitize=thread. Two threads train independent models,
// a third runs backward on its own graphs (with tensors big enough to use the thread pool), and a
// fourth keeps calling set_num_threads. Each worker's results must be bit-identical to the same
// work run alone on one thread: the workers share nothing but the library's own state (thread
// pool, allocator, the autograd tape counter, grad mode), which must be thread-safe. Reductions
// stay below the size at which kernels split them by thread count, so the count cannot change a
// sum's rounding; elementwise work is split (the pool runs) but is exact whatever the split.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <tapegrad/tapegrad.h>

namespace {

using tg::Tensor;

// Deterministic values in [-scale, scale] without the global generator (threads would
// interleave its draws): a splitmix64 hash of (seed, i).
Tensor values(std::vector<int64_t> shape, uint64_t seed, double scale) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 30)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    v[i] = scale * (static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0);
  }
  return tg::tensor(v, shape);
}

void append(std::vector<double>& out, const Tensor& t) {
  const std::vector<double> v = t.detach().to(tg::kFloat64).to_vector<double>();
  out.insert(out.end(), v.begin(), v.end());
}

// A two-layer classifier trained by plain SGD on fixed data; returns the final parameters and
// every step's loss.
std::vector<double> train(uint64_t seed, int steps) {
  std::vector<Tensor> params = {values({8, 16}, seed, 0.5), values({16}, seed + 1, 0.1),
                                values({16, 4}, seed + 2, 0.5), values({4}, seed + 3, 0.1)};
  for (Tensor& p : params) p.requires_grad_();
  const Tensor x = values({32, 8}, seed + 4, 1.0);
  std::vector<int64_t> labels(32);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7 + seed) % 4);
  const Tensor y = tg::tensor(labels);
  std::vector<double> out;
  for (int step = 0; step < steps; ++step) {
    Tensor h = tg::relu(tg::matmul(x, params[0]) + params[1]);
    Tensor loss = tg::cross_entropy(tg::matmul(h, params[2]) + params[3], y);
    loss.backward();
    append(out, loss);
    tg::NoGradGuard no_grad;
    for (Tensor& p : params) {
      p.sub_(p.grad() * tg::scalar_tensor(0.1, tg::kFloat64));
      p.set_grad(Tensor());
    }
  }
  for (const Tensor& p : params) append(out, p);
  return out;
}

// Graphs built and differentiated over and over: gradients of small composite functions, and an
// elementwise chain over 2^17 elements (more than the pool's grain, so parallel_for splits it).
std::vector<double> backward_loop(uint64_t seed, int rounds) {
  std::vector<double> out;
  for (int r = 0; r < rounds; ++r) {
    Tensor a = values({16, 16}, seed + static_cast<uint64_t>(r), 1.0).requires_grad_();
    Tensor b = values({16, 16}, seed + 100 + static_cast<uint64_t>(r), 1.0).requires_grad_();
    Tensor f = (tg::tanh(a) * b.exp() + tg::sigmoid(tg::matmul(a, b))).sum();
    f.backward();
    append(out, f);
    append(out, a.grad());
    append(out, b.grad());
    Tensor big = values({1 << 17}, seed + 200 + static_cast<uint64_t>(r), 2.0).requires_grad_();
    Tensor g = tg::tanh(big) * big.exp();
    g.backward(tg::ones_like(g));
    const Tensor grad = big.grad();
    append(out, grad.narrow(0, 0, 3));
    append(out, grad.narrow(0, (1 << 17) - 3, 3));
    append(out, grad.narrow(0, 70000, 3));
  }
  return out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

int main() {
  constexpr int kSteps = 30, kRounds = 12;
  const int threads_before = tg::get_num_threads();
  tg::set_num_threads(1);
  const std::vector<double> want_a = train(1, kSteps), want_b = train(2, kSteps);
  const std::vector<double> want_c = backward_loop(3, kRounds);
  tg::set_num_threads(threads_before);

  std::vector<double> got_a, got_b, got_c;
  std::atomic<int> running{3};
  std::atomic<int> resizes{0};
  {
    std::jthread a([&] {
      got_a = train(1, kSteps);
      --running;
    });
    std::jthread b([&] {
      got_b = train(2, kSteps);
      --running;
    });
    std::jthread c([&] {
      got_c = backward_loop(3, kRounds);
      --running;
    });
    std::jthread d([&] {
      for (int i = 0; running > 0; ++i) {
        tg::set_num_threads(1 + i % 4);
        ++resizes;
        std::this_thread::yield();
      }
    });
  }
  tg::set_num_threads(threads_before);
  const bool ok = same_bits(got_a, want_a) && same_bits(got_b, want_b) && same_bits(got_c, want_c);
  std::printf("concurrency: %s (%zu + %zu + %zu values, %d set_num_threads calls)\n",
              ok ? "bit-identical to the single-threaded run" : "MISMATCH", want_a.size(),
              want_b.size(), want_c.size(), resizes.load());
  return ok ? 0 : 1;
}
