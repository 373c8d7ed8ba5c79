#include <tapegrad/ops/registry.h>

namespace tg::registry {

const OpInfo* find_op(const std::string& name) {
  for (const auto& op : all_ops())
    if (op.name == name) return &op;
  return nullptr;
}

void bad_value(const char* op, size_t index, const char* expected) {
  fail<TypeError>(op, "boxed argument ", index, " is missing or not of type ", expected);
}

Tensor get_optional_tensor(const char* op, const std::vector<Value>& args, size_t i) {
  if (i < args.size() && std::holds_alternative<std::monostate>(args[i])) return {};
  return get<Tensor>(op, args, i);
}

std::optional<int64_t> get_optional_int(const char* op, const std::vector<Value>& args, size_t i) {
  if (i < args.size() && std::holds_alternative<std::monostate>(args[i])) return std::nullopt;
  return get<int64_t>(op, args, i);
}

std::optional<Scalar> get_optional_scalar(const char* op, const std::vector<Value>& args,
                                          size_t i) {
  if (i < args.size() && std::holds_alternative<std::monostate>(args[i])) return std::nullopt;
  return get<Scalar>(op, args, i);
}

std::optional<DType> get_optional_dtype(const char* op, const std::vector<Value>& args, size_t i) {
  if (i < args.size() && std::holds_alternative<std::monostate>(args[i])) return std::nullopt;
  return get<DType>(op, args, i);
}

}  // namespace tg::registry
