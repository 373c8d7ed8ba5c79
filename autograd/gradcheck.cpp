// gradcheck / gradgradcheck: the analytical Jacobian (one backward per output element, with a
// one-hot grad_output) against the numerical one (central differences, one input element at a
// time), entry by entry.
#include <tapegrad/autograd/gradcheck.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <random>
#include <sstream>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/factories.h>

namespace tg::autograd {
namespace {

// "[1, 2]": the multi-index of row-major position `linear` in `shape`.
std::string index_string(const Shape& shape, int64_t linear) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + t.shape().str();
}

// A contiguous copy of t (same dtype and device) that shares nothing with it and has no history.
Tensor contiguous_copy(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

// The 0-d view of element `linear` of a contiguous tensor.
Tensor element(const Tensor& t, int64_t linear) {
  return make_view(t, Shape{}, Shape{}, t.storage_offset() + linear);
}

// Zeros shaped like t, with a 1 at row-major position `linear`.
Tensor one_hot_like(const Tensor& t, int64_t linear) {
  Tensor out = zeros(t.shape(), t.dtype(), t.device());
  fill_data(element(out, linear), 1);
  return out;
}

// A fresh leaf that requires grad, sharing t's data.
Tensor fresh_leaf(const Tensor& t) {
  Tensor leaf = t.detach();
  leaf.requires_grad_(true);
  return leaf;
}

bool differentiated(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.requires_grad();
}

// d output / d input for one (input, output) pair: row r is output element r, column c input
// element c. `defined` is false when backward never gave this input a gradient for this output.
struct Block {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  std::vector<double> forward;  // numerical blocks: (f(x + eps) - f(x)) / eps, for kink hints
  bool defined = false;
  double at(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
  double& at(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
};
using Jacobian = std::vector<std::vector<Block>>;  // [differentiated input][checked output]

struct Problem {
  const GradcheckFn& fn;
  const GradcheckOptions& opt;
  std::vector<Tensor> inputs;   // as given, differentiated ones replaced by fresh leaves
  std::vector<size_t> wrt;      // positions of the differentiated inputs
  std::vector<Tensor> outputs;  // fn(inputs) with grad mode on
  std::vector<size_t> checked;  // positions of the floating outputs
  std::string step;             // what is running, for the report when something throws
  int64_t fn_calls = 0, backward_calls = 0;

  Jacobian empty_jacobian() const {
    Jacobian j(wrt.size(), std::vector<Block>(checked.size()));
    for (size_t i = 0; i < wrt.size(); ++i)
      for (size_t o = 0; o < checked.size(); ++o) {
        Block& b = j[i][o];
        b.rows = outputs[checked[o]].numel();
        b.cols = inputs[wrt[i]].numel();
        b.v.assign(static_cast<size_t>(b.rows * b.cols), 0.0);
      }
    return j;
  }
};

// Row r of every block of output o: the gradients for a one-hot grad_output at element r.
Jacobian analytical_jacobian(Problem& p) {
  Jacobian jac = p.empty_jacobian();
  std::vector<Tensor> wrt_tensors;
  for (size_t pos : p.wrt) wrt_tensors.push_back(p.inputs[pos]);
  for (size_t o = 0; o < p.checked.size(); ++o) {
    const Tensor& y = p.outputs[p.checked[o]];
    if (!y.requires_grad()) continue;  // no input reaches it: every block stays undefined
    for (int64_t r = 0; r < y.numel(); ++r) {
      p.step = "backward of output " + std::to_string(p.checked[o]) + " element " +
               index_string(y.shape(), r);
      std::vector<Tensor> grads;
      if (p.opt.check_undefined) {
        grads = grad({y}, wrt_tensors, {one_hot_like(y, r)}, /*retain_graph=*/true);
        ++p.backward_calls;
      } else {
        std::vector<Tensor> ys, gos;
        for (size_t k = 0; k < p.checked.size(); ++k) {
          const Tensor& yk = p.outputs[p.checked[k]];
          if (!yk.requires_grad()) continue;
          ys.push_back(yk);
          gos.push_back(k == o ? one_hot_like(yk, r) : zeros_like(yk));
        }
        grads = grad(ys, wrt_tensors, gos, /*retain_graph=*/true);
        ++p.backward_calls;
      }
      TG_CHECK(grads.size() == p.wrt.size(), Error, "gradcheck", "autograd::grad returned ",
               grads.size(), " gradients for ", p.wrt.size(), " inputs");
      for (size_t i = 0; i < p.wrt.size(); ++i) {
        const Tensor& g = grads[i];
        if (!g.defined()) continue;
        const Tensor& x = p.inputs[p.wrt[i]];
        TG_CHECK(g.shape() == x.shape(), ValueError, "gradcheck", "the gradient of input ",
                 p.wrt[i], " has shape ", g.shape(), ", expected the input's shape ", x.shape());
        std::vector<double> gv = g.to_vector<double>();
        Block& b = jac[i][o];
        b.defined = true;
        std::copy(gv.begin(), gv.end(), b.v.begin() + r * b.cols);
      }
    }
  }
  return jac;
}

// Column c of every block of input i: central differences of all outputs when element c moves.
Jacobian numerical_jacobian(Problem& p, const std::vector<Tensor>& originals) {
  Jacobian jac = p.empty_jacobian();
  std::vector<Tensor> probe = p.inputs;
  for (size_t pos : p.wrt) probe[pos] = contiguous_copy(originals[pos]);
  NoGradGuard no_grad;

  auto evaluate = [&]() {
    std::vector<Tensor> outs = p.fn(probe);
    ++p.fn_calls;
    TG_CHECK(outs.size() == p.outputs.size(), ValueError, "gradcheck", "fn returned ", outs.size(),
             " outputs, but ", p.outputs.size(), " on the first call");
    std::vector<std::vector<double>> values;
    for (size_t j : p.checked) {
      const Tensor& y = outs[j];
      TG_CHECK(y.defined() && y.shape() == p.outputs[j].shape(), ValueError, "gradcheck", "output ",
               j, " is ", (y.defined() ? describe(y) : "undefined"), ", but was ",
               describe(p.outputs[j]), " on the first call");
      values.push_back(y.to_vector<double>());
    }
    return values;
  };

  std::vector<std::vector<double>> center;
  for (size_t j : p.checked) center.push_back(p.outputs[j].detach().to_vector<double>());
  for (size_t i = 0; i < p.wrt.size(); ++i)
    for (size_t o = 0; o < p.checked.size(); ++o) jac[i][o].forward.assign(jac[i][o].v.size(), 0);
  for (size_t i = 0; i < p.wrt.size(); ++i) {
    const Tensor& x = probe[p.wrt[i]];
    for (int64_t c = 0; c < x.numel(); ++c) {
      p.step = "finite differences of input " + std::to_string(p.wrt[i]) + " element " +
               index_string(x.shape(), c);
      Tensor e = element(x, c);
      const double orig = e.item<double>();
      fill_data(e, orig + p.opt.eps);
      const double up = e.item<double>();  // the values actually stored (float32 rounds)
      auto plus = evaluate();
      fill_data(e, orig - p.opt.eps);
      const double down = e.item<double>();
      auto minus = evaluate();
      fill_data(e, orig);
      TG_CHECK(up != down, ValueError, "gradcheck", "eps ", p.opt.eps, " does not change input ",
               p.wrt[i], " (", dtype_name(x.dtype()), ") at ", index_string(x.shape(), c));
      for (size_t o = 0; o < p.checked.size(); ++o) {
        Block& b = jac[i][o];
        for (int64_t r = 0; r < b.rows; ++r) {
          const auto k = static_cast<size_t>(r);
          b.at(r, c) = (plus[o][k] - minus[o][k]) / (up - down);
          b.forward[static_cast<size_t>(r * b.cols + c)] =
              (plus[o][k] - center[o][k]) / (up - orig);
        }
      }
    }
  }
  return jac;
}

// A line when the finite differences on the two sides of the input differ (the central one is
// their mean): the input sits where the function has a kink, and no gradient is "right" there.
std::string kink_hint(const Block& n, int64_t r, int64_t c, double tol) {
  if (n.forward.empty()) return "";
  const double fwd = n.forward[static_cast<size_t>(r * n.cols + c)];
  const double bwd = 2 * n.at(r, c) - fwd;
  if (!(std::abs(fwd - bwd) > 10 * tol)) return "";
  std::ostringstream os;
  os.precision(6);
  os << "    hint: the input sits on a kink (difference from above " << fwd << ", from below "
     << bwd
     << "): relu or abs at 0, a max/amax/min tie, a clamp bound, a floor step. Move the "
        "sample off it (\"distinct\", \"low\"/\"high\", \"step\") or give it \"no_grad\"\n";
  return os.str();
}

// Compares the blocks entry by entry; appends what differs to `report`.
void compare(const Problem& p, const Jacobian& an, const Jacobian& nu, GradcheckResult& result,
             std::ostringstream& report) {
  const GradcheckOptions& opt = p.opt;
  for (size_t i = 0; i < p.wrt.size(); ++i)
    for (size_t o = 0; o < p.checked.size(); ++o) {
      const Block& a = an[i][o];
      const Block& n = nu[i][o];
      const Tensor& x = p.inputs[p.wrt[i]];
      const Tensor& y = p.outputs[p.checked[o]];
      auto entry = [&](int64_t r, int64_t c) {
        return "d output " + std::to_string(p.checked[o]) + index_string(y.shape(), r) +
               " / d input " + std::to_string(p.wrt[i]) + index_string(x.shape(), c);
      };
      const std::string pair =
          detail::str_cat("input ", p.wrt[i], " (", describe(x), ") and output ", p.checked[o],
                          " (", describe(y), ")");
      if (!a.defined && opt.check_undefined) {
        // No gradient: the input must not move the output either.
        for (int64_t r = 0; r < n.rows; ++r)
          for (int64_t c = 0; c < n.cols; ++c)
            if (!(std::abs(n.at(r, c)) <= opt.atol)) {
              result.ok = false;
              report << "undefined gradient for " << pair
                     << ": backward says the input does not influence the output, but finite "
                        "differences give "
                     << entry(r, c) << " = " << n.at(r, c) << "\n";
              r = n.rows;  // report the first such entry only
              break;
            }
        continue;
      }
      int64_t bad = 0;
      double pair_max = 0;
      std::ostringstream lines;
      for (int64_t r = 0; r < a.rows; ++r)
        for (int64_t c = 0; c < a.cols; ++c) {
          const double av = a.at(r, c), nv = n.at(r, c);
          const double err = std::abs(av - nv), tol = opt.atol + opt.rtol * std::abs(nv);
          if (!std::isnan(err)) pair_max = std::max(pair_max, err);
          if (err <= tol) continue;
          if (bad++ < opt.max_reported) {
            lines << "  " << entry(r, c) << ": numerical " << nv << ", analytical " << av
                  << ", error " << err << " > tolerance " << tol << "\n";
            lines << kink_hint(n, r, c, tol);
          }
        }
      result.max_error = std::max(result.max_error, pair_max);
      if (bad == 0) continue;
      result.ok = false;
      report << "Jacobian mismatch for " << pair << ": " << bad << " of " << a.rows * a.cols
             << " entries differ, max error " << pair_max << "\n"
             << lines.str();
      if (bad > opt.max_reported) report << "  ... and " << bad - opt.max_reported << " more\n";
    }
}

// ---- fast mode -------------------------------------------------------------------------------

// Seeded values uniform in [-1, 1), shaped like t, in t's dtype and on its device.
Tensor random_direction(const Tensor& t, std::mt19937_64& rng) {
  Tensor host = empty(t.shape(), kFloat64);
  double* d = host.data<double>();
  for (int64_t k = 0; k < t.numel(); ++k) d[k] = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, host);
  return out;
}

double dot(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t k = 0; k < x.size(); ++k) s += x[k] * y[k];
  return s;
}

// x + step * v, contiguous, without history.
Tensor moved(const Tensor& x, const Tensor& v, double step) {
  Tensor out = contiguous_copy(x);
  std::vector<double> xs = out.to_vector<double>(), vs = v.to_vector<double>();
  for (size_t k = 0; k < xs.size(); ++k) xs[k] += step * vs[k];
  Tensor host = empty(x.shape(), kFloat64);
  std::copy(xs.begin(), xs.end(), host.data<double>());
  copy_data(out, host);
  return out;
}

// u^T J v for every (input, output) pair, analytically (one backward per output, dotted with v)
// and numerically (two evaluations per input, dotted with u), for opt.fast_projections seeded
// (u, v); the pairs that disagree are checked again with their full Jacobian block, which names
// the element (and says when the fast check was only a tolerance near miss).
void fast_check(Problem& p, const std::vector<Tensor>& originals, GradcheckResult& result,
                std::ostringstream& report) {
  const GradcheckOptions& opt = p.opt;
  std::mt19937_64 rng(opt.seed ^ 0xfa57c4ec4ull);
  std::vector<Tensor> wrt_tensors;
  for (size_t pos : p.wrt) wrt_tensors.push_back(p.inputs[pos]);
  std::vector<std::vector<bool>> failed(p.wrt.size(), std::vector<bool>(p.checked.size(), false));
  std::ostringstream notes;
  notes.precision(10);
  for (int k = 0; k < std::max(1, opt.fast_projections); ++k) {
    std::vector<Tensor> v, u;
    for (const Tensor& x : wrt_tensors) v.push_back(random_direction(x, rng));
    for (size_t j : p.checked) u.push_back(random_direction(p.outputs[j], rng));
    // analytical[i][o] = v_i . (J_oi^T u_o); NaN marks an undefined gradient
    std::vector<std::vector<double>> an(p.wrt.size(), std::vector<double>(p.checked.size(), NAN));
    for (size_t o = 0; o < p.checked.size(); ++o) {
      const Tensor& y = p.outputs[p.checked[o]];
      if (!y.requires_grad()) continue;
      p.step = "backward of output " + std::to_string(p.checked[o]) + " (fast mode)";
      std::vector<Tensor> grads = grad({y}, wrt_tensors, {u[o]}, /*retain_graph=*/true);
      ++p.backward_calls;
      if (opt.nondet_tol > 0) {  // the same backward again: equal within nondet_tol
        std::vector<Tensor> again = grad({y}, wrt_tensors, {u[o]}, /*retain_graph=*/true);
        ++p.backward_calls;
        for (size_t i = 0; i < grads.size(); ++i) {
          if (!grads[i].defined() || !again[i].defined()) continue;
          const std::vector<double> a = grads[i].to_vector<double>(),
                                    b = again[i].to_vector<double>();
          for (size_t e = 0; e < a.size(); ++e)
            if (!(std::abs(a[e] - b[e]) <= opt.nondet_tol)) {
              result.ok = false;
              report << "backward is nondeterministic: the gradient of input " << p.wrt[i]
                     << " from output " << p.checked[o] << " differs by " << std::abs(a[e] - b[e])
                     << " between two runs at element " << e << " (nondet_tol " << opt.nondet_tol
                     << ")\n";
              break;
            }
        }
      }
      for (size_t i = 0; i < grads.size(); ++i)
        if (grads[i].defined()) an[i][o] = dot(grads[i], v[i]);
    }
    NoGradGuard no_grad;
    for (size_t i = 0; i < p.wrt.size(); ++i) {
      p.step = "finite differences of input " + std::to_string(p.wrt[i]) + " (fast mode)";
      std::vector<Tensor> probe = p.inputs;
      for (size_t pos : p.wrt) probe[pos] = originals[pos].detach();
      probe[p.wrt[i]] = moved(originals[p.wrt[i]], v[i], opt.eps);
      const std::vector<Tensor> plus = p.fn(probe);
      probe[p.wrt[i]] = moved(originals[p.wrt[i]], v[i], -opt.eps);
      const std::vector<Tensor> minus = p.fn(probe);
      p.fn_calls += 2;
      for (size_t o = 0; o < p.checked.size(); ++o) {
        const size_t j = p.checked[o];
        TG_CHECK(plus.size() > j && minus.size() > j && plus[j].defined() && minus[j].defined() &&
                     plus[j].shape() == p.outputs[j].shape(),
                 ValueError, "gradcheck", "output ", j, " changed shape or vanished");
        const double nv = (dot(u[o], plus[j]) - dot(u[o], minus[j])) / (2 * opt.eps);
        const double av = an[i][o];
        const bool undefined = std::isnan(av);
        const double tol = opt.atol + opt.rtol * std::abs(nv) + opt.nondet_tol;
        const bool bad = undefined ? opt.check_undefined && !(std::abs(nv) <= opt.atol)
                                   : !(std::abs((undefined ? 0 : av) - nv) <= tol);
        if (!undefined) result.max_error = std::max(result.max_error, std::abs(av - nv));
        if (!bad || failed[i][o]) continue;
        failed[i][o] = true;
        notes << "fast mode: u^T J v for input " << p.wrt[i] << " and output " << j
              << " (projection " << k << "): numerical " << nv << ", analytical "
              << (undefined ? std::string("undefined") : std::to_string(av))
              << "; checking the full Jacobian of that pair\n";
      }
    }
  }
  // The pairs that failed: their full Jacobian block, which names the elements.
  for (size_t i = 0; i < p.wrt.size(); ++i)
    for (size_t o = 0; o < p.checked.size(); ++o) {
      if (!failed[i][o]) continue;
      Problem pair = p;
      pair.wrt = {p.wrt[i]};
      pair.checked = {p.checked[o]};
      std::vector<Tensor> originals_pair = originals;
      const Jacobian an = analytical_jacobian(pair);
      const Jacobian nu = numerical_jacobian(pair, originals_pair);
      p.fn_calls += pair.fn_calls;
      p.backward_calls += pair.backward_calls;
      GradcheckResult full;
      std::ostringstream lines;
      lines.precision(10);
      compare(pair, an, nu, full, lines);
      if (full.ok) {
        notes << "  the full Jacobian of input " << p.wrt[i] << " and output " << p.checked[o]
              << " agrees (max error " << full.max_error
              << "): the projection was a near miss of the tolerance\n";
      } else {
        result.ok = false;
        report << lines.str();
      }
    }
  if (!result.ok) report << notes.str();
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  GradcheckResult result;
  Problem p{fn, options, inputs, {}, {}, {}, "calling fn"};
  try {
    const auto& only = options.inputs_to_check;
    for (size_t pos = 0; pos < inputs.size(); ++pos)
      if (differentiated(inputs[pos]) &&
          (only.empty() || std::find(only.begin(), only.end(), pos) != only.end())) {
        p.wrt.push_back(pos);
        p.inputs[pos] = fresh_leaf(inputs[pos]);
      }
    if (p.wrt.empty()) {
      result.report = "gradcheck: no input is floating and requires grad; nothing to check";
      return result;
    }
    {
      EnableGradGuard grad_on;
      p.outputs = fn(p.inputs);
      for (size_t j = 0; j < p.outputs.size(); ++j)
        if (p.outputs[j].defined() && is_floating(p.outputs[j].dtype())) p.checked.push_back(j);
      if (p.checked.empty()) {
        result.report = "gradcheck: fn has no floating output; nothing to check";
        return result;
      }
      std::ostringstream report;
      report.precision(10);
      if (options.fast_mode) {
        fast_check(p, inputs, result, report);
      } else {
        Jacobian an = analytical_jacobian(p);
        Jacobian nu = numerical_jacobian(p, inputs);
        compare(p, an, nu, result, report);
      }
      result.fn_calls = p.fn_calls;
      result.backward_calls = p.backward_calls;
      if (result.ok) {
        std::ostringstream os;
        os << "gradcheck passed" << (options.fast_mode ? " (fast mode)" : "") << ": "
           << p.wrt.size() << " input(s) x " << p.checked.size() << " output(s), max error "
           << result.max_error << ", " << p.fn_calls << " evaluations, " << p.backward_calls
           << " backward passes";
        result.report = os.str();
      } else {
        std::ostringstream head;
        head << "gradcheck failed" << (options.fast_mode ? " (fast mode)" : "") << " (eps "
             << options.eps << ", atol " << options.atol << ", rtol " << options.rtol << "):\n";
        result.report = head.str() + report.str();
      }
    }
  } catch (const std::exception& e) {
    result.ok = false;
    result.report = "gradcheck failed: " + p.step + " threw: " + e.what();
  }
  return result;
}

GradcheckResult gradcheck(const GradcheckSingleFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  return gradcheck(GradcheckFn([&fn](const std::vector<Tensor>& xs) {
                     return std::vector<Tensor>{fn(xs)};
                   }),
                   inputs, options);
}

GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  GradcheckResult result;
  try {
    const size_t n = inputs.size();
    std::vector<Tensor> all = inputs;
    std::vector<size_t> wrt;
    for (size_t pos = 0; pos < n; ++pos)
      if (differentiated(inputs[pos])) {
        wrt.push_back(pos);
        all[pos] = fresh_leaf(inputs[pos]);
      }
    if (wrt.empty()) {
      result.report = "gradgradcheck: no input is floating and requires grad; nothing to check";
      return result;
    }
    // The outputs that get a grad_output: floating ones that some input reaches.
    std::vector<size_t> outs;
    std::vector<Tensor> first_outputs;
    {
      EnableGradGuard grad_on;
      first_outputs = fn(all);
    }
    for (size_t j = 0; j < first_outputs.size(); ++j) {
      const Tensor& y = first_outputs[j];
      if (y.defined() && is_floating(y.dtype()) && y.requires_grad()) outs.push_back(j);
    }
    if (outs.empty()) {
      result.report = "gradgradcheck: no output depends on the inputs; nothing to check";
      return result;
    }
    // Seeded random grad_outputs, uniform in [-1, 1), that require grad themselves.
    std::mt19937_64 rng(options.seed);
    for (size_t j : outs) {
      const Tensor& y = first_outputs[j];
      Tensor host = empty(y.shape(), kFloat64);
      double* data = host.data<double>();
      for (int64_t k = 0; k < y.numel(); ++k)
        data[k] = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
      Tensor go = empty(y.shape(), y.dtype(), y.device());
      copy_data(go, host);
      go.requires_grad_(true);
      all.push_back(go);
    }
    // (inputs, grad_outputs) -> the first-order gradients of the differentiated inputs.
    auto first_order = [&fn, n, wrt, outs](const std::vector<Tensor>& xs_and_gos) {
      EnableGradGuard grad_on;
      std::vector<Tensor> xs(xs_and_gos.begin(), xs_and_gos.begin() + static_cast<long>(n));
      std::vector<Tensor> targets;
      for (size_t pos : wrt) {
        if (!xs[pos].requires_grad()) xs[pos] = fresh_leaf(xs[pos]);  // finite-difference calls
        targets.push_back(xs[pos]);
      }
      std::vector<Tensor> ys_all = fn(xs), ys, gos;
      for (size_t k = 0; k < outs.size(); ++k)
        if (ys_all[outs[k]].defined() && ys_all[outs[k]].requires_grad()) {
          ys.push_back(ys_all[outs[k]]);
          gos.push_back(xs_and_gos[n + k]);
        }
      if (ys.empty()) return std::vector<Tensor>(wrt.size());
      return grad(ys, targets, gos, /*retain_graph=*/true, /*create_graph=*/true);
    };
    result = gradcheck(GradcheckFn(first_order), all, options);
    if (result.ok) {
      result.report = detail::str_cat("gradgradcheck passed: ", wrt.size(), " input(s) and ",
                                      outs.size(), " grad_output(s), max error ", result.max_error);
      return result;
    }
    std::ostringstream head;
    head << "gradgradcheck (inputs 0.." << n - 1 << " are fn's inputs, inputs " << n << ".."
         << all.size() - 1 << " the grad_outputs of its outputs";
    for (size_t j : outs) head << " " << j;
    head << "; output k is the gradient of differentiated input k of";
    for (size_t pos : wrt) head << " " << pos;
    head << "): ";
    result.report = head.str() + result.report;
  } catch (const std::exception& e) {
    result.ok = false;
    result.report = std::string("gradgradcheck failed: ") + e.what();
  }
  return result;
}

GradcheckResult gradgradcheck(const GradcheckSingleFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  return gradgradcheck(GradcheckFn([&fn](const std::vector<Tensor>& xs) {
                         return std::vector<Tensor>{fn(xs)};
                       }),
                       inputs, options);
}

}  // namespace tg::autograd
