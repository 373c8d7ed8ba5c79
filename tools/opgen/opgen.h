#pragma once
// opgen's model of a spec (Arg, Ret, Op) and the functions its three parts share.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace opgen {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Arg {
  std::string name, type;
  json default_value;
  bool has_default = false;
  bool differentiable = true;
  bool writes = false;  // the kernel updates this tensor in place (batch_norm's running stats)
  std::vector<std::string> dtypes;
  std::vector<std::string> allowed;
  bool is_tensor() const { return type == "Tensor" || type == "Tensor?" || type == "Tensor[]"; }
  bool is_diff_tensor() const { return is_tensor() && differentiable; }
};

struct Ret {
  std::string name;
  bool differentiable = true;
  // Returned by the kernel for the backward formulas only (layer_norm's mean and rstd): the node
  // saves it, the public function does not return it. Internal outputs come last.
  bool internal = false;
};

struct Op {
  std::string file, name, doc;
  std::vector<Arg> args;
  std::vector<Ret> rets;
  std::set<std::string> variants;
  std::vector<std::string> dtypes;
  std::vector<std::pair<std::string, std::string>> kernels;  // key -> function
  std::string check;  // "checks::scatter": tg::checks::scatter(<the op's params>), or empty
  std::vector<std::pair<std::string, std::string>>
      backward;  // inputs ("self" or "self, src") -> formula (arg order)
  bool differentiable = true;
  json samples;

  bool has_variant(const std::string& v) const { return variants.count(v) > 0; }
  const Arg* find_arg(const std::string& n) const {
    for (const auto& a : args)
      if (a.name == n) return &a;
    return nullptr;
  }
  const Ret* find_ret(const std::string& n) const {
    for (const auto& r : rets)
      if (r.name == n) return &r;
    return nullptr;
  }
  std::vector<const Arg*> diff_inputs() const {
    std::vector<const Arg*> v;
    for (const auto& a : args)
      if (a.is_diff_tensor()) v.push_back(&a);
    return v;
  }
  size_t num_public_outputs() const {
    return static_cast<size_t>(
        std::count_if(rets.begin(), rets.end(), [](const Ret& r) { return !r.internal; }));
  }
  bool has_internal_outputs() const { return num_public_outputs() < rets.size(); }
  size_t num_diff_outputs() const {
    return static_cast<size_t>(
        std::count_if(rets.begin(), rets.end(), [](const Ret& r) { return r.differentiable; }));
  }
};

// What opgen generates: tapegrad's own ops (namespace tg, the Tensor methods, the built-in
// registry), or, with --namespace, a user library's ops (tapegrad_add_ops in the installed
// package): functions in the user's namespace, registered at load under the library's name.
struct Mode {
  bool out_of_tree = false;
  std::string ns = "tg";              // namespace of the functions, kernels and checks
  std::string library = "tapegrad";   // the registry's name for the ops' library
  std::vector<std::string> includes;  // headers the backward formulas need (user helpers)
};
extern Mode mode;
// A C++ type of tapegrad's as a header of mode.ns may spell it ("tg::Tensor" out of tree).
std::string qualify_types(const std::string& cpp);

// The inputs a backward key names: "self" -> {self}; "self, src" -> {self, src}.
std::vector<std::string> backward_inputs(const std::string& key);

[[noreturn]] void spec_fail(const Op& op, const std::string& key, const std::string& what);

// spec.cpp: one JSON op object -> Op (every key checked).
Op parse_op(const std::string& file, const json& j);
// spec.cpp: the text of one spec file (an op object or an array of them) -> its ops. Every
// problem, malformed JSON included, is a SpecError that starts with the file name.
std::vector<Op> parse_spec_text(const std::string& file, const std::string& text);

// emit_text.cpp: C++ text of spec values.
std::string cpp_string_literal(const std::string& s);  // any bytes, escaped
std::string cpp_param_type(const std::string& type);   // "Tensor?" -> "const Tensor&"
std::string cpp_saved_type(const std::string& type);   // as a node member: "int[]" -> vector
std::string dtype_constant(const std::string& name);   // "float32" -> "kFloat32" ("" if unknown)
std::string cpp_default(const Op& op, const Arg& a);
std::string tuple_type(size_t count);          // Tensor, or std::tuple<Tensor, ...>
std::string return_type(const Op& op);         // every output: the kernels' type
std::string public_return_type(const Op& op);  // without internal outputs
// "const Tensor& self, const Scalar& alpha = 1"; skip_self drops the self arg (methods).
std::string params(const Op& op, bool with_defaults, bool skip_self = false);
// "self, other, alpha", self spelled self_replacement if given.
std::string arg_names(const Op& op, const std::string& self_replacement = "");
std::string camel(const std::string& snake);  // "layer_norm" -> "LayerNorm"

// emit.cpp: the generated files, filled op by op.
struct Out {
  std::ostringstream functions_h, methods_h, kernels_h, internal_h, ops_cpp, autograd_cpp,
      registry_cpp, tests_cpp;
};
void emit_op(const Op& op, Out& out, std::ostringstream& kernel_regs,
             std::ostringstream& autograd_regs, std::ostringstream& entries);
void emit_prologues(Out& out);
// emit_oot.cpp: the same files for a user library (mode.out_of_tree).
void emit_prologues_oot(Out& out);
void emit_epilogues_oot(Out& out, const std::ostringstream& kernel_regs,
                        const std::ostringstream& autograd_regs, const std::ostringstream& entries);
void emit_epilogues(Out& out, const std::ostringstream& kernel_regs,
                    const std::ostringstream& autograd_regs, const std::ostringstream& entries);

}  // namespace opgen
