// A structured fuzzer over every op in the registry (seed ops, views, matmul, reductions, losses,
// indexing) and the factories: the bytes choose an op, how to call it (function, method,
// in-place) and each argument by its spec type. Tensors get random dtypes, shapes (0-size, 0-d,
// huge and negative sizes), layouts (transposed, sliced, expanded, offset views) and values
// (NaN, inf, out-of-range indices); ints, dims and sizes are small, boundary or huge. Asserted:
//   - the call returns, or throws a typed tg::Error whose message starts with "[op]";
//   - after an error every input is bit-identical (storage bytes, shape, strides, offset,
//     version); after a successful call too, all but self in place and the args the spec
//     marks "writes" (batch_norm's running statistics);
//   - a result reaches only its own storage (make_view checks) and has a consistent numel;
//   - with floating inputs that require grad, backward of the result's sum runs or throws a
//     typed error, and each gradient has its input's shape.
// Under ASan + UBSan (the libFuzzer build, and TG_ALLOCATOR=exact), no sanitizer report.
#include <tapegrad/ops/registry.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "fuzz_common.h"

namespace {

using tg::Shape;
using tg::Tensor;
using tg::registry::Value;
using tg_fuzz::Input;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// A size: mostly small, sometimes 0, sometimes hostile. Huge sizes are at least 2^48, so that
// anything allocated from them is past any address space and fails at once (an ASan build
// returns null for it, with allocator_may_return_null=1), never a few GB that would succeed and
// exhaust the machine; products of them overflow int64.
int64_t fuzz_size(Input& in) {
  const uint8_t b = in.byte();
  if (b < 200) return b % 5;
  static const int64_t hostile[] = {0,         1,         -1,
                                    -5,        1LL << 48, 1LL << 62,
                                    kMax,      kMin,      (1LL << 62) + 1,
                                    1LL << 61, 3,         7};
  return hostile[b % 12];
}

// An int argument (dim, index, start, length, step): small of either sign, or a boundary value.
int64_t fuzz_int(Input& in) {
  const uint8_t b = in.byte();
  if (b < 220) return static_cast<int64_t>(b % 11) - 5;
  static const int64_t hostile[] = {kMax,         kMin,      kMax - 1, kMin + 1, 1LL << 32,
                                    -(1LL << 32), 1LL << 62, 100,      -100,     64};
  return hostile[b % 10];
}

double fuzz_double(Input& in) {
  const uint8_t b = in.byte();
  static const double special[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   2.0,
                                   1e-300,
                                   1e300,
                                   -1e300,
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(),
                                   3e9,
                                   -3e9,
                                   1e19,
                                   std::numeric_limits<double>::denorm_min()};
  if (b < 128) return special[b % 16];
  return static_cast<double>(static_cast<int8_t>(in.byte())) / 8.0;
}

tg::DType fuzz_dtype(Input& in, const std::vector<std::string>& allowed) {
  static const std::vector<tg::DType> all = {tg::kBool,    tg::kInt32,   tg::kInt64,
                                             tg::kFloat32, tg::kFloat64, tg::kFloat16};
  const uint8_t b = in.byte();
  if (!allowed.empty() && b < 200) return tg::dtype_from_name(allowed[b % allowed.size()]);
  return all[b % all.size()];
}

void fill_values(Input& in, const Tensor& t, bool index_like) {
  const int64_t n = t.numel();
  tg::visit_dtype("fuzz", t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = in.flag();
      } else if constexpr (std::is_integral_v<T>) {
        const uint8_t b = in.byte();
        // Index-like values are mostly valid small positions; the rest probe the bounds.
        if (index_like && b < 200)
          p[i] = static_cast<T>(b % 4);
        else if (b < 240)
          p[i] = static_cast<T>(static_cast<int8_t>(b) % 6);
        else
          p[i] = b & 1 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
      } else {
        p[i] = static_cast<T>(fuzz_double(in));
      }
    }
  });
}

// A tensor of shape `shape` in a layout the bytes choose, sharing no storage with anything else.
Tensor fuzz_layout(Input& in, const Shape& shape, tg::DType dtype, bool index_like) {
  const uint8_t how = in.byte() % 6;
  Tensor t;
  if (how == 1 && shape.size() >= 2) {  // transposed: a permuted contiguous tensor
    Shape swapped = shape;
    std::swap(swapped[0], swapped[swapped.size() - 1]);
    t = tg::empty(swapped, dtype).transpose(0, static_cast<int64_t>(shape.size()) - 1);
  } else if (how == 2 && !shape.empty() && shape[0] >= 0 &&
             shape[0] < 1024) {  // every other element of a longer dim, at an offset
    Shape longer = shape;
    longer[0] = longer[0] * 2 + 1;
    t = tg::empty(longer, dtype).slice(0, 1, std::nullopt, 2);
  } else if (how == 3 && !shape.empty() && shape[0] > 1) {  // expanded: stride 0, one storage row
    Shape one = shape;
    one[0] = 1;
    t = tg::empty(one, dtype).expand(shape);
  } else if (how == 4) {  // a select of a bigger tensor: a view with an offset
    Shape bigger = shape;
    bigger.insert(0, 3);
    t = tg::empty(bigger, dtype).select(0, 2);
  } else {
    t = tg::empty(shape, dtype);
  }
  // Write every storage element (the layouts above cover their storage or share it).
  Tensor whole =
      tg::make_view(t, {static_cast<int64_t>(t.impl()->storage->nbytes / tg::itemsize(dtype))}, {1},
                    0);
  fill_values(in, whole, index_like);
  return t;
}

Tensor fuzz_tensor(Input& in, const tg::registry::ArgInfo& arg) {
  const tg::DType dtype = fuzz_dtype(in, arg.dtypes);
  const size_t ndim = in.byte() % 5;  // 0-d to 4-d
  Shape shape;
  for (size_t i = 0; i < ndim; ++i) shape.push_back(fuzz_size(in));
  const bool index_like = arg.name.find("index") != std::string::npos || arg.name == "target" ||
                          arg.name == "indices" || arg.name == "mask";
  // Sizes a valid tensor cannot have raise at creation: part of the test, then no op call.
  return fuzz_layout(in, shape, dtype, index_like);
}

std::vector<int64_t> fuzz_int_list(Input& in, bool sizes) {
  std::vector<int64_t> out;
  const size_t n = in.byte() % 6;
  for (size_t i = 0; i < n; ++i) out.push_back(sizes ? fuzz_size(in) : fuzz_int(in));
  return out;
}

Value fuzz_value(Input& in, const tg::registry::ArgInfo& arg) {
  const std::string& type = arg.type;
  const bool optional = !type.empty() && type.back() == '?';
  if (optional && in.byte() < 64) return std::monostate{};
  if (type == "Tensor" || type == "Tensor?") return fuzz_tensor(in, arg);
  if (type == "Tensor[]") {
    std::vector<Tensor> list;
    const size_t n = in.byte() % 4;
    for (size_t i = 0; i < n; ++i) list.push_back(fuzz_tensor(in, arg));
    return list;
  }
  if (type == "int" || type == "int?") return fuzz_int(in);
  if (type == "int[]") {
    const bool sizes = arg.name.find("shape") != std::string::npos || arg.name == "size";
    return fuzz_int_list(in, sizes);
  }
  if (type == "float") return fuzz_double(in);
  if (type == "Scalar" || type == "Scalar?") {
    switch (in.byte() % 3) {
      case 0: return tg::Scalar(fuzz_int(in));
      case 1: return tg::Scalar(in.flag());
      default: return tg::Scalar(fuzz_double(in));
    }
  }
  if (type == "bool") return in.flag();
  if (type == "string") {
    if (!arg.allowed.empty() && in.byte() < 230) return in.pick(arg.allowed);
    static const std::vector<std::string> odd = {"",     "sum",  "mean", "none",
                                                 "amax", "tanh", "SUM",  std::string(1, '\0'),
                                                 "self"};
    return in.pick(odd);
  }
  if (type == "DType" || type == "DType?") return fuzz_dtype(in, {});
  if (type == "Device") return in.byte() < 240 ? tg::Device(tg::kCPU) : tg::Device(tg::kCUDA);
  FUZZ_CHECK(false, "no generator for arg type " + type);
  return std::monostate{};
}

// fn(tensor, k) for every tensor of the call, k being the index of the arg it belongs to.
void for_each_tensor(const std::vector<Value>& args, auto&& fn) {
  for (size_t k = 0; k < args.size(); ++k) {
    if (const Tensor* t = std::get_if<Tensor>(&args[k])) fn(*t, k);
    if (const auto* list = std::get_if<std::vector<Tensor>>(&args[k]))
      for (const Tensor& t : *list) fn(t, k);
  }
}

// TG_FUZZ_TRACE=1 prints each call before it runs, to find the shapes behind a crash or a hang.
void trace_call(const std::string& op, const std::vector<Value>& args) {
  static const bool on = std::getenv("TG_FUZZ_TRACE") != nullptr;
  if (!on) return;
  std::cerr << op << "(";
  for (const Value& v : args) {
    if (const Tensor* t = std::get_if<Tensor>(&v))
      std::cerr << "tensor " << t->shape() << " strides " << t->strides() << " "
                << tg::dtype_name(t->dtype());
    else if (const int64_t* i = std::get_if<int64_t>(&v))
      std::cerr << *i;
    else if (const auto* list = std::get_if<std::vector<int64_t>>(&v))
      std::cerr << tg::IntArrayRef(*list);
    else
      std::cerr << "<arg>";
    std::cerr << ", ";
  }
  std::cerr << ")" << std::endl;
}

void check_result(const Tensor& r) {
  if (!r.defined()) return;
  const int64_t numel = r.numel();
  FUZZ_CHECK(numel >= 0);
  FUZZ_CHECK(r.dim() == static_cast<int64_t>(r.strides().size()));
  if (numel > 0 && r.device().is_cpu()) {
    // Read the lowest and the highest byte the result can reach: out of bounds shows under ASan.
    int64_t lo = r.storage_offset(), hi = r.storage_offset();
    for (int64_t d = 0; d < r.dim(); ++d)
      (r.stride(d) < 0 ? lo : hi) += (r.size(d) - 1) * r.stride(d);
    const auto* base = static_cast<const volatile char*>(r.impl()->storage->data);
    const int64_t item = static_cast<int64_t>(tg::itemsize(r.dtype()));
    FUZZ_CHECK(lo >= 0 && (hi + 1) * item <= static_cast<int64_t>(r.impl()->storage->nbytes));
    (void)base[lo * item];
    (void)base[(hi + 1) * item - 1];
  }
}

// Factories and raw constructors, which the registry does not list.
void fuzz_factory(Input& in) {
  const uint8_t which = in.byte() % 7;
  std::vector<int64_t> shape = fuzz_int_list(in, true);
  const tg::DType dtype = fuzz_dtype(in, {});
  Tensor r;
  tg_fuzz::runs_or_typed_error([&] {
    switch (which) {
      case 0: r = tg::zeros(shape, dtype); break;
      case 1: r = tg::full(shape, tg::Scalar(fuzz_double(in)), dtype); break;
      case 2: {
        const double a = fuzz_double(in), b = fuzz_double(in), step = fuzz_double(in);
        // A valid range of more than a million values is a real allocation, not a finding.
        if (std::abs((b - a) / step) > 1e6 && std::abs((b - a) / step) < 0x1p63) return;
        r = tg::arange(a, b, step);
        break;
      }
      case 3: {
        const int64_t a = fuzz_int(in), b = fuzz_int(in), step = fuzz_int(in);
        const double count =
            (static_cast<double>(b) - static_cast<double>(a)) / static_cast<double>(step);
        if (step != 0 && std::abs(count) > 1e6 && std::abs(count) < 0x1p63) return;
        r = tg::arange(a, b, step);
        break;
      }
      case 4: {
        std::vector<int64_t> strides = fuzz_int_list(in, false);
        // Storage of more than 256 MB that an allocator could still give (under 2^50 bytes) is
        // a real allocation, not a finding (libFuzzer's malloc limit would call it one).
        const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
        if (shape.size() == strides.size() && !empty) {
          double extent = 1;
          for (size_t d = 0; d < shape.size(); ++d)
            extent += std::max<double>(static_cast<double>(shape[d]) - 1, 0) *
                      std::abs(static_cast<double>(strides[d]));
          const double bytes = extent * static_cast<double>(tg::itemsize(dtype));
          if (bytes > 0x1p28 && bytes < 0x1p50) return;
        }
        r = tg::empty_strided(Shape(shape), Shape(strides), dtype);
        break;
      }
      case 5: {
        Tensor base = tg::zeros({static_cast<int64_t>(in.byte() % 16)}, dtype);
        std::vector<int64_t> strides = fuzz_int_list(in, false);
        r = tg::make_view(base, Shape(shape), Shape(strides), fuzz_int(in));
        break;
      }
      default: {
        std::vector<double> values(in.byte() % 5, 1.0);
        r = tg::tensor(values, shape);
        break;
      }
    }
  });
  check_result(r);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tg::set_num_threads(1);  // reproducible, and no pool traffic per input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const auto& ops = tg::registry::all_ops();
  const size_t pick = in.byte();
  if (pick == 255) {
    fuzz_factory(in);
    return 0;
  }
  const tg::registry::OpInfo& op = ops[(pick | static_cast<size_t>(in.byte()) << 8) % ops.size()];
  const uint8_t mode = in.byte() % 4;  // 0-1 function, 2 method, 3 in-place
  tg::registry::BoxedFn call = op.call;
  if (mode == 2 && op.call_method) call = op.call_method;
  const bool inplace = mode == 3 && op.call_inplace;
  if (inplace) call = op.call_inplace;
  const bool want_grad = in.flag();

  std::vector<Value> args;
  const bool made = tg_fuzz::runs_or_typed_error([&] {
    for (const auto& arg : op.args) args.push_back(fuzz_value(in, arg));
    if (want_grad)
      for (Value& v : args)
        if (Tensor* t = std::get_if<Tensor>(&v);
            t && tg::is_floating(t->dtype()) && t->dtype() != tg::kFloat16 && t->is_leaf())
          *t = t->detach().requires_grad_();
  });
  if (!made) return 0;  // a hostile size raised at creation, as it should

  std::vector<tg_fuzz::Snapshot> before;
  for_each_tensor(args,
                  [&](const Tensor& t, size_t) { before.push_back(tg_fuzz::Snapshot::of(t)); });
  std::vector<Tensor> results;
  std::string error;
  trace_call(op.name, args);
  const bool ok = tg_fuzz::runs_or_typed_error([&] { results = call(args); }, &error);
  size_t i = 0;
  for_each_tensor(args, [&](const Tensor& t, size_t arg) {
    // A successful call may write self in place, and the args the spec marks "writes"
    // (batch_norm's running statistics when training).
    const bool written = ok && ((inplace && arg == 0) || op.args[arg].writes);
    if (!written)
      FUZZ_CHECK(before[i].same(t),
                 std::string(op.name) + (ok ? " changed input " : " failed (") +
                     (ok ? std::to_string(i) : error + ") but changed input " + std::to_string(i)));
    ++i;
  });
  if (!ok) return 0;
  for (const Tensor& r : results) check_result(r);
  if (!want_grad || results.empty() || !results[0].defined() || !results[0].requires_grad())
    return 0;
  std::vector<Tensor> leaves;
  for_each_tensor(args, [&](const Tensor& t, size_t) {
    if (t.requires_grad() && t.is_leaf()) leaves.push_back(t);
  });
  tg_fuzz::runs_or_typed_error([&] { results[0].sum().backward(); });
  for (const Tensor& l : leaves)
    if (l.grad().defined()) FUZZ_CHECK(l.grad().shape() == l.shape(), op.name + ": grad shape");
  return 0;
}
