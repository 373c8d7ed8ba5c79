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
      } else {
        std::vector<Tensor> ys, gos;
        for (size_t k = 0; k < p.checked.size(); ++k) {
          const Tensor& yk = p.outputs[p.checked[k]];
          if (!yk.requires_grad()) continue;
          ys.push_back(yk);
          gos.push_back(k == o ? one_hot_like(yk, r) : zeros_like(yk));
        }
        grads = grad(ys, wrt_tensors, gos, /*retain_graph=*/true);
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
        for (int64_t r = 0; r < b.rows; ++r)
          b.at(r, c) =
              (plus[o][static_cast<size_t>(r)] - minus[o][static_cast<size_t>(r)]) / (up - down);
      }
    }
  }
  return jac;
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
          if (bad++ < opt.max_reported)
            lines << "  " << entry(r, c) << ": numerical " << nv << ", analytical " << av
                  << ", error " << err << " > tolerance " << tol << "\n";
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

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  GradcheckResult result;
  Problem p{fn, options, inputs, {}, {}, {}, "calling fn"};
  try {
    for (size_t pos = 0; pos < inputs.size(); ++pos)
      if (differentiated(inputs[pos])) {
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
      Jacobian an = analytical_jacobian(p);
      Jacobian nu = numerical_jacobian(p, inputs);
      std::ostringstream report;
      report.precision(10);
      compare(p, an, nu, result, report);
      if (result.ok) {
        std::ostringstream os;
        os << "gradcheck passed: " << p.wrt.size() << " input(s) x " << p.checked.size()
           << " output(s), max error " << result.max_error;
        result.report = os.str();
      } else {
        std::ostringstream head;
        head << "gradcheck failed (eps " << options.eps << ", atol " << options.atol << ", rtol "
             << options.rtol << "):\n";
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
