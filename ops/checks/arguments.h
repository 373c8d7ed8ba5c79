#pragma once
// The generic argument checks every generated op front end runs first, from the spec alone:
// tensors defined, of an allowed dtype, on one device; string args among their allowed values.
// The op's own check (spec key "check", ops/checks/<family>.cpp) runs right after them. Both run
// before autograd and before any kernel, so a bad call throws a clear "[op]" error and changes
// nothing.
#include <initializer_list>
#include <string>
#include <vector>

#include <tapegrad/core/tensor.h>

namespace tg::detail {

constexpr uint32_t dtype_bit(DType t) { return 1u << static_cast<unsigned>(t); }

[[noreturn]] void fail_undefined(const char* op, const char* arg);
[[noreturn]] void fail_dtype(const char* op, const char* arg, DType got, const char* allowed);
[[noreturn]] void fail_device(const char* op, const char* arg, const Tensor& t, const Tensor& first,
                              const char* first_name);

// Checks one tensor argument (defined, allowed dtype, same device as the first tensor argument,
// wrapped numbers excepted) and adds its keys to the call's key set.
inline void check_tensor_arg(const char* op, const char* arg, const Tensor& t, uint32_t dtype_mask,
                             const char* allowed, const Tensor*& first, DispatchKeySet& keys) {
  if (!t.defined()) [[unlikely]] fail_undefined(op, arg);
  if (!(dtype_mask & dtype_bit(t.dtype()))) [[unlikely]] fail_dtype(op, arg, t.dtype(), allowed);
  if (!t.impl()->is_wrapped_number) {
    if (first == nullptr) {
      first = &t;
    } else if (!(first->device() == t.device())) [[unlikely]] {
      fail_device(op, arg, t, *first, "the first tensor argument");
    }
  }
  keys = keys | t.key_set();
}

void check_tensor_list(const char* op, const char* arg, const std::vector<Tensor>& list,
                       uint32_t dtype_mask, const char* allowed, const Tensor*& first,
                       DispatchKeySet& keys);
void check_choice(const char* op, const char* arg, const std::string& value,
                  std::initializer_list<const char*> allowed);

}  // namespace tg::detail
