#include <tapegrad/ops/registry.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace tg::registry {
namespace {

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

std::deque<OpInfo>& table() {
  static std::deque<OpInfo> ops = [] {
    std::vector<OpInfo> builtin = builtin_ops();
    return std::deque<OpInfo>(std::make_move_iterator(builtin.begin()),
                              std::make_move_iterator(builtin.end()));
  }();
  return ops;
}

}  // namespace

const std::deque<OpInfo>& all_ops() { return table(); }

const OpInfo* find_op(const std::string& name) {
  for (const auto& op : all_ops())
    if (op.name == name) return &op;
  return nullptr;
}

void register_library(const std::string& library, std::vector<OpInfo> ops) {
  std::lock_guard<std::mutex> lock(table_mutex());
  std::deque<OpInfo>& all = table();
  std::set<std::string> mine;
  for (OpInfo& op : ops) {
    op.library = library;
    for (const OpInfo& other : all)
      if (other.name == op.name)
        fail<ValueError>("registry", "op '", op.name, "' of library '", library, "' (",
                         op.spec_file, ") clashes with ",
                         other.library == "tapegrad" ? "the built-in op" : "the op", " '",
                         other.name, "' of ", other.library, " (", other.spec_file,
                         "): one op per name; rename one of them");
    if (!mine.insert(op.name).second)
      fail<ValueError>("registry", "library '", library, "' defines op '", op.name, "' twice");
  }
  for (OpInfo& op : ops) all.push_back(std::move(op));
}

bool register_library_at_load(const std::string& library, std::vector<OpInfo> ops) noexcept {
  try {
    register_library(library, std::move(ops));
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tapegrad: cannot load the op library '%s': %s\n", library.c_str(),
                 e.what());
  }
  std::abort();
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
