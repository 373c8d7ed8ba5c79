#pragma once
// Saving and loading named tensors in the safetensors format
// (https://huggingface.co/docs/safetensors), so files move between tapegrad, Python and PyTorch:
//
//   tg::save(model.state_dict(), "model.safetensors", {{"epoch", "10"}});
//   model.load_state_dict(tg::load("model.safetensors"));
//
// Layout: 8 bytes little-endian header length N, N bytes of JSON (padded with spaces to a multiple
// of 8), then the raw little-endian row-major data of every tensor, back to back. Supported dtypes:
// bool (BOOL), int32 (I32), int64 (I64), float32 (F32), float64 (F64). Every rule load enforces is
// listed in docs/SERIALIZATION_AND_DATA.md; a malformed file is a ValueError "[load] <file>: ...".
#include <map>
#include <string>
#include <string_view>

#include <tapegrad/core/device.h>
#include <tapegrad/nn/state_dict.h>

namespace tg {

// Writes tensors (any device, any strides) and optional string metadata to path. The bytes go to
// path + ".tmp", which is then renamed over path, so a failed save never leaves half a file.
void save(const StateDict& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
// The bytes save would write.
std::string save_to_bytes(const StateDict& tensors,
                          const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of a safetensors file into fresh contiguous CPU tensors.
StateDict load(const std::string& path);
// Same, each tensor then copied to device (tg::load(path, tg::kCUDA)); a module's
// load_state_dict also copies CPU tensors into device parameters itself.
StateDict load(const std::string& path, Device device);
// Same, from the bytes of a whole file (errors name the source "<bytes>").
StateDict load_from_bytes(std::string_view bytes);

// The "__metadata__" map of a file (empty when it has none); reads and checks only the header.
std::map<std::string, std::string> load_metadata(const std::string& path);

}  // namespace tg
