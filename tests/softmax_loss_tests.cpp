// softmax, log_softmax, logsumexp, nll_loss and cross_entropy: values, gradients and double
// gradients on small cases, checked against PyTorch 1.13 (numbers computed with torch.softmax,
// torch.nn.functional.* and torch.autograd.grad, rounded to 10 digits).
#include <doctest/doctest.h>
#include <tapegrad/tapegrad.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace tg;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Every element of t within tol of want (nan matches nan, +-inf matches itself).
void check_close(const Tensor& t, const std::vector<double>& want, double tol = 1e-9) {
  const std::vector<double> got = t.to_vector<double>();
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("element " << k << ": got " << got[k] << ", expected " << want[k]);
    if (std::isnan(want[k])) {
      CHECK(std::isnan(got[k]));
    } else if (std::isinf(want[k])) {
      CHECK(got[k] == want[k]);
    } else {
      CHECK(std::abs(got[k] - want[k]) <= tol);
    }
  }
}

// The message of the E that fn() must throw.
template <typename E, typename Fn> std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return "";
}

Tensor x2x3() { return tensor({{1., 2., 3.}, {-1., 0.5, 4.}}); }
Tensor grad2x3() { return tensor({{0.5, -1., 2.}, {1., 0.25, -0.5}}); }
Tensor dir2x3() { return tensor({{1., 0., -1.}, {0.5, 2., 1.}}); }

// f(k) for k = 0..23 as a [2, 3, 4] float64 tensor (PyTorch: torch.arange(24.).reshape(2, 3, 4)
// then .sin() or .cos()): rows along the middle dim are strided.
template <typename F> Tensor arange3d(F f) {
  std::vector<double> v;
  for (int k = 0; k < 24; ++k) v.push_back(f(static_cast<double>(k)));
  return tensor(v, {2, 3, 4});
}
Tensor sin3d() {
  return arange3d([](double k) { return std::sin(k); });
}
Tensor cos3d() {
  return arange3d([](double k) { return std::cos(k); });
}

// Gradient of y wrt x against g, with create_graph (so it can be differentiated again).
Tensor vjp(const Tensor& y, const Tensor& x, const Tensor& g) {
  return autograd::grad({y}, {x}, {g}, true, true)[0];
}

}  // namespace

// ---- softmax and log_softmax ---------------------------------------------------------------

TEST_CASE("softmax and log_softmax along each dim") {
  check_close(softmax(x2x3(), 1),
              {0.0900305732, 0.2447284711, 0.6652409558, 0.0064979433, 0.0291217615, 0.9643802951});
  check_close(softmax(x2x3(), 0),
              {0.880797078, 0.8175744762, 0.2689414214, 0.119202922, 0.1824255238, 0.7310585786});
  check_close(log_softmax(x2x3(), -1), {-2.4076059644, -1.4076059644, -0.4076059644, -5.0362695651,
                                        -3.5362695651, -0.0362695651});
  check_close(x2x3().log_softmax(-2), {-0.126928011, -0.201413278, -1.3132616875, -2.126928011,
                                       -1.701413278, -0.3132616875});
  CHECK(softmax(x2x3(), 1).shape() == Shape{2, 3});
  CHECK(softmax(x2x3().to(kFloat32), 1).dtype() == kFloat32);
}

TEST_CASE("softmax along a middle dim (strided rows) and of a transposed input") {
  check_close(softmax(sin3d(), 1),
              {0.2404613721, 0.5506110678, 0.650023373,  0.333939585,  0.1128158639, 0.0909794298,
               0.1980056164, 0.559378689,  0.6467227641, 0.3584095024, 0.1519710106, 0.106681726,
               0.152826234,  0.3612962187, 0.6479540225, 0.546390675,  0.1959718746, 0.0907522842,
               0.1135479414, 0.3312666404, 0.6512018914, 0.5479514971, 0.2384980361, 0.1223426846});
  check_close(log_softmax(sin3d(), -2),
              {-1.4251958174, -0.5967265851, -0.4307469582, -1.0967951857, -2.1819983127,
               -2.3971218446, -1.6194598833, -0.5809285951, -0.4358375708, -1.0260790847,
               -1.8840654959, -2.2379054003, -1.8784537285, -1.0180571067, -0.433935538,
               -0.6044210372, -1.6297841272, -2.3996216354, -2.1755301405, -1.1048316677,
               -0.4289355598, -0.601568505,  -1.433394203,  -2.1009292815});
  // softmax over dim 0 of x^T is the transpose of softmax over dim 1 of x.
  check_close(softmax(x2x3().t(), 0).t().contiguous(), softmax(x2x3(), 1).to_vector<double>(),
              1e-15);
}

TEST_CASE("softmax is stable for large inputs (float32)") {
  Tensor big = tensor({{1000.f, 999.f, 998.f}, {-1000.f, -1001.f, -999.f}});
  check_close(softmax(big, 1),
              {0.6652409434, 0.2447284758, 0.0900305733, 0.2447284758, 0.0900305733, 0.6652409434},
              1e-7);
  check_close(log_softmax(big, 1),
              {-0.4076059461, -1.4076058865, -2.4076058865, -1.4076058865, -2.4076058865,
               -0.4076059461},
              1e-6);
}

TEST_CASE("softmax with infinities follows PyTorch") {
  check_close(softmax(tensor({kInf, 1.}), 0), {kNan, kNan});
  check_close(softmax(tensor({-kInf, -kInf}), 0), {kNan, kNan});
  check_close(softmax(tensor({-kInf, 0.}), 0), {0., 1.});
  check_close(log_softmax(tensor({-kInf, 0.}), 0), {-kInf, 0.});
}

TEST_CASE("softmax of a 0-d tensor, an empty tensor, and bad dims") {
  Tensor s = scalar_tensor(3.0, kFloat64);
  CHECK(softmax(s, 0).item<double>() == 1.0);
  CHECK(log_softmax(s, -1).item<double>() == 0.0);
  CHECK(softmax(zeros({2, 0}), 1).shape() == Shape{2, 0});
  CHECK(error_of<IndexError>([] {
          softmax(zeros({2, 3}), 2);
        }).find("[softmax] dim 2 is out of range") == 0);
  CHECK(error_of<TypeError>([] { softmax(tensor({1, 2}), 0); }).find("int64") != std::string::npos);
}

TEST_CASE("softmax and log_softmax: gradients and double gradients") {
  Tensor x = x2x3().requires_grad_();
  Tensor y = softmax(x, 1);
  CHECK(std::string(y.grad_fn()->name()) == "SoftmaxBackward");
  Tensor g = vjp(y, x, grad2x3());
  check_close(g, {-0.05678847, -0.5214597727, 0.5782482428, 0.0095416564, 0.0209214161,
                  -0.0304630725});
  check_close(autograd::grad({g}, {x}, {dir2x3()})[0], {-0.0322810684, -0.1445375116, 0.17681858,
                                                        -0.0051226431, 0.0199097871, -0.014787144});

  Tensor ly = log_softmax(x, 1);
  Tensor lg = vjp(ly, x, grad2x3());
  check_close(lg, {0.3649541402, -1.3670927066, 1.0021385663, 0.9951265425, 0.2281586788,
                   -1.2232852214});
  check_close(autograd::grad({lg}, {x}, {dir2x3()})[0],
              {-0.2127256404, -0.2111555362, 0.4238811766, 0.0025628187, -0.0212762252,
               0.0187134066});
}

TEST_CASE("the fused softmax backward ops compute their formulas") {
  Tensor g = grad2x3(), y = softmax(x2x3(), 1);
  // y * (g - sum(g * y)) and g - exp(y) * sum(g), row by row
  Tensor want = y * (g - sum(g * y, {1}, true));
  check_close(softmax_backward(g, y, 1), want.to_vector<double>(), 1e-15);
  Tensor ly = log_softmax(x2x3(), 1);
  check_close(log_softmax_backward(g, ly, -1),
              (g - exp(ly) * sum(g, {1}, true)).to_vector<double>(), 1e-15);
  CHECK(error_of<ValueError>([&] {
          softmax_backward(g, zeros({3}, kFloat64), 0);
        }).find("[softmax_backward] grad_output and output must have the same shape") == 0);
}

TEST_CASE("softmax on many rows matches for 1 and 2 threads") {
  manual_seed(3);
  Tensor x = randn({64, 1000}, kFloat32) * 10.0;
  const int before = get_num_threads();
  set_num_threads(1);
  std::vector<float> one = softmax(x, 1).to_vector<float>();
  std::vector<float> strided_one = log_softmax(x.view({64, 10, 100}), 1).to_vector<float>();
  set_num_threads(2);
  CHECK(softmax(x, 1).to_vector<float>() == one);
  CHECK(log_softmax(x.view({64, 10, 100}), 1).to_vector<float>() == strided_one);
  set_num_threads(before);
  // Rows sum to 1.
  check_close(sum(softmax(x, 1), {1}), std::vector<double>(64, 1.0), 1e-5);
}

// ---- logsumexp -------------------------------------------------------------------------------

TEST_CASE("logsumexp over dims, keepdim, all dims") {
  check_close(logsumexp(x2x3(), {1}), {3.4076059644, 4.0362695651});
  Tensor keep = x2x3().logsumexp({0}, true);
  CHECK(keep.shape() == Shape{1, 3});
  check_close(keep, {1.126928011, 2.201413278, 4.3132616875});
  check_close(logsumexp(x2x3(), {0, 1}), {4.4636944703});
  CHECK(logsumexp(x2x3(), {}).dim() == 0);
  check_close(logsumexp(x2x3(), {}), {4.4636944703});
  check_close(logsumexp(sin3d(), {0, 2}), {2.6151922225, 1.8410970864, 2.4308304143});
  Tensor last = logsumexp(sin3d(), {-1}, true);
  CHECK(last.shape() == Shape{2, 3, 1});
  check_close(last,
              {1.9393051539, 1.2634670783, 1.6385721515, 1.9044817785, 1.0173242422, 1.8278510308});
  CHECK(logsumexp(scalar_tensor(2.0, kFloat64), {0}).item<double>() == 2.0);
}

TEST_CASE("logsumexp: large values, infinities, empty rows, integer input") {
  check_close(logsumexp(tensor({{1000.f, 999.f, 998.f}, {-1000.f, -1001.f, -999.f}}), {1}),
              {1000.4075927734, -998.5924072266}, 1e-4);
  check_close(logsumexp(tensor({kInf, 1.}), {0}), {kInf});
  check_close(logsumexp(tensor({-kInf, -kInf}), {0}), {-kInf});
  check_close(logsumexp(tensor({kInf, -kInf}), {0}), {kInf});
  check_close(logsumexp(tensor({-kInf, 2.}), {0}), {2.0});
  check_close(logsumexp(tensor({kNan, kInf}), {0}), {kNan});
  check_close(logsumexp(zeros({2, 0}), {1}), {-kInf, -kInf});
  Tensor ints = logsumexp(tensor({{1, 2}, {3, 4}}), {1});
  CHECK(ints.dtype() == kFloat32);
  check_close(ints, {2.3132617474, 4.3132615089}, 1e-6);
  CHECK(error_of<ValueError>([] {
          logsumexp(zeros({2, 3}), {1, -1});
        }).find("[logsumexp] dim 1 appears multiple times") == 0);
}

TEST_CASE("logsumexp: gradient and double gradient over non-adjacent dims") {
  Tensor x = sin3d().requires_grad_();
  Tensor g = vjp(logsumexp(x, {0, 2}), x, tensor({1., -2., 0.5}));
  check_close(g, {0.0731537255,  0.1697003172,  0.1816098098,  0.0842411117,  -0.1488594955,
                  -0.1216175273, -0.2399402358, -0.612036531,  0.118289609,   0.0664132224,
                  0.0255275069,  0.0161801871,  0.0427765536,  0.1113557569,  0.1969934367,
                  0.1401692886,  -0.2379122853, -0.1213171124, -0.1497276723, -0.3685891403,
                  0.1095874581,  0.1015380213,  0.0435942986,  0.0188696966});
  check_close(autograd::grad({g}, {x}, {cos3d()})[0],
              {0.0685108935,  0.0809191384,  -0.0871025394, -0.0887445814, 0.1591573106,
               0.0160379806,  -0.1306800473, -0.2070934476, 0.0214959841,  -0.0387791373,
               -0.0130662071, 0.0053661442,  0.0333822735,  0.0939820308,  0.0144337936,
               -0.115381009,  0.3266997098,  0.0837934631,  -0.0366506754, -0.2112642938,
               0.0805802548,  -0.0223897303, -0.0293275169, -0.0038797914});
}

// ---- nll_loss --------------------------------------------------------------------------------

namespace {
Tensor logp4x3() {
  return tensor({{-0.5, -1.2, -2.}, {-0.1, -3., -2.5}, {-1., -1., -1.5}, {-2., -0.3, -0.7}});
}
Tensor targets() { return tensor(std::vector<int64_t>{0, 2, 1, 1}); }
Tensor targets_ignored() { return tensor(std::vector<int64_t>{0, -100, 1, 1}); }
Tensor class_weights() { return tensor({0.5, 2., 1.5}); }
}  // namespace

TEST_CASE("nll_loss: reductions, weights, ignore_index") {
  const Tensor x = logp4x3(), t = targets(), w = class_weights();
  CHECK(nll_loss(x, t).dim() == 0);
  check_close(nll_loss(x, t), {1.075});
  check_close(nll_loss(x, t, {}, "sum"), {4.3});
  check_close(nll_loss(x, t, {}, "none"), {0.5, 2.5, 1.0, 0.3});
  check_close(nll_loss(x, t, w), {1.1});
  check_close(nll_loss(x, t, w, "sum"), {6.6});
  check_close(nll_loss(x, t, w, "none"), {0.25, 3.75, 2.0, 0.6});
  // mean divides by the summed weights of the targets that are not ignored
  check_close(nll_loss(x, targets_ignored()), {0.6});
  check_close(nll_loss(x, targets_ignored(), w), {0.6333333333});
  check_close(nll_loss(x, t, w, "mean", 1), {2.0});
  check_close(nll_loss(x, targets_ignored(), w, "none"), {0.25, 0.0, 2.0, 0.6});
  // int32 targets give the same result
  check_close(nll_loss(x, tensor(std::vector<int32_t>{0, 2, 1, 1}), w), {1.1});
}

TEST_CASE("nll_loss: unbatched, N-d, empty and all-ignored inputs") {
  const Tensor row = logp4x3().select(0, 1);
  const Tensor two = scalar_tensor(2, kInt64);
  check_close(nll_loss(row, two), {2.5});
  CHECK(nll_loss(row, two, {}, "none").dim() == 0);
  const Tensor t3 = tensor(std::vector<int64_t>{0, 1, 2, 2, 1, -100, 0, 2}, {2, 4});
  Tensor none = nll_loss(cos3d(), t3, {}, "none");
  CHECK(none.shape() == Shape{2, 4});
  check_close(none, {-1.0, -0.2836621855, 0.8390715291, -0.004425698, 0.9576594803, 0.0,
                     -0.1367372182, 0.5328330203});
  check_close(nll_loss(cos3d(), t3, class_weights()), {0.2979836061});
  // PyTorch's rule: a mean over no (non-ignored) target is 0 / 0 = nan; a sum is 0.
  check_close(nll_loss(zeros({0, 3}), tensor(std::vector<int64_t>{})), {kNan});
  check_close(nll_loss(zeros({0, 3}), tensor(std::vector<int64_t>{}), {}, "sum"), {0.0});
  check_close(nll_loss(logp4x3(), tensor(std::vector<int64_t>{-100, -100, -100, -100})), {kNan});
}

TEST_CASE("nll_loss: gradients") {
  Tensor x = logp4x3().requires_grad_();
  check_close(vjp(nll_loss(x, targets_ignored(), class_weights()), x, scalar_tensor(1.0, kFloat64)),
              {-0.1111111111, 0., 0., 0., 0., 0., 0., -0.4444444444, 0., 0., -0.4444444444, 0.});
  check_close(vjp(nll_loss(x, targets(), {}, "none"), x, tensor({1., 2., -1., 0.5})),
              {-1., 0., 0., 0., 0., -2., 0., 1., 0., 0., -0.5, 0.});
  // nll_loss is linear in self: its gradient does not depend on self.
  CHECK(!vjp(nll_loss(x, targets()), x, scalar_tensor(1.0, kFloat64)).requires_grad());
}

TEST_CASE("nll_loss: bad inputs are rejected before anything runs") {
  const Tensor x = logp4x3();
  std::string msg = error_of<IndexError>([&] {
    nll_loss(x, tensor(std::vector<int64_t>{0, 3, 1, 1}));
  });
  CHECK(msg.find("[nll_loss] target 3 is out of range [0, 3)") == 0);
  CHECK(msg.find("sample 1") != std::string::npos);
  msg = error_of<IndexError>([&] {
    nll_loss(x, tensor(std::vector<int64_t>{0, 1, -1, 1}), {}, "mean", 5);
  });
  CHECK(msg.find("[nll_loss] target -1 is out of range [0, 3)") == 0);
  CHECK(error_of<ValueError>([&] {
          nll_loss(x, tensor(std::vector<int64_t>{0, 1}));
        }).find("[nll_loss] target has shape [2], expected [4]") == 0);
  CHECK(error_of<ValueError>([&] {
          nll_loss(x, targets(), tensor({1., 2.}));
        }).find("[nll_loss] weight has shape [2], expected [3]") == 0);
  CHECK(error_of<ValueError>([&] {
          nll_loss(x, targets(), {}, "avg");
        }).find("[nll_loss] reduction must be one of none, mean, sum; got 'avg'") == 0);
  CHECK(error_of<TypeError>([&] {
          nll_loss(x, targets().to(kFloat32));
        }).find("[nll_loss] target has dtype float32") == 0);
}

// ---- cross_entropy ---------------------------------------------------------------------------

namespace {
Tensor logits4x3() {
  return tensor({{0.2, -1., 1.5}, {2., 0.1, -0.3}, {-0.5, 0.5, 0.}, {1., 1., -2.}});
}
Tensor dir4x3() { return tensor({{1., 0., -1.}, {0.5, 2., 1.}, {1., 0., -1.}, {0.5, 2., 1.}}); }

// One PyTorch case: F.cross_entropy(logits4x3(), ...) and its gradient against grad_output
// (1.5 for mean and sum, [1, 2, -1, 0.5] for none).
struct Case {
  const char* name;
  bool weighted;
  double eps;
  bool ignore;  // targets_ignored() rather than targets()
  const char* reduction;
  std::vector<double> loss, grad;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"plain mean",
       false,
       0,
       false,
       "mean",
       {1.3811324263},
       {-0.2995547353, 0.022723677, 0.2768310583, 0.3000414146, 0.0448767801, -0.3449181947,
        0.0698713962, -0.1850698534, 0.1151984571, 0.1829458317, -0.1920541683, 0.0091083366}},
      {"weighted mean",
       true,
       0,
       false,
       "mean",
       {1.2303797915},
       {-0.0998515784, 0.007574559, 0.0922770194, 0.3000414146, 0.0448767801, -0.3449181947,
        0.0931618616, -0.2467598045, 0.1535979429, 0.2439277756, -0.2560722244, 0.0121444488}},
      {"smoothed, ignored, mean",
       false,
       0.2,
       true,
       "mean",
       {1.0982858421},
       {-0.3327396471, -0.0030350973, 0.3357747444, 0., 0., 0., 0.0598285283, -0.1800931378,
        0.1202646095, 0.2105944422, -0.1894055578, -0.0211888845}},
      {"weighted, smoothed, ignored, mean",
       true,
       0.2,
       true,
       "mean",
       {0.9093235932},
       {-0.0997361394, -0.0309785618, 0.1307147012, 0., 0., 0., 0.10482365, -0.2626344233,
        0.1578107733, 0.2924434541, -0.2742232126, -0.0182202414}},
      {"weighted, ignored, mean",
       true,
       0,
       true,
       "mean",
       {0.7995045512},
       {-0.1331354379, 0.010099412, 0.1230360259, 0., 0., 0., 0.1242158155, -0.3290130726,
        0.2047972571, 0.3252370341, -0.3414296326, 0.0161925985}},
      {"plain sum",
       false,
       0,
       false,
       "sum",
       {5.5245297052},
       {-1.1982189413, 0.0908947082, 1.1073242331, 1.2001656584, 0.1795071204, -1.3796727788,
        0.2794855848, -0.7402794134, 0.4607938286, 0.7317833267, -0.7682166733, 0.0364333465}},
      {"weighted, smoothed, ignored, sum",
       true,
       0.2,
       true,
       "sum",
       {4.0919561692},
       {-0.4488126275, -0.1394035279, 0.5882161554, 0., 0., 0., 0.471706425, -1.181854905,
        0.71014848, 1.3159955432, -1.2340044568, -0.0819910865}},
      {"plain none",
       false,
       0,
       false,
       "none",
       {1.6035186037, 2.5230055121, 0.6802696706, 0.7177359187},
       {-0.7988126275, 0.0605964721, 0.7382161554, 1.6002208779, 0.2393428272, -1.8395637051,
        -0.1863237232, 0.4935196089, -0.3071958857, 0.2439277756, -0.2560722244, 0.0121444488}},
      {"smoothed, ignored, none",
       false,
       0.2,
       true,
       "none",
       {1.5968519371, 0.0, 0.7802696706, 0.9177359187},
       {-0.6654792942, -0.0060701946, 0.6715494887, 0., 0., 0., -0.1196570566, 0.3601862756,
        -0.2405292191, 0.2105944422, -0.1894055578, -0.0211888845}},
      {"weighted, smoothed, ignored, none",
       true,
       0.2,
       true,
       "none",
       {1.0990124025, 0.0, 1.3531700519, 1.6397737148},
       {-0.2992084183, -0.0929356853, 0.3921441036, 0., 0., 0., -0.31447095, 0.78790327,
        -0.47343232, 0.4386651811, -0.4113348189, -0.0273303622}},
  };
  return all;
}
}  // namespace

TEST_CASE("cross_entropy: weights, label smoothing and ignore_index as PyTorch") {
  for (const Case& c : cases()) {
    INFO(c.name);
    Tensor x = logits4x3().requires_grad_();
    const Tensor t = c.ignore ? targets_ignored() : targets();
    const Tensor w = c.weighted ? class_weights() : Tensor();
    Tensor loss = cross_entropy(x, t, w, c.reduction, -100, c.eps);
    check_close(loss, c.loss);
    const bool none = std::string(c.reduction) == "none";
    Tensor go = none ? tensor({1., 2., -1., 0.5}) : scalar_tensor(1.5, kFloat64);
    check_close(vjp(loss, x, go), c.grad);
  }
}

TEST_CASE("cross_entropy equals log_softmax then nll_loss without smoothing") {
  const Tensor x = logits4x3(), t = targets_ignored(), w = class_weights();
  for (const char* reduction : {"mean", "sum", "none"}) {
    INFO(reduction);
    check_close(cross_entropy(x, t, w, reduction),
                nll_loss(log_softmax(x, 1), t, w, reduction).to_vector<double>(), 1e-14);
  }
}

TEST_CASE("cross_entropy: double backward as PyTorch") {
  const Tensor dir = dir4x3();
  struct Second {
    const char* reduction;
    std::vector<double> want;
  };
  const std::vector<Second> seconds = {
      {"mean",
       {0.0687179516, 0.0072315666, -0.0759495182, 0., 0., 0., 0.1299480464, 0.0380920587,
        -0.1680401051, -0.2258226724, 0.2295091753, -0.0036865029}},
      {"sum",
       {0.3092307823, 0.0325420497, -0.3417728319, 0., 0., 0., 0.5847662088, 0.1714142644,
        -0.7561804732, -1.0162020259, 1.0327912889, -0.016589263}},
      {"none",
       {0.2061538548, 0.0216946998, -0.2278485546, 0., 0., 0., -0.3898441392, -0.1142761762,
        0.5041203154, -0.3387340086, 0.344263763, -0.0055297543}},
  };
  for (const Second& s : seconds) {
    INFO(s.reduction);
    Tensor x = logits4x3().requires_grad_();
    Tensor loss = cross_entropy(x, targets_ignored(), class_weights(), s.reduction, -100, 0.2);
    const bool none = std::string(s.reduction) == "none";
    Tensor g = vjp(loss, x, none ? tensor({1., 2., -1., 0.5}) : scalar_tensor(1.5, kFloat64));
    CHECK(std::string(g.grad_fn()->name()) == "CrossEntropyBackwardBackward");
    check_close(autograd::grad({g}, {x}, {dir})[0], s.want);
  }
}

TEST_CASE("cross_entropy: unbatched, N-d, large logits, all ignored, full smoothing") {
  const Tensor two = scalar_tensor(2, kInt64);
  check_close(cross_entropy(logits4x3().select(0, 0), two, {}, "mean", -100, 0.1), {0.4301852704});
  const Tensor t3 = tensor(std::vector<int64_t>{0, 1, 2, 2, 1, -100, 0, 2}, {2, 4});
  check_close(cross_entropy(sin3d(), t3, {}, "none", -100, 0.2),
              {1.4096921007, 2.1856926433, 1.7695372193, 2.0513662657, 1.5663055294, 0.0,
               0.6166724225, 1.9347555577});
  check_close(cross_entropy(sin3d(), t3, class_weights(), "mean", -100, 0.2), {1.8297957973});
  Tensor big = tensor({{1000.f, 999.f, -1000.f}, {-1000.f, 1000.f, 0.f}});
  check_close(cross_entropy(big, tensor(std::vector<int64_t>{0, 2}), {}, "none"),
              {0.313261658, 1000.0}, 1e-5);
  check_close(cross_entropy(logits4x3().slice(0, 0, 2), tensor(std::vector<int64_t>{-100, -100})),
              {kNan});
  check_close(cross_entropy(logits4x3(), targets(), class_weights(), "mean", -100, 1.0),
              {1.4637843789});
}

TEST_CASE("cross_entropy: bad inputs are rejected") {
  const Tensor x = logits4x3(), t = targets();
  CHECK(error_of<ValueError>([&] {
          cross_entropy(x, t, {}, "mean", -100, -0.1);
        }).find("[cross_entropy] label_smoothing must be in [0, 1], got -0.1") == 0);
  CHECK(error_of<ValueError>([&] {
          cross_entropy(x, t, {}, "mean", -100, 1.5);
        }).find("[cross_entropy] label_smoothing must be in [0, 1], got 1.5") == 0);
  CHECK(error_of<IndexError>([&] {
          cross_entropy(x, tensor(std::vector<int64_t>{0, 1, 7, 1}));
        }).find("[cross_entropy] target 7 is out of range [0, 3)") == 0);
  CHECK(error_of<ValueError>([&] {
          cross_entropy(scalar_tensor(1.0, kFloat64), scalar_tensor(0, kInt64));
        }).find("[cross_entropy] self must have at least 1 dim") == 0);
  CHECK(error_of<ValueError>([&] {
          cross_entropy_backward(tensor({1., 2.}), x, t);
        }).find("[cross_entropy_backward] grad_output has shape [2], expected []") == 0);
}

TEST_CASE("cross_entropy on many rows: parallel rows, the same bits for 1 and 2 threads") {
  manual_seed(7);
  Tensor x = randn({512, 100}, kFloat32);
  Tensor t = randint(0, 100, {512});
  const int before = get_num_threads();
  set_num_threads(1);
  const float one = cross_entropy(x, t, {}, "mean", -100, 0.1).item<float>();
  const std::vector<float> grad_one =
      cross_entropy_backward(scalar_tensor(1.0, kFloat32), x, t, {}, "mean", -100, 0.1)
          .to_vector<float>();
  set_num_threads(2);
  CHECK(cross_entropy(x, t, {}, "mean", -100, 0.1).item<float>() == one);
  CHECK(cross_entropy_backward(scalar_tensor(1.0, kFloat32), x, t, {}, "mean", -100, 0.1)
            .to_vector<float>() == grad_one);
  set_num_threads(before);
  // The same loss through the unfused ops (float64 for a tight comparison).
  const Tensor lp = log_softmax(x.to(kFloat64), 1);
  const double unfused = (0.9 * nll_loss(lp, t) - 0.1 / 100 * sum(lp) / 512.0).item<double>();
  CHECK(one == doctest::Approx(unfused).epsilon(1e-6));
}
