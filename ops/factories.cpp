#include <tapegrad/ops/factories.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include <tapegrad/core/checked.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/ops/random_draws.h>

namespace tg {

namespace {

// A fresh contiguous tensor; sizes that are negative or whose byte count overflows raise a
// ValueError naming `op` (the user's call), before anything is allocated.
Tensor empty_for(const char* op, IntArrayRef shape, DType dtype, Device device) {
  return Tensor(empty_contiguous(op, shape, dtype, device));
}
Tensor empty_cpu_then(IntArrayRef shape, DType dtype, const char* op = "empty") {
  return empty_for(op, shape, dtype, Device(kCPU));
}
Tensor full_for(const char* op, IntArrayRef shape, const Scalar& value, std::optional<DType> dtype,
                Device device) {
  DType dt = dtype ? *dtype : (value.is_floating() ? kFloat32 : value.dtype());
  Tensor t = empty_for(op, shape, dt, device);
  fill_data(t, value);
  return t;
}
Tensor on_device(Tensor t, Device device) { return device.is_cpu() ? t : t.to(device); }

// splitmix64: a small, fast, seedable generator with good statistical quality.
// Output k after a state s is cpu::uniform_at(s, k - 1)'s bits (backends/cpu/counter_random.h),
// which rand and randn compute in parallel.
struct Generator {
  static constexpr uint64_t kStep = 0x9e3779b97f4a7c15ULL;
  std::mutex mutex;
  uint64_t state = 0x853c49e6748fea9bULL;
  uint64_t next() {
    uint64_t z = (state += kStep);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // The state before the next `draws` outputs, which it then skips: a call computes those draws
  // outside the lock.
  uint64_t reserve(uint64_t draws) {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t start = state;
    state += draws * kStep;
    return start;
  }
};
Generator& generator() {
  static Generator g;
  return g;
}

// A tensor of `draws_per_value` * numel draws from the global generator: the generator is
// advanced past them under its lock, and the values are computed outside it (in parallel, each
// from its own position in the stream: ops/random_draws.h).
template <typename Fill> Tensor make_random(const char* op, IntArrayRef shape, DType dtype,
                                            Device device, uint64_t draws_per_value, Fill&& fill) {
  checked::numel(op, shape, itemsize(dtype));
  const bool direct = dtype == kFloat32 || dtype == kFloat64;
  Tensor t = empty_cpu_then(shape, direct ? dtype : kFloat64, op);
  const uint64_t state = generator().reserve(static_cast<uint64_t>(t.numel()) * draws_per_value);
  if (t.dtype() == kFloat32)
    fill(state, t.data<float>(), t.numel());
  else
    fill(state, t.data<double>(), t.numel());
  return on_device(direct ? t : t.to(dtype), device);
}

template <typename T> Tensor from_vector(const std::vector<T>& data, IntArrayRef shape) {
  const int64_t n = checked::numel("tensor", shape, itemsize(dtype_of<T>()));
  TG_CHECK(static_cast<uint64_t>(n) == data.size(), ValueError, "tensor", "shape ", shape,
           " needs ", n, " values, got ", data.size(),
           shape.empty() ? " (an empty shape is a 0-d tensor of one value)" : "");
  Tensor t = empty_cpu_then(shape, dtype_of<T>(), "tensor");
  T* d = t.data<T>();
  for (size_t i = 0; i < data.size(); ++i) d[i] = data[i];  // also right for std::vector<bool>
  return t;
}
template <typename T> Tensor from_vector(const std::vector<T>& data) {
  const int64_t n = static_cast<int64_t>(data.size());
  return from_vector(data, IntArrayRef(&n, 1));
}

// The shape of a nested list: the sizes along its first elements, then every list checked
// against them (rectangular, numbers only at the innermost depth).
Shape nested_shape(const NestedList& data) {
  Shape shape;
  const NestedList* node = &data;
  while (node->is_list()) {
    shape.push_back(static_cast<int64_t>(node->size()));
    if (node->size() == 0) break;
    node = &(*node)[0];
  }
  return shape;
}
// `widest` is the widest number kind seen (the kinds are in widening order).
void check_nested(const NestedList& node, const Shape& shape, size_t depth,
                  NestedList::Kind& widest) {
  if (depth == shape.size()) {
    TG_CHECK(!node.is_list(), ValueError, "tensor", "nested lists must be rectangular: a list at ",
             "depth ", depth, " where the first elements have numbers");
    TG_CHECK(!node.too_large(), ValueError, "tensor", "an unsigned value is past int64's range");
    widest = std::max(widest, node.kind());
    return;
  }
  TG_CHECK(node.is_list(), ValueError, "tensor", "nested lists must be rectangular: a number at ",
           "depth ", depth, " where the first elements have lists");
  TG_CHECK(static_cast<int64_t>(node.size()) == shape[depth], ValueError, "tensor",
           "nested lists must be rectangular: expected ", shape[depth], " elements at depth ",
           depth, ", got ", node.size());
  for (size_t i = 0; i < node.size(); ++i) check_nested(node[i], shape, depth + 1, widest);
}
template <typename T> void flatten(const NestedList& node, std::vector<T>& out) {
  if (node.is_list()) {
    for (size_t i = 0; i < node.size(); ++i) flatten(node[i], out);
  } else if (node.kind() == NestedList::Kind::kFloat || node.kind() == NestedList::Kind::kDouble) {
    out.push_back(static_cast<T>(node.real()));  // only floating results get floating numbers
  } else {
    out.push_back(static_cast<T>(node.integer()));
  }
}
template <typename T> Tensor from_nested(const NestedList& data, const Shape& shape) {
  std::vector<T> values;
  flatten(data, values);
  return from_vector(values, shape);
}

}  // namespace

Tensor empty(IntArrayRef shape, DType dtype, Device device) {
  return empty_for("empty", shape, dtype, device);
}
Tensor zeros(IntArrayRef shape, DType dtype, Device device) {
  return full_for("zeros", shape, 0, dtype, device);
}
Tensor ones(IntArrayRef shape, DType dtype, Device device) {
  return full_for("ones", shape, 1, dtype, device);
}
Tensor full(IntArrayRef shape, const Scalar& value, std::optional<DType> dtype, Device device) {
  return full_for("full", shape, value, dtype, device);
}
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, const Scalar& value) {
  return full(t.shape(), value, t.dtype(), t.device());
}

Tensor arange(const Scalar& end, std::optional<DType> dtype, Device device) {
  return arange(0, end, 1, dtype, device);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<DType> dtype, Device device) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  TG_CHECK(st != 0, ValueError, "arange", "step must be nonzero");
  TG_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError, "arange",
           "upper bound and step sign are inconsistent: start ", start, ", end ", end, ", step ",
           step);
  bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  DType dt = dtype ? *dtype : (integral ? kInt64 : kFloat32);
  if (integral) {  // exact integers, no rounding through double for large values
    const __int128 a = start.to_int(), b = end.to_int(), by = step.to_int();
    const __int128 count = (b - a + by - (by > 0 ? 1 : -1)) / by;  // ceil((b - a) / by), >= 0
    TG_CHECK(count >= 0, ValueError, "arange", "upper bound and step sign are inconsistent: start ",
             start, ", end ", end, ", step ", step);
    TG_CHECK(count <= INT64_MAX, ValueError, "arange", "[", start, ", ", end, ") in steps of ",
             step, " has ", static_cast<double>(count), " values, more than int64 can count");
    const int64_t n = static_cast<int64_t>(count);
    Tensor ti = empty_cpu_then({n}, kInt64, "arange");
    int64_t* d = ti.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<int64_t>(a + i * by);  // within [a, b)
    return on_device(ti.to(dt), device);
  }
  // ceil in double: NaN or inf bounds, or a count past int64, would make the cast undefined.
  const double count = std::ceil((e - s) / st);
  TG_CHECK(std::isfinite(s) && std::isfinite(e) && count < 0x1p63, ValueError, "arange", "[", start,
           ", ", end, ") in steps of ", step, " has ", count, " values, more than int64 can count");
  const int64_t n = static_cast<int64_t>(count);
  Tensor t = empty_cpu_then({n}, kFloat64, "arange");
  double* d = t.data<double>();
  for (int64_t i = 0; i < n; ++i) d[i] = s + static_cast<double>(i) * st;
  return on_device(t.to(dt), device);
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  TG_CHECK(steps >= 0, ValueError, "linspace", "steps must be non-negative, got ", steps);
  Tensor t = empty_cpu_then({steps}, kFloat64, "linspace");
  double* d = t.data<double>();
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  for (int64_t i = 0; i < steps; ++i)  // symmetric like PyTorch: exact at both ends
    d[i] = i < steps / 2 ? start + step * static_cast<double>(i)
                         : end - step * static_cast<double>(steps - 1 - i);
  return on_device(t.to(dtype), device);
}

Tensor eye(int64_t n, std::optional<int64_t> m, DType dtype, Device device) {
  int64_t cols = m ? *m : n;
  TG_CHECK(n >= 0 && cols >= 0, ValueError, "eye", "sizes must be non-negative, got ", n, " and ",
           cols);
  checked::numel("eye", {n, cols}, itemsize(dtype));
  Tensor t = zeros({n, cols}, kFloat64);
  for (int64_t i = 0; i < std::min(n, cols); ++i) t.data<double>()[i * cols + i] = 1;
  return on_device(t.to(dtype), device);
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator().mutex);
  generator().state = seed;
}

uint64_t random_u64() {
  std::lock_guard<std::mutex> lock(generator().mutex);
  return generator().next();
}

Tensor rand(IntArrayRef shape, DType dtype, Device device) {
  TG_CHECK(is_floating(dtype), TypeError, "rand", "dtype must be floating, got ",
           dtype_name(dtype));
  return make_random("rand", shape, dtype, device, 1, [](uint64_t state, auto* out, int64_t n) {
    cpu::uniform_draws(state, out, n);
  });
}

Tensor randn(IntArrayRef shape, DType dtype, Device device) {
  TG_CHECK(is_floating(dtype), TypeError, "randn", "dtype must be floating, got ",
           dtype_name(dtype));
  return make_random("randn", shape, dtype, device, 2, [](uint64_t state, auto* out, int64_t n) {
    cpu::normal_draws(state, out, n);
  });
}

Tensor randint(int64_t low, int64_t high, IntArrayRef shape, DType dtype, Device device) {
  TG_CHECK(high > low, ValueError, "randint", "high (", high, ") must be greater than low (", low,
           ")");
  checked::numel("randint", shape, itemsize(dtype));
  Tensor t = empty_cpu_then(shape, kInt64, "randint");
  const uint64_t state = generator().reserve(static_cast<uint64_t>(t.numel()));
  // high - low as unsigned: exact even where the signed difference overflows
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  cpu::integer_draws(state, low, span, t.data<int64_t>(), t.numel());
  return on_device(t.to(dtype), device);
}

template <HostElement T> Tensor tensor(const std::vector<T>& data) { return from_vector(data); }
template Tensor tensor(const std::vector<double>& data);
template Tensor tensor(const std::vector<float>& data);
template Tensor tensor(const std::vector<int64_t>& data);
template Tensor tensor(const std::vector<int32_t>& data);
template Tensor tensor(const std::vector<bool>& data);
Tensor tensor(const std::vector<double>& data, IntArrayRef shape) {
  return from_vector(data, shape);
}
Tensor tensor(const std::vector<float>& data, IntArrayRef shape) {
  return from_vector(data, shape);
}
Tensor tensor(const std::vector<int64_t>& data, IntArrayRef shape) {
  return from_vector(data, shape);
}
Tensor tensor(const std::vector<int32_t>& data, IntArrayRef shape) {
  return from_vector(data, shape);
}
Tensor tensor(const std::vector<bool>& data, IntArrayRef shape) { return from_vector(data, shape); }

Tensor tensor(const NestedList& data) {
  const Shape shape = nested_shape(data);
  using Kind = NestedList::Kind;
  Kind widest = Kind::kBool;
  check_nested(data, shape, 0, widest);
  if (checked::numel("tensor", shape, 1) == 0) widest = Kind::kFloat;  // as torch.tensor([])
  switch (widest) {
    case Kind::kBool: return from_nested<bool>(data, shape);
    case Kind::kInteger: return from_nested<int64_t>(data, shape);
    case Kind::kFloat: return from_nested<float>(data, shape);
    default: return from_nested<double>(data, shape);
  }
}

Tensor scalar_tensor(const Scalar& s, std::optional<DType> dtype, Device device) {
  DType dt = dtype ? *dtype : (s.is_floating() ? kFloat32 : s.dtype());
  Tensor t = empty_cpu_then({}, dt);
  fill_data(t, s);
  return on_device(t, device);
}

}  // namespace tg
