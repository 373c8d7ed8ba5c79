// safetensors reading and writing. The file: 8 bytes little-endian header length N, N bytes of
// JSON, then the tensors' raw bytes back to back. Reading checks everything before it allocates a
// tensor, and never reads past the end of the buffer or file; the rules are listed in
// docs/SERIALIZATION_AND_DATA.md.
#include <tapegrad/nn/serialize.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <tuple>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include <tapegrad/core/checked.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/factories.h>

namespace tg {
namespace {

using json = nlohmann::json;
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and tapegrad copies it as raw bytes");

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr const char* kMetadataKey = "__metadata__";
// A valid header nests 3 levels (header, entry, shape); deeper ones are rejected while parsing,
// before anything recursive (nlohmann's dump, destruction) sees them.
constexpr int kMaxJsonDepth = 16;

// The safetensors dtypes tapegrad stores. `rank` follows the reference's dtype order; writers sort
// tensors by rank (descending), then by name: I64, F64, F32, I32, BOOL.
struct FileDType {
  const char* name;
  DType dtype;
  int rank;
};
constexpr FileDType kFileDTypes[] = {{"BOOL", kBool, 0},
                                     {"I32", kInt32, 1},
                                     {"F32", kFloat32, 2},
                                     {"F64", kFloat64, 3},
                                     {"I64", kInt64, 4}};
// Dtypes of the format that have no tapegrad counterpart.
constexpr const char* kUnsupportedDTypes[] = {"F4",      "F6_E2M3", "F6_E3M2", "U8",  "I8",
                                              "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16",
                                              "F16",     "BF16",    "U32",     "C64", "U64"};

const FileDType* find_file_dtype(DType t) {
  for (const FileDType& f : kFileDTypes)
    if (f.dtype == t) return &f;
  return nullptr;
}

// ---- reading -----------------------------------------------------------------------------------

// Throws ValueError("[load] <source>: ...").
template <typename... Parts>
[[noreturn]] void bad_file(const std::string& source, Parts&&... parts) {
  fail<ValueError>("load", source, ": ", std::forward<Parts>(parts)...);
}

// A JSON value for an error message, cut short when long. Never dumps the whole value: a value
// may be 100 MB long (or, without the depth limit, nested deep enough that a recursive dump
// overflows the stack); only the first few children of containers and a string's first bytes.
void show_into(const json& v, std::string& out, int depth) {
  constexpr size_t kEnough = 41;
  if (out.size() >= kEnough) return;
  if (v.is_string()) {
    const std::string& str = v.get_ref<const std::string&>();
    out += json(str.substr(0, kEnough)).dump(-1, ' ', false, json::error_handler_t::replace);
  } else if (v.is_primitive()) {
    out += v.dump();
  } else if (depth >= kMaxJsonDepth) {
    out += v.is_array() ? "[...]" : "{...}";
  } else {
    out += v.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() < kEnough; ++it, first = false) {
      if (!first) out += ',';
      if (v.is_object())
        out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ":";
      show_into(*it, out, depth + 1);
    }
    out += v.is_array() ? ']' : '}';
  }
}
// A name from the file (a tensor name, a key) for an error message: at most 64 bytes of it.
std::string clip(const std::string& name) {
  return name.size() <= 64 ? name : name.substr(0, 61) + "...";
}
// A shape from the file for an error message: at most its first 16 sizes.
std::string show_shape(const Shape& shape) {
  if (shape.size() <= 16) return shape.str();
  std::string out = Shape(shape.begin(), shape.begin() + 16).str();
  return out.substr(0, out.size() - 1) + ", ...] (" + std::to_string(shape.size()) + " dims)";
}
std::string show(const json& v) {
  std::string s;
  show_into(v, s, 0);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

struct Entry {
  std::string name;
  std::string shown;  // name clipped for messages
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data that follows the header
};

struct Header {
  uint64_t size = 0;           // N: the JSON's length in bytes
  std::vector<Entry> entries;  // sorted by data offset
  std::map<std::string, std::string> metadata;
  uint64_t data_bytes = 0;  // where the last tensor ends
};

// N from the first 8 bytes of a file of file_size bytes (prefix holds at least min(8, file_size)).
uint64_t read_header_size(std::string_view prefix, uint64_t file_size, const std::string& source) {
  if (file_size < 8)
    bad_file(source, "file is ", file_size, " bytes long, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(prefix[i]);
  if (n > kMaxHeaderBytes)
    bad_file(source, "header length ", n, " is over the limit of ", kMaxHeaderBytes,
             " bytes (not a safetensors file, or a corrupt one)");
  if (n > file_size - 8)
    bad_file(source, "header length ", n, " is larger than the rest of the file (", file_size - 8,
             " bytes)");
  return n;
}

// One pass over the JSON text that spots syntax errors and repeated keys (nlohmann would keep the
// last of repeated keys silently; its parse callbacks would take quadratic time on big headers).
struct JsonChecker : nlohmann::json_sax<json> {
  std::vector<std::unordered_set<std::string>> open;  // the keys seen in each open object
  std::string repeated, error;
  bool repeated_at_top = false;
  int depth = 0;

  bool too_deep = false;

  bool enter() {
    if (++depth <= kMaxJsonDepth) return true;
    too_deep = true;
    return false;
  }
  bool start_object(std::size_t) override {
    if (!enter()) return false;
    open.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!open.back().insert(key).second && repeated.empty()) {
      repeated = key;
      repeated_at_top = open.size() == 1;
    }
    return true;
  }
  bool end_object() override {
    open.pop_back();
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception& e) override {
    error = e.what();
    error = error.substr(error.find(']') + 2);  // drop "[json.exception.parse_error.101] "
    if (error.size() > 200) error = error.substr(0, 197) + "...";  // it quotes the bad token
    return false;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override {
    --depth;
    return true;
  }
};

// The header as a JSON object, after checking its syntax and that no key repeats.
json parse_json(std::string_view text, const std::string& source) {
  JsonChecker checker;
  if (!json::sax_parse(text.begin(), text.end(), &checker)) {
    if (checker.too_deep)
      bad_file(source, "header nests JSON values more than ", kMaxJsonDepth,
               " levels deep (a safetensors header needs 3)");
    bad_file(source, "header is not valid JSON (", checker.error, ")");
  }
  if (!checker.repeated.empty()) {
    if (checker.repeated_at_top)
      bad_file(source, "header names '", clip(checker.repeated), "' twice");
    bad_file(source, "header repeats the key '", clip(checker.repeated), "' inside an entry");
  }
  json header = json::parse(text.begin(), text.end());
  if (!header.is_object())
    bad_file(source, "header is a JSON ", header.type_name(), ", expected an object");
  return header;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& source) {
  if (!value.is_object())
    bad_file(source, "\"", kMetadataKey, "\" is ", show(value), ", expected an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string())
      bad_file(source, "metadata value of '", clip(key), "' is ", show(v), ", expected a string");
    out[key] = v.get<std::string>();
  }
  return out;
}

// A JSON number that must be a non-negative integer (at most max).
uint64_t read_count(const json& v, const std::string& source, const std::string& name,
                    const std::string& what, uint64_t max) {
  if (!v.is_number_unsigned())
    bad_file(source, "tensor '", name, "': ", what, " is ", show(v),
             ", expected a non-negative integer");
  uint64_t x = v.get<uint64_t>();
  if (x > max) bad_file(source, "tensor '", name, "': ", what, " is ", x, ", too large");
  return x;
}

const json& field(const json& entry, const char* key, const std::string& source,
                  const std::string& name) {
  auto it = entry.find(key);
  if (it == entry.end()) bad_file(source, "tensor '", name, "' has no \"", key, "\"");
  return *it;
}

Entry parse_entry(const std::string& full_name, const json& value, const std::string& source) {
  const std::string name = clip(full_name);
  if (!value.is_object())
    bad_file(source, "tensor '", name, "' is described by ", show(value),
             ", expected an object with dtype, shape and data_offsets");
  Entry e;
  e.name = full_name;
  e.shown = name;

  const json& dtype = field(value, "dtype", source, name);
  if (!dtype.is_string())
    bad_file(source, "tensor '", name, "': dtype is ", show(dtype),
             ", expected a string such as \"F32\"");
  const std::string& dname = dtype.get_ref<const std::string&>();
  const FileDType* fd = nullptr;
  for (const FileDType& f : kFileDTypes)
    if (dname == f.name) fd = &f;
  if (!fd) {
    for (const char* u : kUnsupportedDTypes)
      if (dname == u)
        bad_file(source, "tensor '", name, "': dtype ", u,
                 " is not supported by tapegrad (it reads BOOL, I32, I64, F32, F64)");
    bad_file(source, "tensor '", name, "': unknown dtype '", clip(dname), "'");
  }
  e.dtype = fd->dtype;

  const json& shape = field(value, "shape", source, name);
  if (!shape.is_array())
    bad_file(source, "tensor '", name, "': shape is ", show(shape), ", expected an array of sizes");
  constexpr uint64_t kMaxCount = static_cast<uint64_t>(INT64_MAX);
  // The same rule as every tensor (core/checked.h): the contiguous layout's byte span, the product
  // of max(size, 1) times itemsize, fits in int64; so numel, strides and bytes do too, also
  // when a size is 0 ([0, 4, 2^61] holds no bytes but its strides would overflow).
  int64_t span = static_cast<int64_t>(itemsize(e.dtype));
  bool empty = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string what = "shape[" + std::to_string(d) + "]";
    uint64_t size = read_count(shape[d], source, name, what, kMaxCount);
    e.shape.push_back(static_cast<int64_t>(size));
    empty |= size == 0;
    if (!checked::mul(span, std::max<int64_t>(static_cast<int64_t>(size), 1), span))
      bad_file(source, "tensor '", name, "': shape ", show_shape(e.shape),
               d + 1 < shape.size() ? "..." : "",
               " is too large (its size in bytes overflows int64)");
  }
  const uint64_t nbytes = empty ? 0 : static_cast<uint64_t>(span);

  const json& offsets = field(value, "data_offsets", source, name);
  if (!offsets.is_array() || offsets.size() != 2)
    bad_file(source, "tensor '", name, "': data_offsets is ", show(offsets),
             ", expected [begin, end]");
  e.begin = read_count(offsets[0], source, name, "data_offsets[0]", UINT64_MAX);
  e.end = read_count(offsets[1], source, name, "data_offsets[1]", UINT64_MAX);
  if (e.begin > e.end)
    bad_file(source, "tensor '", name, "': data_offsets [", e.begin, ", ", e.end,
             "] begin after end");
  if (e.end - e.begin != nbytes)
    bad_file(source, "tensor '", name, "': shape ", show_shape(e.shape), " of ", fd->name,
             " needs ", nbytes, " bytes, but data_offsets [", e.begin, ", ", e.end, "] hold ",
             e.end - e.begin);
  return e;
}

// Parses and checks the header text of a file of file_size bytes whose header length is n.
Header parse_header(std::string_view text, uint64_t file_size, const std::string& source) {
  Header h;
  h.size = text.size();
  json header = parse_json(text, source);
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      h.metadata = parse_metadata(value, source);
    } else {
      h.entries.push_back(parse_entry(key, value, source));
    }
  }
  // The tensors must cover the data exactly, one after the other (in any order in the JSON).
  std::sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  const Entry* prev = nullptr;
  for (const Entry& e : h.entries) {
    if (e.begin < h.data_bytes)
      bad_file(source, "tensor '", e.shown, "' (data_offsets [", e.begin, ", ", e.end,
               "]) overlaps tensor '", prev->shown, "' (data_offsets [", prev->begin, ", ",
               prev->end, "])");
    if (e.begin > h.data_bytes)
      bad_file(source, "data bytes [", h.data_bytes, ", ", e.begin,
               ") belong to no tensor (tensor '", e.shown,
               "' starts there; the tensors must cover the data without holes)");
    h.data_bytes = e.end;
    prev = &e;
  }
  uint64_t available = file_size - 8 - h.size;
  if (h.data_bytes > available)
    bad_file(source, "file is truncated: tensor '", prev->shown, "' ends at data byte ",
             h.data_bytes, ", but only ", available, " bytes follow the header");
  if (h.data_bytes < available)
    bad_file(source, "file has ", available - h.data_bytes,
             " trailing bytes after the last tensor (the data holds ", h.data_bytes, " bytes)");
  return h;
}

// A bool tensor's bytes must be 0 or 1 (any other byte is not a valid bool).
void check_bools(const Entry& e, const Tensor& t, const std::string& source) {
  if (e.dtype != kBool) return;
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] > 1)
      bad_file(source, "tensor '", e.shown, "' (BOOL) has byte ", static_cast<int>(p[i]),
               " at element ", i, ", expected 0 or 1");
}

StateDict load_bytes(std::string_view bytes, const std::string& source) {
  uint64_t n = read_header_size(bytes, bytes.size(), source);
  Header h = parse_header(bytes.substr(8, n), bytes.size(), source);
  const char* data = bytes.data() + 8 + n;
  StateDict out;
  for (const Entry& e : h.entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data + e.begin, e.end - e.begin);
    check_bools(e, t, source);
    out.emplace(e.name, t);
  }
  return out;
}

// Opens path for reading and returns its size; errors name the path.
uint64_t open_for_reading(std::ifstream& in, const std::string& path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    fail<Error>("load", path, ": no such file");
  if (ec) fail<Error>("load", path, ": cannot open (", ec.message(), ")");
  if (!std::filesystem::is_regular_file(status)) fail<Error>("load", path, ": not a regular file");
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) fail<Error>("load", path, ": cannot read its size (", ec.message(), ")");
  in.open(path, std::ios::binary);
  if (!in) fail<Error>("load", path, ": cannot open (", std::strerror(errno), ")");
  return size;
}

// Reads exactly count bytes into dst; a short read means the file shrank under us.
void read_exactly(std::ifstream& in, char* dst, uint64_t count, const std::string& path) {
  if (count == 0) return;
  in.read(dst, static_cast<std::streamsize>(count));
  if (static_cast<uint64_t>(in.gcount()) != count)
    fail<Error>("load", path, ": read failed after ", in.gcount(), " of ", count, " bytes");
}

Header read_file_header(std::ifstream& in, const std::string& path) {
  uint64_t file_size = open_for_reading(in, path);
  char prefix[8] = {};
  read_exactly(in, prefix, std::min<uint64_t>(8, file_size), path);
  uint64_t n = read_header_size(std::string_view(prefix, 8), file_size, path);
  std::string text(n, '\0');
  read_exactly(in, text.data(), n, path);
  return parse_header(text, file_size, path);
}

// ---- writing -----------------------------------------------------------------------------------

// The 8 length bytes and the padded JSON, plus the tensors (contiguous, on CPU) in file order.
struct Prepared {
  std::string head;
  std::vector<Tensor> tensors;
};

Prepared prepare(const StateDict& tensors, const std::map<std::string, std::string>& metadata) {
  NoGradGuard no_grad;
  struct Item {
    const std::string* name;
    const FileDType* dtype;
    Tensor data;
  };
  std::vector<Item> items;
  for (const auto& [name, t] : tensors) {
    TG_CHECK(t.defined(), ValueError, "save", "tensor '", name, "' is undefined");
    TG_CHECK(name != kMetadataKey, ValueError, "save", "the name '", kMetadataKey,
             "' is reserved for the metadata; rename that tensor");
    const FileDType* fd = find_file_dtype(t.dtype());
    TG_CHECK(fd, TypeError, "save", "tensor '", name, "' has dtype ", dtype_name(t.dtype()),
             "; tapegrad saves bool, int32, int64, float32 and float64");
    items.push_back({&name, fd, t.detach().cpu().contiguous()});
  }
  // The reference order: dtype rank descending, then name (the map already sorts by name).
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.dtype->rank > b.dtype->rank; });

  // The JSON is written piece by piece: nlohmann's ordered_json looks keys up linearly, which
  // would make big state dicts quadratic. Entries keep the reference's key order.
  std::string text = "{";
  auto add = [&](const std::string& key, const std::string& value) {
    if (text.size() > 1) text += ',';
    text += json(key).dump() + ":" + value;
  };
  Prepared out;
  try {
    if (!metadata.empty()) add(kMetadataKey, json(metadata).dump());
    uint64_t offset = 0;
    for (const Item& item : items) {
      uint64_t nbytes = static_cast<uint64_t>(item.data.numel()) * itemsize(item.data.dtype());
      nlohmann::ordered_json entry = {{"dtype", item.dtype->name},
                                      {"shape", item.data.shape().vec()},
                                      {"data_offsets", {offset, offset + nbytes}}};
      add(*item.name, entry.dump());
      offset += nbytes;
      out.tensors.push_back(item.data);
    }
  } catch (const json::type_error& e) {
    fail<ValueError>("save", "tensor names and metadata must be valid UTF-8 (", e.what(), ")");
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
  TG_CHECK(text.size() <= kMaxHeaderBytes, ValueError, "save", "header of ", text.size(),
           " bytes is over the format's limit of ", kMaxHeaderBytes, " bytes");
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.head.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.head += text;
  return out;
}

const char* bytes_of(const Tensor& t) { return static_cast<const char*>(t.data_ptr()); }
size_t nbytes_of(const Tensor& t) { return static_cast<size_t>(t.numel()) * itemsize(t.dtype()); }

}  // namespace

std::string save_to_bytes(const StateDict& tensors,
                          const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::string out = std::move(p.head);
  for (const Tensor& t : p.tensors)
    if (nbytes_of(t) > 0) out.append(bytes_of(t), nbytes_of(t));
  return out;
}

void save(const StateDict& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(tensors, metadata);
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail<Error>("save", "cannot open '", tmp, "' for writing (", std::strerror(errno), ")");
    out.write(p.head.data(), static_cast<std::streamsize>(p.head.size()));
    for (const Tensor& t : p.tensors)
      if (nbytes_of(t) > 0) out.write(bytes_of(t), static_cast<std::streamsize>(nbytes_of(t)));
    out.close();
    if (!out) {
      int err = errno;
      std::filesystem::remove(tmp, ec);
      fail<Error>("save", "writing '", tmp, "' failed (", std::strerror(err), ")");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    fail<Error>("save", "cannot rename '", tmp, "' to '", path, "' (", why, ")");
  }
}

StateDict load_from_bytes(std::string_view bytes) { return load_bytes(bytes, "<bytes>"); }

StateDict load(const std::string& path) {
  std::ifstream in;
  Header h = read_file_header(in, path);
  StateDict out;
  for (const Entry& e : h.entries) {  // in offset order, so the reads are sequential
    Tensor t = empty(e.shape, e.dtype);
    read_exactly(in, static_cast<char*>(t.data_ptr()), e.end - e.begin, path);
    check_bools(e, t, path);
    out.emplace(e.name, t);
  }
  return out;
}

StateDict load(const std::string& path, Device device) {
  StateDict out = load(path);
  for (auto& entry : out) entry.second = entry.second.to(device);
  return out;
}

std::map<std::string, std::string> load_metadata(const std::string& path) {
  std::ifstream in;
  return read_file_header(in, path).metadata;
}

}  // namespace tg
