// tg_digest: a fingerprint of what every op computes, to show that a refactoring changed no bit.
//   tg_digest [--op NAME] > digest.txt      (then diff two digests)
// One line per (op, case, dtype, output): the output's dtype, shape and a 64-bit FNV-1a hash of
// its row-major bytes. It covers
//   - every registered op's spec samples in every dtype the op check runs them in: the function's
//     outputs, the in-place variant's result, and for float32/float64 the gradients of a fixed
//     seeded upstream gradient, by a plain backward (fused kernels) and by a create_graph backward
//     (the composed formulas); reject samples print the error's kind and full message;
//   - larger cases of the indexing family (scatter*, gather, index_*, masked_*, the seed's
//     tg::scatter), built here with seeded values, shaped to reach the kernels' fast paths (lines
//     longer than the slots, several threads' worth of work, ties, zeros, expanded gradients,
//     transposed inputs, int32 indices).
// Everything is seeded, so two builds computing the same bits print the same file.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/registry.h>
#include <tapegrad/ops/scatter_slices.h>

#include <tapegrad/testing/samples.h>

namespace {

using namespace tg;
using registry::OpInfo;
using registry::Value;

constexpr uint64_t kOpSeed = 0x5eed;  // tg::manual_seed before each call (dropout), as the op check

std::string hash_of(const Tensor& t) {
  if (!t.defined()) return "undefined";
  Tensor host = t.device().is_cpu() ? t : t.cpu();
  Tensor c = empty(host.shape(), host.dtype());
  copy_data(c, host);
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  const size_t n = static_cast<size_t>(c.numel()) * itemsize(c.dtype());
  uint64_t h = 1469598103934665603ull;
  for (size_t k = 0; k < n; ++k) h = (h ^ p[k]) * 1099511628211ull;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(dtype_name(t.dtype())) + t.shape().str() + " " + buf;
}

void line(const std::string& where, const std::string& what, const std::string& value) {
  std::printf("%s %s %s\n", where.c_str(), what.c_str(), value.c_str());
}

void print_outputs(const std::string& where, const std::string& what,
                   const std::vector<Tensor>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) line(where, what + std::to_string(i), hash_of(outs[i]));
}

const char* error_kind(const Error& e) {
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const TypeError*>(&e)) return "TypeError";
  return "Error";
}

// Runs fn, printing its outputs, or the error it threw.
void run_printing(const std::string& where, const std::string& what,
                  const std::function<std::vector<Tensor>()>& fn) {
  try {
    manual_seed(kOpSeed);
    print_outputs(where, what, fn());
  } catch (const Error& e) {
    line(where, what, std::string("threw ") + error_kind(e) + ": " + e.what());
  } catch (const std::exception& e) {
    line(where, what, std::string("threw std::exception: ") + e.what());
  }
}

// Seeded values uniform in [-1, 1) of t's shape and dtype (an upstream gradient).
Tensor random_like(const Tensor& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (double& x : v) x = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
  Tensor host = empty(t.shape(), kFloat64);
  if (!v.empty()) std::memcpy(host.data<double>(), v.data(), v.size() * sizeof(double));
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, host);
  return out;
}

// The gradients of fn's differentiable outputs w.r.t. leaves, for upstream gradients made by
// `upstream` (one per output that requires grad), printed as `what`<k>.
void print_grads(const std::string& where, const std::string& what,
                 const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                 const std::vector<Tensor>& leaves, bool create_graph,
                 const std::function<Tensor(const Tensor&, size_t)>& upstream) {
  try {
    EnableGradGuard grad_on;
    manual_seed(kOpSeed);
    std::vector<Tensor> outs = fn(leaves), used, grads;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i].defined() || !outs[i].requires_grad()) continue;
      used.push_back(outs[i]);
      grads.push_back(upstream(outs[i], i));
    }
    if (used.empty()) {
      line(where, what, "no differentiable output");
      return;
    }
    print_outputs(where, what, autograd::grad(used, leaves, grads, std::nullopt, create_graph));
  } catch (const Error& e) {
    line(where, what, std::string("threw ") + error_kind(e) + ": " + e.what());
  }
}

// Gradients three ways: a seeded random upstream gradient through the plain backward and through
// create_graph (composed formulas), and the expanded gradient of a sum (stride 0 everywhere).
void print_all_grads(const std::string& where,
                     const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                     const std::vector<Tensor>& leaves, uint64_t seed) {
  auto random = [seed](const Tensor& out, size_t i) { return random_like(out, seed + 17 * i); };
  auto summed = [](const Tensor& out, size_t) {
    return full({}, 1.0, out.dtype()).expand(out.shape());
  };
  print_grads(where, "grad", fn, leaves, false, random);
  print_grads(where, "grad_composed", fn, leaves, true, random);
  print_grads(where, "grad_of_sum", fn, leaves, false, summed);
}

// ---- the spec samples ---------------------------------------------------------------------------

void digest_samples(const OpInfo& op) {
  std::vector<testing::Sample> samples;
  try {
    samples = testing::parse_samples(op, op.samples_json);
  } catch (const std::exception& e) {
    line(op.name, "samples", std::string("unparsable: ") + e.what());
    return;
  }
  int self_arg = -1;
  for (size_t i = 0; i < op.args.size(); ++i)
    if (op.args[i].name == "self") self_arg = static_cast<int>(i);
  for (const testing::Sample& s : samples) {
    for (DType dtype : testing::sample_dtypes(op, s)) {
      const std::string where = op.name + " s" + std::to_string(s.index) + " " + dtype_name(dtype);
      const uint64_t seed = testing::sample_seed(op.name, s.index);
      const testing::Case c = testing::materialize(op, s, dtype, seed);
      if (!s.reject.empty()) {
        run_printing(where, "reject", [&] { return op.call(testing::clone_args(c.args)); });
        if (op.call_inplace)
          run_printing(where, "reject_inplace",
                       [&] { return op.call_inplace(testing::clone_args(c.args)); });
        continue;
      }
      run_printing(where, "out", [&] { return op.call(c.args); });
      if (op.call_inplace && self_arg >= 0)
        run_printing(where, "inplace", [&] {
          std::vector<Value> args = testing::clone_args(c.args);
          op.call_inplace(args);
          return std::vector<Tensor>{std::get<Tensor>(args[static_cast<size_t>(self_arg)])};
        });
      if (!op.differentiable || s.no_grad || (dtype != kFloat32 && dtype != kFloat64)) continue;
      std::vector<testing::TensorSlot> slots;
      std::vector<Tensor> leaves;
      for (const testing::TensorSlot& slot : c.tensors) {
        if (!slot.grad) continue;
        slots.push_back(slot);
        Tensor leaf = testing::tensor_at(c.args, slot).detach();
        leaf.requires_grad_(true);
        leaves.push_back(leaf);
      }
      if (leaves.empty()) continue;
      auto fn = [&](const std::vector<Tensor>& xs) {
        std::vector<Value> args = c.args;
        for (size_t k = 0; k < slots.size(); ++k) testing::tensor_at(args, slots[k]) = xs[k];
        std::vector<Tensor> outs = op.call(args);
        for (size_t i = 0; i < outs.size() && i < op.returns.size(); ++i)
          if (!op.returns[i].differentiable) outs[i] = Tensor();
        return outs;
      };
      print_all_grads(where, fn, leaves, seed + 1);
    }
  }
}

// ---- larger cases of the indexing family ------------------------------------------------------

enum class Values { Uniform, Ties, Zeros };

struct Rng {
  std::mt19937_64 g;
  double uniform() { return static_cast<double>(g() >> 11) * 0x1.0p-53; }
  int64_t below(int64_t n) { return static_cast<int64_t>(g() % static_cast<uint64_t>(n)); }
};

Tensor from_host(const std::vector<double>& v, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, kFloat64);
  if (!v.empty()) std::memcpy(t.data<double>(), v.data(), v.size() * sizeof(double));
  return t.to(dtype);
}

// Floating: uniform in [-1, 1), or on a grid of quarters (ties), or with a fifth zeros;
// integral: uniform integers in [-20, 20].
Tensor values(const Shape& shape, DType dtype, Rng& r, Values kind = Values::Uniform) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& x : v) {
    x = r.uniform() * 2 - 1;
    if (!is_floating(dtype))
      x = std::floor(x * 20.5);
    else if (kind == Values::Ties)
      x = std::round(x * 4) / 4;
    else if (kind == Values::Zeros && r.uniform() < 0.2)
      x = 0;
  }
  return from_host(v, shape, dtype);
}

Tensor index_values(const Shape& shape, int64_t high, DType dtype, Rng& r) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& x : v) x = static_cast<double>(r.below(high));
  return from_host(v, shape, dtype);
}

Tensor mask_values(const Shape& shape, double p, Rng& r) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& x : v) x = r.uniform() < p ? 1 : 0;
  return from_host(v, shape, kBool);
}

// The same values laid out transposed in memory (first and last dims swapped).
Tensor transposed(const Tensor& t) {
  return t.transpose(0, t.dim() - 1).contiguous().transpose(0, t.dim() - 1);
}

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// One case: inputs (the first `differentiable` of them get gradients when floating) and the op.
struct Stress {
  std::string name;
  std::vector<DType> dtypes;
  std::function<std::vector<Tensor>(DType, Rng&)> inputs;
  size_t differentiable;
  Fn fn;
};

void digest_stress(const Stress& st, uint64_t seed) {
  for (DType dtype : st.dtypes) {
    const std::string where = st.name + " " + dtype_name(dtype);
    Rng r{std::mt19937_64(seed)};
    const std::vector<Tensor> in = st.inputs(dtype, r);
    run_printing(where, "out", [&] { return st.fn(in); });
    if (!is_floating(dtype)) continue;
    std::vector<Tensor> leaves;
    for (size_t k = 0; k < st.differentiable; ++k) {
      leaves.push_back(in[k].detach());
      leaves.back().requires_grad_(true);
    }
    Fn fn = [&](const std::vector<Tensor>& xs) {
      std::vector<Tensor> args = in;
      for (size_t k = 0; k < xs.size(); ++k) args[k] = xs[k];
      return st.fn(args);
    };
    print_all_grads(where, fn, leaves, seed + 1);
  }
}

// ".self" / ".noself", then ".ties" or ".zeros" for those value kinds.
std::string suffix(bool include_self, Values kind) {
  return std::string(include_self ? ".self" : ".noself") + (kind == Values::Uniform ? ""
                                                            : kind == Values::Ties  ? ".ties"
                                                                                    : ".zeros");
}

std::vector<Stress> stress_cases() {
  const std::vector<DType> all = {kInt32, kInt64, kFloat32, kFloat64};
  std::vector<Stress> cases;
  // scatter_reduce / scatter / scatter_add / gather layouts: {self shape, index shape, dim}
  struct Walk {
    const char* name;
    Shape self, index;
    int64_t dim;
    bool int32, transpose;
  };
  const std::vector<Walk> walks = {
      {"last_long", {48, 200}, {48, 300}, 1, false, false},
      {"last_short", {16, 500}, {16, 100}, -1, true, false},
      {"first", {200, 40}, {300, 40}, 0, false, false},
      {"middle_t", {4, 50, 6}, {4, 70, 6}, 1, false, true},
      {"big_last", {8, 20000}, {8, 40000}, 1, false, false},
      {"big_first", {1000, 64}, {3000, 64}, 0, true, false},
  };
  for (const Walk& w : walks) {
    auto idx_dtype = w.int32 ? kInt32 : kInt64;
    const int64_t d = w.dim < 0 ? w.dim + static_cast<int64_t>(w.self.size()) : w.dim;
    const int64_t slots = w.self[static_cast<size_t>(d)];
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool include_self : {true, false})
        for (Values kind : {Values::Uniform, Values::Ties, Values::Zeros}) {
          if (kind == Values::Ties && std::string(reduce) == "prod") continue;
          if (kind == Values::Zeros && std::string(reduce) != "prod") continue;
          cases.push_back(
              {std::string("scatter_reduce.") + w.name + "." + reduce + suffix(include_self, kind),
               all,
               [=](DType dt, Rng& r) {
                 Tensor src = values(w.index, dt, r, kind);
                 return std::vector<Tensor>{values(w.self, dt, r, kind),
                                            w.transpose ? transposed(src) : src,
                                            index_values(w.index, slots, idx_dtype, r)};
               },
               2,
               [=](const std::vector<Tensor>& a) {
                 return std::vector<Tensor>{
                     scatter_reduce(a[0], w.dim, a[2], a[1], reduce, include_self)};
               }});
        }
    cases.push_back({std::string("scatter.") + w.name, all,
                     [=](DType dt, Rng& r) {
                       return std::vector<Tensor>{values(w.self, dt, r), values(w.index, dt, r),
                                                  index_values(w.index, slots, idx_dtype, r)};
                     },
                     2,
                     [=](const std::vector<Tensor>& a) {
                       return std::vector<Tensor>{scatter(a[0], w.dim, a[2], a[1]),
                                                  scatter_add(a[0], w.dim, a[2], a[1])};
                     }});
    cases.push_back({std::string("gather.") + w.name, all,
                     [=](DType dt, Rng& r) {
                       Tensor self = values(w.self, dt, r);
                       return std::vector<Tensor>{w.transpose ? transposed(self) : self,
                                                  index_values(w.index, slots, idx_dtype, r)};
                     },
                     1,
                     [=](const std::vector<Tensor>& a) {
                       return std::vector<Tensor>{gather(a[0], w.dim, a[1])};
                     }});
  }
  // index_* layouts: {self shape, dim, index length}
  struct Rows {
    const char* name;
    Shape self;
    int64_t dim, n;
    bool int32;
  };
  const std::vector<Rows> rows = {
      {"first", {300, 64}, 0, 500, false},    {"last", {64, 300}, 1, 500, true},
      {"middle", {3, 100, 5}, 1, 150, false}, {"few", {200, 8}, 0, 20, false},
      {"big", {2000, 128}, 0, 4000, false},
  };
  for (const Rows& w : rows) {
    auto idx_dtype = w.int32 ? kInt32 : kInt64;
    const int64_t slots = w.self[static_cast<size_t>(w.dim)];
    Shape src_shape = w.self;
    src_shape[static_cast<size_t>(w.dim)] = w.n;
    for (const char* reduce : {"prod", "mean", "amax", "amin"})
      for (bool include_self : {true, false})
        for (Values kind : {Values::Uniform, Values::Ties, Values::Zeros}) {
          if (kind == Values::Ties && std::string(reduce) == "prod") continue;
          if (kind == Values::Zeros && std::string(reduce) != "prod") continue;
          cases.push_back(
              {std::string("index_reduce.") + w.name + "." + reduce + suffix(include_self, kind),
               all,
               [=](DType dt, Rng& r) {
                 return std::vector<Tensor>{values(w.self, dt, r, kind),
                                            values(src_shape, dt, r, kind),
                                            index_values({w.n}, slots, idx_dtype, r)};
               },
               2,
               [=](const std::vector<Tensor>& a) {
                 return std::vector<Tensor>{
                     index_reduce(a[0], w.dim, a[2], a[1], reduce, include_self)};
               }});
        }
    cases.push_back({std::string("index_add_copy.") + w.name, all,
                     [=](DType dt, Rng& r) {
                       return std::vector<Tensor>{values(w.self, dt, r), values(src_shape, dt, r),
                                                  index_values({w.n}, slots, idx_dtype, r)};
                     },
                     2,
                     [=](const std::vector<Tensor>& a) {
                       return std::vector<Tensor>{index_add(a[0], w.dim, a[2], a[1]),
                                                  index_add(a[0], w.dim, a[2], a[1], 3),
                                                  index_copy(a[0], w.dim, a[2], a[1])};
                     }});
    cases.push_back({std::string("index_select_fill.") + w.name, all,
                     [=](DType dt, Rng& r) {
                       return std::vector<Tensor>{values(w.self, dt, r), values({}, dt, r),
                                                  index_values({w.n}, slots, idx_dtype, r)};
                     },
                     2,
                     [=](const std::vector<Tensor>& a) {
                       return std::vector<Tensor>{index_select(a[0], w.dim, a[2]),
                                                  index_fill(a[0], w.dim, a[2], a[1]),
                                                  index_fill_scalar(a[0], w.dim, a[2], 2)};
                     }});
  }
  // masked_*: {self shape, mask shape, transposed self}
  struct Masked {
    const char* name;
    Shape self, mask;
    bool transpose;
  };
  const std::vector<Masked> masks = {
      {"same", {300, 257}, {300, 257}, false},
      {"row", {300, 257}, {257}, false},
      {"scalar", {50, 40}, {}, false},
      {"transposed", {120, 90}, {120, 90}, true},
      {"broadcast_self", {1, 257}, {300, 257}, false},
      {"big", {512, 1024}, {512, 1024}, false},
  };
  for (const Masked& m : masks) {
    Shape shape = m.self.size() >= m.mask.size() ? m.self : m.mask;
    if (m.self[0] == 1) shape = m.mask;
    cases.push_back({std::string("masked.") + m.name, all,
                     [=](DType dt, Rng& r) {
                       Tensor self = values(m.self, dt, r);
                       return std::vector<Tensor>{m.transpose ? transposed(self) : self,
                                                  values({shape.numel()}, dt, r), values({}, dt, r),
                                                  mask_values(m.mask, 0.3, r)};
                     },
                     3,
                     [=](const std::vector<Tensor>& a) {
                       return std::vector<Tensor>{masked_select(a[0], a[3]),
                                                  masked_scatter(a[0], a[3], a[1]),
                                                  masked_fill(a[0], a[3], a[2]),
                                                  masked_fill_scalar(a[0], a[3], -2)};
                     }});
  }
  // the seed's form (ops/scatter_slices.h)
  for (const char* reduce : {"add", "mul", "mean", "amax", "amin"})
    for (bool overwrite : {true, false})
      for (bool include_self : {true, false}) {
        if (overwrite && (!include_self || std::string(reduce) != "add")) continue;
        cases.push_back({std::string("scatter_slices.") + reduce + (overwrite ? ".overwrite" : "") +
                             (include_self ? ".self" : ".noself"),
                         all,
                         [](DType dt, Rng& r) {
                           return std::vector<Tensor>{values({400, 32}, dt, r),
                                                      values({700, 32}, dt, r),
                                                      index_values({600}, 400, kInt64, r)};
                         },
                         2,
                         [=](const std::vector<Tensor>& a) {
                           ScatterOptions o;
                           o.overwrite = overwrite;
                           o.reduce = reduce;
                           o.include_self = include_self;
                           return std::vector<Tensor>{tg::scatter(a[0], a[2], a[1], o)};
                         }});
      }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--op" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: tg_digest [--op NAME]\n");
      return 2;
    }
  }
  for (const OpInfo& op : registry::all_ops())
    if (only.empty() || op.name == only) digest_samples(op);
  uint64_t seed = 0x1d6e57;
  for (const Stress& st : stress_cases()) {
    ++seed;
    if (only.empty() || st.name.rfind(only + ".", 0) == 0) digest_stress(st, seed);
  }
  return 0;
}
