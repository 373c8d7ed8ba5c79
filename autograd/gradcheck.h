#pragma once
// Finite-difference checks of gradients. gradcheck compares the Jacobian that backward computes
// with central differences; gradgradcheck does the same for the gradient itself (double backward).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // an entry passes when |analytical - numerical| <= atol + rtol * |numerical|
  double rtol = 1e-3;
  // true: each output's Jacobian rows are computed with the other outputs' gradients left
  // undefined (backward must treat them as zeros), and an undefined gradient for an input that
  // finite differences say does influence the output is reported as such. false: the other
  // outputs get explicit zero gradients and undefined gradients are compared as zeros.
  bool check_undefined = true;
  uint64_t seed = 0;     // gradgradcheck: seed of the random grad_outputs
  int max_reported = 5;  // mismatching entries listed per (input, output) pair
  // Fast mode: per (input, output) pair, compare u^T J v (analytical: one backward with grad u,
  // dotted with v) with the central difference of u^T f(x + eps v), for a few seeded random unit
  // vectors u, v: a handful of evaluations instead of one per input element. On a mismatch the
  // pair is checked again in full, to name the element.
  bool fast_mode = false;
  int fast_projections = 2;  // (u, v) pairs per input
  // For a backward that is nondeterministic (atomic adds on a GPU): with nondet_tol > 0 (fast
  // mode) each backward runs twice and the two must agree within it, and it widens the tolerance
  // of every comparison by as much. 0: backward is taken as deterministic and run once.
  double nondet_tol = 0;
  // Check only the inputs at these positions (empty: every floating input that requires grad).
  std::vector<size_t> inputs_to_check;
};

struct GradcheckResult {
  bool ok = true;
  std::string report;    // what failed (input, output, element, values), or a one-line summary
  double max_error = 0;  // largest |analytical - numerical| seen
  // Calls of fn for finite differences and backward passes run (what fast mode saves).
  int64_t fn_calls = 0, backward_calls = 0;
  explicit operator bool() const { return ok; }
};

using GradcheckFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using GradcheckSingleFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Checks the gradients of fn's floating outputs w.r.t. every floating input that requires grad
/// against float64 central differences. Inputs are detached first; fn is called under NoGradGuard
/// for the finite differences (a fn that needs grad mode must enable it itself).
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});
GradcheckResult gradcheck(const GradcheckSingleFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

/// gradcheck of (inputs, grad_outputs) -> d(outputs)/d(inputs) . grad_outputs, with seeded random
/// grad_outputs: checks that the backward formulas are themselves differentiated correctly.
GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});
GradcheckResult gradgradcheck(const GradcheckSingleFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

}  // namespace tg::autograd
