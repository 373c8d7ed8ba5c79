// A seeded differential test of the CUDA kernels of the nn ops (conv, pools, norms, attention,
// binary_cross_entropy_with_logits, sort / topk, one_hot): random shapes and arguments (strides,
// padding, dilation, groups, ceil_mode, masks, ties, NaN, -0), each case run on the device and on
// the CPU, forward and backward in float64. Where the device sums in the CPU's order (pools,
// sort, topk, one_hot) the results must be the CPU's bits; elsewhere they agree to 1e-12. Plus
// the data check of one_hot and batch_norm's running statistics on the device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/cuda.h>
#include <tapegrad/tapegrad.h>

namespace {

using tg::Shape;
using tg::Tensor;

struct Rng {
  std::mt19937_64 gen;
  int64_t uniform(int64_t lo, int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(gen); }
};

// Continuous values in [-1, 1), or (ties) a few multiples of 0.5 with zeros of both signs and,
// when asked, NaN and infinities.
Tensor values(Rng& rng, const Shape& shape, bool ties = false, bool specials = false) {
  static const double kPool[] = {-1.5, -1, -0.5, -0.0, 0, 0.5, 1, 2};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  std::uniform_real_distribution<double> real(-1, 1);
  for (double& x : v) {
    x = ties ? kPool[rng.uniform(0, 7)] : real(rng.gen);
    if (specials && rng.coin(0.1)) x = rng.coin() ? nan : rng.coin() ? inf : -inf;
  }
  return tg::tensor(v).reshape(shape);
}

// The first element where got (any device) and want differ by more than tol (0: bit for bit).
std::string differs(const Tensor& got, const Tensor& want, double tol) {
  if (got.defined() != want.defined()) return "one is undefined";
  if (!want.defined()) return "";
  const Tensor g = got.cpu();
  if (g.shape() != want.shape() || g.dtype() != want.dtype()) return "shape or dtype";
  const std::vector<double> a = g.to_vector<double>(), b = want.to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k) {
    if (std::isnan(a[k]) && std::isnan(b[k])) continue;
    const bool same = tol == 0 ? std::signbit(a[k]) == std::signbit(b[k]) && a[k] == b[k]
                               : std::abs(a[k] - b[k]) <= tol * (1 + std::abs(b[k]));
    if (!same) {
      std::ostringstream os;
      os << "element " << k << ": " << a[k] << " vs " << b[k];
      return os.str();
    }
  }
  return "";
}

// One case: op applied to float64 inputs (CPU tensors, differentiated when grad is true); its
// outputs compared with tolerance tol (0: bit for bit), its gradients to grad_tol.
struct Case {
  std::string what;
  std::vector<Tensor> inputs;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> op;
  double tol = 1e-12, grad_tol = 1e-12;
  bool grad = true;
};

Case conv_case(Rng& rng) {
  const bool two_d = rng.coin();
  const int64_t groups = rng.uniform(1, 2), cg = rng.uniform(1, 2), ocg = rng.uniform(1, 2);
  const int64_t k = rng.uniform(1, 3), s = rng.uniform(1, 2), p = rng.uniform(0, 2),
                d = rng.uniform(1, 2);
  const int64_t span = d * (k - 1) + 1, n = rng.uniform(0, 2);
  const int64_t size = std::max<int64_t>(1, span - 2 * p) + rng.uniform(0, 3);
  Shape x{n, groups * cg, size}, w{groups * ocg, cg, k};
  if (two_d) {
    x.push_back(size + rng.uniform(0, 1));
    w.push_back(k);
  }
  Case c;
  std::ostringstream os;
  os << (two_d ? "conv2d" : "conv1d") << " x " << x << " w " << w << " stride " << s << " pad " << p
     << " dil " << d << " groups " << groups;
  c.what = os.str();
  c.inputs = {values(rng, x), values(rng, w), values(rng, {groups * ocg})};
  const bool bias = rng.coin();
  c.op = [=](const std::vector<Tensor>& in) {
    const Tensor b = bias ? in[2] : Tensor();
    return std::vector<Tensor>{two_d ? tg::conv2d(in[0], in[1], b, {s}, {p}, {d}, groups)
                                     : tg::conv1d(in[0], in[1], b, {s}, {p}, {d}, groups)};
  };
  if (!bias) c.inputs.pop_back();
  return c;
}

Case pool_case(Rng& rng) {
  const int kind = static_cast<int>(rng.uniform(0, 2));  // max, avg, adaptive
  const Shape x{rng.uniform(1, 2), rng.uniform(1, 2), rng.uniform(1, 7), rng.uniform(1, 7)};
  Case c;
  c.tol = 0;
  c.grad_tol = 0;
  c.inputs = {values(rng, x, true)};
  std::ostringstream os;
  if (kind == 2) {
    const int64_t oh = rng.uniform(1, 5), ow = rng.uniform(1, 5);
    os << "adaptive_avg_pool2d x " << x << " out " << oh << "x" << ow;
    c.op = [=](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{tg::adaptive_avg_pool2d(in[0], {oh, ow})};
    };
  } else {
    const int64_t kh = rng.uniform(1, std::min<int64_t>(3, x[2]));
    const int64_t kw = rng.uniform(1, std::min<int64_t>(3, x[3]));
    const int64_t s = rng.uniform(1, 3), ph = rng.uniform(0, kh / 2), pw = rng.uniform(0, kw / 2);
    const bool ceil = rng.coin();
    if (kind == 0) {
      const int64_t d = kh * 2 - 1 <= x[2] && kw * 2 - 1 <= x[3] ? rng.uniform(1, 2) : 1;
      os << "max_pool2d x " << x << " k " << kh << "x" << kw << " s " << s << " pad " << ph << ","
         << pw << " dil " << d << " ceil " << ceil;
      c.grad = false;  // ties: max_pool2d's gradient goes to the first maximum, checked below
      c.op = [=](const std::vector<Tensor>& in) {
        const auto [out, idx] = tg::max_pool2d(in[0], {kh, kw}, {s}, {ph, pw}, {d}, ceil);
        return std::vector<Tensor>{out, idx};
      };
    } else {
      const bool include_pad = rng.coin();
      const int64_t divisor = rng.coin(0.3) ? rng.uniform(1, 5) : 0;
      os << "avg_pool2d x " << x << " k " << kh << "x" << kw << " s " << s << " pad " << ph << ","
         << pw << " ceil " << ceil << " include_pad " << include_pad << " divisor " << divisor;
      c.op = [=](const std::vector<Tensor>& in) {
        const std::optional<int64_t> div = divisor ? std::optional<int64_t>(divisor) : std::nullopt;
        return std::vector<Tensor>{
            tg::avg_pool2d(in[0], {kh, kw}, {s}, {ph, pw}, ceil, include_pad, div)};
      };
    }
  }
  c.what = os.str();
  return c;
}

Case norm_case(Rng& rng) {
  const int kind = static_cast<int>(rng.uniform(0, 2));  // layer, group, batch
  const int64_t groups = rng.uniform(1, 2);
  // (batch_norm in training needs 2 or more values per channel)
  const Shape x{rng.uniform(2, 3), groups * rng.uniform(1, 2), rng.uniform(1, 4)};
  Case c;
  const bool affine = rng.coin();
  c.inputs = {values(rng, x)};
  if (affine) {
    const Shape p = kind == 0 ? Shape{x[2]} : Shape{x[1]};
    c.inputs.push_back(values(rng, p));
    c.inputs.push_back(values(rng, p));
  }
  std::ostringstream os;
  os << (kind == 0   ? "layer_norm"
         : kind == 1 ? "group_norm"
                     : "batch_norm")
     << " x " << x << " affine " << affine;
  c.what = os.str();
  c.op = [=](const std::vector<Tensor>& in) {
    const Tensor w = affine ? in[1] : Tensor(), b = affine ? in[2] : Tensor();
    if (kind == 0) return std::vector<Tensor>{tg::layer_norm(in[0], {x[2]}, w, b)};
    if (kind == 1) return std::vector<Tensor>{tg::group_norm(in[0], groups, w, b)};
    return std::vector<Tensor>{tg::batch_norm(in[0], {}, {}, w, b, true)};
  };
  return c;
}

Case sort_case(Rng& rng) {
  Shape x(static_cast<size_t>(rng.uniform(1, 3)), 0);
  for (int64_t& d : x) d = rng.uniform(1, 5);
  const int64_t dim = rng.uniform(0, static_cast<int64_t>(x.size()) - 1);
  const bool flag = rng.coin(), topk = rng.coin();
  const int64_t k = rng.uniform(0, x[static_cast<size_t>(dim)]);
  Case c;
  c.tol = 0;
  c.grad = false;  // ties and NaN: only the order is checked here (the op check differentiates)
  c.inputs = {values(rng, x, true, true)};
  std::ostringstream os;
  os << (topk ? "topk" : "sort") << " x " << x << " dim " << dim << " flag " << flag << " k " << k;
  c.what = os.str();
  c.op = [=](const std::vector<Tensor>& in) {
    const auto [v, i] = topk ? tg::topk(in[0], k, dim, flag) : tg::sort(in[0], dim, flag);
    return std::vector<Tensor>{v, i};
  };
  return c;
}

Case loss_attention_case(Rng& rng) {
  Case c;
  std::ostringstream os;
  if (rng.coin()) {
    const Shape x{rng.uniform(1, 3), rng.uniform(1, 4)};
    const bool weight = rng.coin(), pos_weight = rng.coin();
    static const char* kReductions[] = {"none", "sum", "mean"};
    const std::string reduction = kReductions[rng.uniform(0, 2)];
    c.inputs = {values(rng, x) * 4.0, values(rng, x) * 0.5 + 0.5, values(rng, {x[1]}),
                values(rng, {x[1]}) + 2.0};
    os << "bce_with_logits x " << x << " weight " << weight << " pos_weight " << pos_weight << " "
       << reduction;
    c.op = [=](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{
          tg::binary_cross_entropy_with_logits(in[0], in[1], weight ? in[2] : Tensor(),
                                               pos_weight ? in[3] : Tensor(), reduction)};
    };
  } else {
    const int64_t b = rng.uniform(1, 2), L = rng.uniform(1, 4), S = rng.uniform(1, 4),
                  E = rng.uniform(1, 3);
    const int mask = static_cast<int>(rng.uniform(0, 2));  // none, bool, float
    const bool causal = mask == 0 && rng.coin();
    c.inputs = {values(rng, {b, L, E}), values(rng, {b, S, E}), values(rng, {b, S, E})};
    Tensor bool_mask = values(rng, {L, S}).gt(tg::full({1}, -0.5, tg::kFloat64, tg::kCPU));
    if (mask == 1)  // every row keeps a key (an all-masked row is NaN on both devices)
      bool_mask = tg::logical_or(bool_mask, tg::ones({L, 1}, tg::kBool));
    const Tensor float_mask = values(rng, {L, S});
    os << "sdpa L " << L << " S " << S << " E " << E << " mask " << mask << " causal " << causal;
    c.op = [=](const std::vector<Tensor>& in) {
      const Tensor m = mask == 1   ? bool_mask.to(in[0].device())
                       : mask == 2 ? float_mask.to(in[0].device())
                                   : Tensor();
      const auto [out, attn] = tg::scaled_dot_product_attention(in[0], in[1], in[2], m, 0, causal);
      return std::vector<Tensor>{out, attn};
    };
  }
  c.what = os.str();
  return c;
}

}  // namespace

TEST_CASE("cuda: random nn-op cases (conv, pools, norms, sort, attention), device against CPU") {
  if (!tg::cuda::is_available()) {
    MESSAGE("no CUDA device: skipping");
    return;
  }
  Rng rng{std::mt19937_64(20261125)};
  const std::function<Case(Rng&)> makers[] = {conv_case, pool_case, norm_case, sort_case,
                                              loss_attention_case};
  for (int i = 0; i < 250; ++i) {
    const Case c = makers[i % 5](rng);
    INFO("case ", i, ": ", c.what);
    auto run = [&](tg::Device device) {
      std::vector<Tensor> in;
      for (const Tensor& t : c.inputs) in.push_back(t.to(device).requires_grad_(c.grad));
      std::vector<Tensor> out = c.op(in);
      if (c.grad) {
        const Tensor& y = out[0];
        const Tensor g =
            (tg::arange(y.numel(), tg::kFloat64).reshape(y.shape()) * 0.25 - 1).to(device);
        for (const Tensor& grad : tg::autograd::grad({y}, in, {g})) out.push_back(grad);
      }
      return out;
    };
    const std::vector<Tensor> want = run(tg::kCPU), got = run(tg::kCUDA);
    REQUIRE(got.size() == want.size());
    const size_t outputs = c.grad ? got.size() - c.inputs.size() : got.size();
    for (size_t k = 0; k < got.size(); ++k) {
      const double tol = k < outputs ? c.tol : c.grad_tol;
      CHECK_MESSAGE(differs(got[k], want[k], tol).empty(), "result ", k, ": ",
                    differs(got[k], want[k], tol));
    }
  }
}

TEST_CASE("cuda: max_pool2d's gradient goes to the CPU's (first) maximum") {
  if (!tg::cuda::is_available()) return;
  const Tensor x = tg::tensor(std::vector<double>{1, 2, 2, 0, 2, 1, 0, 2, 1}).reshape({1, 1, 3, 3});
  auto grad = [&](tg::Device device) {
    const Tensor xd = x.to(device).requires_grad_(true);
    const Tensor y = std::get<0>(tg::max_pool2d(xd, {2, 2}, {1}));
    return tg::autograd::grad({y}, {xd}, {tg::ones_like(y)})[0];
  };
  CHECK(differs(grad(tg::kCUDA), grad(tg::kCPU), 0).empty());
}

TEST_CASE("cuda: batch_norm updates its running statistics on the device as on the CPU") {
  if (!tg::cuda::is_available()) return;
  Rng rng{std::mt19937_64(7)};
  const Tensor x = values(rng, {4, 3, 5}), mean = values(rng, {3}), var = values(rng, {3}) + 2.0;
  const Tensor mc = mean.clone(), vc = var.clone();
  const Tensor md = mean.to(tg::kCUDA), vd = var.to(tg::kCUDA);
  const Tensor yc = tg::batch_norm(x, mc, vc, {}, {}, true, 0.3);
  const Tensor yd = tg::batch_norm(x.to(tg::kCUDA), md, vd, {}, {}, true, 0.3);
  CHECK(differs(yd, yc, 1e-12).empty());
  CHECK(differs(md, mc, 1e-12).empty());
  CHECK(differs(vd, vc, 1e-12).empty());
  CHECK_FALSE(differs(md, mean, 0).empty());  // they did change
}

TEST_CASE("cuda: one_hot's class values are checked on the device") {
  if (!tg::cuda::is_available()) return;
  const bool was = tg::cuda::sync_checks();
  const Tensor bad = tg::tensor(std::vector<int64_t>{0, 5, 1}).to(tg::kCUDA);
  tg::cuda::set_sync_checks(true);  // checked: raised by the call itself
  CHECK_THROWS_WITH_AS(tg::one_hot(bad, 3), doctest::Contains("class values must be in [0, 3)"),
                       tg::IndexError);
  tg::cuda::set_sync_checks(false);  // unchecked: no sync in the call, raised at the next one
  const uint64_t syncs = tg::cuda::host_sync_count();
  const Tensor r = tg::one_hot(bad, 3);
  CHECK(tg::cuda::host_sync_count() == syncs);
  CHECK_THROWS_WITH_AS(tg::cuda::synchronize(), doctest::Contains("got 5"), tg::IndexError);
  tg::cuda::set_sync_checks(was);
  const Tensor good = tg::tensor(std::vector<int64_t>{2, 0, 2});
  CHECK(differs(tg::one_hot(good.to(tg::kCUDA)), tg::one_hot(good), 0).empty());
}

TEST_CASE("cuda: the nn ops' forward and backward make no host sync") {
  if (!tg::cuda::is_available()) return;
  const bool was = tg::cuda::sync_checks();
  tg::cuda::set_sync_checks(false);
  Rng rng{std::mt19937_64(11)};
  const Tensor x = values(rng, {2, 4, 5, 5}).to(tg::kCUDA).requires_grad_(true);
  const Tensor w = values(rng, {4, 2, 3, 3}).to(tg::kCUDA).requires_grad_(true);
  const Tensor q = values(rng, {2, 3, 4}).to(tg::kCUDA).requires_grad_(true);
  const Tensor t = values(rng, {2, 4, 5, 5}).to(tg::kCUDA);
  const uint64_t syncs = tg::cuda::host_sync_count();
  Tensor y = tg::conv2d(x, w, {}, {1}, {1}, {1}, 2);
  y = std::get<0>(tg::max_pool2d(y, {2, 2}, {1})) + tg::avg_pool2d(y, {2, 2}, {1});
  y = tg::group_norm(tg::adaptive_avg_pool2d(y, {3, 3}), 2);
  y = tg::batch_norm(tg::layer_norm(y, {3}), {}, {}, {}, {}, true);
  const Tensor s = tg::sum(std::get<0>(tg::sort(y, 1))) + tg::sum(std::get<0>(tg::topk(y, 2, 2)));
  const Tensor a = std::get<0>(tg::scaled_dot_product_attention(q, q, q, {}, 0, true));
  const Tensor loss =
      tg::binary_cross_entropy_with_logits(x, t.abs().clamp(0, 1)) + tg::sum(s) + tg::sum(a);
  const std::vector<Tensor> grads = tg::autograd::grad({loss}, {x, w, q});
  CHECK(tg::cuda::host_sync_count() == syncs);
  CHECK(grads.size() == 3);
  tg::cuda::set_sync_checks(was);
}

TEST_CASE("cuda: attention with broadcast batch dims, a broadcast mask and dropout is the CPU's") {
  if (!tg::cuda::is_available()) return;
  Rng rng{std::mt19937_64(5)};
  const Tensor q = values(rng, {2, 1, 3, 4}), k = values(rng, {1, 3, 5, 4});
  const Tensor v = values(rng, {3, 5, 2}), mask = values(rng, {5});
  auto run = [&](tg::Device device) {
    tg::manual_seed(42);  // the same dropout draws on both devices
    const Tensor qd = q.to(device).requires_grad_(true);
    const auto [out, attn] = tg::scaled_dot_product_attention(qd, k.to(device), v.to(device),
                                                              mask.to(device), 0.3, false, 0.7);
    const Tensor g = tg::autograd::grad({out}, {qd}, {tg::ones_like(out)})[0];
    return std::vector<Tensor>{out, attn, g};
  };
  const std::vector<Tensor> want = run(tg::kCPU), got = run(tg::kCUDA);
  CHECK(want[1].shape() == Shape{2, 3, 3, 5});
  for (size_t i = 0; i < want.size(); ++i)
    CHECK_MESSAGE(differs(got[i], want[i], 1e-12).empty(), i, ": ",
                  differs(got[i], want[i], 1e-12));
}
