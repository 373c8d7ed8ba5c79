// opgen, part 1: reading a spec. Every key is checked; a mistake names the file, op and key.
#include <algorithm>
#include <map>

#include "opgen.h"

namespace opgen {

std::vector<std::string> backward_inputs(const std::string& key) {
  std::vector<std::string> inputs;
  std::string name;
  std::istringstream in(key);
  while (std::getline(in, name, ',')) {
    const auto first = name.find_first_not_of(' '), last = name.find_last_not_of(' ');
    inputs.push_back(first == std::string::npos ? "" : name.substr(first, last - first + 1));
  }
  return inputs;
}

[[noreturn]] void spec_fail(const Op& op, const std::string& key, const std::string& what) {
  throw SpecError(op.file + ": op '" + op.name + "': key '" + key + "': " + what);
}

namespace {

const std::set<std::string> kArgTypes = {"Tensor", "Tensor?", "Tensor[]", "int",   "int?",
                                         "int[]",  "float",   "Scalar",   "Scalar?", "bool",
                                         "string", "DType",   "DType?",   "Device"};
const std::vector<std::string> kAllDtypes = {"bool", "int32", "int64", "float32", "float64"};
const std::vector<std::string> kKnownDtypes = {"bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"};
const std::set<std::string> kKernelKeys = {"CPU", "CUDA", "Default"};

std::vector<std::string> expand_dtypes(const Op& op, const std::string& key, const json& j) {
  std::vector<std::string> out;
  for (const auto& d : j) {
    if (!d.is_string()) spec_fail(op, key, "dtype names must be strings");
    std::string s = d.get<std::string>();
    if (s == "all") {
      out.insert(out.end(), kAllDtypes.begin(), kAllDtypes.end());
    } else if (s == "floating") {
      out.insert(out.end(), {"float32", "float64"});
    } else if (s == "integral") {
      out.insert(out.end(), {"int32", "int64"});
    } else if (std::find(kKnownDtypes.begin(), kKnownDtypes.end(), s) != kKnownDtypes.end()) {
      out.push_back(s);
    } else {
      spec_fail(op, key, "unknown dtype '" + s + "'");
    }
  }
  return out;
}

void check_keys(const Op& op, const std::string& where, const json& obj, const std::set<std::string>& allowed) {
  for (const auto& [k, v] : obj.items())
    if (!allowed.count(k)) spec_fail(op, where.empty() ? k : where + "." + k, "unknown key");
}

}  // namespace

Op parse_op(const std::string& file, const json& j) {
  Op op;
  op.file = file;
  if (!j.is_object()) throw SpecError(file + ": each op must be a JSON object");
  op.name = j.value("name", "");
  if (op.name.empty()) throw SpecError(file + ": an op has no 'name'");
  check_keys(op, "", j,
             {"name", "doc", "args", "returns", "variants", "dtypes", "kernels", "backward",
              "differentiable", "samples"});
  if (!j.contains("doc")) spec_fail(op, "doc", "missing (one line describing the op)");
  op.doc = j["doc"].get<std::string>();
  if (!j.contains("args") || !j["args"].is_array()) spec_fail(op, "args", "missing or not a list");
  for (const auto& ja : j["args"]) {
    Arg a;
    a.name = ja.value("name", "");
    if (a.name.empty()) spec_fail(op, "args", "an argument has no name");
    check_keys(op, "args." + a.name, ja, {"name", "type", "default", "differentiable", "dtypes", "dtype", "allowed"});
    a.type = ja.value("type", "");
    if (!kArgTypes.count(a.type)) spec_fail(op, "args." + a.name + ".type", "unknown type '" + a.type + "'");
    if (ja.contains("default")) {
      a.has_default = true;
      a.default_value = ja["default"];
    }
    a.differentiable = ja.value("differentiable", true);
    if (ja.contains("dtype")) a.dtypes = expand_dtypes(op, "args." + a.name + ".dtype", json::array({ja["dtype"]}));
    if (ja.contains("dtypes")) a.dtypes = expand_dtypes(op, "args." + a.name + ".dtypes", ja["dtypes"]);
    if (ja.contains("allowed")) a.allowed = ja["allowed"].get<std::vector<std::string>>();
    if (op.find_arg(a.name)) spec_fail(op, "args." + a.name, "duplicate argument");
    op.args.push_back(a);
  }
  if (j.contains("returns")) {
    for (const auto& jr : j["returns"]) {
      Ret r;
      r.name = jr.value("name", "result");
      r.differentiable = jr.value("differentiable", true);
      if (jr.value("type", "Tensor") != "Tensor") spec_fail(op, "returns." + r.name, "only Tensor returns are supported");
      op.rets.push_back(r);
    }
  } else {
    op.rets.push_back({"result", true});
  }
  if (op.rets.empty()) spec_fail(op, "returns", "an op returns at least one Tensor");
  json variants = j.value("variants", json::array({"function", "method"}));
  for (const auto& v : variants) {
    std::string s = v.get<std::string>();
    if (s != "function" && s != "method" && s != "inplace") spec_fail(op, "variants", "unknown variant '" + s + "'");
    op.variants.insert(s);
  }
  op.dtypes = expand_dtypes(op, "dtypes", j.value("dtypes", json::array({"all"})));
  if (!j.contains("kernels") || !j["kernels"].is_object() || j["kernels"].empty())
    spec_fail(op, "kernels", "missing: name at least one kernel, e.g. {\"CPU\": \"cpu::" + op.name + "\"}");
  for (const auto& [k, v] : j["kernels"].items()) {
    if (!kKernelKeys.count(k)) spec_fail(op, "kernels." + k, "unknown dispatch key (CPU, CUDA, Default)");
    std::string fn = v.get<std::string>();
    if (fn.find("::") == std::string::npos) spec_fail(op, "kernels." + k, "qualify the kernel from tg::, e.g. cpu::" + fn);
    op.kernels.emplace_back(k, fn);
  }
  op.differentiable = j.value("differentiable", true);
  json backward = j.value("backward", json::object());
  // A key names one input ("self") or several ("self, src": one formula returns all their
  // gradients, in the key's order, as PyTorch's derivatives.yaml allows).
  std::set<std::string> covered;
  std::vector<std::pair<size_t, std::pair<std::string, std::string>>> ordered;  // first arg's position
  for (const auto& [key, formula] : backward.items()) {
    std::vector<std::string> inputs = backward_inputs(key);
    if (inputs.empty()) spec_fail(op, "backward." + key, "names no input");
    size_t position = op.args.size();
    for (const auto& input : inputs) {
      const Arg* a = op.find_arg(input);
      if (!a) spec_fail(op, "backward." + key, "no argument named '" + input + "'");
      if (!a->is_diff_tensor()) spec_fail(op, "backward." + key, "'" + input + "' is not a differentiable Tensor");
      if (inputs.size() > 1 && a->type == "Tensor[]") spec_fail(op, "backward." + key, "a Tensor[] input needs a key of its own");
      if (!covered.insert(input).second) spec_fail(op, "backward." + key, "'" + input + "' has two formulas");
      position = std::min(position, static_cast<size_t>(a - op.args.data()));
    }
    if (!formula.is_string()) spec_fail(op, "backward." + key, "formula must be a string");
    ordered.push_back({position, {key, formula.get<std::string>()}});
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& entry : ordered) op.backward.push_back(entry.second);  // argument order
  if (op.differentiable) {
    for (const auto* a : op.diff_inputs())
      if (!covered.count(a->name))
        spec_fail(op, "backward", "no formula for differentiable input '" + a->name +
                                      "' (add one, or mark the arg \"differentiable\": false)");
    if (op.num_diff_outputs() == 0) spec_fail(op, "returns", "a differentiable op needs a differentiable output");
    if (op.backward.empty()) spec_fail(op, "backward", "a differentiable op needs at least one formula");
  } else if (!op.backward.empty()) {
    spec_fail(op, "backward", "op is marked \"differentiable\": false but has formulas");
  }
  size_t lists = 0;
  for (const auto* a : op.diff_inputs()) lists += a->type == "Tensor[]";
  if (lists > 0 && op.diff_inputs().size() > 1)
    spec_fail(op, "args", "a Tensor[] input must be the only differentiable input");
  if ((op.has_variant("method") || op.has_variant("inplace")) &&
      (!op.find_arg("self") || op.find_arg("self")->type != "Tensor"))
    spec_fail(op, "variants", "method and inplace variants need a Tensor arg named 'self'");
  if (op.has_variant("inplace") && op.rets.size() != 1) spec_fail(op, "variants", "inplace needs exactly one output");
  if (!j.contains("samples") || !j["samples"].is_array() || j["samples"].empty())
    spec_fail(op, "samples", "missing: give at least one sample");
  op.samples = j["samples"];
  for (const auto& s : op.samples) {
    if (!s.is_object()) spec_fail(op, "samples", "each sample is an object");
    for (const auto& [k, v] : s.items()) {
      static const std::set<std::string> meta = {"dtypes", "no_grad", "no_gradgrad", "reject", "error", "why"};
      if (!meta.count(k) && !op.find_arg(k)) spec_fail(op, "samples", "sample names unknown argument '" + k + "'");
    }
  }
  return op;
}

std::vector<Op> parse_spec_text(const std::string& file, const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw SpecError(file + ": invalid JSON: " + e.what());
  }
  std::vector<json> objs = j.is_array() ? std::vector<json>(j.begin(), j.end()) : std::vector<json>{j};
  std::vector<Op> ops;
  for (const auto& o : objs) {
    try {
      ops.push_back(parse_op(file, o));
    } catch (const json::exception& e) {
      const bool named = o.is_object() && o.contains("name") && o["name"].is_string();
      throw SpecError(file + ": op '" + (named ? o["name"].get<std::string>() : "?") + "': " + e.what());
    }
  }
  return ops;
}

}  // namespace opgen
