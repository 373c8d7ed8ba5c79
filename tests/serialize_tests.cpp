// safetensors save/load: round trips, the exact bytes of a small file written by hand from the
// spec, and one case per malformed input that load must reject with a clear message.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include <tapegrad/nn/serialize.h>
#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using tg::Shape;
using tg::StateDict;
using tg::Tensor;
namespace fs = std::filesystem;

namespace {

// A fresh directory under /tmp, removed with everything in it at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("tg_serialize_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A file made of a header length, the JSON text and the data bytes, as the spec lays it out.
std::string make_file(const std::string& json, const std::string& data = "") {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  return out + json + data;
}

using tg_test::error_of;

// What load_from_bytes says about bytes, after its "[load] <bytes>: " prefix.
std::string load_error(const std::string& bytes) {
  std::string e = error_of([&] { tg::load_from_bytes(bytes); });
  const std::string prefix = "[load] <bytes>: ";
  return e.starts_with(prefix) ? e.substr(prefix.size()) : "(no prefix) " + e;
}

// Same dtype, shape and bytes (so NaN and -0.0 compare by their bits).
bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  size_t n = static_cast<size_t>(a.numel()) * tg::itemsize(a.dtype());
  return n == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), n) == 0;
}

std::string f32_entry(const std::string& offsets, const std::string& shape = "[1]") {
  return R"({"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
}

}  // namespace

TEST_CASE("safetensors: save_to_bytes writes exactly the bytes of the spec") {
  // Expected bytes built by a Python script from the spec with json and struct only:
  //   header = {"__metadata__": {...}, "idx": {...}, "e": {...}, "w": {...}, "mask": {...}}
  //   text = json.dumps(header, separators=(",", ":")).encode(); padded with spaces to 8k bytes
  //   struct.pack("<Q", len(text)) + text + struct.pack("<q", 7) + struct.pack("<2f", 1.0, -2.5)
  //   + bytes([1, 0, 1])
  // Tensors go in the reference writer's order: dtype I64, F64, F32, I32, BOOL, then by name.
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"idx":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("e":{"dtype":"F64","shape":[0],"data_offsets":[8,8]},)"
      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("mask":{"dtype":"BOOL","shape":[3],"data_offsets":[16,19]}}    )";
  const unsigned char length[] = {0, 1, 0, 0, 0, 0, 0, 0};  // 256, little-endian
  const unsigned char data[] = {7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 32, 192, 1, 0, 1};
  std::string expected(reinterpret_cast<const char*>(length), 8);
  expected += json;
  expected.append(reinterpret_cast<const char*>(data), sizeof(data));
  REQUIRE(json.size() == 256);

  StateDict tensors{{"w", tg::tensor({1.0f, -2.5f})},
                    {"mask", tg::tensor({true, false, true})},
                    {"idx", tg::scalar_tensor(int64_t{7}, tg::kInt64)},
                    {"e", tg::empty({0}, tg::kFloat64)}};
  std::string bytes = tg::save_to_bytes(tensors, {{"format", "pt"}});
  CHECK(bytes.size() == 283);
  CHECK(bytes == expected);

  // And back: the bytes written by hand load into the same tensors and metadata.
  StateDict back = tg::load_from_bytes(expected);
  REQUIRE(back.size() == 4);
  for (const auto& [name, t] : tensors) CHECK(same_tensor(back.at(name), t));
}

TEST_CASE("safetensors: an empty dict is '{}' padded to 8 bytes - no metadata key if none given") {
  std::string bytes = tg::save_to_bytes({});
  CHECK(bytes == make_file("{}      "));
  CHECK(tg::load_from_bytes(bytes).empty());
  std::string one = tg::save_to_bytes({{"a", tg::tensor({1.0f})}});
  CHECK(one.find("__metadata__") == std::string::npos);
  CHECK(one.substr(8, 4) == R"({"a")");
}

TEST_CASE("safetensors: the data starts 8-byte aligned and every tensor is aligned to its size") {
  StateDict tensors{{"b", tg::tensor({true})},
                    {"i", tg::tensor(std::vector<int32_t>{1})},
                    {"f", tg::tensor({1.0f, 2.0f, 3.0f})},
                    {"d", tg::tensor({1.0})},
                    {"l", tg::tensor({int64_t{1}})}};
  std::string bytes = tg::save_to_bytes(tensors);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  // In the header, in this order: l (I64) [0,8], d (F64) [8,16], f (F32) [16,28], i (I32) [28,32],
  // b (BOOL) [32,33].
  std::string header = bytes.substr(8, n);
  CHECK(header.starts_with(R"({"l":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
                           R"("d":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},)"
                           R"("f":{"dtype":"F32","shape":[3],"data_offsets":[16,28]},)"
                           R"("i":{"dtype":"I32","shape":[1],"data_offsets":[28,32]},)"
                           R"("b":{"dtype":"BOOL","shape":[1],"data_offsets":[32,33]}})"));
  CHECK(bytes.size() == 8 + n + 33);
}

TEST_CASE("safetensors: round trip of every dtype, 0-d, empty and special values") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  StateDict tensors{
      {"f64", tg::tensor(std::vector<double>{1.5, -0.0, inf, -inf, nan, 1e-310}, {2, 3})},
      {"f32", tg::tensor(std::vector<float>{0.1f, -3.0f, std::numeric_limits<float>::max()})},
      {"i64", tg::tensor(std::vector<int64_t>{INT64_MIN, -1, INT64_MAX}, {3, 1})},
      {"i32", tg::tensor(std::vector<int32_t>{INT32_MIN, 0, INT32_MAX, 5}, {2, 1, 2})},
      {"bool", tg::tensor(std::vector<bool>{true, false, false, true})},
      {"scalar", tg::scalar_tensor(2.25, tg::kFloat64)},
      {"empty", tg::empty({0}, tg::kFloat32)},
      {"empty_2x0x3", tg::empty({2, 0, 3}, tg::kInt64)},
      {"nested.name/with spaces é", tg::tensor({1.0f})},
  };
  std::string bytes = tg::save_to_bytes(tensors);
  StateDict back = tg::load_from_bytes(bytes);
  REQUIRE(back.size() == tensors.size());
  for (const auto& entry : tensors) {
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    CAPTURE(name);
    const Tensor& b = back.at(name);
    CHECK(same_tensor(b, t));
    CHECK(b.is_contiguous());
    CHECK(b.device().is_cpu());
    CHECK_FALSE(b.requires_grad());
  }
  CHECK(back.at("scalar").dim() == 0);
  CHECK(back.at("empty_2x0x3").shape() == Shape{2, 0, 3});
  // Loading again gives fresh tensors, not shared ones.
  StateDict again = tg::load_from_bytes(bytes);
  again.at("f32").fill_(0.0);
  CHECK(back.at("f32").to_vector<float>()[0] == 0.1f);
}

TEST_CASE("safetensors: views and tensors that require grad are saved by value, row-major") {
  Tensor base = tg::tensor(std::vector<double>{0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor param = tg::tensor({1.0, 2.0}).requires_grad_();
  StateDict tensors{{"t", base.t()},                           // transposed
                    {"s", base.slice(1, 0, 3, 2)},             // step 2
                    {"e", tg::tensor({7.0f}).expand({2, 2})},  // stride 0
                    {"p", param}};
  StateDict back = tg::load_from_bytes(tg::save_to_bytes(tensors));
  CHECK(back.at("t").shape() == Shape{3, 2});
  CHECK(back.at("t").to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  CHECK(back.at("s").to_vector<double>() == std::vector<double>{0, 2, 3, 5});
  CHECK(back.at("e").to_vector<float>() == std::vector<float>{7, 7, 7, 7});
  CHECK(back.at("p").to_vector<double>() == std::vector<double>{1, 2});
  CHECK_FALSE(back.at("p").requires_grad());
  CHECK(param.requires_grad());  // saving changed nothing
}

TEST_CASE("safetensors: save and load files, metadata, atomic replace") {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  StateDict tensors{{"w", tg::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}})},
                    {"b", tg::tensor(std::vector<int64_t>{5, 6})}};
  std::map<std::string, std::string> meta{{"epoch", "3"}, {"note", "π ≈ 3.14, \"quoted\"\n"}};
  tg::save(tensors, path, meta);
  CHECK(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".tmp"));
  CHECK(read_file(path) == tg::save_to_bytes(tensors, meta));
  StateDict back = tg::load(path);
  CHECK(same_tensor(back.at("w"), tensors.at("w")));
  CHECK(same_tensor(back.at("b"), tensors.at("b")));
  CHECK(tg::load_metadata(path) == meta);

  // Saving again replaces the file; a file without metadata reads as an empty map.
  tg::save({{"x", tg::tensor({1.0})}}, path);
  CHECK(tg::load(path).size() == 1);
  CHECK(tg::load_metadata(path).empty());
}

TEST_CASE("safetensors: save rejects what the format cannot hold, and reports I/O errors") {
  CHECK(error_of([] { tg::save_to_bytes({{"a", Tensor()}}); }) == "[save] tensor 'a' is undefined");
  CHECK(error_of([] {
          tg::save_to_bytes({{"__metadata__", tg::tensor({1.0})}});
        }) == "[save] the name '__metadata__' is reserved for the metadata; rename that tensor");
  CHECK(error_of([] {
          tg::save_to_bytes({{"h", tg::empty({2}, tg::kFloat16)}});
        }) ==
        "[save] tensor 'h' has dtype float16; tapegrad saves bool, int32, int64, float32 and "
        "float64");
  CHECK(error_of([] {
          tg::save_to_bytes({{"bad\xff", tg::tensor({1.0})}});
        }).starts_with("[save] tensor names and metadata must be valid UTF-8"));
  CHECK(error_of([] {
          tg::save_to_bytes({}, {{"k", "\xc3"}});
        }).starts_with("[save] tensor names and metadata must be valid UTF-8"));

  TempDir dir;
  std::string missing = dir.file("no/such/dir/m.safetensors");
  CHECK(error_of([&] { tg::save({}, missing); }) ==
        "[save] cannot open '" + missing + ".tmp' for writing (No such file or directory)");
  // The target is a directory: the rename fails, and the temporary file is removed.
  std::string target = dir.file("taken");
  fs::create_directories(target + "/inside");
  std::string err = error_of([&] { tg::save({{"a", tg::tensor({1.0})}}, target); });
  CHECK(err.starts_with("[save] cannot rename '" + target + ".tmp' to '" + target + "' ("));
  CHECK_FALSE(fs::exists(target + ".tmp"));
}

TEST_CASE("safetensors: load reports missing and unreadable files with the path") {
  TempDir dir;
  std::string path = dir.file("absent.safetensors");
  CHECK(error_of([&] { tg::load(path); }) == "[load] " + path + ": no such file");
  CHECK(error_of([&] { tg::load(dir.path.string()); }) ==
        "[load] " + dir.path.string() + ": not a regular file");
  // A malformed file names the file.
  std::string cut = dir.file("cut.safetensors");
  std::string whole = tg::save_to_bytes({{"w", tg::tensor({1.0, 2.0})}});
  write_file(cut, whole.substr(0, whole.size() - 6));
  CHECK(error_of([&] { tg::load(cut); }) ==
        "[load] " + cut +
            ": file is truncated: tensor 'w' ends at data byte 16, but only 10 bytes "
            "follow the header");
  CHECK(error_of([&] {
          tg::load_metadata(cut);
        }).starts_with("[load] " + cut + ": file is truncated"));
  write_file(cut, "abc");
  CHECK(error_of([&] { tg::load(cut); }) ==
        "[load] " + cut + ": file is 3 bytes long, too short for the 8-byte header length");
}

TEST_CASE("safetensors: load accepts any entry order, extra entry keys, empty tensors anywhere") {
  // b is listed first but stored second; e is empty and sits between them.
  std::string json = R"({"b":)" + f32_entry("[4,8]") + R"(,"a":)" + f32_entry("[0,4]") +
                     R"(,"e":)" + f32_entry("[4,4]", "[0,2]") +
                     R"(,"x":{"dtype":"I32","shape":[1],"data_offsets":[8,12],"extra":true}})";
  float a = 1.5f, b = -2.0f;
  int32_t x = 42;
  std::string data(12, '\0');
  std::memcpy(data.data(), &a, 4);
  std::memcpy(data.data() + 4, &b, 4);
  std::memcpy(data.data() + 8, &x, 4);
  StateDict back = tg::load_from_bytes(make_file(json, data));
  CHECK(back.at("a").to_vector<float>() == std::vector<float>{1.5f});
  CHECK(back.at("b").to_vector<float>() == std::vector<float>{-2.0f});
  CHECK(back.at("e").shape() == Shape{0, 2});
  CHECK(back.at("x").to_vector<int32_t>() == std::vector<int32_t>{42});
}

TEST_CASE("safetensors: load rejects a bad header length") {
  CHECK(load_error("") == "file is 0 bytes long, too short for the 8-byte header length");
  CHECK(load_error("abcdefg") == "file is 7 bytes long, too short for the 8-byte header length");
  std::string too_long = make_file("{}      ");
  too_long[0] = 100;  // claims 100 header bytes, 8 follow
  CHECK(load_error(too_long) == "header length 100 is larger than the rest of the file (8 bytes)");
  std::string huge = make_file("{}");
  huge[5] = 1;  // 2^40 + 2
  CHECK(load_error(huge) ==
        "header length 1099511627778 is over the limit of "
        "100000000 bytes (not a safetensors file, or a corrupt one)");
  std::string max = make_file("{}");
  std::memset(max.data(), 0xff, 8);  // 2^64 - 1: no overflow in the size checks
  CHECK(load_error(max).starts_with("header length 18446744073709551615 is over"));
}

TEST_CASE("safetensors: load rejects a header that is not a JSON object") {
  CHECK(load_error(make_file(R"({"a":)")).starts_with("header is not valid JSON (parse error"));
  CHECK(load_error(make_file("{} x")).starts_with("header is not valid JSON"));
  CHECK(load_error(make_file("\xff\xfe")).starts_with("header is not valid JSON"));
  CHECK(load_error(make_file(R"(["a", 1])")) == "header is a JSON array, expected an object");
  CHECK(load_error(make_file("7")) == "header is a JSON number, expected an object");
}

TEST_CASE("safetensors: load rejects entries with missing or mistyped fields") {
  auto err = [](const std::string& entry, const std::string& data = std::string(4, '\0')) {
    return load_error(make_file(R"({"t":)" + entry + "}", data));
  };
  CHECK(err("3") ==
        "tensor 't' is described by 3, expected an object with "
        "dtype, shape and data_offsets");
  CHECK(err(R"({"shape":[1],"data_offsets":[0,4]})") == "tensor 't' has no \"dtype\"");
  CHECK(err(R"({"dtype":"F32","data_offsets":[0,4]})") == "tensor 't' has no \"shape\"");
  CHECK(err(R"({"dtype":"F32","shape":[1]})") == "tensor 't' has no \"data_offsets\"");
  CHECK(err(R"({"dtype":32,"shape":[1],"data_offsets":[0,4]})") ==
        "tensor 't': dtype is 32, expected a string such as \"F32\"");
  CHECK(err(R"({"dtype":"F32","shape":"1","data_offsets":[0,4]})") ==
        "tensor 't': shape is \"1\", expected an array of sizes");
  CHECK(err(R"({"dtype":"F32","shape":[1],"data_offsets":{"begin":0}})") ==
        "tensor 't': data_offsets is {\"begin\":0}, expected [begin, end]");
  CHECK(err(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})") ==
        "tensor 't': data_offsets is [0,4,8], expected [begin, end]");
  CHECK(err(R"({"dtype":"F32","shape":[1],"data_offsets":[0,"4"]})") ==
        "tensor 't': data_offsets[1] is \"4\", expected a non-negative integer");
  CHECK(err(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})") ==
        "tensor 't': data_offsets[0] is -4, expected a non-negative integer");
  CHECK(err(R"({"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]})") ==
        "header repeats the key 'dtype' inside an entry");
}

TEST_CASE("safetensors: load rejects unknown and unsupported dtypes by name") {
  CHECK(load_error(make_file(R"({"t":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", "x")) ==
        "tensor 't': unknown dtype 'Q7'");
  // Names are case-sensitive.
  CHECK(load_error(make_file(R"({"t":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})",
                             "1234")) == "tensor 't': unknown dtype 'f32'");
  for (const char* name : {"F16", "BF16", "U8", "I8", "I16", "U16", "U32", "U64"}) {
    CAPTURE(name);
    std::string json =
        R"({"t":{"dtype":")" + std::string(name) + R"(","shape":[0],"data_offsets":[0,0]}})";
    CHECK(load_error(make_file(json)) == "tensor 't': dtype " + std::string(name) +
                                             " is not supported by tapegrad (it reads BOOL, I32, "
                                             "I64, F32, F64)");
  }
}

TEST_CASE("safetensors: load rejects bad shapes and sizes that disagree with the offsets") {
  auto err = [](const std::string& shape, const std::string& offsets, size_t data_bytes) {
    std::string json = R"({"t":)" + f32_entry(offsets, shape) + "}";
    return load_error(make_file(json, std::string(data_bytes, '\0')));
  };
  CHECK(err("[2,-1]", "[0,0]", 0) == "tensor 't': shape[1] is -1, expected a non-negative integer");
  CHECK(err("[2.5]", "[0,8]", 8) == "tensor 't': shape[0] is 2.5, expected a non-negative integer");
  CHECK(err("[2.0]", "[0,8]", 8) == "tensor 't': shape[0] is 2.0, expected a non-negative integer");
  CHECK(err("[true]", "[0,4]", 4) ==
        "tensor 't': shape[0] is true, expected a non-negative integer");
  CHECK(err("[9223372036854775808]", "[0,4]", 4) ==
        "tensor 't': shape[0] is 9223372036854775808, too large");
  CHECK(err("[4294967296,4294967296]", "[0,4]", 4) ==
        "tensor 't': shape [4294967296, 4294967296] is too large (its size in bytes overflows "
        "int64)");
  CHECK(err("[4611686018427387904]", "[0,4]", 4) ==
        "tensor 't': shape [4611686018427387904] is too large (its size in bytes overflows "
        "int64)");
  // No bytes, but strides that overflow (issue 12, defect 5).
  CHECK(err("[0,4,2305843009213693952]", "[0,0]", 0) ==
        "tensor 't': shape [0, 4, 2305843009213693952] is too large (its size in bytes "
        "overflows int64)");
  CHECK(err("[3,4294967296,4294967296,2]", "[0,0]", 0) ==
        "tensor 't': shape [3, 4294967296, 4294967296]... is too large (its size in bytes "
        "overflows int64)");
  CHECK(err("[2]", "[0,4]", 4) ==
        "tensor 't': shape [2] of F32 needs 8 bytes, but "
        "data_offsets [0, 4] hold 4");
  CHECK(err("[]", "[0,8]", 8) ==
        "tensor 't': shape [] of F32 needs 4 bytes, but "
        "data_offsets [0, 8] hold 8");
  CHECK(err("[2]", "[8,0]", 8) == "tensor 't': data_offsets [8, 0] begin after end");
}

TEST_CASE("safetensors: load rejects offsets that overlap, leave holes, or leave the data") {
  auto file = [](const std::string& a_offsets, const std::string& b_offsets, size_t data_bytes) {
    return make_file(R"({"a":)" + f32_entry(a_offsets) + R"(,"b":)" + f32_entry(b_offsets) + "}",
                     std::string(data_bytes, '\0'));
  };
  CHECK(tg::load_from_bytes(file("[0,4]", "[4,8]", 8)).size() == 2);
  CHECK(load_error(file("[0,4]", "[2,6]", 6)) ==
        "tensor 'b' (data_offsets [2, 6]) overlaps tensor 'a' (data_offsets [0, 4])");
  CHECK(load_error(file("[0,4]", "[0,4]", 4)) ==
        "tensor 'b' (data_offsets [0, 4]) overlaps tensor 'a' (data_offsets [0, 4])");
  CHECK(load_error(file("[0,4]", "[8,12]", 12)) ==
        "data bytes [4, 8) belong to no tensor (tensor 'b' starts there; the tensors "
        "must cover the data without holes)");
  CHECK(load_error(file("[4,8]", "[8,12]", 12)) ==
        "data bytes [0, 4) belong to no tensor (tensor 'a' starts there; the tensors "
        "must cover the data without holes)");
  // Offsets past the end of the file: the data is truncated.
  CHECK(load_error(file("[0,4]", "[4,8]", 6)) ==
        "file is truncated: tensor 'b' ends at data byte 8, but only 6 bytes follow "
        "the header");
  CHECK(load_error(file("[0,4]", "[4,8]", 0)) ==
        "file is truncated: tensor 'b' ends at data byte 8, but only 0 bytes follow "
        "the header");
  CHECK(load_error(file("[0,4]", "[4,8]", 11)) ==
        "file has 3 trailing bytes after the last tensor (the data holds 8 bytes)");
  CHECK(load_error(make_file("{}", "z")) ==
        "file has 1 trailing bytes after the last tensor (the data holds 0 bytes)");
  // A valid file cut short by one byte.
  std::string whole = tg::save_to_bytes({{"v", tg::tensor(std::vector<int32_t>{1, 2})}});
  CHECK(load_error(whole.substr(0, whole.size() - 1)) ==
        "file is truncated: tensor 'v' ends at data byte 8, but only 7 bytes follow "
        "the header");
}

TEST_CASE("safetensors: load rejects repeated names, bad metadata and invalid bool bytes") {
  std::string twice = R"({"a":)" + f32_entry("[0,4]") + R"(,"a":)" + f32_entry("[4,8]") + "}";
  CHECK(load_error(make_file(twice, std::string(8, '\0'))) == "header names 'a' twice");
  CHECK(load_error(make_file(R"({"__metadata__":{"k":1}})")) ==
        "metadata value of 'k' is 1, expected a string");
  CHECK(load_error(make_file(R"({"__metadata__":{"k":"v","n":null}})")) ==
        "metadata value of 'n' is null, expected a string");
  CHECK(load_error(make_file(R"({"__metadata__":["k"]})")) ==
        "\"__metadata__\" is [\"k\"], expected an object of strings");
  CHECK(load_error(make_file(R"({"__metadata__":{"k":"1","k":"2"}})")) ==
        "header repeats the key 'k' inside an entry");
  std::string bools = make_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})");
  CHECK(tg::load_from_bytes(bools + std::string("\1\0\1", 3)).at("m").to_vector<bool>() ==
        std::vector<bool>{true, false, true});
  CHECK(load_error(bools + std::string("\1\0\2", 3)) ==
        "tensor 'm' (BOOL) has byte 2 at element 2, expected 0 or 1");
}

TEST_CASE("safetensors: load bounds JSON nesting and never prints a whole value (issue 12)") {
  // ~90,000 levels once crashed Release when the error message dumped the value recursively.
  auto nested = [](size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  const std::string deep = nested(90000);
  const std::string too_deep =
      "header nests JSON values more than 16 levels deep (a safetensors "
      "header needs 3)";
  CHECK(load_error(make_file(R"({"__metadata__":)" + deep + "}")) == too_deep);
  CHECK(load_error(make_file(R"({"__metadata__":{"k":)" + deep + "}}")) == too_deep);
  CHECK(load_error(make_file(R"({"t":)" + deep + "}")) == too_deep);
  CHECK(load_error(make_file(R"({"t":{"dtype":)" + deep + "}}")) == too_deep);
  CHECK(load_error(make_file(R"({"t":{"dtype":"F32","shape":)" + deep + "}}")) == too_deep);
  std::string objects;
  for (int i = 0; i < 90000; ++i) objects += R"({"a":)";
  CHECK(load_error(make_file(objects + "1" + std::string(90000, '}'))) == too_deep);
  // 16 levels parse (header, entry, shape and 13 arrays).
  CHECK(load_error(make_file(R"({"t":{"dtype":"F32","shape":)" + nested(13) + "}}")) ==
        "tensor 't': shape[0] is " + nested(12) + ", expected a non-negative integer");
  // Long strings and names are clipped.
  const std::string long_string(1 << 20, 'x');
  CHECK(load_error(make_file(R"({"t":{"dtype":"F32","shape":")" + long_string + "\"}}")) ==
        "tensor 't': shape is \"" + std::string(36, 'x') + "..., expected an array of sizes");
  CHECK(load_error(make_file(R"({"t":{"dtype":")" + long_string + "\"}}")) ==
        "tensor 't': unknown dtype '" + std::string(61, 'x') + "...'");
  CHECK(load_error(make_file("{\"" + long_string + "\":1}")) ==
        "tensor '" + std::string(61, 'x') +
            "...' is described by 1, expected an object with "
            "dtype, shape and data_offsets");
}

TEST_CASE("safetensors: the reference implementation's own test vector comes out byte for byte") {
  // From safetensors/src/tensor.rs (test_serialization_forced_alignement): "attn0", F32 [1,1,2,3]
  // holding 0..5; the 65-byte JSON is padded with 7 spaces to 72.
  std::string expected =
      make_file(R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       )");
  for (float v : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f})
    expected.append(reinterpret_cast<const char*>(&v), 4);
  REQUIRE(expected.size() == 8 + 72 + 24);
  Tensor t = tg::arange(6, tg::kFloat32).view({1, 1, 2, 3});
  CHECK(tg::save_to_bytes({{"attn0", t}}) == expected);
}
