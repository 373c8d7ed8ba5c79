#include <tapegrad/ops/checks/arguments.h>

namespace tg::detail {

void fail_undefined(const char* op, const char* arg) {
  fail<ValueError>(op, arg, " is an undefined tensor");
}

void fail_dtype(const char* op, const char* arg, DType got, const char* allowed) {
  fail<TypeError>(op, arg, " has dtype ", dtype_name(got), ", which ", op, " does not support (supported: ",
                  allowed, ")");
}

void fail_device(const char* op, const char* arg, const Tensor& t, const Tensor& first, const char*) {
  fail<ValueError>(op, "expected all tensors on one device, but ", arg, " is on ", t.device(),
                   " and an earlier tensor argument is on ", first.device());
}

void check_tensor_list(const char* op, const char* arg, const std::vector<Tensor>& list, uint32_t dtype_mask,
                       const char* allowed, const Tensor*& first, DispatchKeySet& keys) {
  for (size_t i = 0; i < list.size(); ++i) {
    std::string name = std::string(arg) + "[" + std::to_string(i) + "]";
    check_tensor_arg(op, name.c_str(), list[i], dtype_mask, allowed, first, keys);
  }
}

void check_choice(const char* op, const char* arg, const std::string& value,
                  std::initializer_list<const char*> allowed) {
  std::string names;
  for (const char* a : allowed) {
    if (value == a) return;
    names += (names.empty() ? "" : ", ") + std::string(a);
  }
  fail<ValueError>(op, arg, " must be one of ", names, "; got '", value, "'");
}

}  // namespace tg::detail
