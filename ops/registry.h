#pragma once
// The run-time op registry, generated from ops/specs: what gradcheck, the op check and the
// generated tests iterate. Each op can be called "boxed", with its arguments as Values.
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::registry {

// One argument value. std::monostate stands for "none" (undefined Tensor?, empty optional).
using Value = std::variant<std::monostate, Tensor, std::vector<Tensor>, Scalar, int64_t,
                           std::vector<int64_t>, double, bool, std::string, DType, Device>;

struct ArgInfo {
  std::string name;
  std::string type;                  // spec type: "Tensor", "int[]", "Scalar?", ...
  bool differentiable = true;        // Tensor args only
  std::vector<std::string> dtypes;   // allowed dtypes (Tensor args), already expanded
  std::vector<std::string> allowed;  // string args: allowed values
  bool has_default = false;
  std::string default_json;  // the spec's default, as JSON text
};

struct OutputInfo {
  std::string name;
  bool differentiable = true;
};

using BoxedFn = std::vector<Tensor> (*)(const std::vector<Value>& args);

struct OpInfo {
  std::string name, doc, spec_file;
  std::vector<ArgInfo> args;
  std::vector<OutputInfo> returns;
  std::vector<std::string> variants;  // "function", "method", "inplace"
  std::vector<std::string> dtypes;    // op-level dtypes, expanded
  bool differentiable = true;
  std::vector<std::pair<std::string, std::string>> formulas;  // input -> backward formula
  std::vector<std::string> kernel_keys;                       // "CPU", "CUDA" (built ones)
  std::string samples_json;        // the spec's "samples" array, as JSON text
  BoxedFn call = nullptr;          // tg::name(args...): all outputs
  BoxedFn call_method = nullptr;   // args[0].name(args[1:]...), null without a method
  BoxedFn call_inplace = nullptr;  // tg::name_(args...): returns {self}; null without
};

const std::vector<OpInfo>& all_ops();
const OpInfo* find_op(const std::string& name);  // null when unknown

// Unboxing helpers used by the generated code.
[[noreturn]] void bad_value(const char* op, size_t index, const char* expected);
template <typename T> const T& get(const char* op, const std::vector<Value>& args, size_t i) {
  if (i >= args.size() || !std::holds_alternative<T>(args[i])) bad_value(op, i, typeid(T).name());
  return std::get<T>(args[i]);
}
Tensor get_optional_tensor(const char* op, const std::vector<Value>& args, size_t i);
std::optional<int64_t> get_optional_int(const char* op, const std::vector<Value>& args, size_t i);
std::optional<Scalar> get_optional_scalar(const char* op, const std::vector<Value>& args, size_t i);
std::optional<DType> get_optional_dtype(const char* op, const std::vector<Value>& args, size_t i);

}  // namespace tg::registry
