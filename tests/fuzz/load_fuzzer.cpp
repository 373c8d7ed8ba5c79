// Fuzzes safetensors reading: tg::load_from_bytes on the input, and tg::load on the same bytes
// written to a file. Either both accept or both reject with a typed tg::Error (the same message
// after the source name); an accepted file saves back to bytes that load to the same tensors.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <tapegrad/nn/serialize.h>

#include "fuzz_common.h"

namespace {

std::string after_source(const std::string& message) {
  const size_t colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(colon);
}

bool same_dict(const tg::StateDict& a, const tg::StateDict& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end()) return false;
    const tg::Tensor& u = it->second;
    if (!(t.shape() == u.shape()) || t.dtype() != u.dtype()) return false;
    const size_t n = static_cast<size_t>(t.numel()) * tg::itemsize(t.dtype());
    if (n && std::memcmp(t.contiguous().data_ptr(), u.contiguous().data_ptr(), n) != 0)
      return false;
  }
  return true;
}

// The file tg::load reads: one per process (in TMPDIR, else /tmp), removed when the process
// exits, so that corpus replays and fuzz runs leave nothing behind.
struct ScratchFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("tg_fuzz_load_" + std::to_string(getpid()) + ".st"))
                         .string();
  ~ScratchFile() { std::remove(path.c_str()); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  tg::StateDict from_bytes, from_file;
  std::string bytes_error, file_error;
  const bool ok =
      tg_fuzz::runs_or_typed_error([&] { from_bytes = tg::load_from_bytes(bytes); }, &bytes_error);
  static const ScratchFile scratch;
  const std::string& path = scratch.path;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const bool file_ok =
      tg_fuzz::runs_or_typed_error([&] { from_file = tg::load(path); }, &file_error);
  FUZZ_CHECK(ok == file_ok, "load_from_bytes: " + bytes_error + " | load: " + file_error);
  if (!ok) {
    FUZZ_CHECK(after_source(bytes_error) == after_source(file_error),
               bytes_error + " | " + file_error);
    return 0;
  }
  FUZZ_CHECK(same_dict(from_bytes, from_file));
  for (const auto& [name, t] : from_bytes) {
    FUZZ_CHECK(t.is_contiguous() && t.impl()->storage->nbytes ==
                                        static_cast<size_t>(t.numel()) * tg::itemsize(t.dtype()));
  }
  // What was accepted saves and loads back to the same tensors (metadata aside).
  const std::string again = tg::save_to_bytes(from_bytes, tg::load_metadata(path));
  FUZZ_CHECK(same_dict(tg::load_from_bytes(again), from_bytes));
  return 0;
}
