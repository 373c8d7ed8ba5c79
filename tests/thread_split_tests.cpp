// Kernels whose work is split across the pool in blocks that do not depend on the thread count:
// the same bits at 1, 2 and 3 threads, and the values of the same math written with public ops
// in float64.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include <tapegrad/tapegrad.h>

using namespace tg;

namespace {

struct ThreadsGuard {
  int before = get_num_threads();
  ~ThreadsGuard() { set_num_threads(before); }
};

// Every element of got within tol * (1 + |want|) of want.
void check_near(const Tensor& got, const Tensor& want, double tol) {
  const std::vector<double> g = got.to(kFloat64).to_vector<double>();
  const std::vector<double> w = want.to_vector<double>();
  REQUIRE(g.size() == w.size());
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i)
    bad += !(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
  CHECK(bad == 0);
}

// layer_norm's three gradients over the last dim in float64 from public ops.
std::tuple<Tensor, Tensor, Tensor> layer_norm_grads_f64(const Tensor& dy, const Tensor& x,
                                                        const Tensor& w, double eps) {
  const Tensor x64 = x.to(kFloat64), dy64 = dy.to(kFloat64), w64 = w.to(kFloat64);
  const Tensor centered = x64 - mean(x64, {-1}, true);
  const Tensor rstd = pow_scalar(mean(centered * centered, {-1}, true) + eps, -0.5);
  const Tensor xhat = centered * rstd;
  const Tensor g = dy64 * w64;
  const Tensor gi = rstd * (g - mean(g, {-1}, true) - xhat * mean(g * xhat, {-1}, true));
  return {gi, sum(dy64 * xhat, {0}), sum(dy64, {0})};
}

// layer_norm_backward over the last dim (from the given mean and rstd, or recomputing them): the
// same bits at 1, 2 and 3 threads, within 1e-5 of the float64 math. Returns the 1-thread
// grad_input and grad_weight.
std::pair<Tensor, Tensor> check_layer_norm_backward(const Tensor& dy, const Tensor& x,
                                                    const Tensor& w, const Tensor& mean,
                                                    const Tensor& rstd) {
  const int64_t cols = x.size(-1);
  set_num_threads(1);
  const auto [gi1, gw1, gb1] = layer_norm_backward(dy, x, {cols}, w, 1e-5, mean, rstd);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    const auto [gi, gw, gb] = layer_norm_backward(dy, x, {cols}, w, 1e-5, mean, rstd);
    CHECK(gi.to_vector<float>() == gi1.to_vector<float>());
    CHECK(gw.to_vector<float>() == gw1.to_vector<float>());
    CHECK(gb.to_vector<float>() == gb1.to_vector<float>());
  }
  const auto [gi64, gw64, gb64] = layer_norm_grads_f64(dy, x, w, 1e-5);
  check_near(gi1, gi64, 1e-5);
  check_near(gw1, gw64, 1e-5);
  check_near(gb1, gb64, 1e-5);
  return {gi1, gw1};
}

}  // namespace

TEST_CASE("layer_norm_backward: the same bits at 1, 2 and 3 threads, and the float64 math") {
  ThreadsGuard guard;
  manual_seed(11);
  // 300 rows of 1000 (row blocks of 131 rows, the last one short) take the one-pass kernel;
  // 20 rows of 5000 the two-pass one.
  for (const std::pair<int64_t, int64_t>& shape :
       {std::pair<int64_t, int64_t>{300, 1000}, {20, 5000}, {7, 3}}) {
    const int64_t rows = shape.first, cols = shape.second;  // not a structured binding: clang
    CAPTURE(cols);                                          // cannot capture one in a lambda
    const Tensor x = randn({rows, cols}, kFloat32) * 3.0 + 1.0;
    const Tensor dy = randn({rows, cols}, kFloat32);
    const Tensor w = randn({cols}, kFloat32);
    // Recomputing each row's statistics.
    check_layer_norm_backward(dy, x, w, Tensor(), Tensor());
    // From those layer_norm saved: its internal outputs are each row's mean and rstd.
    set_num_threads(1);
    const auto [y, mean_saved, rstd_saved] = layer_norm_with_internal(x, {cols}, w);
    CHECK(mean_saved.shape() == Shape({rows, 1}));
    CHECK(rstd_saved.dtype() == kFloat32);
    const Tensor x64 = x.to(kFloat64);
    const Tensor centered = x64 - mean(x64, {-1}, true);
    check_near(mean_saved, mean(x64, {-1}, true), 1e-6);
    check_near(rstd_saved, pow_scalar(mean(centered * centered, {-1}, true) + 1e-5, -0.5), 1e-6);
    const auto [gi, gw] = check_layer_norm_backward(dy, x, w, mean_saved, rstd_saved);
    // Autograd's node calls the backward with the statistics the forward saved: the same bits.
    set_num_threads(1);
    const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
    layer_norm(xg, {cols}, wg).backward(dy);
    CHECK(xg.grad().to_vector<float>() == gi.to_vector<float>());
    CHECK(wg.grad().to_vector<float>() == gw.to_vector<float>());
  }
}

TEST_CASE("row scatters into one block of rows: the same bits at 1, 2 and 3 threads") {
  // 1 thread splits by columns, more threads by ranges of slots: the entries of a slot must
  // combine in the same (index) order either way. 3000 slots of 40, 5000 entries with repeats.
  ThreadsGuard guard;
  manual_seed(5);
  const Tensor index = randint(0, 3000, {5000});
  const Tensor source = randn({5000, 40}, kFloat32);
  const Tensor self = randn({3000, 40}, kFloat32);
  auto results = [&] {
    return std::vector<std::vector<float>>{
        index_select_backward(source, {3000, 40}, 0, index).to_vector<float>(),
        index_add(self, 0, index, source, 0.5).to_vector<float>(),
        index_reduce(self, 0, index, source, "mean", false).to_vector<float>(),
        index_reduce(self, 0, index, source, "amax", true).to_vector<float>()};
  };
  set_num_threads(1);
  const auto one = results();
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    const auto many = results();
    for (size_t k = 0; k < one.size(); ++k) {
      CAPTURE(k);
      CHECK(many[k] == one[k]);
    }
  }
  // Not all zeros: the backward added the rows of every index.
  CHECK(sum(abs(index_select_backward(source, {3000, 40}, 0, index))).item<double>() > 100);
}
