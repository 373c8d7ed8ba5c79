#pragma once
// Dispatch keys and the per-op kernel table. A call runs the highest key in the union of its
// tensors' key sets: Autograd (when grad mode is on) records and redispatches below itself, then
// the backend key (CUDA, CPU) runs the kernel.
#include <cstdint>

#include <tapegrad/core/device.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>

namespace tg {

// Highest priority first. Adding a key (tracing, profiling) touches only this list.
#define TG_FORALL_DISPATCH_KEYS(_) \
  _(Autograd)                      \
  _(CUDA)                          \
  _(CPU)

enum class DispatchKey : uint8_t {
#define TG_KEY_ENUM(k) k,
  TG_FORALL_DISPATCH_KEYS(TG_KEY_ENUM)
#undef TG_KEY_ENUM
      NumKeys
};
inline constexpr int kNumDispatchKeys = static_cast<int>(DispatchKey::NumKeys);

const char* key_name(DispatchKey k);
inline DispatchKey backend_key(DeviceType t) {
  return t == DeviceType::CUDA ? DispatchKey::CUDA : DispatchKey::CPU;
}

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : bits_(1u << static_cast<int>(k)) {}
  bool has(DispatchKey k) const { return bits_ & (1u << static_cast<int>(k)); }
  bool empty() const { return bits_ == 0; }
  DispatchKeySet add(DispatchKey k) const { return from_bits(bits_ | (1u << static_cast<int>(k))); }
  DispatchKeySet remove(DispatchKey k) const {
    return from_bits(bits_ & ~(1u << static_cast<int>(k)));
  }
  DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  // Highest-priority key present (CPU when empty: factories with no tensor input).
  DispatchKey highest() const {
    return bits_ ? static_cast<DispatchKey>(__builtin_ctz(bits_)) : DispatchKey::CPU;
  }
  bool operator==(const DispatchKeySet&) const = default;

 private:
  static DispatchKeySet from_bits(uint32_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

// The key a call runs: Autograd only while grad mode is on.
inline DispatchKey select_key(DispatchKeySet ks) {
  if (ks.has(DispatchKey::Autograd) && !GradMode::is_enabled())
    ks = ks.remove(DispatchKey::Autograd);
  return ks.highest();
}

// One op's kernels, indexed by key. Fn is a plain function pointer type.
template <typename Fn> struct OpTable {
  const char* name;
  Fn kernels[kNumDispatchKeys] = {};
  Fn lookup(DispatchKey k) const {
    Fn fn = kernels[static_cast<int>(k)];
    if (!fn) [[unlikely]]
      fail<Error>(name, "no kernel for ", key_name(k));
    return fn;
  }
  void set(DispatchKey k, Fn fn) { kernels[static_cast<int>(k)] = fn; }
};

}  // namespace tg
