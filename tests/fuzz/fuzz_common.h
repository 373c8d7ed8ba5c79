#pragma once
// Shared by the fuzz harnesses (tests/fuzz/*_fuzzer.cpp). Each harness defines
// LLVMFuzzerTestOneInput; built with -fsanitize=fuzzer it is a libFuzzer target, built with
// replay_main.cpp (any compiler) it replays a corpus directory as a ctest test.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include <tapegrad/tapegrad.h>

// A harness invariant: on failure, print and abort (libFuzzer saves the input as a crash).
#define FUZZ_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ::tg_fuzz::report(__VA_ARGS__);                                                      \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace tg_fuzz {

inline void report() {}
inline void report(const std::string& what) { std::fprintf(stderr, "  %s\n", what.c_str()); }

// Runs fn; a tg::Error is an accepted outcome (returns its message), any other exception is a
// finding (an untyped error escaped: abort with its type and message).
template <typename Fn> bool runs_or_typed_error(Fn&& fn, std::string* message = nullptr) {
  try {
    fn();
    return true;
  } catch (const tg::Error& e) {
    if (message) *message = e.what();
    const std::string_view what = e.what();
    FUZZ_CHECK(what.size() > 2 && what[0] == '[', std::string("error without [op]: ") + e.what());
    return false;
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, std::string("untyped exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    FUZZ_CHECK(false, "non-std exception");
  }
  return false;
}

// Reads typed values from the fuzzer's bytes; past the end, every read gives zeros.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ >= end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  bool flag() { return byte() & 1; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return v;
  }
  // In [0, n) (n > 0), from one byte when n <= 256.
  size_t below(size_t n) { return n <= 256 ? byte() % n : static_cast<size_t>(u64() % n); }
  template <typename T> const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
  std::string bytes(size_t n) {
    n = std::min(n, left());
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  std::string rest() { return bytes(left()); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Everything observable about a tensor's data and layout, to check that a failed call left it
// unchanged: its whole storage's bytes, shape, strides, offset, dtype and version.
struct Snapshot {
  std::string bytes;
  tg::Shape shape, strides;
  int64_t offset = 0;
  tg::DType dtype = tg::kFloat32;
  uint64_t version = 0;
  bool defined = false;

  static Snapshot of(const tg::Tensor& t) {
    Snapshot s;
    if (!t.defined()) return s;
    s.defined = true;
    const auto& storage = t.impl()->storage;
    s.bytes.assign(static_cast<const char*>(storage->data), storage->nbytes);
    s.shape = t.shape();
    s.strides = t.strides();
    s.offset = t.storage_offset();
    s.dtype = t.dtype();
    s.version = t.version();
    return s;
  }
  bool same(const tg::Tensor& t) const {
    if (!t.defined()) return !defined;
    const auto& storage = t.impl()->storage;
    return defined && storage->nbytes == bytes.size() &&
           std::memcmp(storage->data, bytes.data(), bytes.size()) == 0 && t.shape() == shape &&
           t.strides() == strides && t.storage_offset() == offset && t.dtype() == dtype &&
           t.version() == version;
  }
};

}  // namespace tg_fuzz
