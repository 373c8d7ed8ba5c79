// Printing of small value types, and dispatch key names.
#include <tapegrad/core/device.h>
#include <tapegrad/core/dispatch.h>
#include <tapegrad/core/scalar.h>

namespace tg {

std::string Device::str() const {
  return type == DeviceType::CPU ? "cpu" : "cuda:" + std::to_string(index);
}
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to<bool>() ? "true" : "false");
  if (s.is_integral()) return os << s.to_int();
  return os << s.to_double();
}

const char* key_name(DispatchKey k) {
  switch (k) {
#define TG_KEY_NAME(key) \
  case DispatchKey::key: return #key;
    TG_FORALL_DISPATCH_KEYS(TG_KEY_NAME)
#undef TG_KEY_NAME
    case DispatchKey::NumKeys: break;
  }
  return "?";
}

}  // namespace tg
