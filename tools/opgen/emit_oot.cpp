// opgen, out-of-tree part: the prologues and epilogues of the files generated for a user library
// (tapegrad_add_ops). The ops' own code is emit.cpp's, with mode.ns in place of tg; here the files
// open the user's namespace, include the installed headers, and register the library's ops with
// tapegrad's run-time registry when the library is loaded.
#include "opgen.h"

namespace opgen {

namespace {

const char* kBanner = "// @generated from the library's op specs by tg_opgen. Do not edit.\n";
const char* kHeaders =
    "#pragma once\n#include <optional>\n#include <string>\n#include <tuple>\n"
    "#include <vector>\n\n#include <tapegrad/tapegrad.h>\n\n";

}  // namespace

void emit_prologues_oot(Out& out) {
  const std::string& ns = mode.ns;
  out.functions_h << kBanner << kHeaders << "namespace " << ns << " {\n\n";
  out.kernels_h << kBanner << kHeaders;
  out.internal_h << kBanner << "#pragma once\n#include <tapegrad/core/dispatch.h>\n\n"
                 << "#include \"functions.h\"\n\nnamespace " << ns << " {\nusing ::tg::OpTable;\n";
  // Inside the user's namespace, tapegrad's names (detail::, OpTable, the public ops) come from
  // the using-directive; the user's own names (their kernels' namespaces) are found first.
  out.ops_cpp << kBanner << "#include <tapegrad/autograd/inplace.h>\n"
              << "#include <tapegrad/ops/checks/arguments.h>\n\n#include \"kernels.h\"\n"
              << "#include \"ops_internal.h\"\n\nusing namespace ::tg;\n\nnamespace " << ns
              << " {\n\n";
  out.autograd_cpp
      << kBanner << "#include <array>\n#include <tuple>\n\n"
      << "#include <tapegrad/autograd/formulas.h>\n#include <tapegrad/autograd/node.h>\n"
      << "#include <tapegrad/ops/factories.h>\n#include <tapegrad/ops/operators.h>\n\n"
      << "#include \"ops_internal.h\"\n";
  for (const std::string& header : mode.includes)
    out.autograd_cpp << "#include \"" << header << "\"\n";
  out.autograd_cpp << "\nusing namespace ::tg;\nusing namespace ::tg::formulas;\n\nnamespace " << ns
                   << " {\n\n";
  out.registry_cpp << kBanner
                   << "#include <tapegrad/ops/registry.h>\n\n#include \"functions.h\"\n\n"
                   << "using namespace ::tg;\nusing namespace ::tg::registry;\n\nnamespace {\n\n";
  out.tests_cpp << kBanner
                << "#include <doctest/doctest.h>\n\n#include <tapegrad/testing/check.h>\n"
                   "#include <tapegrad/ops/registry.h>\n\n";
}

void emit_epilogues_oot(Out& out, const std::ostringstream& kernel_regs,
                        const std::ostringstream& autograd_regs,
                        const std::ostringstream& entries) {
  const std::string& ns = mode.ns;
  out.functions_h << "\n}  // namespace " << ns << "\n";
  out.internal_h << "}  // namespace " << ns << "\n";
  out.ops_cpp << "namespace {\nstruct RegisterKernels {\n  RegisterKernels() {\n"
              << kernel_regs.str()
              << "  }\n} register_kernels;\n}  // namespace\n\n}  // namespace " << ns << "\n";
  out.autograd_cpp << "namespace {\nstruct RegisterAutograd {\n  RegisterAutograd() {\n"
                   << autograd_regs.str()
                   << "  }\n} register_autograd;\n}  // namespace\n\n}  // namespace " << ns
                   << "\n";
  // Registered while the library loads; a name taken by a built-in op or another library stops
  // the program there with a message naming both (registry::register_library_at_load).
  out.registry_cpp << "std::vector<OpInfo> library_ops() {\n  std::vector<OpInfo> ops;\n"
                   << entries.str() << "  return ops;\n}\n\n"
                   << "const bool registered = register_library_at_load(\"" << mode.library
                   << "\", library_ops());\n\n}  // namespace\n";
}

}  // namespace opgen
