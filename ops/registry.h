#pragma once
// The run-time op registry, generated from ops/specs: what gradcheck, the op check and the
// generated tests iterate. Each op can be called "boxed", with its arguments as Values. User
// libraries built with tapegrad_add_ops (the installed package's CMake function) add their ops
// when they are loaded (register_library); one op per name across tapegrad and every library.
#include <deque>
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
  bool writes = false;       // updated in place by the op (batch_norm's running statistics)
};

struct OutputInfo {
  std::string name;
  bool differentiable = true;
};

using BoxedFn = std::vector<Tensor> (*)(const std::vector<Value>& args);

struct OpInfo {
  std::string name, doc, spec_file;
  std::string library = "tapegrad";  // "tapegrad" for built-in ops, else the user library
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

// Every op: the built-in ones, then those of each loaded user library. A deque, so that references
// to entries stay valid when a library registers more.
const std::deque<OpInfo>& all_ops();
const OpInfo* find_op(const std::string& name);  // null when unknown

/// Adds a user library's ops. Throws ValueError, registering none of them, when a name is taken
/// (by a built-in op, another library, or twice in this one), naming both spec files.
void register_library(const std::string& library, std::vector<OpInfo> ops);
/// What the generated code of a user library runs while it loads: register_library, and on an
/// error prints it (to stderr) and aborts, since no caller could catch it there.
bool register_library_at_load(const std::string& library, std::vector<OpInfo> ops) noexcept;
// The built-in ops (generated registry.cpp).
std::vector<OpInfo> builtin_ops();

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
