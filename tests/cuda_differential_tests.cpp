// A seeded differential test of the seed indexing ops: 1,000 random cases (0-d and 0-size
// shapes, duplicate indices, ties, zeros, every reduce, include_self on and off), each run on the
// CUDA device and on the CPU, forward and backward, the device once with deterministic
// algorithms (sorted, index order) and once without (atomics). Values are small integers and
// halves, so sums and products are exact and the deterministic device must give the CPU's bits;
// backward gradients (divisions by tie and element counts) agree to 1e-12. A second case uses
// random floats and many duplicates, where only the deterministic mode can match bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/cuda.h>
#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

namespace {

using tg::Shape;
using tg::Tensor;
using tg_test::differs;
using tg_test::Rng;

Tensor values(Rng& rng, const Shape& shape) {
  static const double kPool[] = {-2, -1, -0.5, 0, 0, 0.5, 1, 1, 2, 3};
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& x : v) x = kPool[rng.uniform(0, 9)];
  return tg::tensor(v).reshape(shape);
}

Tensor indices(Rng& rng, const Shape& shape, int64_t bound) {
  std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
  for (int64_t& x : v) x = bound > 0 ? rng.uniform(0, bound - 1) : 0;
  return tg::tensor(v).reshape(shape);
}

Shape random_shape(Rng& rng) {
  Shape s(static_cast<size_t>(rng.uniform(1, 3)), 0);
  for (int64_t& d : s) d = rng.uniform(rng.coin(0.08) ? 0 : 1, 4);
  return s;
}

// One case: the op applied to (self, src) with everything else fixed, on both devices.
struct Case {
  std::string what;
  Tensor self, src;  // CPU, float64
  std::function<Tensor(const Tensor&, const Tensor&)> op;
};

Case make_case(Rng& rng) {
  static const char* kReduces[] = {"sum", "prod", "mean", "amax", "amin"};
  const int kind = static_cast<int>(rng.uniform(0, 5));
  Case c;
  if (rng.coin(0.05)) {  // 0-d self, index and src
    const Tensor index = tg::tensor(std::vector<int64_t>{0}).reshape({});
    const std::string reduce = kReduces[rng.uniform(0, 4)];
    const bool include_self = rng.coin();
    c.what = "0-d scatter_reduce " + reduce;
    c.self = values(rng, {});
    c.src = values(rng, {});
    c.op = [=](const Tensor& s, const Tensor& x) {
      return tg::scatter_reduce(s, 0, index.to(s.device()), x, reduce, include_self);
    };
    return c;
  }
  const Shape shape = random_shape(rng);
  const int64_t dim = rng.uniform(0, static_cast<int64_t>(shape.size()) - 1);
  c.self = values(rng, shape);
  if (kind <= 2) {  // scatter_reduce, scatter_add, gather: an index of any shape along dim
    Shape ishape = shape;
    for (size_t d = 0; d < ishape.size(); ++d)
      ishape[d] = static_cast<int64_t>(d) == dim ? rng.uniform(0, 5) : rng.uniform(0, shape[d]);
    const Tensor index = indices(rng, ishape, shape[static_cast<size_t>(dim)]);
    if (shape[static_cast<size_t>(dim)] == 0 && ishape.numel() > 0)
      ishape[static_cast<size_t>(dim)] = 0;
    const Tensor idx = shape[static_cast<size_t>(dim)] == 0 ? indices(rng, ishape, 0) : index;
    Shape sshape = ishape;
    for (int64_t& d : sshape) d += rng.uniform(0, 1);
    c.src = values(rng, sshape);
    if (kind == 0) {
      const std::string reduce = kReduces[rng.uniform(0, 4)];
      const bool include_self = rng.coin();
      c.what = "scatter_reduce " + reduce + (include_self ? "" : " exclude_self");
      c.op = [=](const Tensor& s, const Tensor& x) {
        return tg::scatter_reduce(s, dim, idx.to(s.device()), x, reduce, include_self);
      };
    } else if (kind == 1) {
      c.what = "scatter_add";
      c.op = [=](const Tensor& s, const Tensor& x) {
        return tg::scatter_add(s, dim, idx.to(s.device()), x);
      };
    } else {
      c.what = "gather";
      c.op = [=](const Tensor& s, const Tensor&) { return tg::gather(s, dim, idx.to(s.device())); };
    }
  } else if (kind <= 4) {  // index_reduce, index_add: a 1-d index, source sized along dim
    const int64_t count = shape[static_cast<size_t>(dim)] == 0 ? 0 : rng.uniform(0, 6);
    const Tensor idx = indices(rng, {count}, shape[static_cast<size_t>(dim)]);
    Shape sshape = shape;
    sshape[static_cast<size_t>(dim)] = count;
    c.src = values(rng, sshape);
    if (kind == 3) {
      const std::string reduce = kReduces[rng.uniform(1, 4)];
      const bool include_self = rng.coin();
      c.what = "index_reduce " + reduce + (include_self ? "" : " exclude_self");
      c.op = [=](const Tensor& s, const Tensor& x) {
        return tg::index_reduce(s, dim, idx.to(s.device()), x, reduce, include_self);
      };
    } else {
      c.what = "index_add";
      c.op = [=](const Tensor& s, const Tensor& x) {
        return tg::index_add(s, dim, idx.to(s.device()), x, 2);
      };
    }
  } else {  // masked_scatter: a random mask, source at least as large as its count
    std::vector<bool> m(static_cast<size_t>(shape.numel()));
    int64_t count = 0;
    for (size_t k = 0; k < m.size(); ++k) count += (m[k] = rng.coin());
    const Tensor mask = tg::tensor(m).reshape(shape);
    c.src = values(rng, {count + rng.uniform(0, 2)});
    c.what = "masked_scatter";
    c.op = [=](const Tensor& s, const Tensor& x) {
      return tg::masked_scatter(s, mask.to(s.device()), x);
    };
  }
  return c;
}

}  // namespace

TEST_CASE("cuda: a thousand random seed-op cases, device against CPU, forward and backward") {
  if (!tg::cuda::is_available()) {
    MESSAGE("no CUDA device: skipping");
    return;
  }
  Rng rng{std::mt19937_64(20261124)};
  int checked = 0;
  for (int i = 0; i < 1000; ++i) {
    const Case c = make_case(rng);
    INFO("case ", i, ": ", c.what, " self ", c.self.shape().str(), " src ", c.src.shape().str());
    auto run = [&](tg::Device device) {
      Tensor self = c.self.to(device), src = c.src.to(device);
      self.requires_grad_(true);
      src.requires_grad_(true);
      const Tensor y = c.op(self, src);
      std::vector<Tensor> grads;
      if (y.requires_grad()) {
        const Tensor g =
            (tg::arange(y.numel(), tg::kFloat64).reshape(y.shape()) * 0.25 - 1).to(device);
        grads = tg::autograd::grad({y}, {self, src}, {g});
      }
      grads.insert(grads.begin(), y);
      return grads;
    };
    const std::vector<Tensor> want = run(tg::kCPU);
    for (const bool deterministic : {true, false}) {
      INFO((deterministic ? "deterministic" : "atomics"));
      const tg::DeterministicGuard mode(deterministic);
      const std::vector<Tensor> got = run(tg::kCUDA);
      REQUIRE(got.size() == want.size());
      const double tol = deterministic ? 0 : 1e-12;
      CHECK_MESSAGE(differs(got[0], want[0], tol).empty(),
                    "forward: ", differs(got[0], want[0], tol));
      for (size_t k = 1; k < got.size(); ++k)
        CHECK_MESSAGE(differs(got[k], want[k], 1e-12).empty(), "gradient ", k - 1, ": ",
                      differs(got[k], want[k], 1e-12));
    }
    ++checked;
  }
  CHECK(checked == 1000);
}

TEST_CASE("cuda: deterministic scatter sums and products give the CPU bits, atomics are close") {
  if (!tg::cuda::is_available()) {
    MESSAGE("no CUDA device: skipping");
    return;
  }
  // Thousands of random floats into a few slots: the order of a floating sum or product shows
  // in its last bits, so only the CPU's order (index order) reproduces the CPU's result.
  tg::manual_seed(7);
  const int64_t n = 3000;
  const Tensor index = (tg::rand({n, 4}) * 3).to(tg::kInt64);
  const Tensor rows = (tg::rand({n}) * 3).to(tg::kInt64);
  for (tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    const Tensor self = tg::rand({3, 4}, dtype) + 0.5;
    const Tensor sum_src = tg::rand({n, 4}, dtype) * 2 - 1;
    const Tensor prod_src = tg::rand({n, 4}, dtype) * 0.2 + 0.9;  // products stay finite
    using Op = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&)>;
    const std::vector<std::pair<std::string, Op>> ops = {
        {"scatter_add",
         [](auto& s, auto& i, auto&, auto& x) { return tg::scatter_add(s, 0, i, x); }},
        {"scatter_reduce sum",
         [](auto& s, auto& i, auto&, auto& x) { return tg::scatter_reduce(s, 0, i, x, "sum"); }},
        {"scatter_reduce prod",
         [](auto& s, auto& i, auto&, auto& x) { return tg::scatter_reduce(s, 0, i, x, "prod"); }},
        {"scatter_reduce mean exclude_self",
         [](auto& s, auto& i, auto&, auto& x) {
           return tg::scatter_reduce(s, 0, i, x, "mean", false);
         }},
        {"index_add",
         [](auto& s, auto&, auto& r, auto& x) { return tg::index_add(s, 0, r, x, 0.5); }},
        {"index_reduce prod",
         [](auto& s, auto&, auto& r, auto& x) { return tg::index_reduce(s, 0, r, x, "prod"); }},
        {"index_reduce amax",
         [](auto& s, auto&, auto& r, auto& x) { return tg::index_reduce(s, 0, r, x, "amax"); }},
    };
    for (const auto& entry : ops) {
      INFO(entry.first, " ", std::string(tg::dtype_name(dtype)));
      const Tensor& src = entry.first.find("prod") != std::string::npos ? prod_src : sum_src;
      const Tensor want = entry.second(self, index, rows, src);
      auto on_device = [&] {
        return entry.second(self.to(tg::kCUDA), index.to(tg::kCUDA), rows.to(tg::kCUDA),
                            src.to(tg::kCUDA));
      };
      {
        const tg::DeterministicGuard mode(true);
        for (int rep = 0; rep < 2; ++rep)
          CHECK_MESSAGE(differs(on_device(), want, 0).empty(), differs(on_device(), want, 0));
      }
      const tg::DeterministicGuard mode(false);
      const double tol = dtype == tg::kFloat32 ? 1e-4 : 1e-12;
      CHECK_MESSAGE(differs(on_device(), want, tol).empty(), differs(on_device(), want, tol));
    }
  }
}
