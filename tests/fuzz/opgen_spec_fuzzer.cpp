// Fuzzes opgen's spec reader and emitter (tools/opgen), which treat spec files as untrusted
// input: the bytes are one spec file; either the generated code comes out or a SpecError names
// the problem. A crash, a hang or any other exception is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "opgen.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<opgen::Op> ops = opgen::parse_spec_text("ops/specs/fuzz.json", text);
    opgen::Out out;
    std::ostringstream kernel_regs, autograd_regs, entries;
    opgen::emit_prologues(out);
    for (const auto& op : ops) opgen::emit_op(op, out, kernel_regs, autograd_regs, entries);
    opgen::emit_epilogues(out, kernel_regs, autograd_regs, entries);
  } catch (const opgen::SpecError& e) {
    const std::string what = e.what();
    if (what.rfind("ops/specs/fuzz.json: ", 0) != 0) {
      std::fprintf(stderr, "spec error without the file name: %s\n", e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not a SpecError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
