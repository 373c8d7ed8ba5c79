// opgen, part 1: reading a spec. Every key is checked; a mistake names the file, op and key.
#include <algorithm>
#include <cstring>
#include <map>

#include <regex>

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

Mode mode;

std::string qualify_types(const std::string& cpp) {
  if (!mode.out_of_tree) return cpp;
  static const std::regex types(
      R"((^|[^:\w])(Tensor|Scalar|IntArrayRef|DType|Device|kCPU|kCUDA)\b)");
  return std::regex_replace(cpp, types, "$1tg::$2");
}

[[noreturn]] void spec_fail(const Op& op, const std::string& key, const std::string& what) {
  throw SpecError(op.file + ": op '" + op.name + "': key '" + key + "': " + what);
}

namespace {

const std::set<std::string> kArgTypes = {"Tensor", "Tensor?", "Tensor[]", "int",     "int?",
                                         "int[]",  "float",   "Scalar",   "Scalar?", "bool",
                                         "string", "DType",   "DType?",   "Device"};
const std::vector<std::string> kAllDtypes = {"bool", "int32", "int64", "float32", "float64"};
const std::vector<std::string> kKnownDtypes = {"bool",     "int32",   "int64",  "float16",
                                               "bfloat16", "float32", "float64"};
const std::set<std::string> kKernelKeys = {"CPU", "CUDA", "Default"};
constexpr int kMaxJsonDepth = 32;  // a spec needs about 6 (samples nest values a few deep)
constexpr size_t kMaxFormulaBytes = 2000;
constexpr int kMaxFormulaDepth = 32;

// ---- typed access: a wrong JSON type is a spec error naming the key, never coerced -------------

const char* type_name(const json& v) { return v.type_name(); }

const std::string& as_string(const Op& op, const std::string& key, const json& v) {
  if (!v.is_string()) spec_fail(op, key, std::string("must be a string, got ") + type_name(v));
  return v.get_ref<const std::string&>();
}
bool as_bool(const Op& op, const std::string& key, const json& v) {
  if (!v.is_boolean())
    spec_fail(op, key, std::string("must be true or false, got ") + type_name(v));
  return v.get<bool>();
}
const json& as_array(const Op& op, const std::string& key, const json& v) {
  if (!v.is_array()) spec_fail(op, key, std::string("must be a list, got ") + type_name(v));
  return v;
}
const json& as_object(const Op& op, const std::string& key, const json& v) {
  if (!v.is_object()) spec_fail(op, key, std::string("must be an object, got ") + type_name(v));
  return v;
}
// obj[key] when present, else nullptr (obj is an object).
const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// ---- names and texts that become C++
// -------------------------------------------------------------

bool is_cpp_keyword(const std::string& s) {
  static const std::set<std::string> k = {"alignas",       "alignof",     "and",
                                          "and_eq",        "asm",         "auto",
                                          "bitand",        "bitor",       "bool",
                                          "break",         "case",        "catch",
                                          "char",          "char8_t",     "char16_t",
                                          "char32_t",      "class",       "compl",
                                          "concept",       "const",       "consteval",
                                          "constexpr",     "constinit",   "const_cast",
                                          "continue",      "co_await",    "co_return",
                                          "co_yield",      "decltype",    "default",
                                          "delete",        "do",          "double",
                                          "dynamic_cast",  "else",        "enum",
                                          "explicit",      "export",      "extern",
                                          "false",         "float",       "for",
                                          "friend",        "goto",        "if",
                                          "inline",        "int",         "long",
                                          "mutable",       "namespace",   "new",
                                          "noexcept",      "not",         "not_eq",
                                          "nullptr",       "operator",    "or",
                                          "or_eq",         "private",     "protected",
                                          "public",        "register",    "reinterpret_cast",
                                          "requires",      "return",      "short",
                                          "signed",        "sizeof",      "static",
                                          "static_assert", "static_cast", "struct",
                                          "switch",        "template",    "this",
                                          "thread_local",  "throw",       "true",
                                          "try",           "typedef",     "typeid",
                                          "typename",      "union",       "unsigned",
                                          "using",         "virtual",     "void",
                                          "volatile",      "wchar_t",     "while",
                                          "xor",           "xor_eq",      "final",
                                          "override",      "import",      "module"};
  return k.count(s) > 0;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 100) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// A name pasted into C++ (op, argument, return): an identifier, not a keyword, not reserved.
const std::string& check_name(const Op& op, const std::string& key, const std::string& name) {
  if (!is_identifier(name))
    spec_fail(op, key, "'" + name + "' is not a C++ identifier (letters, digits, _; at most 100)");
  if (is_cpp_keyword(name)) spec_fail(op, key, "'" + name + "' is a C++ keyword");
  if (name[0] == '_' || name.find("__") != std::string::npos)
    spec_fail(op, key, "'" + name + "' is reserved in C++ (leading _ or a double __)");
  return name;
}

// A one-line text that goes into // comments (doc): printable, no line break, and no trailing
// backslash (which would continue the comment onto the next generated line).
void check_comment_text(const Op& op, const std::string& key, const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7f)
      spec_fail(op, key,
                "must be one line of printable text (found control character " +
                    std::to_string(static_cast<int>(c)) + ")");
  if (!text.empty() && text.back() == '\\') spec_fail(op, key, "must not end with a backslash");
}

// A backward formula: an expression of calls, method calls, subscripts, arithmetic and comparison
// operators, number literals and names; nothing else (no statements, strings, casts or ::). Parsed
// by recursive descent with bounded depth, so a bad formula is an error naming the key.
class FormulaParser {
 public:
  FormulaParser(const Op& op, std::string key, const std::string& text)
      : op_(op), key_(std::move(key)), s_(text) {}
  void parse() {
    if (s_.size() > kMaxFormulaBytes)
      fail("is " + std::to_string(s_.size()) + " bytes long, more than " +
           std::to_string(kMaxFormulaBytes));
    skip();
    if (at_end()) fail("is empty");
    expr(0);
    skip();
    if (!at_end())
      fail("unexpected '" + std::string(1, s_[i_]) + "' at column " + std::to_string(i_ + 1));
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    spec_fail(op_, key_, "formula \"" + s_.substr(0, 200) + "\" " + what);
  }
  bool at_end() const { return i_ >= s_.size(); }
  void skip() {
    while (!at_end() && s_[i_] == ' ') ++i_;
  }
  bool eat(const char* tok) {
    skip();
    const size_t n = std::strlen(tok);
    if (s_.compare(i_, n, tok) != 0) return false;
    i_ += n;
    return true;
  }
  void expect(const char* tok) {
    if (!eat(tok)) fail(std::string("expected '") + tok + "' at column " + std::to_string(i_ + 1));
  }
  void enter(int depth) {
    if (depth > kMaxFormulaDepth)
      fail("nests more than " + std::to_string(kMaxFormulaDepth) + " levels");
  }
  void expr(int depth) {  // comparison (one, non-associative)
    enter(depth);
    additive(depth + 1);
    for (const char* op : {"<=", ">=", "==", "!=", "<", ">"})
      if (eat(op)) {
        additive(depth + 1);
        break;
      }
  }
  void additive(int depth) {
    term(depth);
    while (eat("+") || eat("-")) term(depth);
  }
  void term(int depth) {
    unary(depth);
    while (eat("*") || eat("/")) unary(depth);
  }
  void unary(int depth) {
    enter(depth);
    if (eat("-")) return unary(depth + 1);
    postfix(depth);
  }
  void postfix(int depth) {  // method calls and subscripts (grads[1], sizes[0])
    primary(depth);
    for (;;) {
      if (eat(".")) {
        identifier();
        expect("(");
        arguments(depth + 1);
      } else if (eat("[")) {
        expr(depth + 1);
        expect("]");
      } else {
        return;
      }
    }
  }
  void primary(int depth) {
    skip();
    if (at_end()) fail("ends early");
    const char c = s_[i_];
    if (std::isdigit(static_cast<unsigned char>(c))) return number();
    if (eat("(")) {
      expr(depth + 1);
      expect(")");
      return;
    }
    identifier();
    if (eat("(")) arguments(depth + 1);
  }
  void arguments(int depth) {  // after '(': [expr {, expr}] ')'
    if (eat(")")) return;
    do expr(depth);
    while (eat(","));
    expect(")");
  }
  void identifier() {
    skip();
    const size_t b = i_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
    const std::string word = s_.substr(b, i_ - b);
    if (word.empty() || std::isdigit(static_cast<unsigned char>(word[0])))
      fail("expected a name, number or '(' at column " + std::to_string(b + 1));
    if (is_cpp_keyword(word) && word != "true" && word != "false")
      fail("uses the C++ keyword '" + word + "'");
  }
  void number() {  // 12, 1.5, 2.0, 1e-05
    auto digits = [&] {
      while (!at_end() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    };
    digits();
    if (!at_end() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (!at_end() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (!at_end() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      const size_t b = i_;
      digits();
      if (i_ == b) fail("has a malformed number at column " + std::to_string(b + 1));
    }
    if (!at_end() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      fail("has a malformed number at column " + std::to_string(i_ + 1));
  }

  const Op& op_;
  std::string key_;
  const std::string& s_;
  size_t i_ = 0;
};

std::vector<std::string> expand_dtypes(const Op& op, const std::string& key, const json& j) {
  std::vector<std::string> out;
  for (const auto& d : as_array(op, key, j)) {
    const std::string& s = as_string(op, key, d);
    if (s == "all") {
      out.insert(out.end(), kAllDtypes.begin(), kAllDtypes.end());
    } else if (s == "floating") {
      out.insert(out.end(), {"float32", "float64"});
    } else if (s == "integral") {
      out.insert(out.end(), {"int32", "int64"});
    } else if (std::find(kKnownDtypes.begin(), kKnownDtypes.end(), s) != kKnownDtypes.end()) {
      out.push_back(s);
    } else {
      spec_fail(op, key, "unknown dtype '" + s.substr(0, 100) + "'");
    }
  }
  return out;
}

void check_keys(const Op& op, const std::string& where, const json& obj,
                const std::set<std::string>& allowed) {
  for (const auto& [k, v] : obj.items())
    if (!allowed.count(k))
      spec_fail(op, where.empty() ? k.substr(0, 100) : where + "." + k.substr(0, 100),
                "unknown key");
}

// A default must have the arg's type exactly (emit turns it into C++ without further checks).
void check_default(const Op& op, const Arg& a) {
  const std::string key = "args." + a.name + ".default";
  const json& d = a.default_value;
  const std::string& t = a.type;
  if (d.is_null()) {
    if (t.back() != '?') spec_fail(op, key, "null default needs an optional type");
    return;
  }
  auto is_int = [](const json& v) {
    return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX);
  };
  bool ok = false;
  if (t == "int" || t == "int?")
    ok = is_int(d);
  else if (t == "int[]")
    ok = d.is_array() && std::all_of(d.begin(), d.end(), is_int);
  else if (t == "float")
    ok = d.is_number();
  else if (t == "Scalar" || t == "Scalar?")
    ok = d.is_number() || d.is_boolean();
  else if (t == "bool")
    ok = d.is_boolean();
  else if (t == "string")
    ok = d.is_string() && (a.allowed.empty() ||
                           std::count(a.allowed.begin(), a.allowed.end(), d.get<std::string>()));
  else if (t == "DType" || t == "DType?")
    ok =
        d.is_string() && std::count(kKnownDtypes.begin(), kKnownDtypes.end(), d.get<std::string>());
  else if (t == "Device")
    ok = d.is_string() && (d.get<std::string>() == "cpu" || d.get<std::string>() == "cuda");
  if (!ok)
    spec_fail(op, key,
              "default " + d.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 100) +
                  " does not fit type " + t);
}

}  // namespace

Op parse_op(const std::string& file, const json& j) {
  Op op;
  op.file = file;
  if (!j.is_object()) throw SpecError(file + ": each op must be a JSON object");
  const json* name = member(j, "name");
  if (!name) throw SpecError(file + ": an op has no 'name'");
  if (!name->is_string())
    throw SpecError(file + ": op '?': key 'name': must be a string, got " + type_name(*name));
  op.name = name->get<std::string>();
  if (!is_identifier(op.name) || is_cpp_keyword(op.name) || op.name[0] == '_' ||
      op.name.find("__") != std::string::npos) {
    std::string shown = op.name.substr(0, 100);
    op.name = "?";
    check_name(op, "name", shown);
  }
  check_keys(op, "", j,
             {"name", "doc", "args", "returns", "variants", "dtypes", "kernels", "check",
              "backward", "differentiable", "samples"});
  const json* doc = member(j, "doc");
  if (!doc) spec_fail(op, "doc", "missing (one line describing the op)");
  op.doc = as_string(op, "doc", *doc);
  check_comment_text(op, "doc", op.doc);
  const json* args = member(j, "args");
  if (!args || !args->is_array()) spec_fail(op, "args", "missing or not a list");
  for (const auto& ja : *args) {
    Arg a;
    if (!ja.is_object())
      spec_fail(op, "args", std::string("each argument is an object, got ") + type_name(ja));
    const json* an = member(ja, "name");
    if (!an) spec_fail(op, "args", "an argument has no name");
    a.name = check_name(op, "args.name", as_string(op, "args.name", *an));
    const std::string key = "args." + a.name;
    check_keys(op, key, ja,
               {"name", "type", "default", "differentiable", "writes", "dtypes", "dtype",
                "allowed"});
    const json* type = member(ja, "type");
    a.type = type ? as_string(op, key + ".type", *type) : "";
    if (!kArgTypes.count(a.type))
      spec_fail(op, key + ".type", "unknown type '" + a.type.substr(0, 100) + "'");
    if (const json* v = member(ja, "differentiable"))
      a.differentiable = as_bool(op, key + ".differentiable", *v);
    if (const json* v = member(ja, "writes")) {
      a.writes = as_bool(op, key + ".writes", *v);
      // A written tensor is state the op updates (running statistics), never a gradient path.
      if (a.writes && (a.type != "Tensor" && a.type != "Tensor?"))
        spec_fail(op, key + ".writes", "only a Tensor or Tensor? argument can be written");
      if (a.writes && a.differentiable)
        spec_fail(op, key + ".writes", "a written argument must be \"differentiable\": false");
    }
    if (const json* v = member(ja, "dtype"))
      a.dtypes =
          expand_dtypes(op, key + ".dtype", json::array({as_string(op, key + ".dtype", *v)}));
    if (const json* v = member(ja, "dtypes")) a.dtypes = expand_dtypes(op, key + ".dtypes", *v);
    if (const json* v = member(ja, "allowed")) {
      for (const auto& x : as_array(op, key + ".allowed", *v)) {
        const std::string& word = as_string(op, key + ".allowed", x);
        if (!is_identifier(word))
          spec_fail(op, key + ".allowed",
                    "'" + word.substr(0, 100) + "' is not a word (letters, digits, _)");
        a.allowed.push_back(word);
      }
    }
    if (const json* v = member(ja, "default")) {
      a.has_default = true;
      a.default_value = *v;
      check_default(op, a);
    }
    if (op.find_arg(a.name)) spec_fail(op, key, "duplicate argument");
    op.args.push_back(a);
  }
  if (const json* returns = member(j, "returns")) {
    for (const auto& jr : as_array(op, "returns", *returns)) {
      Ret r;
      as_object(op, "returns", jr);
      check_keys(op, "returns", jr, {"name", "type", "differentiable", "internal"});
      const json* rn = member(jr, "name");
      r.name = rn ? check_name(op, "returns.name", as_string(op, "returns.name", *rn)) : "result";
      if (const json* v = member(jr, "differentiable"))
        r.differentiable = as_bool(op, "returns." + r.name + ".differentiable", *v);
      const json* rt = member(jr, "type");
      if (rt && as_string(op, "returns." + r.name + ".type", *rt) != "Tensor")
        spec_fail(op, "returns." + r.name, "only Tensor returns are supported");
      if (op.find_ret(r.name) || op.find_arg(r.name))
        spec_fail(op, "returns." + r.name, "duplicate name");
      if (const json* v = member(jr, "internal"))
        r.internal = as_bool(op, "returns." + r.name + ".internal", *v);
      if (r.internal && r.differentiable)
        spec_fail(op, "returns." + r.name, "an internal output must be \"differentiable\": false");
      if (!r.internal && !op.rets.empty() && op.rets.back().internal)
        spec_fail(op, "returns." + r.name, "internal outputs come after the public ones");
      op.rets.push_back(r);
    }
  } else {
    op.rets.push_back({"result", true, false});
  }
  if (op.num_public_outputs() == 0) spec_fail(op, "returns", "an op returns at least one Tensor");
  if (const json* variants = member(j, "variants")) {
    for (const auto& v : as_array(op, "variants", *variants)) {
      const std::string& s = as_string(op, "variants", v);
      if (s != "function" && s != "method" && s != "inplace")
        spec_fail(op, "variants", "unknown variant '" + s.substr(0, 100) + "'");
      if (s == "method" && mode.out_of_tree)
        spec_fail(op, "variants",
                  "'method' is for built-in ops only (tg::Tensor's methods); call " + mode.ns +
                      "::" + op.name + "(...) instead");
      op.variants.insert(s);
    }
  } else {
    op.variants = mode.out_of_tree ? std::set<std::string>{"function"}
                                   : std::set<std::string>{"function", "method"};
  }
  const json* dtypes = member(j, "dtypes");
  op.dtypes = expand_dtypes(op, "dtypes", dtypes ? *dtypes : json::array({"all"}));
  const json* kernels = member(j, "kernels");
  if (!kernels || !kernels->is_object() || kernels->empty())
    spec_fail(op, "kernels",
              "missing: name at least one kernel, e.g. {\"CPU\": \"cpu::" + op.name + "\"}");
  for (const auto& [k, v] : kernels->items()) {
    if (!kKernelKeys.count(k))
      spec_fail(op, "kernels." + k.substr(0, 100), "unknown dispatch key (CPU, CUDA, Default)");
    const std::string& fn = as_string(op, "kernels." + k, v);
    if (fn.find("::") == std::string::npos)
      spec_fail(op, "kernels." + k, "qualify the kernel from tg::, e.g. cpu::" + fn.substr(0, 100));
    // Each part a C++ identifier: the name goes into generated code and into a regex (main.cpp).
    for (size_t b = 0;;) {
      const size_t e = fn.find("::", b);
      const std::string part = fn.substr(b, e == std::string::npos ? std::string::npos : e - b);
      if (!is_identifier(part) || is_cpp_keyword(part))
        spec_fail(op, "kernels." + k,
                  "'" + fn.substr(0, 100) + "' is not a qualified C++ name (ns::function)");
      if (e == std::string::npos) break;
      b = e + 2;
    }
    op.kernels.emplace_back(k, fn);
  }
  if (const json* v = member(j, "check")) {
    // "checks::<op>": tg::checks::<op>, with exactly the op's parameter list
    const std::string& check = as_string(op, "check", *v);
    const std::string fn = check.rfind("checks::", 0) == 0 ? check.substr(8) : "";
    if (!is_identifier(fn) || is_cpp_keyword(fn))
      spec_fail(op, "check",
                "expected \"checks::<function>\" (a function in namespace tg::checks), got " +
                    v->dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 100));
    op.check = check;
  }
  if (const json* v = member(j, "differentiable"))
    op.differentiable = as_bool(op, "differentiable", *v);
  const json* backward_json = member(j, "backward");
  const json backward = backward_json ? as_object(op, "backward", *backward_json) : json::object();
  // A key names one input ("self") or several ("self, src": one formula returns all their
  // gradients, in the key's order, as PyTorch's derivatives.yaml allows).
  std::set<std::string> covered;
  std::vector<std::pair<size_t, std::pair<std::string, std::string>>>
      ordered;  // first arg's position
  for (const auto& [key_text, formula] : backward.items()) {
    const std::string key = key_text.substr(0, 200);
    std::vector<std::string> inputs = backward_inputs(key_text);
    if (inputs.empty()) spec_fail(op, "backward." + key, "names no input");
    size_t position = op.args.size();
    for (const auto& input : inputs) {
      const Arg* a = op.find_arg(input);
      if (!a) spec_fail(op, "backward." + key, "no argument named '" + input.substr(0, 100) + "'");
      if (!a->is_diff_tensor())
        spec_fail(op, "backward." + key, "'" + input + "' is not a differentiable Tensor");
      if (inputs.size() > 1 && a->type == "Tensor[]")
        spec_fail(op, "backward." + key, "a Tensor[] input needs a key of its own");
      if (!covered.insert(input).second)
        spec_fail(op, "backward." + key, "'" + input + "' has two formulas");
      position = std::min(position, static_cast<size_t>(a - op.args.data()));
    }
    if (!formula.is_string()) spec_fail(op, "backward." + key, "formula must be a string");
    FormulaParser(op, "backward." + key, formula.get_ref<const std::string&>()).parse();
    ordered.push_back({position, {key_text, formula.get<std::string>()}});
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& entry : ordered) op.backward.push_back(entry.second);  // argument order
  if (op.differentiable) {
    for (const auto* a : op.diff_inputs())
      if (!covered.count(a->name))
        spec_fail(op, "backward",
                  "no formula for differentiable input '" + a->name +
                      "' (add one, or mark the arg \"differentiable\": false)");
    if (op.num_diff_outputs() == 0)
      spec_fail(op, "returns", "a differentiable op needs a differentiable output");
    if (op.backward.empty())
      spec_fail(op, "backward", "a differentiable op needs at least one formula");
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
  if (op.has_variant("inplace") && op.rets.size() != 1)
    spec_fail(op, "variants", "inplace needs exactly one output");
  const json* samples = member(j, "samples");
  if (!samples || !samples->is_array() || samples->empty())
    spec_fail(op, "samples", "missing: give at least one sample");
  op.samples = *samples;
  for (const auto& s : op.samples) {
    if (!s.is_object()) spec_fail(op, "samples", "each sample is an object");
    for (const auto& [k, v] : s.items()) {
      static const std::set<std::string> meta = {"dtypes", "no_grad", "no_gradgrad", "reject",
                                                 "error",  "why",     "no_derived"};
      if (!meta.count(k) && !op.find_arg(k))
        spec_fail(op, "samples", "sample names unknown argument '" + k.substr(0, 100) + "'");
    }
  }
  return op;
}

std::vector<Op> parse_spec_text(const std::string& file, const std::string& text) {
  json j;
  try {
    // The depth is checked while parsing (the parser itself is iterative, but copying and
    // printing a value recurse): a 100,000-deep "samples" is an error, not a stack overflow.
    j = json::parse(text, [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth)
        throw SpecError(file + ": JSON nested more than " + std::to_string(kMaxJsonDepth) +
                        " levels deep");
      return true;
    });
  } catch (const json::exception& e) {
    throw SpecError(file + ": invalid JSON: " + e.what());
  }
  std::vector<json> objs =
      j.is_array() ? std::vector<json>(j.begin(), j.end()) : std::vector<json>{j};
  std::vector<Op> ops;
  for (const auto& o : objs) {
    try {
      ops.push_back(parse_op(file, o));
    } catch (const json::exception& e) {
      const bool named = o.is_object() && o.contains("name") && o["name"].is_string();
      throw SpecError(file + ": op '" + (named ? o["name"].get<std::string>() : "?") +
                      "': " + e.what());
    }
  }
  return ops;
}

}  // namespace opgen
