// A fused backward kernel against the composed formula that states its rule
// (autograd/formulas/fused.h). The op check compares the two on every spec sample
// (tg_opcheck --fused-vs-composed); these cases need values a JSON sample cannot hold (NaN, inf).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <tapegrad/autograd/formulas/fused.h>
#include <tapegrad/tapegrad.h>

namespace {

using tg::Tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// d(scatter_reduce(self, 0, index, src))/d(self) for upstream grad g, fused or composed.
Tensor self_grad(const Tensor& self, const Tensor& index, const Tensor& src, const Tensor& g,
                 const std::string& reduce, bool include_self, bool composed) {
  Tensor x = self.detach();
  x.requires_grad_(true);
  Tensor y = tg::scatter_reduce(x, 0, index, src, reduce, include_self);
  std::optional<tg::formulas::ComposedOnlyGuard> composed_only;
  if (composed) composed_only.emplace();
  return tg::autograd::grad({y}, {x}, {g})[0];
}

// Same values, a NaN matching any NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!(std::isnan(a[k]) ? std::isnan(b[k]) : a[k] == b[k])) return false;
  return true;
}

}  // namespace

TEST_CASE("fused scatter_reduce backward with no entries follows the rule at NaN and inf") {
  // With nothing scattered, amax/amin's rule gives self grad / ties * [self == result], NaN where
  // self is NaN, and prod's grad * result / self, NaN where self is NaN or inf. The fused kernel
  // used to return grad unchanged there. Expected values from PyTorch 1.13.
  const Tensor self = tg::tensor({kNaN, 1.0, kInf, 0.0, -2.0});
  const Tensor g = tg::tensor({0.5, 1.5, -2.0, 3.0, 0.25});
  const Tensor index = tg::empty({0}, tg::kInt64);
  const Tensor src = tg::empty({0}, tg::kFloat64);
  struct Case {
    const char* reduce;
    bool include_self;
    // PyTorch's gradient; empty: only fused == composed (a deliberate difference from PyTorch,
    // docs/SEMANTICS.md: prod's untouched slots pass grad through where PyTorch gives NaN)
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"amax", true, {kNaN, 1.5, -2.0, 3.0, 0.25}}, {"amax", false, {kNaN, 1.5, -2.0, 3.0, 0.25}},
      {"amin", true, {kNaN, 1.5, -2.0, 3.0, 0.25}}, {"amin", false, {kNaN, 1.5, -2.0, 3.0, 0.25}},
      {"prod", true, {kNaN, 1.5, kNaN, 3.0, 0.25}}, {"prod", false, {}},
      {"mean", true, {0.5, 1.5, -2.0, 3.0, 0.25}},  {"mean", false, {0.5, 1.5, -2.0, 3.0, 0.25}},
  };
  for (const Case& c : cases) {
    INFO(c.reduce << " include_self=" << c.include_self);
    const auto fused = self_grad(self, index, src, g, c.reduce, c.include_self, false);
    const auto composed = self_grad(self, index, src, g, c.reduce, c.include_self, true);
    CHECK(same_values(fused.to_vector<double>(), composed.to_vector<double>()));
    if (!c.want.empty()) CHECK(same_values(fused.to_vector<double>(), c.want));
  }
}

TEST_CASE("use_fused: off under ComposedOnlyGuard and when recording, counted when on") {
  const Tensor a = tg::ones({2});
  Tensor b = tg::ones({2});
  b.requires_grad_(true);
  const uint64_t before = tg::formulas::fused_runs();
  CHECK(tg::formulas::use_fused({&a, &b}) == false);  // grad mode on, b requires grad: recording
  {
    tg::NoGradGuard no_grad;  // a plain backward runs its formulas without grad mode
    CHECK(tg::formulas::use_fused({&a, &b}));
    tg::formulas::ComposedOnlyGuard composed_only;
    CHECK(tg::formulas::use_fused({&a, &b}) == false);
  }
  CHECK(tg::formulas::use_fused({&a}));
  CHECK(tg::formulas::fused_runs() == before + 2);
}
