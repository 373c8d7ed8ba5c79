// opgen, part 2a: the C++ text of spec values (types, defaults, literals, parameter lists), shared
// by the emitters of emit.cpp.
#include <map>
#include <utility>

#include "opgen.h"

namespace opgen {

// Any bytes as a C++ string literal: printable ASCII as is (with \" and \\), every other byte as
// a three-digit octal escape, so no spec text can end the literal or the line, and bytes that are
// not UTF-8 come through unchanged instead of throwing.
std::string cpp_string_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?': no trigraph-like sequences either
      out += static_cast<char>(c);
    } else {
      const char octal[] = {'\\', static_cast<char>('0' + (c >> 6)),
                            static_cast<char>('0' + ((c >> 3) & 7)),
                            static_cast<char>('0' + (c & 7)), 0};
      out += octal;
    }
  }
  return out + "\"";
}

std::string cpp_param_type(const std::string& t) {
  if (mode.out_of_tree) {
    const Mode user = std::exchange(mode, Mode{});
    const std::string plain = cpp_param_type(t);
    mode = user;
    return qualify_types(plain);
  }
  static const std::map<std::string, std::string> m = {{"Tensor", "const Tensor&"},
                                                       {"Tensor?", "const Tensor&"},
                                                       {"Tensor[]", "const std::vector<Tensor>&"},
                                                       {"int", "int64_t"},
                                                       {"int?", "std::optional<int64_t>"},
                                                       {"int[]", "IntArrayRef"},
                                                       {"float", "double"},
                                                       {"Scalar", "const Scalar&"},
                                                       {"Scalar?", "const std::optional<Scalar>&"},
                                                       {"bool", "bool"},
                                                       {"string", "const std::string&"},
                                                       {"DType", "DType"},
                                                       {"DType?", "std::optional<DType>"},
                                                       {"Device", "Device"}};
  return m.at(t);
}

std::string cpp_saved_type(const std::string& t) {
  static const std::map<std::string, std::string> m = {{"int", "int64_t"},
                                                       {"int?", "std::optional<int64_t>"},
                                                       {"int[]", "std::vector<int64_t>"},
                                                       {"float", "double"},
                                                       {"Scalar", "Scalar"},
                                                       {"Scalar?", "std::optional<Scalar>"},
                                                       {"bool", "bool"},
                                                       {"string", "std::string"},
                                                       {"DType", "DType"},
                                                       {"DType?", "std::optional<DType>"},
                                                       {"Device", "Device"}};
  return m.at(t);
}

std::string dtype_constant(const std::string& name) {
  static const std::map<std::string, std::string> m = {
      {"bool", "kBool"},       {"int32", "kInt32"},       {"int64", "kInt64"},
      {"float16", "kFloat16"}, {"bfloat16", "kBFloat16"}, {"float32", "kFloat32"},
      {"float64", "kFloat64"}};
  auto it = m.find(name);
  return it == m.end() ? "" : it->second;
}

std::string cpp_default(const Op& op, const Arg& a) {
  const json& d = a.default_value;
  const std::string key = "args." + a.name + ".default";
  if (d.is_null()) {
    if (a.type == "Tensor?") return "{}";
    if (a.type.back() == '?') return "std::nullopt";
    spec_fail(op, key, "null default needs an optional type");
  }
  if (a.type == "int[]") {
    if (!d.is_array()) spec_fail(op, key, "int[] default must be a list");
    std::string s = "{";
    for (size_t i = 0; i < d.size(); ++i)
      s += (i ? ", " : "") + std::to_string(d[i].get<int64_t>());
    return s + "}";
  }
  if (a.type == "string") return cpp_string_literal(d.get<std::string>());
  if (a.type == "DType" || a.type == "DType?") {
    std::string c = dtype_constant(d.get<std::string>());
    if (c.empty()) spec_fail(op, key, "unknown dtype");
    return mode.out_of_tree ? "tg::" + c : c;
  }
  if (a.type == "Device")
    return qualify_types(d.get<std::string>() == "cuda" ? "Device(kCUDA)" : "Device(kCPU)");
  if (a.type == "bool") return d.get<bool>() ? "true" : "false";
  if (d.is_number_integer()) return std::to_string(d.get<int64_t>());
  if (d.is_number_float()) {
    std::ostringstream os;
    os.precision(17);
    os << d.get<double>();
    std::string s = os.str();
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  if (d.is_boolean()) return d.get<bool>() ? "true" : "false";
  spec_fail(op, key, "unsupported default value " + d.dump());
}

std::string return_type(const Op& op) { return tuple_type(op.rets.size()); }

std::string public_return_type(const Op& op) { return tuple_type(op.num_public_outputs()); }

std::string tuple_type(size_t count) {
  if (count == 1) return qualify_types("Tensor");
  std::string s = "std::tuple<";
  for (size_t i = 0; i < count; ++i) s += (i ? ", Tensor" : "Tensor");
  return qualify_types(s + ">");
}

// "const Tensor& self, const Scalar& alpha = 1"; skip_self drops the self arg (methods).
std::string params(const Op& op, bool with_defaults, bool skip_self) {
  std::string s;
  for (const auto& a : op.args) {
    if (skip_self && a.name == "self") continue;
    if (!s.empty()) s += ", ";
    s += cpp_param_type(a.type) + " " + a.name;
    if (with_defaults && a.has_default) s += " = " + cpp_default(op, a);
  }
  return s;
}

std::string arg_names(const Op& op, const std::string& self_replacement) {
  std::string s;
  for (const auto& a : op.args) {
    if (!s.empty()) s += ", ";
    s += (a.name == "self" && !self_replacement.empty()) ? self_replacement : a.name;
  }
  return s;
}

std::string camel(const std::string& snake) {
  std::string out;
  bool up = true;
  for (char c : snake) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

}  // namespace opgen
