// The op check on a device: the CPU backend is the reference. Each sample is materialized on the
// CPU exactly as the CPU op check does, copied to the device with the same strides, run on both,
// and the results compared.
#include "device_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <sstream>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/cuda.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/device.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

#include <tapegrad/testing/samples.h>

namespace tg::opcheck {
namespace {

using namespace tg::testing;  // the sample parser and materializer (testing/samples.h)
using Options = testing::CheckOptions;

using registry::OpInfo;
using registry::Value;

constexpr uint64_t kOpSeed = 0x5eed;

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

Tensor host(const Tensor& t) { return !t.defined() || t.device().is_cpu() ? t : t.cpu(); }

std::string describe(const Tensor& t) {
  return t.defined()
             ? std::string(dtype_name(t.dtype())) + t.shape().str() + " on " + t.device().str()
             : "undefined";
}

// "" when `got` (any device) equals `want` (CPU): same shape and dtype, integers and bool
// exactly, floating values within atol + rtol * |want| (NaN matches NaN, inf matches inf).
std::string difference(const Tensor& got_any, const Tensor& want) {
  const Tensor got = host(got_any);
  if (!got.defined() || !want.defined())
    return got.defined() == want.defined()
               ? ""
               : "got " + describe(got) + ", expected " + describe(want);
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return "got " + describe(got) + ", expected " + describe(want);
  const bool exact = !is_floating(want.dtype());
  const double rtol = want.dtype() == kFloat32 ? 1e-5 : 1e-10;
  const double atol = want.dtype() == kFloat32 ? 1e-5 : 1e-10;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(g[k]) && std::isnan(w[k])) continue;
    if (g[k] == w[k]) continue;
    if (!exact && std::abs(g[k] - w[k]) <= atol + rtol * std::abs(w[k])) continue;
    std::ostringstream os;
    os.precision(17);
    os << "element " << k << " (row-major) is " << g[k] << ", expected " << w[k];
    return os.str();
  }
  return "";
}

Tensor random_like(const Tensor& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor out = empty(t.shape(), kFloat64);
  double* p = out.data<double>();
  for (int64_t k = 0; k < t.numel(); ++k) p[k] = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
  return out.to(t.dtype());
}

std::vector<std::vector<unsigned char>> snapshot(const std::vector<Value>& args,
                                                 const std::vector<TensorSlot>& slots) {
  std::vector<std::vector<unsigned char>> s;
  for (const TensorSlot& slot : slots) {
    const Tensor c = host(tensor_at(args, slot)).contiguous();
    const auto* p = static_cast<const unsigned char*>(c.data_ptr());
    s.emplace_back(p, p + c.numel() * static_cast<int64_t>(itemsize(c.dtype())));
  }
  return s;
}

class DeviceChecker {
 public:
  DeviceChecker(const OpInfo& op, Device device, const Options& options)
      : op_(op), device_(device), options_(options) {
    report_.op = op.name;
    const std::string key = device.is_cuda() ? "CUDA" : "CPU";
    report_.has_kernel = false;
    for (const std::string& k : op.kernel_keys) report_.has_kernel |= k == key;
    for (size_t i = 0; i < op.args.size(); ++i)
      if (op.args[i].name == "self") self_arg_ = static_cast<int>(i);
  }

  DeviceReport run() {
    std::vector<Sample> samples;
    try {
      samples = parse_samples(op_, op_.samples_json);
    } catch (const std::exception& e) {
      failure("samples", e.what());
    }
    report_.samples = static_cast<int>(samples.size());
    for (const Sample& s : samples) {
      for (DType dtype : sample_dtypes(op_, s)) {
        std::string where = detail::str_cat("sample ", s.index, " [", dtype_name(dtype), "]");
        try {
          const Case c = materialize(op_, s, dtype, sample_seed(op_.name, s.index));
          where = detail::str_cat(where, " (", describe_args(op_, c.args), ")");
          if (s.reject.empty()) {
            check_case(s, dtype, c, where);
          } else {
            check_reject(s, c, where);
          }
        } catch (const std::exception& e) {
          failure(where, std::string("unexpected error: ") + e.what());
        }
      }
    }
    report_.ok = report_.failures == 0;
    return report_;
  }

 private:
  void failure(const std::string& where, const std::string& what) {
    ++report_.failures;
    report_.report += where + ": " + what + "\n";
  }

  std::vector<Tensor> call(registry::BoxedFn fn, const std::vector<Value>& args) {
    manual_seed(kOpSeed);
    return fn(args);
  }

  bool output_differentiable(size_t i) const {
    return i >= op_.returns.size() || op_.returns[i].differentiable;
  }

  void check_case(const Sample& s, DType dtype, const Case& c, const std::string& where) {
    const std::vector<Tensor> want = call(op_.call, c.args);
    const std::vector<Value> dargs = args_on(c.args, c.tensors, device_);
    ++report_.forward;
    std::vector<Tensor> got;
    try {
      got = call(op_.call, dargs);
    } catch (const std::exception& e) {
      failure(where, std::string("forward on the device threw: ") + e.what());
      return;
    }
    if (got.size() != want.size()) {
      failure(where, "the device returned a different number of outputs");
      return;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].defined() && got[i].device() != device_ && want[i].defined() &&
          want[i].device() == Device(kCPU) && !(op_.name == "to_device"))
        failure(where, detail::str_cat("output ", i, " is on ", got[i].device()));
      if (std::string d = difference(got[i], want[i]); !d.empty())
        failure(where, detail::str_cat("output ", i, " differs from the CPU's: ", d));
    }
    if (op_.call_inplace && self_arg_ >= 0) check_inplace(c, want[0], where);
    if (options_.gradcheck && dtype == kFloat64 && op_.differentiable && !s.no_grad)
      check_grads(s, c, where);
  }

  void check_inplace(const Case& c, const Tensor& expected, const std::string& where) {
    std::vector<Value> dargs = args_on(c.args, c.tensors, device_);
    Tensor& self = std::get<Tensor>(dargs[static_cast<size_t>(self_arg_)]);
    self = self.detach();
    if (expected.shape() != self.shape() || !can_cast(expected.dtype(), self.dtype())) return;
    ++report_.inplace;
    try {
      call(op_.call_inplace, dargs);
    } catch (const std::exception& e) {
      failure(where, std::string("in-place on the device threw: ") + e.what());
      return;
    }
    if (std::string d = difference(self, expected.to(self.dtype())); !d.empty())
      failure(where, "in-place on the device differs from the CPU's out-of-place result: " + d);
  }

  // d(outputs)/d(inputs) for a seeded upstream gradient, and the gradient of <grads, v> (the
  // second derivative along v), on the CPU and on the device.
  void check_grads(const Sample& s, const Case& c, const std::string& where) {
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
        upstream.push_back(random_like(outs[i], seed + 2 + i).to(device));
      }
      if (ys.empty()) return std::vector<Tensor>{};
      std::vector<Tensor> g = autograd::grad(ys, leaves, upstream, std::nullopt, order == 2);
      if (order == 1) return g;
      Tensor dot;
      for (size_t k = 0; k < g.size(); ++k) {
        if (!g[k].defined() || !g[k].requires_grad()) continue;
        Tensor term = (g[k] * random_like(g[k], seed + 100 + k).to(device)).sum();
        dot = dot.defined() ? dot + term : term;
      }
      if (!dot.defined()) return std::vector<Tensor>{};
      return autograd::grad({dot}, leaves, {}, std::nullopt, false);
    };
    for (int order : {1, 2}) {
      if (order == 2 && (!options_.gradgradcheck || s.no_gradgrad)) break;
      ++(order == 1 ? report_.grads : report_.gradgrads);
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
        failure(where, detail::str_cat(what, " on the device threw: ", e.what()));
        continue;
      }
      for (size_t k = 0; k < want.size() && k < got.size(); ++k)
        if (std::string d = difference(got[k], want[k]); !d.empty())
          failure(where, detail::str_cat(what, " ", k, " differs from the CPU's: ", d));
    }
  }

  void check_reject(const Sample& s, const Case& c, const std::string& where) {
    ++report_.rejects;
    const bool checks = cuda::sync_checks();
    if (device_.is_cuda()) cuda::set_sync_checks(true);
    for (registry::BoxedFn fn : {op_.call, op_.call_inplace}) {
      if (!fn) continue;
      const std::vector<Value> dargs = args_on(c.args, c.tensors, device_);
      const auto before = snapshot(dargs, c.tensors);
      try {
        call(fn, dargs);
        failure(where,
                "the device call succeeded; expected an error containing '" + s.reject + "'");
      } catch (const Error& e) {
        const std::string msg = e.what();
        if (msg.find(s.reject) == std::string::npos || msg.find("[") != 0)
          failure(where, "the device call threw \"" + msg + "\"; expected '" + s.reject + "'");
      } catch (const std::exception& e) {
        failure(where, std::string("the device call threw a non-tg::Error: ") + e.what());
      }
      if (snapshot(dargs, c.tensors) != before)
        failure(where, "a rejected device call modified an input");
    }
    if (device_.is_cuda()) cuda::set_sync_checks(checks);
  }

  const OpInfo& op_;
  Device device_;
  const Options& options_;
  DeviceReport report_;
  int self_arg_ = -1;
};

}  // namespace

DeviceReport check_op_on_device(const OpInfo& op, Device device, const Options& options) {
  return DeviceChecker(op, device, options).run();
}

int run_device_check(const Options& options, Device device) {
  std::vector<DeviceReport> reports;
  for (const OpInfo& op : registry::all_ops())
    if (options.only_op.empty() || op.name == options.only_op)
      reports.push_back(check_op_on_device(op, device, options));
  size_t width = 2;
  for (const auto& r : reports) width = std::max(width, r.op.size());
  std::printf("| %-*s | samples | forward | grad | gradgrad | inplace | rejects | status    |\n",
              static_cast<int>(width), "op");
  std::printf("|%s|---------|---------|------|----------|---------|---------|-----------|\n",
              std::string(width + 2, '-').c_str());
  int passed = 0, failed = 0, missing = 0;
  std::string without;
  for (const auto& r : reports) {
    const char* status = !r.has_kernel ? "no kernel" : r.ok ? "ok" : "FAIL";
    std::printf("| %-*s | %7d | %7d | %4d | %8d | %7d | %7d | %-9s |\n", static_cast<int>(width),
                r.op.c_str(), r.samples, r.forward, r.grads, r.gradgrads, r.inplace, r.rejects,
                status);
    if (!r.has_kernel) {
      ++missing;
      without += (without.empty() ? "" : " ") + r.op;
    } else {
      (r.ok ? passed : failed) += 1;
    }
  }
  for (const auto& r : reports)
    if (r.has_kernel && (!r.ok || options.verbose) && !r.report.empty())
      std::printf("\n== %s (%d failure%s)\n%s", r.op.c_str(), r.failures,
                  r.failures == 1 ? "" : "s", r.report.c_str());
  const char* key = device.is_cuda() ? "CUDA" : "CPU";
  if (!without.empty()) std::printf("\nwithout a %s kernel: %s\n", key, without.c_str());
  std::printf("\n%d passed, %d failed, %d without a %s kernel (on %s)\n", passed, failed, missing,
              key, device.str().c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace tg::opcheck
