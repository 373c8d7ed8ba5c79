#pragma once
// Reading the PyTorch cross-check data (tests/data/*_crosscheck.json, written by
// tools/crosscheck/*.py): one rule for turning a JSON tensor into a tg::Tensor.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <tapegrad/tapegrad.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tg_test {

// The file `name` of tests/data. An absolute path (TG_TEST_DATA_DIR), not __FILE__: ccache
// (CCACHE_BASEDIR) makes __FILE__ relative to the build folder, not to where ctest runs.
inline nlohmann::json load_test_data(const std::string& name) {
  const auto path = std::filesystem::path(TG_TEST_DATA_DIR) / name;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path.string());
  return nlohmann::json::parse(in);
}

// {"shape": [...], "dtype": "float64" | "int64" | "bool", "values": [flat, row-major]} as a CPU
// tensor of that dtype.
inline tg::Tensor tensor_from_json(const nlohmann::json& j) {
  const std::vector<int64_t> shape = j.at("shape").get<std::vector<int64_t>>();
  const std::string dtype = j.at("dtype");
  tg::Tensor flat;
  if (dtype == "int64")
    flat = tg::tensor(j.at("values").get<std::vector<int64_t>>());
  else if (dtype == "bool")
    flat = tg::tensor(j.at("values").get<std::vector<bool>>());
  else
    flat = tg::tensor(j.at("values").get<std::vector<double>>());
  if (flat.numel() == 0)  // an empty list carries no dtype
    flat = flat.to(dtype == "int64" ? tg::kInt64 : dtype == "bool" ? tg::kBool : tg::kFloat64);
  return flat.reshape(shape);
}

}  // namespace tg_test
