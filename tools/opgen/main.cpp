// opgen (main): reads ops/specs/*.json and writes the generated C++ of tapegrad into the build
// tree:
//   tensor.h          class tg::Tensor: the template (--tensor-template) with the op methods
//   functions.h       public functions in namespace tg (+ in-place variants)
//   kernels.h         declarations of every kernel and check function named in a spec
//   ops_internal.h    the per-op dispatch tables (shared by ops.cpp and autograd.cpp)
//   ops.cpp           front ends (argument checks, the op's check function, dispatch), methods,
//                     in-place variants, kernel registration
//   autograd.cpp      one Node per differentiable op and its Autograd kernel
//   registry.cpp      the run-time registry (names, args, samples, boxed calls)
//   spec_tests.cpp    one doctest case per op, running the op check on its samples
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <utility>
#include <regex>

#include "opgen.h"

using namespace opgen;

namespace {

const char* kUsage =
    "usage: tg_opgen --specs DIR --tensor-template FILE --out DIR [--backends DIR]... "
    "[--checks DIR]...\n"
    "       tg_opgen --namespace NS --library NAME --spec FILE... --out DIR [--source FILE]...\n"
    "         (a user library's ops, for tapegrad_add_ops: kernels and checks are looked up\n"
    "          in the --source files, relative to namespace NS)\n";

// The text of every C++ source and header under dirs.
std::vector<std::string> read_sources(const std::vector<fs::path>& dirs) {
  std::vector<std::string> texts;
  for (const auto& dir : dirs) {
    if (!fs::exists(dir)) continue;
    if (fs::is_regular_file(dir)) {  // a --source file
      std::ifstream in(dir);
      std::stringstream ss;
      ss << in.rdbuf();
      texts.push_back(ss.str());
      continue;
    }
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".cu" && ext != ".h" && ext != ".cuh") continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      texts.push_back(ss.str());
    }
  }
  return texts;
}

// A user library's op may not take a built-in op's name: the registry would refuse it at load,
// and the build says so first, naming the built-in spec.
void check_builtin_clash(const std::vector<Op>& ops, const fs::path& builtin_dir) {
  std::map<std::string, std::string> builtin;
  const Mode user = std::exchange(mode, Mode{});  // the built-in specs parse as built-in ones
  for (const auto& e : fs::directory_iterator(builtin_dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string file = "ops/specs/" + e.path().filename().string();
    for (const Op& op : parse_spec_text(file, text.str())) builtin[op.name] = file;
  }
  mode = user;
  for (const Op& op : ops)
    if (builtin.count(op.name))
      spec_fail(op, "name",
                "'" + op.name + "' is a built-in op of tapegrad (" + builtin[op.name] +
                    "); the registry holds one op per name: rename it");
}

// A kernel named in a spec must be defined somewhere under the backend folders.
void check_kernel_symbols(const std::vector<Op>& ops, const std::vector<fs::path>& dirs) {
  const std::vector<std::string> texts = read_sources(dirs);
  for (const auto& op : ops)
    for (const auto& [key, fn] : op.kernels) {
      size_t pos = fn.rfind("::");
      std::string ns = fn.substr(0, pos), name = fn.substr(pos + 2);
      std::regex def("\\b" + name + "\\s*\\(");
      std::string ns_last = ns.substr(ns.rfind(':') == std::string::npos ? 0 : ns.rfind(':') + 1);
      bool found = std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
        return t.find("namespace " + ns_last) != std::string::npos ||
                       t.find("namespace " + mode.ns + "::" + ns) != std::string::npos
                   ? std::regex_search(t, def)
                   : false;
      });
      if (!found)
        spec_fail(op, "kernels." + key,
                  "kernel '" + fn + "' is not defined in any " +
                      (mode.out_of_tree ? "of the library's SOURCES" : "backend source") +
                      " (looked for '" + name + "(' in a file with 'namespace " +
                      (mode.out_of_tree ? mode.ns + "::" + ns : ns_last) + "')");
    }
}

// A check named in a spec ("check": "checks::scatter") must be defined under the check folders
// (ops/checks): "void scatter(" in a file that opens namespace tg::checks (or checks).
void check_check_symbols(const std::vector<Op>& ops, const std::vector<fs::path>& dirs) {
  const std::vector<std::string> texts = read_sources(dirs);
  for (const auto& op : ops) {
    if (op.check.empty()) continue;
    const std::string name = op.check.substr(op.check.rfind("::") + 2);
    const std::regex def("\\bvoid\\s+" + name + "\\s*\\(");
    const bool found = std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
      const bool in_checks = t.find("namespace " + mode.ns + "::checks") != std::string::npos ||
                             t.find("namespace checks") != std::string::npos;
      return in_checks && std::regex_search(t, def);
    });
    if (!found)
      spec_fail(op, "check",
                "check '" + op.check + "' is not defined under ops/checks (looked for 'void " +
                    name + "(' in a file with 'namespace tg::checks')");
  }
}

// The template of class Tensor with its "// @OP_METHODS@" line replaced by the method declarations
// (indented into the class), under a banner that says where the file comes from.
std::string fill_tensor_template(const fs::path& template_path, const std::string& methods) {
  std::ifstream in(template_path);
  if (!in) throw std::runtime_error("cannot read the Tensor template " + template_path.string());
  std::stringstream text;
  text << in.rdbuf();
  std::string out =
      "// @generated from tools/opgen/templates/tensor.h.in and ops/specs/*.json by "
      "tools/opgen. Do not edit.\n";
  std::string line;
  bool filled = false;
  while (std::getline(text, line)) {
    const size_t start = line.find_first_not_of(' ');
    const bool marker = start != std::string::npos && line.substr(start) == "// @OP_METHODS@";
    if (!marker) {
      out += line + "\n";
      continue;
    }
    std::istringstream decls(methods);
    for (std::string d; std::getline(decls, d);) out += "  " + d + "\n";
    filled = true;
  }
  if (!filled)
    throw std::runtime_error(template_path.string() + ": no \"// @OP_METHODS@\" line to fill");
  return out;
}

void write_if_changed(const fs::path& path, const std::string& text) {
  std::ifstream in(path);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str() == text) return;  // keep the timestamp: no needless rebuilds
  }
  std::ofstream outf(path);
  outf << text;
  if (!outf) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  fs::path specs_dir, out_dir, tensor_template;
  std::vector<fs::path> backend_dirs, check_dirs, spec_files;
  fs::path builtin_dir;  // out of tree: the installed ops/specs, whose names are taken
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--specs")
      specs_dir = argv[i + 1];
    else if (flag == "--out")
      out_dir = argv[i + 1];
    else if (flag == "--backends")
      backend_dirs.emplace_back(argv[i + 1]);
    else if (flag == "--checks")
      check_dirs.emplace_back(argv[i + 1]);
    else if (flag == "--tensor-template")
      tensor_template = argv[i + 1];
    else if (flag == "--spec")
      spec_files.emplace_back(argv[i + 1]);
    else if (flag == "--source") {
      backend_dirs.emplace_back(argv[i + 1]);
      check_dirs.emplace_back(argv[i + 1]);
    } else if (flag == "--namespace") {
      mode.out_of_tree = true;
      mode.ns = argv[i + 1];
    } else if (flag == "--library") {
      mode.library = argv[i + 1];
    } else if (flag == "--include") {
      mode.includes.emplace_back(argv[i + 1]);
    } else if (flag == "--builtin-specs") {
      builtin_dir = argv[i + 1];
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  const bool usable = mode.out_of_tree
                          ? !spec_files.empty() && !out_dir.empty()
                          : !specs_dir.empty() && !out_dir.empty() && !tensor_template.empty();
  if (!usable || argc % 2 == 0) {
    std::cerr << kUsage;
    return 2;
  }
  try {
    std::vector<fs::path> files = spec_files;
    if (!mode.out_of_tree) {
      for (const auto& e : fs::directory_iterator(specs_dir))
        if (e.path().extension() == ".json") files.push_back(e.path());
      std::sort(files.begin(), files.end());
    }
    std::vector<Op> ops;
    std::set<std::string> names;
    for (const auto& f : files) {
      // In tree, "ops/specs/mul.json"; a user's spec, the path as given (tapegrad_add_ops runs
      // opgen in the user's source folder, so that is the path in their tree).
      std::string rel = mode.out_of_tree ? f.string() : "ops/specs/" + f.filename().string();
      std::ifstream in(f, std::ios::binary);
      if (!in) throw std::runtime_error("cannot read the spec file " + f.string());
      std::stringstream text;
      text << in.rdbuf();
      for (Op& op : parse_spec_text(rel, text.str())) {
        ops.push_back(std::move(op));
        if (!names.insert(ops.back().name).second) spec_fail(ops.back(), "name", "defined twice");
      }
    }
    if (!builtin_dir.empty()) check_builtin_clash(ops, builtin_dir);
    if (!backend_dirs.empty()) check_kernel_symbols(ops, backend_dirs);
    if (!check_dirs.empty()) check_check_symbols(ops, check_dirs);

    Out out;
    std::ostringstream kernel_regs, autograd_regs, entries;
    mode.out_of_tree ? emit_prologues_oot(out) : emit_prologues(out);
    for (const auto& op : ops) emit_op(op, out, kernel_regs, autograd_regs, entries);
    if (mode.out_of_tree)
      emit_epilogues_oot(out, kernel_regs, autograd_regs, entries);
    else
      emit_epilogues(out, kernel_regs, autograd_regs, entries);
    fs::create_directories(out_dir);
    write_if_changed(out_dir / "functions.h", out.functions_h.str());
    if (!mode.out_of_tree)
      write_if_changed(out_dir / "tensor.h",
                       fill_tensor_template(tensor_template, out.methods_h.str()));
    write_if_changed(out_dir / "kernels.h", out.kernels_h.str());
    write_if_changed(out_dir / "ops_internal.h", out.internal_h.str());
    write_if_changed(out_dir / "ops.cpp", out.ops_cpp.str());
    write_if_changed(out_dir / "autograd.cpp", out.autograd_cpp.str());
    write_if_changed(out_dir / "registry.cpp", out.registry_cpp.str());
    write_if_changed(out_dir / "spec_tests.cpp", out.tests_cpp.str());
    std::cout << "opgen: " << ops.size() << " ops from " << files.size() << " spec files\n";
  } catch (const SpecError& e) {
    std::cerr << "opgen: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "opgen: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
