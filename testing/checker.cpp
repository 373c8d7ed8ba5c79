// The op check: every sample of an op's spec through the forward, gradient, in-place and
// reject checks, each recorded as a CheckResult of the sample's CaseReport.
#include <tapegrad/testing/check.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/autograd/formulas/fused.h>
#include <tapegrad/autograd/gradcheck.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/testing/checker.h>

namespace tg::testing {
namespace detail {

std::vector<unsigned char> bytes_of(const Tensor& t) {
  Tensor host = t.device().is_cpu() ? t : t.cpu();
  Tensor c = empty(host.shape(), host.dtype());
  copy_data(c, host);
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return {p, p + c.numel() * static_cast<int64_t>(itemsize(c.dtype()))};
}

std::string describe(const Tensor& t) {
  return t.defined() ? std::string(dtype_name(t.dtype())) + t.shape().str() : "undefined";
}

std::string difference(const Tensor& got, const Tensor& want, bool tolerant, double atol,
                       double rtol) {
  if (!got.defined() || !want.defined())
    return got.defined() == want.defined()
               ? ""
               : "got " + describe(got) + ", expected " + describe(want);
  if (got.shape() != want.shape() || (!tolerant && got.dtype() != want.dtype()))
    return "got " + describe(got) + ", expected " + describe(want);
  if (!tolerant && bytes_of(got) == bytes_of(want)) return "";
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t k = 0; k < g.size(); ++k) {
    const bool same = g[k] == w[k] || (std::isnan(g[k]) && std::isnan(w[k])) ||
                      (tolerant && std::abs(g[k] - w[k]) <= atol + rtol * std::abs(w[k]));
    if (same) continue;
    std::ostringstream os;
    os.precision(17);
    os << "element " << k << " (row-major) is " << g[k] << ", expected " << w[k];
    return os.str();
  }
  return tolerant ? "" : "the values differ in their bits (signed zero or NaN payload)";
}

// "" when got and want hold the same values bit for bit, except that every NaN matches every
// NaN: which NaN an operation on two NaNs returns is the hardware's choice (IEEE 754 leaves it
// open), and tapegrad's own mul returns either operand's depending on the loop it takes. Signed
// zeros must match. Otherwise what differs first.
std::string difference_but_nan(const Tensor& got, const Tensor& want) {
  if (!got.defined() || !want.defined() || got.shape() != want.shape() ||
      got.dtype() != want.dtype())
    return difference(got, want);
  if (bytes_of(got) == bytes_of(want)) return "";
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(g[k]) && std::isnan(w[k])) continue;
    if (g[k] == w[k] && std::signbit(g[k]) == std::signbit(w[k])) continue;
    std::ostringstream os;
    os.precision(17);
    os << "element " << k << " (row-major) is " << g[k] << ", expected " << w[k];
    return os.str();
  }
  return "";
}

Tensor random_like(const Tensor& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor host = empty(t.shape(), kFloat64);
  double* p = host.data<double>();
  for (int64_t k = 0; k < t.numel(); ++k) p[k] = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, host);
  return out;
}

const char* error_kind(const Error& e) {
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const TypeError*>(&e)) return "TypeError";
  return "Error";
}

Snapshot snapshot(const std::vector<Value>& args, const std::vector<TensorSlot>& slots) {
  Snapshot s;
  for (const TensorSlot& slot : slots) {
    const Tensor& t = tensor_at(args, slot);
    s.shapes.push_back(t.shape());
    s.strides.push_back(t.strides());
    s.bytes.push_back(bytes_of(t));
  }
  return s;
}

namespace {
// op.call and friends, each call preceded by tg::manual_seed(kOpSeed).
OpChecker::Call seeded(registry::BoxedFn fn) {
  if (!fn) return {};
  return [fn](const std::vector<Value>& args) {
    manual_seed(kOpSeed);
    return fn(args);
  };
}
}  // namespace

OpChecker::OpChecker(const OpInfo& op, const CheckOptions& options)
    : op_(op), options_(options), call_(seeded(op.call)), call_method_(seeded(op.call_method)),
      call_inplace_(seeded(op.call_inplace)) {
  report_.op = op.name;
  for (size_t i = 0; i < op.args.size(); ++i)
    if (op.args[i].name == "self") self_arg_ = static_cast<int>(i);
}

OpReport OpChecker::run() {
  std::vector<Sample> samples;
  report_.cases.emplace_back();  // spec-level problems, reported as "samples"
  try {
    samples = parse_samples(op_, op_.samples_json);
  } catch (const std::exception& e) {
    failure("samples", e.what());
  }
  report_.samples = static_cast<int>(samples.size());
  if (samples.empty() && report_.failures == 0) failure("samples", "the spec has no samples");
  if (report_.cases.back().checks.empty()) report_.cases.pop_back();
  for (const Sample& s : samples) {
    std::vector<DType> dtypes = sample_dtypes(op_, s);
    if (!options_.dtypes.empty())
      std::erase_if(dtypes, [&](DType d) {
        return !std::count(options_.dtypes.begin(), options_.dtypes.end(), d);
      });
    if (dtypes.empty() && options_.dtypes.empty()) {
      open_case(s, kFloat64, "").dtype = "none";
      failure("dtypes", "runs in no dtype the op supports");
    }
    for (DType dtype : dtypes) {
      open_case(s, dtype, "");
      try {
        Case c = materialize(op_, s, dtype, sample_seed(op_.name, s.index) ^ options_.seed);
        report_.cases.back().args = describe_args(op_, c.args);
        if (s.reject.empty()) {
          check_case(s, dtype, c);
          if (options_.derived && !options_.only_fused_vs_composed) check_derived(s, c);
        } else if (!options_.only_fused_vs_composed) {
          check_reject(s, c);
        }
      } catch (const std::exception& e) {
        failure("error", std::string("unexpected error: ") + e.what());
      }
    }
  }
  if (options_.verbose)
    for (const CaseReport& r : report_.cases)
      if (!r.skipped.empty()) report_.report += r.where() + ": skipped, " + r.skipped + "\n";
  report_.ok = report_.failures == 0;
  return report_;
}

CaseReport& OpChecker::open_case(const Sample& s, DType dtype, const std::string& derived) {
  CaseReport r;
  r.sample = s.index;
  r.derived = derived;
  r.dtype = dtype_name(dtype);
  r.reject = !s.reject.empty();
  report_.cases.push_back(std::move(r));
  return report_.cases.back();
}

void OpChecker::failure(const std::string& check, const std::string& what) {
  ++report_.failures;
  CaseReport& c = report_.cases.back();
  c.checks.push_back({check, false, what});
  report_.report += c.where() + ": " + check + ": " + what + "\n";
}

void OpChecker::passed(const std::string& check, const std::string& what) {
  CaseReport& c = report_.cases.back();
  c.checks.push_back({check, true, what});
  if (options_.verbose) report_.report += c.where() + ": " + check + ": " + what + "\n";
}

// Names the inputs whose layout or bytes differ from `before` ("" when none).
std::string OpChecker::changed(const std::vector<Value>& args, const std::vector<TensorSlot>& slots,
                               const Snapshot& before, int skip_arg) const {
  std::string names;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (static_cast<int>(slots[k].arg) == skip_arg) continue;
    const Tensor& t = tensor_at(args, slots[k]);
    if (t.shape() == before.shapes[k] && t.strides() == before.strides[k] &&
        bytes_of(t) == before.bytes[k])
      continue;
    names += (names.empty() ? "" : ", ") + slot_name(slots[k]);
  }
  return names;
}

// "self", or "tensors[1]" for an element of a Tensor[] arg.
std::string OpChecker::slot_name(const TensorSlot& slot) const {
  const std::string& name = op_.args[slot.arg].name;
  return slot.item < 0 ? name : tg::detail::str_cat(name, "[", slot.item, "]");
}

bool OpChecker::output_differentiable(size_t i) const {
  return i >= op_.returns.size() || op_.returns[i].differentiable;
}

// A sample that must succeed: forward, method, in-place, gradients.
void OpChecker::check_case(const Sample& s, DType dtype, const Case& c) {
  Snapshot before = snapshot(c.args, c.tensors);
  std::vector<Tensor> outs;
  ++report_.forward;
  try {
    outs = call_(c.args);
  } catch (const std::exception& e) {
    failure("forward", std::string("forward threw: ") + e.what());
    return;
  }
  if (outs.empty() || (!op_.returns.empty() && outs.size() != op_.returns.size())) {
    failure("forward", "forward returned " + std::to_string(outs.size()) +
                           " outputs, the spec declares " +
                           std::to_string(std::max<size_t>(op_.returns.size(), 1)));
    return;
  }
  if (std::string names = changed(c.args, c.tensors, before); !names.empty())
    failure("forward", "forward modified its input " + names);
  // (no_grad only spares a sample gradcheck: the two forms of a backward must agree anywhere)
  if (options_.fused_vs_composed && op_.differentiable && is_floating(dtype))
    check_fused_vs_composed(s, c);
  if (options_.only_fused_vs_composed) return;
  if (op_.call_method) {
    std::vector<Tensor> m = call_method_(c.args);
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string diff = i < m.size() ? difference(m[i], outs[i]) : "missing";
      if (!diff.empty())
        failure("method",
                "method output " + std::to_string(i) + " differs from the function's: " + diff);
    }
  }
  passed("forward", "forward ok: " + describe(outs[0]));
  if (op_.call_inplace && self_arg_ >= 0) check_inplace(s, dtype, c, outs[0]);
  if (options_.gradcheck && dtype == kFloat64 && op_.differentiable && !s.no_grad)
    check_gradients(s, c);
}

// gradcheck / gradgradcheck of op.call w.r.t. its float64 differentiable tensors.
void OpChecker::check_gradients(const Sample& s, const Case& c) {
  std::vector<TensorSlot> slots;
  std::vector<Tensor> inputs;
  std::string names;
  for (const TensorSlot& slot : c.tensors) {
    const Tensor& t = tensor_at(c.args, slot);
    if (!slot.grad || t.dtype() != kFloat64) continue;
    names += tg::detail::str_cat(" ", slots.size(), "=", slot_name(slot));
    slots.push_back(slot);
    Tensor leaf = t.detach();
    leaf.requires_grad_(true);
    inputs.push_back(leaf);
  }
  if (slots.empty()) return;
  auto fn = [&](const std::vector<Tensor>& xs) {
    std::vector<Value> args = c.args;
    for (size_t k = 0; k < slots.size(); ++k) tensor_at(args, slots[k]) = xs[k];
    std::vector<Tensor> outs = call_(args);
    for (size_t i = 0; i < outs.size(); ++i)
      if (!output_differentiable(i)) outs[i] = Tensor();  // indices and the like: not checked
    return outs;
  };
  autograd::GradcheckOptions gopt;
  gopt.seed = sample_seed(op_.name, s.index);
  gopt.atol = options_.atol;
  gopt.rtol = options_.rtol;
  gopt.fast_mode = options_.fast_gradcheck;
  ++report_.gradchecks;
  autograd::GradcheckResult r = autograd::gradcheck(fn, inputs, gopt);
  if (!r.ok) {
    failure("gradcheck", "(inputs:" + names + "): " + r.report);
    return;  // gradgradcheck would fail on the same formula
  }
  passed("gradcheck", r.report);
  if (!options_.gradgradcheck || s.no_gradgrad) return;
  ++report_.gradgradchecks;
  r = autograd::gradgradcheck(fn, inputs, gopt);
  if (!r.ok) {
    failure("gradgradcheck", "(inputs:" + names + "): " + r.report);
  } else {
    passed("gradgradcheck", r.report);
  }
}

// The gradients of a plain backward, where a formula runs its fused kernel, against the same
// backward with every formula in its composed form (formulas::ComposedOnlyGuard): equal bit for
// bit (NaNs aside: difference_but_nan), or the fused kernel is wrong (the composed formula
// states the rule). Compared for all
// differentiable inputs together and for each alone, since a fused kernel computes only the
// gradients asked for. Passes whose plain backward ran no fused kernel are skipped.
void OpChecker::check_fused_vs_composed(const Sample& s, const Case& c) {
  std::vector<TensorSlot> slots;
  for (const TensorSlot& slot : c.tensors)
    if (slot.grad && is_floating(tensor_at(c.args, slot).dtype())) slots.push_back(slot);
  if (slots.empty()) return;
  std::vector<std::vector<TensorSlot>> subsets{slots};
  if (slots.size() > 1)
    for (const TensorSlot& slot : slots) subsets.push_back({slot});
  for (const auto& subset : subsets) {
    std::string names;
    for (const TensorSlot& slot : subset) names += (names.empty() ? "" : ", ") + slot_name(slot);
    try {
      bool fused = false, unused = false;
      const std::vector<Tensor> got = backward_of(s, c, subset, false, fused);
      if (!fused) continue;
      const std::vector<Tensor> want = backward_of(s, c, subset, true, unused);
      ++report_.fused;
      const std::string what = "fused vs composed (gradients of " + names + ")";
      bool same = want.size() == got.size();
      if (!same) failure("fused", what + ": the two runs returned different numbers of gradients");
      for (size_t k = 0; same && k < got.size(); ++k) {
        if (std::string diff = difference_but_nan(got[k], want[k]); !diff.empty()) {
          failure("fused",
                  what + ": " + slot_name(subset[k]) + "'s fused gradient differs: " + diff);
          same = false;
        }
      }
      if (same) passed("fused", what + ": bit for bit");
    } catch (const std::exception& e) {
      failure("fused", "fused vs composed (gradients of " + names + ") threw: " + e.what());
    }
  }
}

// d(outputs)/d(the subset's inputs) for a seeded upstream gradient, by a plain backward, with
// every formula composed when `composed`; `fused` says whether a formula ran a fused kernel.
std::vector<Tensor> OpChecker::backward_of(const Sample& s, const Case& c,
                                           const std::vector<TensorSlot>& subset, bool composed,
                                           bool& fused) {
  std::vector<Value> args = c.args;
  std::vector<Tensor> leaves;
  for (const TensorSlot& slot : subset) {
    Tensor leaf = tensor_at(args, slot).detach();
    leaf.requires_grad_(true);
    tensor_at(args, slot) = leaf;
    leaves.push_back(leaf);
  }
  EnableGradGuard grad_on;
  std::vector<Tensor> outs = call_(args), ys, upstream;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!output_differentiable(i) || !outs[i].defined() || !outs[i].requires_grad()) continue;
    ys.push_back(outs[i]);
    upstream.push_back(random_like(outs[i], sample_seed(op_.name, s.index) + 2 + i));
  }
  fused = false;
  if (ys.empty()) return {};
  std::optional<formulas::ComposedOnlyGuard> composed_only;
  if (composed) composed_only.emplace();
  const uint64_t runs = formulas::fused_runs();
  std::vector<Tensor> grads = autograd::grad(ys, leaves, upstream);
  fused = formulas::fused_runs() != runs;
  return grads;
}

// The in-place variant on clones: equal to the out-of-place result cast to self's dtype, or a
// tg::Error that leaves everything unchanged when that result cannot be written into self.
void OpChecker::check_inplace(const Sample& s, DType dtype, const Case& c, const Tensor& expected) {
  std::vector<Value> args = clone_args(c.args);
  const Tensor self = std::get<Tensor>(args[static_cast<size_t>(self_arg_)]);
  const bool fits = expected.shape() == self.shape() && can_cast(expected.dtype(), self.dtype());
  Snapshot before = snapshot(args, c.tensors);
  const uint64_t version = self.version();
  ++report_.inplace;
  if (!fits) {
    try {
      call_inplace_(args);
      failure("inplace", "in-place succeeded, but the result (" + describe(expected) +
                             ") cannot be written into self (" + describe(self) + ")");
    } catch (const Error&) {
      if (std::string names = changed(args, c.tensors, before); !names.empty())
        failure("inplace", "the rejected in-place call modified " + names);
      else
        passed("inplace", "in-place rejected as expected (" + describe(expected) + " into " +
                              describe(self) + ")");
    } catch (const std::exception& e) {
      failure("inplace", std::string("in-place threw a non-tg::Error: ") + e.what());
    }
    return;
  }
  const int failures_before = report_.failures;
  std::vector<Tensor> result;
  try {
    result = call_inplace_(args);
  } catch (const std::exception& e) {
    failure("inplace", std::string("in-place threw: ") + e.what());
    return;
  }
  if (result.size() != 1 || !result[0].is_same(self))
    failure("inplace", "in-place did not return self");
  Tensor want = empty(self.shape(), self.dtype(), self.device());
  copy_data(want, expected);
  if (std::string diff = difference(self, want); !diff.empty())
    failure("inplace", "in-place result differs from the out-of-place one cast to " +
                           std::string(dtype_name(self.dtype())) + ": " + diff);
  if (self.version() == version) failure("inplace", "in-place did not bump self's version counter");
  if (std::string names = changed(args, c.tensors, before, self_arg_); !names.empty())
    failure("inplace", "in-place modified an input other than self: " + names);
  bool grad_compared = options_.gradcheck && dtype == kFloat64 && op_.differentiable &&
                       !s.no_grad && check_inplace_grad(s, c);
  if (report_.failures == failures_before)
    passed("inplace", grad_compared ? "in-place ok (values and gradient)" : "in-place ok (values)");
}

// Under autograd, self = x * 1 (not a leaf): the in-place result's gradient w.r.t. x equals the
// out-of-place result's. Returns whether gradients were compared.
bool OpChecker::check_inplace_grad(const Sample& s, const Case& c) {
  const size_t self_pos = static_cast<size_t>(self_arg_);
  const Tensor& self = std::get<Tensor>(c.args[self_pos]);
  const bool self_grad = std::any_of(c.tensors.begin(), c.tensors.end(), [&](const TensorSlot& t) {
    return t.arg == self_pos && t.grad;
  });
  if (!self_grad || self.dtype() != kFloat64 || !output_differentiable(0)) return false;
  EnableGradGuard grad_on;
  Tensor x = clone_tensor(self);
  x.requires_grad_(true);
  std::vector<Value> args = c.args;
  args[self_pos] = x * 1.0;
  Tensor y = call_(args)[0];
  if (!y.requires_grad()) return false;  // gradcheck reports a missing gradient
  Tensor g = random_like(y, sample_seed(op_.name, s.index) + 1);
  Tensor want = autograd::grad({y}, {x}, {g})[0];
  Tensor non_leaf = x * 1.0;
  args[self_pos] = non_leaf;
  Tensor got;
  try {
    call_inplace_(args);
    got = autograd::grad({non_leaf}, {x}, {g})[0];
  } catch (const std::exception& e) {
    failure("inplace", std::string("in-place on a non-leaf that requires grad threw: ") + e.what());
    return true;
  }
  if (std::string diff = difference(got, want, true, 1e-12, 1e-10); !diff.empty())
    failure("inplace", "in-place gradient w.r.t. self differs from the out-of-place one: " + diff);
  return true;
}

// A reject sample: the function (and the in-place variant) throw the expected tg::Error and
// leave every input as it was.
void OpChecker::check_reject(const Sample& s, const Case& c) {
  ++report_.rejects;
  expect_rejected(s, "", call_, clone_args(c.args), c);
  if (op_.call_inplace) expect_rejected(s, "_", call_inplace_, clone_args(c.args), c);
}

void OpChecker::expect_rejected(const Sample& s, const std::string& suffix, const Call& fn,
                                const std::vector<Value>& args, const Case& c) {
  const std::string variant = op_.name + suffix;
  Snapshot before = snapshot(args, c.tensors);
  try {
    fn(args);
    failure("reject", variant + " succeeded; expected an error containing '" + s.reject + "'");
    return;
  } catch (const Error& e) {
    std::string msg = e.what();
    bool named = msg.find(tg::detail::str_cat("[", op_.name, "]")) != std::string::npos ||
                 msg.find(tg::detail::str_cat("[", variant, "]")) != std::string::npos;
    if (!named || msg.find(s.reject) == std::string::npos)
      failure("reject", variant + " threw \"" + msg + "\"; expected [" + op_.name + "] and '" +
                            s.reject + "'");
    if (!s.error.empty() && s.error != "Error" && s.error != error_kind(e))
      failure("reject", variant + " threw " + error_kind(e) + ", expected " + s.error + ": " + msg);
  } catch (const std::exception& e) {
    failure("reject", variant + " threw a non-tg::Error: " + e.what());
  }
  if (std::string names = changed(args, c.tensors, before); !names.empty())
    failure("reject", variant + " was rejected but modified " + names);
  else
    passed("reject", variant + " rejected as expected");
}

}  // namespace detail

bool CaseReport::ok() const {
  return std::all_of(checks.begin(), checks.end(), [](const CheckResult& c) { return c.ok; });
}

std::string CaseReport::where() const {
  std::string w = tg::detail::str_cat("sample ", sample);
  if (!derived.empty()) w += " derived " + derived;
  w += " [" + dtype + "]";
  if (!args.empty()) w += " (" + args + ")";
  return w;
}

std::vector<std::string> OpReport::failed_checks() const {
  std::vector<std::string> out;
  for (const CaseReport& c : cases)
    for (const CheckResult& r : c.checks)
      if (!r.ok) out.push_back(c.where() + ": " + r.check + ": " + r.detail);
  return out;
}

std::ostream& operator<<(std::ostream& os, const CaseReport& r) {
  os << r.where() << (r.skipped.empty() ? "" : ": skipped, " + r.skipped) << "\n";
  for (const CheckResult& c : r.checks)
    os << "  " << (c.ok ? "ok   " : "FAIL ") << c.check << ": " << c.detail << "\n";
  return os;
}

std::ostream& operator<<(std::ostream& os, const OpReport& r) {
  os << "op check of " << r.op << ": " << (r.ok ? "ok" : "FAILED") << " (" << r.samples
     << " samples; " << r.forward << " forward, " << r.gradchecks << " gradcheck, "
     << r.gradgradchecks << " gradgradcheck, " << r.inplace << " in-place, " << r.rejects
     << " reject, " << r.derived << " derived";
  if (r.fused) os << ", " << r.fused << " fused";
  os << "; " << r.failures << " failure" << (r.failures == 1 ? "" : "s") << ")\n";
  for (const CaseReport& c : r.cases)
    if (!c.ok()) os << c;
  return os;
}

OpReport check_op(const registry::OpInfo& op, const CheckOptions& options) {
  if (!options.device.is_cpu()) return detail::check_op_on_device(op, options);
  return detail::OpChecker(op, options).run();
}

OpReport check_op(const std::string& name, const CheckOptions& options) {
  if (const registry::OpInfo* op = registry::find_op(name)) return check_op(*op, options);
  OpReport r;
  r.op = name;
  r.ok = false;
  r.failures = 1;
  std::string known;
  for (const registry::OpInfo& op : registry::all_ops())
    if (op.library != "tapegrad") known += (known.empty() ? "" : ", ") + op.name;
  r.report = "unknown op '" + name + "'" +
             (known.empty() ? std::string(" (no user library registered an op)")
                            : " (ops from user libraries: " + known + ")") +
             "\n";
  CaseReport c;
  c.dtype = "none";
  c.checks.push_back({"registry", false, r.report.substr(0, r.report.size() - 1)});
  r.cases.push_back(c);
  return r;
}

std::vector<OpReport> check_all_ops(const CheckOptions& options) {
  if (!options.only_op.empty()) return {check_op(options.only_op, options)};
  std::vector<OpReport> reports;
  for (const registry::OpInfo& op : registry::all_ops()) reports.push_back(check_op(op, options));
  return reports;
}

std::string summary_table(const std::vector<OpReport>& reports, bool verbose) {
  size_t width = 2;
  for (const auto& r : reports) width = std::max(width, r.op.size());
  const int w = static_cast<int>(width);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "| %-*s | samples | forward | grad | gradgrad | inplace | rejects | derived | "
                "fused | status |\n",
                w, "op");
  out += line;
  out += "|" + std::string(width + 2, '-') +
         "|---------|---------|------|----------|---------|---------|---------|-------|--------|\n";
  for (const auto& r : reports) {
    std::snprintf(line, sizeof line,
                  "| %-*s | %7d | %7d | %4d | %8d | %7d | %7d | %7d | %5d | %-6s |\n", w,
                  r.op.c_str(), r.samples, r.forward, r.gradchecks, r.gradgradchecks, r.inplace,
                  r.rejects, r.derived, r.fused, r.ok ? "ok" : "FAIL");
    out += line;
  }
  for (const auto& r : reports)
    if ((!r.ok || verbose) && !r.report.empty())
      out += tg::detail::str_cat("\n== ", r.op, " (", r.failures, " failure",
                                 r.failures == 1 ? "" : "s", ")\n", r.report);
  return out;
}

}  // namespace tg::testing
