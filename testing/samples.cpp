// Sample parsing and materialization for the op check (format: ops/specs/README.md, Samples).
#include <tapegrad/testing/samples.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include <tapegrad/core/copy.h>
#include <tapegrad/core/error.h>
#include <tapegrad/ops/factories.h>

namespace tg::testing {
namespace {

using nlohmann::json;
using registry::ArgInfo;
using registry::OpInfo;
using registry::Value;

// The dtypes the op check can fill with values (float16/bfloat16 have no kernels yet).
const std::vector<DType> kFillable = {kBool, kInt32, kInt64, kFloat32, kFloat64};

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  fail<ValueError>("opcheck", where, ": ", what);
}

bool is_tensor_type(const std::string& type) { return type == "Tensor" || type == "Tensor?"; }

int64_t as_int(const json& j, const std::string& where) {
  if (!j.is_number_integer()) bad(where, "expected an integer, got " + j.dump());
  return j.get<int64_t>();
}

double as_number(const json& j, const std::string& where) {
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  if (!j.is_number()) bad(where, "expected a number, got " + j.dump());
  return j.get<double>();
}

Shape parse_shape(const json& j, const std::string& where) {
  Shape shape;
  for (const auto& d : j) {
    int64_t size = as_int(d, where + " (shape)");
    if (size < 0) bad(where, "sizes must be non-negative, got " + j.dump());
    shape.push_back(size);
  }
  return shape;
}

// Flattens (possibly nested) "values" row-major; `shape` gets the nesting sizes.
void flatten_values(const json& j, const std::string& where, std::vector<double>& out, Shape& shape,
                    size_t depth) {
  if (!j.is_array()) {
    out.push_back(as_number(j, where + " (values)"));
    return;
  }
  if (shape.size() == depth) shape.push_back(static_cast<int64_t>(j.size()));
  for (const auto& v : j) flatten_values(v, where, out, shape, depth + 1);
}

DType parse_dtype(const json& j, const std::string& where) {
  if (!j.is_string()) bad(where, "expected a dtype name, got " + j.dump());
  return dtype_from_name(j.get<std::string>());
}

TensorSpec parse_tensor(const json& j, const std::string& where) {
  TensorSpec spec;
  if (j.is_array()) {
    spec.shape = parse_shape(j, where);
    return spec;
  }
  if (!j.is_object()) bad(where, "expected a shape list or a tensor object, got " + j.dump());
  static const std::set<std::string> keys = {"shape",         "dtype",    "values", "low",
                                             "high",          "fill",     "step",   "distinct",
                                             "requires_grad", "transpose"};
  for (const auto& [key, v] : j.items())
    if (!keys.count(key)) bad(where, "unknown tensor key '" + key + "'");
  Shape nested;
  if (j.contains("values")) flatten_values(j["values"], where, spec.values, nested, 0);
  if (j.contains("shape")) {
    if (!j["shape"].is_array()) bad(where, "\"shape\" must be a list of sizes");
    spec.shape = parse_shape(j["shape"], where);
  } else if (j.contains("values")) {
    spec.shape = nested;
  }
  if (j.contains("values") && static_cast<int64_t>(spec.values.size()) != spec.shape.numel())
    bad(where, "\"values\" has " + std::to_string(spec.values.size()) + " entries, shape " +
                   spec.shape.str() + " needs " + std::to_string(spec.shape.numel()));
  if (j.contains("dtype")) spec.dtype = parse_dtype(j["dtype"], where + " (dtype)");
  if (j.contains("low")) spec.low = as_number(j["low"], where + " (low)");
  if (j.contains("high")) spec.high = as_number(j["high"], where + " (high)");
  if (spec.low && spec.high && !(*spec.low < *spec.high))
    bad(where, "\"low\" must be below \"high\"");
  if (j.contains("fill")) spec.fill = as_number(j["fill"], where + " (fill)");
  if (j.contains("step")) {
    spec.step = as_number(j["step"], where + " (step)");
    if (!(*spec.step > 0)) bad(where, "\"step\" must be positive");
  }
  if (j.contains("distinct")) {
    if (!j["distinct"].is_boolean()) bad(where, "\"distinct\" must be true or false");
    spec.distinct = j["distinct"].get<bool>();
  }
  if (j.contains("requires_grad")) {
    if (!j["requires_grad"].is_boolean()) bad(where, "\"requires_grad\" must be true or false");
    spec.requires_grad = j["requires_grad"].get<bool>();
  }
  if (j.contains("transpose")) {
    const json& t = j["transpose"];
    if (!t.is_array() || t.size() != 2) bad(where, "\"transpose\" must be [dim0, dim1]");
    auto ndim = static_cast<int64_t>(spec.shape.size());
    int64_t d0 = as_int(t[0], where + " (transpose)"), d1 = as_int(t[1], where + " (transpose)");
    if (d0 < -ndim || d0 >= ndim || d1 < -ndim || d1 >= ndim)
      bad(where, "\"transpose\" dims " + t.dump() + " out of range for shape " + spec.shape.str());
    spec.transpose = std::make_pair(d0 < 0 ? d0 + ndim : d0, d1 < 0 ? d1 + ndim : d1);
  }
  return spec;
}

Value value_of(const ArgInfo& arg, const json& j, const std::string& where) {
  const std::string& type = arg.type;
  const bool optional = !type.empty() && type.back() == '?';
  if (optional && j.is_null()) return std::monostate{};
  if (type == "int" || type == "int?") return as_int(j, where);
  if (type == "int[]") {
    if (j.is_number_integer()) return std::vector<int64_t>{j.get<int64_t>()};
    if (!j.is_array()) bad(where, "expected a list of integers, got " + j.dump());
    std::vector<int64_t> v;
    for (const auto& e : j) v.push_back(as_int(e, where));
    return v;
  }
  if (type == "float" || type == "float?") {
    if (!j.is_number()) bad(where, "expected a number, got " + j.dump());
    return j.get<double>();
  }
  if (type == "Scalar" || type == "Scalar?") {
    if (j.is_boolean()) return Scalar(j.get<bool>());
    if (j.is_number_integer()) return Scalar(j.get<int64_t>());
    if (j.is_number()) return Scalar(j.get<double>());
    bad(where, "expected a number or a bool, got " + j.dump());
  }
  if (type == "bool") {
    if (!j.is_boolean()) bad(where, "expected true or false, got " + j.dump());
    return j.get<bool>();
  }
  if (type == "string") {
    if (!j.is_string()) bad(where, "expected a string, got " + j.dump());
    return j.get<std::string>();
  }
  if (type == "DType" || type == "DType?") return parse_dtype(j, where);
  if (type == "Device") {
    if (!j.is_string()) bad(where, "expected \"cpu\" or \"cuda\", got " + j.dump());
    std::string s = j.get<std::string>();
    if (s == "cpu") return Device(kCPU);
    if (s == "cuda") return Device(kCUDA);
    if (s.rfind("cuda:", 0) == 0) return Device(kCUDA, std::stoi(s.substr(5)));
    bad(where, "unknown device '" + s + "'");
  }
  bad(where, "arg type '" + type + "' takes no plain value");
}

SampleArg parse_arg(const ArgInfo& arg, const json& j, const std::string& where) {
  SampleArg out;
  if (is_tensor_type(arg.type)) {
    if (j.is_null()) {
      if (arg.type != "Tensor?") bad(where, "null is only allowed for a Tensor? arg");
      return out;  // Kind::Value, monostate
    }
    out.kind = SampleArg::Kind::Tensor;
    out.tensors.push_back(parse_tensor(j, where));
  } else if (arg.type == "Tensor[]") {
    if (!j.is_array()) bad(where, "a Tensor[] arg takes a list of shapes or tensor objects");
    out.kind = SampleArg::Kind::TensorList;
    for (size_t k = 0; k < j.size(); ++k) {
      if (!j[k].is_array() && !j[k].is_object())
        bad(where, "a Tensor[] arg takes a list of shapes or tensor objects, got " + j.dump());
      out.tensors.push_back(parse_tensor(j[k], tg::detail::str_cat(where, "[", k, "]")));
    }
  } else {
    out.value = value_of(arg, j, where);
  }
  return out;
}

bool get_flag(const json& s, const char* key, const std::string& where) {
  if (!s.contains(key)) return false;
  if (!s[key].is_boolean()) bad(where, std::string("\"") + key + "\" must be true or false");
  return s[key].get<bool>();
}

std::string get_text(const json& s, const char* key, const std::string& where) {
  if (!s.contains(key)) return {};
  if (!s[key].is_string()) bad(where, std::string("\"") + key + "\" must be a string");
  return s[key].get<std::string>();
}

// The dtype a tensor gets in a run of `dtype`: its fixed one, the run's when the arg allows it,
// else the arg's own (int64 first, for index args).
DType resolve_dtype(const ArgInfo& arg, const TensorSpec& spec, DType dtype) {
  if (spec.dtype) return *spec.dtype;
  const auto& allowed = arg.dtypes;
  if (allowed.empty() || std::count(allowed.begin(), allowed.end(), dtype_name(dtype)))
    return dtype;
  if (std::count(allowed.begin(), allowed.end(), "int64")) return kInt64;
  return dtype_from_name(allowed.front());
}

// Uniform double in [0, 1).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Random values for n elements of dtype as the spec asks.
std::vector<double> random_values(const TensorSpec& spec, DType dtype, int64_t n,
                                  std::mt19937_64& rng) {
  std::vector<double> v(static_cast<size_t>(n));
  if (dtype == kBool) {
    for (auto& x : v) x = static_cast<double>(rng() & 1);
    return v;
  }
  const bool floating = is_floating(dtype);
  const double width = floating ? 2.0 : 7.0;  // floats in [-1, 1), ints in [-3, 3]
  double low = spec.low.value_or(spec.high ? *spec.high - width : (floating ? -1.0 : -3.0));
  double high = spec.high.value_or(low + width);
  if (!floating) {
    low = std::ceil(low);
    high = std::max(std::ceil(high), low + 1);
  }
  if (!spec.distinct) {
    for (auto& x : v)
      x = floating ? low + uniform(rng) * (high - low)
                   : low + static_cast<double>(rng() % static_cast<uint64_t>(high - low));
    if (floating && spec.step)  // ties and exact zeros, for max-like and product reductions
      for (auto& x : v) x = std::round(x / *spec.step) * *spec.step;
    return v;
  }
  // Distinct. Floats: points of an even grid over [low, high), each jittered within its cell.
  // Integers: n different ones from [low, high), or consecutive ones when the range is too small.
  const double range = high - low;
  std::set<double> seen;
  for (size_t k = 0; k < v.size(); ++k) {
    const auto kd = static_cast<double>(k);
    if (floating) {
      v[k] = low + (kd + 0.25 + 0.5 * uniform(rng)) * range / static_cast<double>(n);
    } else if (range >= static_cast<double>(n)) {
      do v[k] = low + static_cast<double>(rng() % static_cast<uint64_t>(range));
      while (!seen.insert(v[k]).second);
    } else {
      v[k] = low + kd;
    }
  }
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

Tensor make_tensor(const TensorSpec& spec, DType dtype, std::mt19937_64& rng) {
  const int64_t n = spec.shape.numel();
  std::vector<double> values = !spec.values.empty() ? spec.values
                               : spec.fill ? std::vector<double>(static_cast<size_t>(n), *spec.fill)
                                           : random_values(spec, dtype, n, rng);
  Tensor t = empty(spec.shape, dtype);
  visit_dtype("opcheck", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.template data<T>();
    for (int64_t k = 0; k < n; ++k) p[k] = static_cast<T>(values[static_cast<size_t>(k)]);
  });
  if (!spec.transpose) return t;
  // The same values in storage laid out as the transpose: a non-contiguous tensor.
  auto [d0, d1] = *spec.transpose;
  Shape stored = spec.shape;
  std::swap(stored[static_cast<size_t>(d0)], stored[static_cast<size_t>(d1)]);
  Shape strides = contiguous_strides(stored);
  std::swap(strides[static_cast<size_t>(d0)], strides[static_cast<size_t>(d1)]);
  Tensor out = empty_strided(spec.shape, strides, dtype);
  copy_data(out, t);
  return out;
}

// "no_derived": "reason" or {"kind": "reason", ...}; a reason is required, and kinds are checked.
std::map<std::string, std::string> parse_no_derived(const json& j, const std::string& where) {
  std::map<std::string, std::string> out;
  auto reason = [&](const json& r, const std::string& kind) {
    if (!r.is_string() || r.get<std::string>().empty())
      bad(where, "\"no_derived\" needs a reason (a non-empty string) for '" + kind + "'");
    return r.get<std::string>();
  };
  if (j.is_string()) {
    out["all"] = reason(j, "all");
    return out;
  }
  if (!j.is_object()) bad(where, "\"no_derived\" is a reason or an object kind -> reason");
  for (const auto& [kind, r] : j.items()) {
    if (!std::count(derived_kinds().begin(), derived_kinds().end(), kind))
      bad(where, "\"no_derived\": unknown kind '" + kind + "'");
    out[kind] = reason(r, kind);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& derived_kinds() {
  static const std::vector<std::string> kinds = {"non-contiguous", "expanded", "0-size", "0-d",
                                                 "inplace-view"};
  return kinds;
}

Value parse_value(const ArgInfo& arg, const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    bad("arg '" + arg.name + "'", std::string("invalid JSON: ") + e.what());
  }
  return value_of(arg, j, "arg '" + arg.name + "'");
}

std::vector<Sample> parse_samples(const OpInfo& op, const std::string& samples_json) {
  const std::string where_op = "op '" + op.name + "' samples";
  json list;
  try {
    list = json::parse(samples_json);
  } catch (const json::exception& e) {
    bad(where_op, std::string("invalid JSON: ") + e.what());
  }
  if (!list.is_array()) bad(where_op, "expected a list of samples");
  static const std::set<std::string> meta = {"dtypes", "no_grad", "no_gradgrad", "reject",
                                             "error",  "why",     "no_derived"};
  std::vector<Sample> samples;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& s = list[i];
    const std::string where = "op '" + op.name + "' sample " + std::to_string(i);
    if (!s.is_object()) bad(where, "each sample is a JSON object");
    for (const auto& item : s.items()) {
      const std::string& key = item.key();
      bool is_arg = std::any_of(op.args.begin(), op.args.end(),
                                [&](const ArgInfo& a) { return a.name == key; });
      if (!is_arg && !meta.count(key))
        bad(where, "unknown key '" + key + "' (not an arg of the op)");
    }
    Sample sample;
    sample.index = i;
    for (const ArgInfo& arg : op.args) {
      const std::string at = where + " arg '" + arg.name + "'";
      if (s.contains(arg.name)) {
        sample.args.push_back(parse_arg(arg, s[arg.name], at));
      } else if (arg.has_default) {
        sample.args.push_back(parse_arg(arg, json::parse(arg.default_json), at + " (default)"));
      } else {
        bad(where, "arg '" + arg.name + "' is missing and has no default");
      }
    }
    if (s.contains("dtypes")) {
      if (!s["dtypes"].is_array()) bad(where, "\"dtypes\" must be a list of dtype names");
      for (const auto& d : s["dtypes"]) {
        std::string name = d.is_string() ? d.get<std::string>() : d.dump();
        if (name == "all") {
          sample.dtypes.insert(sample.dtypes.end(), kFillable.begin(), kFillable.end());
        } else if (name == "floating") {
          sample.dtypes.insert(sample.dtypes.end(), {kFloat32, kFloat64});
        } else if (name == "integral") {
          sample.dtypes.insert(sample.dtypes.end(), {kInt32, kInt64});
        } else {
          sample.dtypes.push_back(parse_dtype(d, where + " (dtypes)"));
        }
      }
    }
    sample.no_grad = get_flag(s, "no_grad", where);
    sample.no_gradgrad = get_flag(s, "no_gradgrad", where);
    sample.reject = get_text(s, "reject", where);
    sample.error = get_text(s, "error", where);
    sample.why = get_text(s, "why", where);
    if (s.contains("no_derived")) sample.no_derived = parse_no_derived(s["no_derived"], where);
    if (s.contains("reject") && sample.reject.empty())
      bad(where, "\"reject\" needs the expected message text");
    if (!sample.error.empty()) {
      if (sample.reject.empty()) bad(where, "\"error\" is only meaningful with \"reject\"");
      static const std::set<std::string> kinds = {"Error", "TypeError", "ValueError", "IndexError"};
      if (!kinds.count(sample.error)) bad(where, "unknown error kind '" + sample.error + "'");
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::vector<DType> sample_dtypes(const OpInfo& op, const Sample& sample) {
  auto fillable = [](DType d) { return std::count(kFillable.begin(), kFillable.end(), d) > 0; };
  std::vector<DType> op_dtypes;
  for (const auto& name : op.dtypes) op_dtypes.push_back(dtype_from_name(name));
  if (op.dtypes.empty()) op_dtypes = kFillable;
  std::vector<DType> out;
  if (!sample.reject.empty() && !sample.dtypes.empty()) {
    for (DType d : sample.dtypes)
      if (fillable(d)) out.push_back(d);
    return out;
  }
  for (DType d : op_dtypes) {
    bool wanted =
        sample.dtypes.empty() || std::count(sample.dtypes.begin(), sample.dtypes.end(), d);
    if (wanted && fillable(d) && !std::count(out.begin(), out.end(), d)) out.push_back(d);
  }
  return out;
}

uint64_t sample_seed(const std::string& op_name, size_t index) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the name, then the index mixed in
  for (unsigned char c : op_name) h = (h ^ c) * 1099511628211ull;
  h ^= (static_cast<uint64_t>(index) + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  return h;
}

Case materialize(const OpInfo& op, const Sample& sample, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Case c;
  for (size_t i = 0; i < op.args.size(); ++i) {
    const ArgInfo& arg = op.args[i];
    const SampleArg& sa = sample.args[i];
    auto make = [&](const TensorSpec& spec, int64_t item) {
      DType dt = resolve_dtype(arg, spec, dtype);
      c.tensors.push_back({i, item, arg.differentiable && spec.requires_grad && is_floating(dt)});
      return make_tensor(spec, dt, rng);
    };
    switch (sa.kind) {
      case SampleArg::Kind::Tensor: c.args.emplace_back(make(sa.tensors[0], -1)); break;
      case SampleArg::Kind::TensorList: {
        std::vector<Tensor> list;
        for (size_t k = 0; k < sa.tensors.size(); ++k)
          list.push_back(make(sa.tensors[k], static_cast<int64_t>(k)));
        c.args.emplace_back(std::move(list));
        break;
      }
      case SampleArg::Kind::Value: c.args.push_back(sa.value); break;
    }
  }
  return c;
}

Tensor& tensor_at(std::vector<Value>& args, const TensorSlot& slot) {
  if (slot.item < 0) return std::get<Tensor>(args[slot.arg]);
  return std::get<std::vector<Tensor>>(args[slot.arg])[static_cast<size_t>(slot.item)];
}

const Tensor& tensor_at(const std::vector<Value>& args, const TensorSlot& slot) {
  if (slot.item < 0) return std::get<Tensor>(args[slot.arg]);
  return std::get<std::vector<Tensor>>(args[slot.arg])[static_cast<size_t>(slot.item)];
}

Tensor clone_tensor(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor out = empty_strided(t.shape(), t.strides(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

std::vector<Value> clone_args(const std::vector<Value>& args) {
  std::vector<Value> out = args;
  for (Value& v : out) {
    if (auto* t = std::get_if<Tensor>(&v)) *t = clone_tensor(*t);
    if (auto* list = std::get_if<std::vector<Tensor>>(&v))
      for (Tensor& t : *list) t = clone_tensor(t);
  }
  return out;
}

std::string describe_args(const OpInfo& op, const std::vector<Value>& args) {
  std::ostringstream os;
  auto tensor = [&](const Tensor& t) {
    if (!t.defined()) {
      os << "undefined";
      return;
    }
    os << dtype_name(t.dtype()) << t.shape().str() << (t.is_contiguous() ? "" : "T");
  };
  for (size_t i = 0; i < args.size(); ++i) {
    os << (i ? " " : "") << (i < op.args.size() ? op.args[i].name : "arg" + std::to_string(i))
       << "=";
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::monostate>) {
            os << "none";
          } else if constexpr (std::is_same_v<V, Tensor>) {
            tensor(v);
          } else if constexpr (std::is_same_v<V, std::vector<Tensor>>) {
            os << "[";
            for (size_t k = 0; k < v.size(); ++k) {
              if (k) os << ", ";
              tensor(v[k]);
            }
            os << "]";
          } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            os << IntArrayRef(v);
          } else if constexpr (std::is_same_v<V, bool>) {
            os << (v ? "true" : "false");
          } else if constexpr (std::is_same_v<V, std::string>) {
            os << '"' << v << '"';
          } else if constexpr (std::is_same_v<V, DType>) {
            os << dtype_name(v);
          } else {
            os << v;  // Scalar, int64_t, double, Device
          }
        },
        args[i]);
  }
  return os.str();
}

}  // namespace tg::testing
