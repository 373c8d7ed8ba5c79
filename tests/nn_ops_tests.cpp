// The nn ops (gelu, leaky_relu, dropout, layer_norm, mse_loss, binary_cross_entropy_with_logits,
// embedding): values and gradients on small cases, the expected numbers from PyTorch 1.13.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

using namespace tg;

namespace {

// Every element of got within rel * max(1, |want|) of want (and the same count).
void check_close(const Tensor& got, const std::vector<double>& want, double rel = 1e-12) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element ", i, ": got ", g[i], ", expected ", want[i]);
    CHECK(std::abs(g[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}

// d(sum(f(x) * g))/dx with a graph, for a second derivative after it.
Tensor grad_of(const Tensor& y, const Tensor& x, const Tensor& g = {}, bool create_graph = false) {
  return autograd::grad({y}, {x}, {g.defined() ? g : ones_like(y)}, true, create_graph)[0];
}

}  // namespace

TEST_CASE("gelu: erf and tanh forms, first and second derivatives as PyTorch") {
  const std::vector<double> xs = {-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5};
  Tensor x = tensor(xs).requires_grad_();

  Tensor y = gelu(x);
  check_close(y, {-0.00404969409489031, -0.15865525393145702, -0.15426876936299344, 0.0,
                  0.34573123063700656, 0.841344746068543, 2.4844758366855597});
  CHECK(std::string(y.grad_fn()->name()) == "GeluBackward");
  Tensor g = grad_of(y, x, {}, true);
  check_close(g, {-0.01194564720418392, -0.08331547058768635, 0.13250487534383712, 0.5,
                  0.8674951246561629, 1.0833154705876864, 1.037611085908145});
  CHECK(std::string(g.grad_fn()->name()) == "GeluBackwardBackward");  // the fused op's node
  check_close(grad_of(g, x),
              {-0.031022938883566054, 0.24197072451914337, 0.6161143218375241, 0.7978845608028654,
               0.6161143218375241, 0.24197072451914337, -0.07449527709766629});

  Tensor yt = gelu(x, "tanh");
  check_close(yt, {-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
                   0.34571400982514394, 0.8411919906082768, 2.484915733910001});
  Tensor gt = grad_of(yt, x, {}, true);
  check_close(gt, {-0.011584166630969648, -0.08296408384578252, 0.13263009646535764, 0.5,
                   0.8673699035346424, 1.0829640838457826, 1.037951576212666});
  check_close(grad_of(gt, x),
              {-0.03176765888607492, 0.24214819798377296, 0.615506895115985, 0.7978845608028654,
               0.615506895115985, 0.24214819798377296, -0.07624539207361294});

  // float32, and the in-place form.
  Tensor xf = x.detach().to(kFloat32);
  check_close(gelu(xf),
              {-0.004049867391586304, -0.1586552858352661, -0.1542687863111496, 0.0,
               0.3457311987876892, 0.8413447141647339, 2.48447585105896},
              1e-6);
  check_close(gelu(xf, "tanh"),
              {-0.0036374330520629883, -0.15880799293518066, -0.1542859971523285, 0.0,
               0.3457140028476715, 0.8411920070648193, 2.4849157333374023},
              1e-6);
  Tensor inplace = x.detach().clone();
  gelu_(inplace, "tanh");
  check_close(inplace, yt.to_vector<double>(), 0);
  CHECK_THROWS_WITH_AS(gelu(x, "erf"),
                       doctest::Contains("[gelu] approximate must be one of none, tanh"),
                       ValueError);
}

TEST_CASE("leaky_relu: slope below 0, gradient negative_slope at 0 as PyTorch") {
  Tensor x = tensor({-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5}).requires_grad_();
  Tensor y = leaky_relu(x, 0.2);
  check_close(y, {-0.6000000000000001, -0.2, -0.1, 0.0, 0.5, 1.0, 2.5});
  check_close(grad_of(y, x), {0.2, 0.2, 0.2, 0.2, 1.0, 1.0, 1.0}, 0);
  check_close(leaky_relu(x.detach()), {-0.03, -0.01, -0.005, 0.0, 0.5, 1.0, 2.5});
  // The branch-free kernel keeps the ternary's results on the special values.
  const double inf = INFINITY;
  auto special = leaky_relu(tensor({-inf, inf, NAN, -0.0}), 0.5).to_vector<double>();
  CHECK(special[0] == -inf);
  CHECK(special[1] == inf);
  CHECK(std::isnan(special[2]));
  CHECK((special[3] == 0.0 && std::signbit(special[3])));
  Tensor z = tensor({-2.0f, 4.0f});
  leaky_relu_(z, 0.5);
  CHECK(z.to_vector<float>() == std::vector<float>{-1.0f, 4.0f});
}

TEST_CASE("dropout: seeded mask, kept fraction, scaling, and a gradient on the same mask") {
  Tensor x = full({100000}, 2.0, kFloat64);
  manual_seed(7);
  auto [y1, mask1] = dropout(x, 0.3);
  manual_seed(7);
  auto [y2, mask2] = dropout(x, 0.3);
  CHECK(y1.to_vector<double>() == y2.to_vector<double>());  // same seed, same mask
  CHECK(mask1.to_vector<bool>() == mask2.to_vector<bool>());
  auto [y3, mask3] = dropout(x, 0.3);  // the generator moved on
  CHECK(mask3.to_vector<bool>() != mask1.to_vector<bool>());

  const double kept = mean(mask1.to(kFloat64)).item<double>();
  CHECK(std::abs(kept - 0.7) < 0.01 * 0.7);
  // Kept elements are scaled by 1 / (1 - p), the others are 0, and the mask says which is which.
  const std::vector<double> v = y1.to_vector<double>();
  const std::vector<bool> m = mask1.to_vector<bool>();
  bool consistent = true;
  for (size_t i = 0; i < v.size(); ++i) consistent = consistent && v[i] == (m[i] ? 2.0 / 0.7 : 0.0);
  CHECK(consistent);

  // The gradient is 1 / (1 - p) where the output is kept and exactly 0 where it is 0.
  Tensor xs = (rand({1000}, kFloat64) + 0.5).requires_grad_();
  manual_seed(11);
  Tensor out = std::get<0>(dropout(xs, 0.6));
  const std::vector<double> g = grad_of(out, xs).to_vector<double>(), o = out.to_vector<double>();
  bool grad_matches = true;
  for (size_t i = 0; i < g.size(); ++i)
    grad_matches = grad_matches && g[i] == (o[i] == 0 ? 0.0 : 1.0 / 0.4);
  CHECK(grad_matches);
}

TEST_CASE("dropout: p = 0, p = 1, eval mode, and a bad p") {
  Tensor x = tensor({1.0, -2.0, 3.0}).requires_grad_();
  auto [eval, eval_mask] = dropout(x, 0.5, false);
  CHECK(eval.to_vector<double>() == std::vector<double>{1.0, -2.0, 3.0});
  CHECK(eval_mask.to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(std::get<0>(dropout(x, 0.0)).to_vector<double>() == std::vector<double>{1.0, -2.0, 3.0});
  Tensor all_dropped = std::get<0>(dropout(x, 1.0));
  CHECK(all_dropped.to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
  CHECK(grad_of(all_dropped, x).to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
  CHECK(grad_of(eval, x).to_vector<double>() == std::vector<double>{1.0, 1.0, 1.0});
  CHECK_THROWS_WITH_AS(dropout(x, 1.5), doctest::Contains("[dropout] p must be in [0, 1], got 1.5"),
                       ValueError);
}

TEST_CASE("layer_norm: values and the gradients of self, weight and bias") {
  Tensor x = tensor({{1.0, 2.0, 4.0}, {-1.0, 0.5, 3.0}}).requires_grad_();
  Tensor w = tensor({0.5, -1.0, 2.0}).requires_grad_();
  Tensor b = tensor({0.1, 0.2, -0.3}).requires_grad_();
  Tensor go = tensor({{1.0, -2.0, 0.5}, {0.3, 0.7, -1.0}});
  Tensor y = layer_norm(x, {3}, w, b);
  check_close(y, {-0.43452076572514897, 0.4672603828625746, 2.372603828625744, -0.4555828790463038,
                  0.40203013783501956, 2.3263917918552544});
  auto grads = autograd::grad({y}, {x, w, b}, {go});
  check_close(grads[0], {-0.4581611472191036, 0.6872408617829473, -0.22907971456384335,
                         0.01082522978673467, -0.017316471377572806, 0.006491241590838137});
  check_close(grads[1], {-1.4023912588780802, 0.3930996692406355, -0.6450449387711912});
  check_close(grads[2], {1.3, -1.3, -0.5});

  // Over both dims, no affine part.
  Tensor y2 = layer_norm(x, {2, 3});
  check_close(y2, {-0.35491343168580414, 0.2535095940612886, 1.470355645555474, -1.5717594831799895,
                   -0.6591249445593506, 0.8619326198083813});
  check_close(grad_of(y2, x, go),
              {0.5899672619508133, -1.1167457879615441, 0.6414238310640298, -0.07304091072999365,
               0.34816234056222495, -0.38976673488553026});
  check_close(layer_norm(x.detach().to(kFloat32), {3}),
              {-1.06904137134552, -0.2672603130340576, 1.3363018035888672, -1.1111657619476318,
               -0.20203018188476562, 1.3131959438323975},
              1e-6);

  CHECK_THROWS_WITH_AS(layer_norm(x, {2}),
                       doctest::Contains(
                           "[layer_norm] normalized_shape [2] must match the trailing dims of "
                           "self's shape [2, 3]"),
                       ValueError);
  CHECK_THROWS_WITH_AS(layer_norm(x, {3}, tensor({1.0, 2.0})),
                       doctest::Contains("weight must have shape normalized_shape [3], got [2]"),
                       ValueError);
}

TEST_CASE("mse_loss: none, mean, sum and both gradients") {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {0.5, -1.0, 2.0}}).requires_grad_();
  Tensor t = tensor({{0.0, 2.5, 1.0}, {1.0, 1.0, -2.0}}).requires_grad_();
  check_close(mse_loss(a, t, "none"), {1.0, 0.25, 4.0, 0.25, 4.0, 16.0}, 0);
  Tensor mean_loss = mse_loss(a, t);
  CHECK(mean_loss.dim() == 0);
  CHECK(mean_loss.item<double>() == 4.25);
  auto g = autograd::grad({mean_loss}, {a, t});
  const double third = 1.0 / 3.0, sixth = 1.0 / 6.0;
  check_close(g[0], {third, -sixth, 2 * third, -sixth, -2 * third, 4 * third});
  check_close(g[1], {-third, sixth, -2 * third, sixth, 2 * third, -4 * third});
  Tensor sum_loss = mse_loss(a, t, "sum");
  CHECK(sum_loss.item<double>() == 25.5);
  check_close(grad_of(sum_loss, a), {2.0, -1.0, 4.0, -1.0, -4.0, 8.0}, 0);
  // target broadcasts (PyTorch warns), float32 too.
  check_close(mse_loss(a, tensor({1.0, 0.0, 2.0})), {1.0416666666666667});
  CHECK(mse_loss(a.detach().to(kFloat32), t.detach().to(kFloat32), "sum").item<float>() == 25.5f);
}

TEST_CASE("mse_loss: float32 squared errors are summed in double and rounded once") {
  // The float32 path (built for AVX2 too, picked at run time) converts each value to double: the
  // result is the double sum rounded to float32 once. A float32 accumulator would lose every
  // later term next to the first, 1e8 (float32's spacing there is 8): two blocks of 8192 and a
  // tail.
  const int64_t n = 2 * 8192 + 13;
  std::vector<float> a, b;
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    a.push_back(i == 0 ? 1e4f : static_cast<float>(i % 3) * 0.5f);
    b.push_back(i % 5 == 0 ? 0.25f : -0.5f);
    const double d = static_cast<double>(a.back()) - static_cast<double>(b.back());
    total += d * d;
  }
  const Tensor ta = tensor(a, {n}), tb = tensor(b, {n});
  CHECK(mse_loss(ta, tb, "sum").item<float>() == static_cast<float>(total));
  CHECK(mse_loss(ta, tb).item<float>() == static_cast<float>(total / static_cast<double>(n)));
}

TEST_CASE("binary_cross_entropy_with_logits: values, weights and gradients as PyTorch") {
  Tensor x = tensor({{-2.0, 0.5, 30.0}, {1.5, -40.0, 0.0}}).requires_grad_();
  Tensor t = tensor({{0.0, 1.0, 1.0}, {0.3, 0.0, 0.5}}).requires_grad_();
  // PyTorch gives 9.348e-14 for element 2: its log(exp(-m) + exp(-x - m)) loses the last digits;
  // log1p(exp(-30)) is the exact value.
  check_close(binary_cross_entropy_with_logits(x, t, {}, {}, "none"),
              {0.1269280110429726, 0.4740769841801067, 9.357622968839737e-14, 1.2514132779827523,
               0.0, 0.6931471805599453});
  Tensor loss = binary_cross_entropy_with_logits(x, t);
  check_close(loss, {0.42426090896097834});
  auto g = autograd::grad({loss}, {x, t});
  check_close(g[0], {0.019867153670352924, -0.0629234447996909, -1.5580129778906365e-14,
                     0.0862624126989406, 7.080590425485981e-19, 0.0});
  check_close(g[1],
              {0.3333333333333333, -0.08333333333333333, -5.0, -0.25, 6.666666666666667, -0.0});
  check_close(binary_cross_entropy_with_logits(x, t, {}, {}, "sum"), {2.54556545376587});

  Tensor w = tensor({1.0, 2.0, 0.5}), pw = tensor({3.0, 0.5, 1.0});
  check_close(binary_cross_entropy_with_logits(x, t, w, pw, "none"),
              {0.1269280110429727, 0.4740769841801067, 4.6788114844198684e-14, 1.3722612447724039,
               0.0, 0.34657359027997264});
  Tensor weighted = binary_cross_entropy_with_logits(x, t, w, pw);
  check_close(weighted, {0.38663997171258374});
  auto gw = autograd::grad({weighted}, {x, t});
  check_close(gw[0], {0.019867153670352924, -0.0629234447996909, -7.790064889453182e-15,
                      0.06801986031830498, 1.4161180850971963e-18, 0.0});
  check_close(gw[1], {1.0423093370143244, -0.24567949736335112, -2.5, -0.18286224067241585,
                      6.666666666666667, 0.0});

  // Huge logits do not overflow.
  check_close(binary_cross_entropy_with_logits(tensor({1000.0, -1000.0, -1000.0}),
                                               tensor({1.0, 1.0, 0.0}), {}, {}, "none"),
              {0.0, 1000.0, 0.0}, 0);
  CHECK_THROWS_WITH_AS(binary_cross_entropy_with_logits(x, tensor({1.0, 0.0, 1.0})),
                       doctest::Contains("target must have self's shape [2, 3], got [3]"),
                       ValueError);
}

TEST_CASE("binary_cross_entropy_with_logits: dense logits against a long double reference") {
  // softplus(-x) runs on the vector kernels (SLEEF, docs/SEMANTICS.md); the loss must stay
  // within a few units in the last place of its largest term, |x| or the loss itself (for t < 1
  // and x << 0 the loss is a difference of two terms of size |x|, in every implementation).
  const int64_t n = 20001;
  const Tensor x64 = linspace(-100.0, 100.0, n, kFloat64);
  for (const DType dtype : {kFloat32, kFloat64}) {
    CAPTURE(dtype);
    const double eps = dtype == kFloat32 ? 0x1p-23 : 0x1p-52;
    const Tensor x = x64.to_dtype(dtype);
    const std::vector<double> xs = x.to_vector<double>();
    for (const double t : {0.0, 0.25, 1.0}) {
      for (const bool weighted : {false, true}) {
        CAPTURE(t);
        CAPTURE(weighted);
        const double w = weighted ? 0.75 : 1.0, pw = weighted ? 2.0 : 1.0;
        const Tensor target = full({n}, t, dtype);
        const Tensor got = weighted
                               ? binary_cross_entropy_with_logits(x, target, full({n}, w, dtype),
                                                                  full({1}, pw, dtype), "none")
                               : binary_cross_entropy_with_logits(x, target, {}, {}, "none");
        const std::vector<double> g = got.to_vector<double>();
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          const long double v = xs[static_cast<size_t>(i)];
          const long double softplus_neg = std::max(-v, 0.0L) + std::log1p(std::exp(-std::fabs(v)));
          const long double want = w * ((1 - t) * v + (1 + (pw - 1) * t) * softplus_neg);
          const long double err = std::fabs(g[static_cast<size_t>(i)] - want);
          wrong += err > 8 * eps * (std::fabs(v) + std::fabs(want));
        }
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("embedding: rows by index, padding_idx gets no gradient, range errors") {
  Tensor w = tensor({{0.0, 1.0}, {2.0, 3.0}, {4.0, 5.0}, {6.0, 7.0}}).requires_grad_();
  Tensor idx = tensor({{1, 3}, {1, 0}, {2, 1}});
  Tensor ge = arange(12, kFloat64).reshape({3, 2, 2});
  Tensor e = embedding(w, idx, 1);
  CHECK(e.shape() == Shape{3, 2, 2});
  check_close(e, {2.0, 3.0, 6.0, 7.0, 2.0, 3.0, 0.0, 1.0, 4.0, 5.0, 2.0, 3.0}, 0);
  check_close(grad_of(e, w, ge), {6.0, 7.0, 0.0, 0.0, 8.0, 9.0, 2.0, 3.0}, 0);
  check_close(grad_of(embedding(w, idx), w, ge), {6.0, 7.0, 14.0, 17.0, 8.0, 9.0, 2.0, 3.0}, 0);
  check_close(grad_of(embedding(w, idx, -3), w, ge), {6.0, 7.0, 0.0, 0.0, 8.0, 9.0, 2.0, 3.0}, 0);

  Tensor one = embedding(w, scalar_tensor(3, kInt32));  // a 0-d int32 index
  CHECK(one.shape() == Shape{2});
  check_close(one, {6.0, 7.0}, 0);
  CHECK_THROWS_WITH_AS(embedding(w, tensor({0, 4})),
                       doctest::Contains(
                           "[embedding] index 4 is out of range for weight with 4 rows"),
                       IndexError);
  CHECK_THROWS_WITH_AS(embedding(w, tensor({-1})), doctest::Contains("index -1 is out of range"),
                       IndexError);
}
