#pragma once
// opgen's model of a spec (Arg, Ret, Op) and the functions its three parts share.
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
