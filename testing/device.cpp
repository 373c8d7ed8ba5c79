// The op check on a device (CheckOptions::device, e.g. tg_opcheck --device cuda): the CPU
// backend is the reference. Each sample is materialized on the CPU exactly as the CPU op check
// does, copied to the device with the same strides, run on both, and the results compared; each
// comparison is a CheckResult of the sample's CaseReport, as in checker.cpp, whose helpers
// (difference, snapshot, random_like) it shares.
#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/testing/checker.h>

namespace tg::testing::detail {
namespace {

// t on `device` with the same shape, strides and values (a transposed sample stays transposed).
Tensor to_device_like(const Tensor& t, Device device) {
  if (!t.defined()) return t;
  Tensor packed = t.contiguous().to(device);
  if (t.is_contiguous()) return packed;
  Tensor out = empty_strided(t.shape(), t.strides(), t.dtype(), device);
  copy_data(out, packed);
  return out;
}

std::vector<Value> args_on(const std::vector<Value>& args, const std::vector<TensorSlot>& slots,
                           Device device) {
  std::vector<Value> out = args;
  for (const TensorSlot& slot : slots)
    tensor_at(out, slot) = to_device_like(tensor_at(args, slot), device);
  return out;
}

std::string describe_on(const Tensor& t) {
  return t.defined() ? describe(t) + " on " + t.device().str() : "undefined";
}

// "" when `got` (any device) equals `want` (CPU): same shape and dtype, integers and bool
// exactly, floating values to rounding (kernels may sum in another order, a GPU's math
// functions differ in the last bits); NaN matches NaN.
std::string device_difference(const Tensor& got, const Tensor& want) {
  if (got.defined() && want.defined() && got.dtype() != want.dtype())
    return "got " + describe_on(got) + ", expected " + describe_on(want);
  if (!want.defined() || !is_floating(want.dtype())) return difference(got, want);
  const double tol = want.dtype() == kFloat32 ? 1e-5 : 1e-10;
  return difference(got, want, true, tol, tol);
}

class DeviceChecker {
 public:
  DeviceChecker(const OpInfo& op, const CheckOptions& options)
      : op_(op), device_(options.device), options_(options) {
    report_.op = op.name;
    const std::string key = device_.is_cuda() ? "CUDA" : "CPU";
    report_.has_kernel = false;
    for (const std::string& k : op.kernel_keys) report_.has_kernel |= k == key;
    for (size_t i = 0; i < op.args.size(); ++i)
      if (op.args[i].name == "self") self_arg_ = static_cast<int>(i);
  }

  OpReport run() {
    std::vector<Sample> samples;
    try {
      samples = parse_samples(op_, op_.samples_json);
    } catch (const std::exception& e) {
      report_.cases.emplace_back();
      failure("samples", e.what());
    }
    report_.samples = static_cast<int>(samples.size());
    if (!report_.has_kernel) return report_;  // nothing to compare: a call would only throw
    for (const Sample& s : samples) {
      for (DType dtype : sample_dtypes(op_, s)) {
        if (!options_.dtypes.empty() && std::find(options_.dtypes.begin(), options_.dtypes.end(),
                                                  dtype) == options_.dtypes.end())
          continue;
        CaseReport r;
        r.sample = s.index;
        r.dtype = dtype_name(dtype);
        r.reject = !s.reject.empty();
        report_.cases.push_back(std::move(r));
        try {
          const Case c = materialize(op_, s, dtype, sample_seed(op_.name, s.index) ^ options_.seed);
          report_.cases.back().args = describe_args(op_, c.args);
          if (s.reject.empty()) {
            check_case(s, dtype, c);
          } else {
            check_reject(s, c);
          }
        } catch (const std::exception& e) {
          failure("error", std::string("unexpected error: ") + e.what());
        }
      }
    }
    report_.ok = report_.failures == 0;
    return report_;
  }

 private:
  void failure(const std::string& check, const std::string& what) {
    ++report_.failures;
    CaseReport& c = report_.cases.back();
    c.checks.push_back({check, false, what});
    report_.report += c.where() + ": " + what + "\n";
  }

  void passed(const std::string& check, const std::string& what) {
    CaseReport& c = report_.cases.back();
    c.checks.push_back({check, true, what});
    if (options_.verbose) report_.report += c.where() + ": " + check + ": " + what + "\n";
  }

  std::vector<Tensor> call(registry::BoxedFn fn, const std::vector<Value>& args) {
    manual_seed(kOpSeed);
    return fn(args);
  }

  bool output_differentiable(size_t i) const {
    return i >= op_.returns.size() || op_.returns[i].differentiable;
  }

  void check_case(const Sample& s, DType dtype, const Case& c) {
    const std::vector<Tensor> want = call(op_.call, c.args);
    const std::vector<Value> dargs = args_on(c.args, c.tensors, device_);
    ++report_.forward;
    std::vector<Tensor> got;
    try {
      got = call(op_.call, dargs);
    } catch (const std::exception& e) {
      failure("forward", std::string("forward on the device threw: ") + e.what());
      return;
    }
    if (got.size() != want.size()) {
      failure("forward", "the device returned a different number of outputs");
      return;
    }
    const int failures = report_.failures;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].defined() && got[i].device() != device_ && want[i].defined() &&
          want[i].device() == Device(kCPU) && op_.name != "to_device")
        failure("forward", tg::detail::str_cat("output ", i, " is on ", got[i].device()));
      if (std::string d = device_difference(got[i], want[i]); !d.empty())
        failure("forward", tg::detail::str_cat("output ", i, " differs from the CPU's: ", d));
    }
    if (report_.failures == failures) passed("forward", "forward equals the CPU's");
    if (op_.call_inplace && self_arg_ >= 0) check_inplace(c, want[0]);
    if (options_.gradcheck && dtype == kFloat64 && op_.differentiable && !s.no_grad)
      check_grads(s, c);
  }

  void check_inplace(const Case& c, const Tensor& expected) {
    std::vector<Value> dargs = args_on(c.args, c.tensors, device_);
    Tensor& self = std::get<Tensor>(dargs[static_cast<size_t>(self_arg_)]);
    self = self.detach();
    if (expected.shape() != self.shape() || !can_cast(expected.dtype(), self.dtype())) return;
    ++report_.inplace;
    try {
      call(op_.call_inplace, dargs);
    } catch (const std::exception& e) {
      failure("inplace", std::string("in-place on the device threw: ") + e.what());
      return;
    }
    if (std::string d = device_difference(self, expected.to(self.dtype())); !d.empty())
      failure("inplace", "in-place on the device differs from the CPU's out-of-place result: " + d);
    else
      passed("inplace", "in-place equals the CPU's out-of-place result");
  }

  // d(outputs)/d(inputs) for a seeded upstream gradient, and the gradient of <grads, v> (the
  // second derivative along v), on the CPU and on the device.
  void check_grads(const Sample& s, const Case& c) {
    std::vector<TensorSlot> slots;
    for (const TensorSlot& slot : c.tensors)
      if (slot.grad && tensor_at(c.args, slot).dtype() == kFloat64) slots.push_back(slot);
    if (slots.empty()) return;
    const uint64_t seed = sample_seed(op_.name, s.index);
    auto run = [&](Device device, int order) {
      std::vector<Value> args = args_on(c.args, c.tensors, device);
      std::vector<Tensor> leaves;
      for (const TensorSlot& slot : slots) {
        Tensor leaf = tensor_at(args, slot).detach();
        leaf.requires_grad_(true);
        tensor_at(args, slot) = leaf;
        leaves.push_back(leaf);
      }
      EnableGradGuard grad_on;
      std::vector<Tensor> outs = call(op_.call, args), ys, upstream;
      for (size_t i = 0; i < outs.size(); ++i) {
        if (!output_differentiable(i) || !outs[i].defined() || !outs[i].requires_grad()) continue;
        ys.push_back(outs[i]);
        upstream.push_back(random_like(outs[i], seed + 2 + i));  // same values on any device
      }
      if (ys.empty()) return std::vector<Tensor>{};
      std::vector<Tensor> g = autograd::grad(ys, leaves, upstream, std::nullopt, order == 2);
      if (order == 1) return g;
      Tensor dot;
      for (size_t k = 0; k < g.size(); ++k) {
        if (!g[k].defined() || !g[k].requires_grad()) continue;
        Tensor term = (g[k] * random_like(g[k], seed + 100 + k)).sum();
        dot = dot.defined() ? dot + term : term;
      }
      if (!dot.defined()) return std::vector<Tensor>{};
      return autograd::grad({dot}, leaves, {}, std::nullopt, false);
    };
    for (int order : {1, 2}) {
      if (order == 2 && (!options_.gradgradcheck || s.no_gradgrad)) break;
      ++(order == 1 ? report_.gradchecks : report_.gradgradchecks);
      const char* check = order == 1 ? "gradcheck" : "gradgradcheck";
      const char* what = order == 1 ? "gradient" : "second derivative";
      std::vector<Tensor> want;
      try {
        want = run(Device(kCPU), order);
      } catch (const std::exception&) {
        continue;  // the CPU op check reports the CPU's own failures
      }
      std::vector<Tensor> got;
      try {
        got = run(device_, order);
      } catch (const std::exception& e) {
        failure(check, tg::detail::str_cat(what, " on the device threw: ", e.what()));
        continue;
      }
      const int failures = report_.failures;
      for (size_t k = 0; k < want.size() && k < got.size(); ++k)
        if (std::string d = device_difference(got[k], want[k]); !d.empty())
          failure(check, tg::detail::str_cat(what, " ", k, " differs from the CPU's: ", d));
      if (report_.failures == failures) passed(check, std::string(what) + " equals the CPU's");
    }
  }

  // Checked mode (tg::cuda::set_sync_checks), so that a data check raises before anything is
  // written: the same typed error as the CPU, and every input unchanged.
  void check_reject(const Sample& s, const Case& c) {
    ++report_.rejects;
    const bool checks = device_.is_cuda() && cuda::sync_checks();
    if (device_.is_cuda()) cuda::set_sync_checks(true);
    for (registry::BoxedFn fn : {op_.call, op_.call_inplace}) {
      if (!fn) continue;
      const std::vector<Value> dargs = args_on(c.args, c.tensors, device_);
      const Snapshot before = snapshot(dargs, c.tensors);
      const int failures = report_.failures;
      try {
        call(fn, dargs);
        failure("reject",
                "the device call succeeded; expected an error containing '" + s.reject + "'");
      } catch (const Error& e) {
        const std::string msg = e.what();
        if (msg.find(s.reject) == std::string::npos || msg.find('[') != 0)
          failure("reject", "the device call threw \"" + msg + "\"; expected '" + s.reject + "'");
      } catch (const std::exception& e) {
        failure("reject", std::string("the device call threw a non-tg::Error: ") + e.what());
      }
      if (snapshot(dargs, c.tensors).bytes != before.bytes)
        failure("reject", "a rejected device call modified an input");
      if (report_.failures == failures) passed("reject", "rejected as on the CPU");
    }
    if (device_.is_cuda()) cuda::set_sync_checks(checks);
  }

  const OpInfo& op_;
  Device device_;
  const CheckOptions& options_;
  OpReport report_;
  int self_arg_ = -1;
};

}  // namespace

OpReport check_op_on_device(const OpInfo& op, const CheckOptions& options) {
  return DeviceChecker(op, options).run();
}

}  // namespace tg::testing::detail
