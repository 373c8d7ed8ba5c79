// opgen, part 2: writing C++ from specs (front ends, kernels' declarations, autograd nodes,
// the registry and one doctest case per op).
#include <algorithm>
#include <map>
#include <utility>

#include "opgen.h"

namespace opgen {

namespace {

// ---- backward formula analysis -----------------------------------------------------------------

// What a formula needs saved. "X_shape"-style names come from rewriting X.shape() etc.
struct FormulaUse {
  std::string text;             // formula with X.shape() rewritten to X_shape
  std::set<std::string> names;  // referenced saved names (args, outputs, X_shape, ...)
  bool uses_grad = false, uses_grads = false;
  bool uses_mask = false;  // grad_input_mask: which of the key's inputs need a gradient
};

const std::vector<std::string> kTensorProps = {"shape", "dtype", "dim", "numel", "device"};

std::string prop_type(const std::string& prop) {
  if (prop == "shape") return "Shape";
  if (prop == "dtype") return "DType";
  if (prop == "device") return "Device";
  return "int64_t";
}

// "X.shape()" (spaces allowed around . ( )) -> "X_shape" for X in names and the props above, in one
// pass over the words: a regex per (name, prop) made opgen slow on specs with many arguments.
std::string rewrite_props(const std::string& text, const std::set<std::string>& names) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  auto skip_spaces = [&](size_t i) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    return i;
  };
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!is_word(text[i]) || (i > 0 && is_word(text[i - 1]))) {
      out += text[i++];
      continue;
    }
    size_t e = i;
    while (e < text.size() && is_word(text[e])) ++e;
    const std::string word = text.substr(i, e - i);
    size_t j = skip_spaces(e);
    if (names.count(word) && j < text.size() && text[j] == '.') {
      j = skip_spaces(j + 1);
      size_t pe = j;
      while (pe < text.size() && is_word(text[pe])) ++pe;
      const std::string prop = text.substr(j, pe - j);
      size_t k = skip_spaces(pe);
      if (std::count(kTensorProps.begin(), kTensorProps.end(), prop) && k < text.size() &&
          text[k] == '(') {
        k = skip_spaces(k + 1);
        if (k < text.size() && text[k] == ')') {
          out += word + "_" + prop;
          i = k + 1;
          continue;
        }
      }
    }
    out += word;
    i = e;
  }
  return out;
}

FormulaUse analyse_formula(const Op& op, const std::string& input, const std::string& formula) {
  FormulaUse use;
  std::string text = formula;
  std::set<std::string> tensorish;  // tensor args and outputs
  for (const auto& a : op.args)
    if (a.is_tensor() && a.type != "Tensor[]") tensorish.insert(a.name);
  for (const auto& r : op.rets) tensorish.insert(r.name);
  text = rewrite_props(text, tensorish);
  use.text = text;

  static const std::set<std::string> kAllowedWords = {"true",   "false",       "nullptr",
                                                      "std",    "Tensor",      "Scalar",
                                                      "Shape",  "IntArrayRef", "int64_t",
                                                      "double", "float",       "bool",
                                                      "size_t", "auto",        "static_cast",
                                                      "const",  "formulas",    "tg"};
  std::set<std::string> known = {"grad", "grads", "grad_input_mask"};
  for (const auto& a : op.args) known.insert(a.name);
  for (const auto& r : op.rets) known.insert(r.name);
  for (const auto& t : tensorish)
    for (const auto& p : kTensorProps) known.insert(t + "_" + p);

  size_t i = 0;
  const std::string key = "backward." + input;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"' || c == '\'') {  // skip string/char literals
      size_t j = i + 1;
      while (j < text.size() && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // numbers, including 1e-6 and 2.5f
      while (i < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
              ((text[i] == '-' || text[i] == '+') && (text[i - 1] == 'e' || text[i - 1] == 'E'))))
        ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
        ++j;
      std::string word = text.substr(i, j - i);
      size_t before = i;
      while (before > 0 && std::isspace(static_cast<unsigned char>(text[before - 1]))) --before;
      bool member =
          before > 0 && (text[before - 1] == '.' ||
                         (before > 1 && text[before - 1] == ':' && text[before - 2] == ':') ||
                         (before > 1 && text[before - 1] == '>' && text[before - 2] == '-'));
      size_t after = j;
      while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
      bool call = after < text.size() &&
                  (text[after] == '(' ||
                   (text[after] == ':' && after + 1 < text.size() && text[after + 1] == ':') ||
                   text[after] == '<');
      bool constant =
          word.size() > 1 && word[0] == 'k' && std::isupper(static_cast<unsigned char>(word[1]));
      if (!member && !call && !constant && !kAllowedWords.count(word)) {
        if (!known.count(word))
          spec_fail(op, key, "unknown identifier '" + word + "' in formula \"" + formula + "\"");
        if (word == "grad") {
          use.uses_grad = true;
        } else if (word == "grads") {
          use.uses_grads = true;
        } else if (word == "grad_input_mask") {
          use.uses_mask = true;
        } else {
          use.names.insert(word);
        }
      }
      i = j;
      continue;
    }
    ++i;
  }
  return use;
}

// ---- code generation
// -----------------------------------------------------------------------------

const char* kBanner = "// @generated from ops/specs/*.json by tools/opgen. Do not edit.\n";

std::string fn_ptr_type(const Op& op) {
  return return_type(op) + " (*)(" + params(op, false) + ")";
}

// Tensor args as a list of pointers, for checks and key sets (excludes Tensor[]).
std::vector<const Arg*> plain_tensor_args(const Op& op) {
  std::vector<const Arg*> v;
  for (const auto& a : op.args)
    if (a.type == "Tensor" || a.type == "Tensor?") v.push_back(&a);
  return v;
}

std::string dtype_mask(const std::vector<std::string>& dtypes) {
  std::string s;
  for (const auto& d : dtypes)
    s += (s.empty() ? "" : " | ") + std::string("detail::dtype_bit(") + dtype_constant(d) + ")";
  return s.empty() ? "0u" : s;
}

std::string dtype_list_text(const std::vector<std::string>& dtypes) {
  std::string s;
  for (const auto& d : dtypes) s += (s.empty() ? "" : ", ") + d;
  return s;
}

// The function that checks and dispatches: the op itself, or, for an op with internal outputs,
// <op>_with_internal (every output; the autograd kernel calls it to save them). Beside the op,
// not in a detail namespace: a user library's namespace::detail would hide tg::detail, which
// the generated code calls.
std::string dispatching_name(const Op& op) {
  return op.has_internal_outputs() ? op.name + "_with_internal" : op.name;
}

void emit_front_end(const Op& op, Out& out) {
  const std::string ret = public_return_type(op);
  // Declarations.
  out.functions_h << "/// " << op.doc << "\n"
                  << ret << " " << op.name << "(" << params(op, true) << ");\n";
  if (op.has_internal_outputs())
    out.functions_h << "/// " << op.name
                    << " with its internal outputs too (what its backward uses).\n"
                    << return_type(op) << " " << dispatching_name(op) << "(" << params(op, true)
                    << ");\n";
  if (op.has_variant("inplace"))
    out.functions_h << "/// In-place " << op.name << ": writes the result into self.\n"
                    << qualify_types("Tensor") << " " << op.name << "_(" << params(op, true)
                    << ");\n";
  if (op.has_variant("method")) {
    out.methods_h << "/// " << op.doc << "\n"
                  << ret << " " << op.name << "(" << params(op, true, true) << ") const;\n";
    if (op.has_variant("inplace"))
      out.methods_h << "const Tensor& " << op.name << "_(" << params(op, true, true)
                    << ") const;\n";
  }
  out.internal_h << "extern OpTable<" << fn_ptr_type(op) << "> " << op.name << "_table;\n";

  // Definition: checks, key set, dispatch.
  auto& c = out.ops_cpp;
  c << "OpTable<" << fn_ptr_type(op) << "> " << op.name << "_table{\"" << op.name << "\", {}};\n\n";
  c << return_type(op) << " " << dispatching_name(op) << "(" << params(op, false) << ") {\n";
  c << "  constexpr const char* op = \"" << op.name << "\";\n";
  c << "  DispatchKeySet keys;\n  const Tensor* first = nullptr;\n";
  for (const auto& a : op.args) {
    if (!a.is_tensor()) continue;
    const auto& dts = a.dtypes.empty() ? op.dtypes : a.dtypes;
    std::string check = "detail::check_tensor_arg(op, \"" + a.name + "\", ";
    std::string tail =
        ", " + dtype_mask(dts) + ", \"" + dtype_list_text(dts) + "\", first, keys);\n";
    if (a.type == "Tensor") {
      c << "  " << check << a.name << tail;
    } else if (a.type == "Tensor?") {
      c << "  if (" << a.name << ".defined()) " << check << a.name << tail;
    } else {
      c << "  detail::check_tensor_list(op, \"" << a.name << "\", " << a.name << ", "
        << dtype_mask(dts) << ", \"" << dtype_list_text(dts) << "\", first, keys);\n";
    }
  }
  for (const auto& a : op.args)
    if (a.type == "string" && !a.allowed.empty()) {
      c << "  detail::check_choice(op, \"" << a.name << "\", " << a.name << ", {";
      for (size_t i = 0; i < a.allowed.size(); ++i)
        c << (i ? ", " : "") << cpp_string_literal(a.allowed[i]);
      c << "});\n";
    }
  // the op's own checks (shapes, dims, dtypes that must agree), before autograd and dispatch
  if (!op.check.empty()) c << "  " << op.check << "(" << arg_names(op) << ");\n";
  if (!op.differentiable) c << "  keys = keys.remove(DispatchKey::Autograd);\n";
  c << "  return " << op.name << "_table.lookup(select_key(keys))(" << arg_names(op) << ");\n}\n\n";
  if (op.has_internal_outputs()) {  // the public function: the public outputs only
    c << ret << " " << op.name << "(" << params(op, false)
      << ") {\n  auto all = " << dispatching_name(op) << "(" << arg_names(op) << ");\n  return {";
    for (size_t i = 0; i < op.num_public_outputs(); ++i)
      c << (i ? ", " : "") << "std::move(std::get<" << i << ">(all))";
    c << "};\n}\n\n";
  }

  if (op.has_variant("inplace")) {
    std::string others;
    for (const auto* a : plain_tensor_args(op))
      if (a->name != "self") others += (others.empty() ? "" : ", ") + std::string("&") + a->name;
    c << "Tensor " << op.name << "_(" << params(op, false) << ") {\n"
      << "  return detail::apply_inplace(\"" << op.name << "_\", self, {" << others << "},\n"
      << "      [&](const Tensor& self_value) { return " << op.name << "("
      << arg_names(op, "self_value") << "); });\n}\n\n";
  }
  if (op.has_variant("method")) {
    std::string call_args = arg_names(op, "*this");
    c << ret << " Tensor::" << op.name << "(" << params(op, false, true)
      << ") const {\n  return tg::" << op.name << "(" << call_args << ");\n}\n\n";
    if (op.has_variant("inplace"))
      c << "const Tensor& Tensor::" << op.name << "_(" << params(op, false, true)
        << ") const {\n  tg::" << op.name << "_(" << call_args << ");\n  return *this;\n}\n\n";
  }
}

void emit_kernels(const Op& op, Out& out, std::ostringstream& registrations) {
  if (!op.check.empty())
    out.kernels_h << "namespace " << mode.ns << "::checks { void "
                  << op.check.substr(op.check.rfind("::") + 2) << "(" << params(op, false)
                  << "); }\n";
  for (const auto& [key, fn] : op.kernels) {
    size_t pos = fn.rfind("::");
    std::string ns = fn.substr(0, pos), name = fn.substr(pos + 2);
    bool cuda = key == "CUDA";
    if (cuda) out.kernels_h << "#ifdef TG_WITH_CUDA\n";
    out.kernels_h << "namespace " << mode.ns << "::" << ns << " { " << return_type(op) << " "
                  << name << "(" << params(op, false) << "); }\n";
    if (cuda) out.kernels_h << "#endif\n";
    if (cuda) registrations << "#ifdef TG_WITH_CUDA\n";
    if (key == "Default") {
      registrations << "  " << op.name << "_table.set(DispatchKey::CPU, &" << fn << ");\n";
      registrations << "#ifdef TG_WITH_CUDA\n  " << op.name << "_table.set(DispatchKey::CUDA, &"
                    << fn << ");\n#endif\n";
    } else {
      registrations << "  " << op.name << "_table.set(DispatchKey::" << key << ", &" << fn
                    << ");\n";
    }
    if (cuda) registrations << "#endif\n";
  }
}

// Names of outputs as C++ expressions on `result`.
std::string output_expr(const Op& op, size_t i) {
  return op.rets.size() == 1 ? std::string("result")
                             : "std::get<" + std::to_string(i) + ">(result)";
}

void emit_autograd(const Op& op, Out& out, std::ostringstream& registrations) {
  if (!op.differentiable) return;
  const std::string node = camel(op.name) + "Backward";
  auto diff_inputs = op.diff_inputs();
  bool list_input = diff_inputs.size() == 1 && diff_inputs[0]->type == "Tensor[]";

  // Analyse every formula: which saved names each one needs.
  std::vector<FormulaUse> uses;
  std::set<std::string> saved;
  for (const auto& [input, formula] : op.backward) {
    uses.push_back(analyse_formula(op, input, formula));
    saved.insert(uses.back().names.begin(), uses.back().names.end());
  }
  // Index of each input among the node's edges.
  auto edge_index = [&](const std::string& input) {
    for (size_t i = 0; i < diff_inputs.size(); ++i)
      if (diff_inputs[i]->name == input) return i;
    return size_t{0};
  };
  // "needs_input_grad(2)": whether `input` needs a gradient (any input, for a Tensor[] input)
  auto needs_grad = [&](const std::string& input, const std::string& prefix) {
    if (list_input) return prefix + "any_input_needs_grad()";
    return prefix + "needs_input_grad(" + std::to_string(edge_index(input)) + ")";
  };
  // "needs_input_grad(0) || needs_input_grad(2)": some input of backward key k needs a gradient
  auto key_condition = [&](size_t k, const std::string& prefix) {
    std::string cond;
    for (const auto& input : backward_inputs(op.backward[k].first))
      cond += (cond.empty() ? "" : " || ") + needs_grad(input, prefix);
    return cond;
  };
  auto needed_condition =
      [&](const std::string& name) {  // save `name` if any input using it needs grad
        std::string cond;
        for (size_t k = 0; k < op.backward.size(); ++k)
          if (uses[k].names.count(name)) {
            std::string c = key_condition(k, "node->");
            if (cond.find(c) == std::string::npos) cond += (cond.empty() ? "" : " || ") + c;
          }
        return cond;
      };
  // Classify a saved name: tensor input, tensor list, output, property, or plain value.
  struct Saved {
    std::string name, member, member_type, unpack, store;
    bool is_output = false;
  };
  std::vector<Saved> saved_items;
  for (const auto& s : saved) {
    Saved item;
    item.name = s;
    item.member = s + "_";
    const Arg* a = op.find_arg(s);
    const Ret* r = op.find_ret(s);
    size_t us = s.rfind('_');
    if (a && (a->type == "Tensor" || a->type == "Tensor?")) {
      item.member_type = "autograd::SavedTensor";
      item.store = "autograd::SavedTensor(" + s + ", false)";
      item.unpack = "const Tensor " + s + " = " + item.member + ".unpack(*this);";
    } else if (a && a->type == "Tensor[]") {
      item.member_type = "std::vector<autograd::SavedTensor>";
      item.store = "autograd::save_list(" + s + ")";
      item.unpack = "const std::vector<Tensor> " + s + " = autograd::unpack_list(" + item.member +
                    ", *this);";
    } else if (a) {
      item.member_type = cpp_saved_type(a->type);
      item.store = a->type == "int[]" ? s + ".vec()" : s;
      item.unpack = "const auto& " + s + " = " + item.member + ";";
    } else if (r) {
      size_t idx = static_cast<size_t>(r - op.rets.data());
      item.member_type = "autograd::SavedTensor";
      item.store = "autograd::SavedTensor(" + output_expr(op, idx) + ", " +
                   (r->differentiable ? "true" : "false") + ")";
      item.is_output = true;
      item.unpack = "const Tensor " + s + " = " + item.member + ".unpack(*this);";
    } else if (us != std::string::npos) {  // X_shape, X_dtype, ...
      std::string base = s.substr(0, us), prop = s.substr(us + 1);
      const Ret* rb = op.find_ret(base);
      std::string src = rb ? output_expr(op, static_cast<size_t>(rb - op.rets.data())) : base;
      item.member_type = prop_type(prop);
      item.store = src + "." + prop + "()";
      item.unpack = "const auto& " + s + " = " + item.member + ";";
    }
    saved_items.push_back(item);
  }

  auto& c = out.autograd_cpp;
  c << "namespace generated {\n// " << op.name << ": " << op.doc << "\nstruct " << node
    << " final : autograd::Node {\n";
  for (const auto& it : saved_items) c << "  " << it.member_type << " " << it.member << ";\n";
  c << "  const char* name() const override { return \"" << node << "\"; }\n";
  c << "  std::vector<std::pair<std::string, std::string>> formulas() const override {\n    return "
       "{";
  for (size_t k = 0; k < op.backward.size(); ++k)
    c << (k ? ", " : "") << "{" << cpp_string_literal(op.backward[k].first) << ", "
      << cpp_string_literal(op.backward[k].second) << "}";
  c << "};\n  }\n";
  c << "  void release_saved() override {\n";
  for (const auto& it : saved_items)
    if (it.member_type == "autograd::SavedTensor")
      c << "    " << it.member << ".reset();\n";
    else if (it.member_type == "std::vector<autograd::SavedTensor>")
      c << "    for (auto& s : " << it.member << ") s.reset();\n";
  c << "  }\n";
  c << "  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {\n";
  c << "    std::vector<Tensor> grad_inputs = autograd::new_grad_list(next_edges.size());\n";
  for (size_t k = 0; k < op.backward.size(); ++k) {
    const auto& [key, formula] = op.backward[k];
    const FormulaUse& u = uses[k];
    const std::vector<std::string> inputs = backward_inputs(key);
    c << "    if (" << key_condition(k, "") << ") {\n";
    if (u.uses_grad) c << "      const Tensor& grad = grads[0];\n";
    for (const auto& it : saved_items)
      if (u.names.count(it.name)) c << "      " << it.unpack << "\n";
    if (u.uses_mask) {
      c << "      const std::array<bool, " << inputs.size() << "> grad_input_mask{";
      for (size_t m = 0; m < inputs.size(); ++m) c << (m ? ", " : "") << needs_grad(inputs[m], "");
      c << "};\n";
    }
    c << "      // " << key << ": " << formula << "\n";
    if (list_input) {
      c << "      grad_inputs = " << u.text << ";\n";
    } else if (inputs.size() == 1) {
      c << "      grad_inputs[" << edge_index(key) << "] = " << u.text << ";\n";
    } else {  // one call, the gradients of the key's inputs in order
      c << "      auto parts = " << u.text << ";\n";
      for (size_t m = 0; m < inputs.size(); ++m)
        c << "      grad_inputs[" << edge_index(inputs[m]) << "] = std::move(std::get<" << m
          << ">(parts));\n";
    }
    c << "    }\n";
  }
  c << "    (void)grads;\n    return grad_inputs;\n  }\n};\n}  // namespace generated\n\n";

  // The Autograd kernel: run below autograd, then record.
  const std::string ret = return_type(op);
  c << "static " << ret << " " << op.name << "_autograd(" << params(op, false) << ") {\n";
  c << "  " << ret
    << " result;\n  {\n    AutoGradMode below_autograd(false);\n    result = " << mode.ns
    << "::" << dispatching_name(op) << "(" << arg_names(op) << ");\n  }\n";
  std::string inputs_list;
  if (list_input) {
    inputs_list = diff_inputs[0]->name;
  } else {
    inputs_list = "{";
    for (size_t i = 0; i < diff_inputs.size(); ++i)
      inputs_list += (i ? ", &" : "&") + diff_inputs[i]->name;
    inputs_list += "}";
  }
  c << "  if (!autograd::any_requires_grad(" << inputs_list << ")) return result;\n";
  c << "  auto node = make_pooled<generated::" << node << ">();\n";
  c << "  autograd::collect_inputs(*node, " << inputs_list << ");\n";
  std::string outs = "{";
  bool first = true;
  for (size_t i = 0; i < op.rets.size(); ++i)
    if (op.rets[i].differentiable) {
      outs += (first ? "&" : ", &") + output_expr(op, i);
      first = false;
    }
  outs += "}";
  for (const auto& it : saved_items) {
    if (it.is_output) continue;
    c << "  if (" << needed_condition(it.name) << ") node->" << it.member << " = " << it.store
      << ";\n";
  }
  c << "  autograd::set_history(node, " << outs << ");\n";
  for (const auto& it : saved_items)
    if (it.is_output)
      c << "  if (" << needed_condition(it.name) << ") node->" << it.member << " = " << it.store
        << ";\n";
  c << "  return result;\n}\n\n";
  registrations << "  " << op.name << "_table.set(DispatchKey::Autograd, &" << op.name
                << "_autograd);\n";
}

std::string unbox(const Op& op, const Arg& a, size_t i) {
  std::string head = "(\"" + op.name + "\", args, " + std::to_string(i) + ")";
  if (a.type == "Tensor") return "get<Tensor>" + head;
  if (a.type == "Tensor?") return "get_optional_tensor" + head;
  if (a.type == "Tensor[]") return "get<std::vector<Tensor>>" + head;
  if (a.type == "int") return "get<int64_t>" + head;
  if (a.type == "int?") return "get_optional_int" + head;
  if (a.type == "int[]") return "get<std::vector<int64_t>>" + head;
  if (a.type == "float") return "get<double>" + head;
  if (a.type == "Scalar") return "get<Scalar>" + head;
  if (a.type == "Scalar?") return "get_optional_scalar" + head;
  if (a.type == "bool") return "get<bool>" + head;
  if (a.type == "string") return "get<std::string>" + head;
  if (a.type == "DType") return "get<DType>" + head;
  if (a.type == "DType?") return "get_optional_dtype" + head;
  return "get<Device>" + head;
}

// The public outputs of a call as a list.
std::string as_outputs(const Op& op, const std::string& call) {
  if (op.num_public_outputs() == 1) return "return {" + call + "};";
  std::string s = "auto r = " + call + ";\n    return {";
  for (size_t i = 0; i < op.num_public_outputs(); ++i)
    s += (i ? ", " : "") + std::string("std::get<") + std::to_string(i) + ">(r)";
  return s + "};";
}

void emit_registry(const Op& op, Out& out, std::ostringstream& entries) {
  auto& c = out.registry_cpp;
  std::string boxed_args, method_args, self_expr;
  for (size_t i = 0; i < op.args.size(); ++i) {
    std::string u = unbox(op, op.args[i], i);
    boxed_args += (i ? ", " : "") + u;
    if (op.args[i].name == "self") {
      self_expr = u;
    } else {
      method_args += (method_args.empty() ? "" : ", ") + u;
    }
  }
  c << "std::vector<Tensor> call_" << op.name << "(const std::vector<Value>& args) {\n    "
    << as_outputs(op, mode.ns + "::" + op.name + "(" + boxed_args + ")") << "\n}\n";
  if (op.has_variant("method"))
    c << "std::vector<Tensor> call_method_" << op.name << "(const std::vector<Value>& args) {\n    "
      << as_outputs(op, self_expr + "." + op.name + "(" + method_args + ")") << "\n}\n";
  if (op.has_variant("inplace"))
    c << "std::vector<Tensor> call_inplace_" << op.name
      << "(const std::vector<Value>& args) {\n    return {" << mode.ns << "::" << op.name << "_("
      << boxed_args << ")};\n}\n";
  c << "\n";

  auto strings = [](const std::vector<std::string>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + cpp_string_literal(v[i]);
    return s + "}";
  };
  // One small function per op, not one block each in a single huge function: compilers optimise
  // many small functions far faster (the one-function form was the slowest file of the build);
  // cold and not inlined: they run once, at start-up, so they are optimised for size.
  auto& e = c;
  entries << "  add_" << op.name << "_info(ops);\n";
  e << "[[gnu::cold, gnu::noinline]] void add_" << op.name
    << "_info(std::vector<OpInfo>& ops) {\n    OpInfo o;\n    o.name = \"" << op.name
    << "\";\n    o.doc = " << cpp_string_literal(op.doc)
    << ";\n    o.spec_file = " << cpp_string_literal(op.file)
    << ";\n    o.library = " << cpp_string_literal(mode.library) << ";\n";
  for (const auto& a : op.args) {
    const auto& dts =
        a.is_tensor() ? (a.dtypes.empty() ? op.dtypes : a.dtypes) : std::vector<std::string>{};
    e << "    o.args.push_back({\"" << a.name << "\", \"" << a.type << "\", "
      << (a.differentiable ? "true" : "false") << ", " << strings(dts) << ", " << strings(a.allowed)
      << ", " << (a.has_default ? "true" : "false") << ", "
      << cpp_string_literal(a.has_default ? a.default_value.dump() : "") << ", "
      << (a.writes ? "true" : "false") << "});\n";
  }
  for (const auto& r : op.rets)
    if (!r.internal)
      e << "    o.returns.push_back({\"" << r.name << "\", "
        << (r.differentiable ? "true" : "false") << "});\n";
  e << "    o.variants = "
    << strings(std::vector<std::string>(op.variants.begin(), op.variants.end())) << ";\n";
  e << "    o.dtypes = " << strings(op.dtypes) << ";\n";
  e << "    o.differentiable = " << (op.differentiable ? "true" : "false") << ";\n";
  for (const auto& [input, formula] : op.backward)
    e << "    o.formulas.emplace_back(" << cpp_string_literal(input) << ", "
      << cpp_string_literal(formula) << ");\n";
  for (const auto& [key, fn] : op.kernels) {
    if (key == "CUDA") e << "#ifdef TG_WITH_CUDA\n";
    if (key == "Default") {
      e << "    o.kernel_keys.push_back(\"CPU\");\n#ifdef TG_WITH_CUDA\n    "
           "o.kernel_keys.push_back(\"CUDA\");\n#endif\n";
    } else {
      e << "    o.kernel_keys.push_back(\"" << key << "\");\n";
    }
    if (key == "CUDA") e << "#endif\n";
  }
  // Escaped, not a raw string: a sample string holding )tgjson" must not end the literal.
  e << "    o.samples_json = " << cpp_string_literal(op.samples.dump()) << ";\n";
  e << "    o.call = &call_" << op.name << ";\n";
  if (op.has_variant("method")) e << "    o.call_method = &call_method_" << op.name << ";\n";
  if (op.has_variant("inplace")) e << "    o.call_inplace = &call_inplace_" << op.name << ";\n";
  e << "    ops.push_back(std::move(o));\n}\n\n";

  out.tests_cpp << "TEST_CASE(\"op check: " << op.name << "\") {\n"
                << "  const auto* op = tg::registry::find_op(\"" << op.name << "\");\n"
                << "  REQUIRE(op != nullptr);\n"
                << "  tg::testing::OpReport r = tg::testing::check_op(*op);\n"
                << "  INFO(r.report);\n  CHECK(r.ok);\n}\n\n";
}

// A kernel named in a spec must be defined somewhere under the backend folders.

}  // namespace

void emit_prologues(Out& out) {
  out.functions_h << kBanner
                  << "#pragma once\n#include <optional>\n#include <string>\n#include "
                     "<tuple>\n#include <vector>\n\n"
                  << "#include <tapegrad/generated/tensor.h>\n\nnamespace tg {\n\n";
  // methods_h has no prologue: its declarations go into class Tensor (see fill_tensor_template).
  out.kernels_h << kBanner
                << "#pragma once\n#include <optional>\n#include <string>\n#include "
                   "<tuple>\n#include <vector>\n\n"
                << "#include <tapegrad/generated/tensor.h>\n\n";
  out.internal_h << kBanner
                 << "#pragma once\n#include <tapegrad/core/dispatch.h>\n#include "
                    "<tapegrad/generated/functions.h>\n\nnamespace tg {\n";
  out.ops_cpp << kBanner << "#include <tapegrad/autograd/inplace.h>\n"
              << "#include <tapegrad/ops/checks/arguments.h>\n"
              << "#include <tapegrad/generated/kernels.h>\n#include "
                 "\"ops_internal.h\"\n\nnamespace tg {\n\n";
  out.autograd_cpp << kBanner
                   << "#include <array>\n#include <tuple>\n\n#include "
                      "<tapegrad/autograd/formulas.h>\n#include <tapegrad/autograd/node.h>\n"
                   << "#include <tapegrad/ops/factories.h>\n#include <tapegrad/ops/operators.h>\n"
                   << "#include \"ops_internal.h\"\n\n"
                   << "namespace tg {\nusing namespace tg::formulas;\n\n";
  out.registry_cpp
      << kBanner
      << "#include <tapegrad/generated/functions.h>\n#include <tapegrad/ops/registry.h>\n\n"
      << "namespace tg::registry {\nnamespace {\n\n";
  out.tests_cpp << kBanner
                << "#include <doctest/doctest.h>\n\n#include <tapegrad/testing/check.h>\n#include "
                   "<tapegrad/ops/registry.h>\n\n";
}

void emit_op(const Op& op, Out& out, std::ostringstream& kernel_regs,
             std::ostringstream& autograd_regs, std::ostringstream& entries) {
  emit_front_end(op, out);
  emit_kernels(op, out, kernel_regs);
  emit_autograd(op, out, autograd_regs);
  emit_registry(op, out, entries);
}

void emit_epilogues(Out& out, const std::ostringstream& kernel_regs,
                    const std::ostringstream& autograd_regs, const std::ostringstream& entries) {
  out.functions_h << "\n}  // namespace tg\n";
  out.internal_h << "}  // namespace tg\n";
  out.ops_cpp << "namespace {\nstruct RegisterKernels {\n  RegisterKernels() {\n"
              << kernel_regs.str()
              << "  }\n} register_kernels;\n}  // namespace\n\n}  // namespace tg\n";
  out.autograd_cpp << "namespace {\nstruct RegisterAutograd {\n  RegisterAutograd() {\n"
                   << autograd_regs.str()
                   << "  }\n} register_autograd;\n}  // namespace\n\n}  // namespace tg\n";
  out.registry_cpp << "}  // namespace\n\nstd::vector<OpInfo> builtin_ops() {\n"
                   << "  std::vector<OpInfo> ops;\n"
                   << entries.str() << "  return ops;\n}\n\n}  // namespace tg::registry\n";
}

}  // namespace opgen
