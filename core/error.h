#pragma once
// tg::Error and its subclasses. Every user error starts with "[op]", names the argument and shows
// expected vs got. TG_CHECK builds the message only when the check fails.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tg {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class TypeError : public Error {
 public:
  using Error::Error;
};
class ValueError : public Error {
 public:
  using Error::Error;
};
class IndexError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Parts> std::string str_cat(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  return os.str();
}
}  // namespace detail

// Throw ErrorType("[op] ...") built from the streamable parts.
template <typename ErrorType = Error, typename... Parts>
[[noreturn]] void fail(const char* op, Parts&&... parts) {
  throw ErrorType(detail::str_cat("[", op, "] ", std::forward<Parts>(parts)...));
}

}  // namespace tg

// TG_CHECK(cond, ErrorType, "op", parts...): throws ErrorType("[op] parts...") unless cond.
#define TG_CHECK(cond, ErrorType, op, ...)    \
  do {                                        \
    if (!(cond)) [[unlikely]]                 \
      ::tg::fail<ErrorType>(op, __VA_ARGS__); \
  } while (0)

// Internal invariant (a bug in tapegrad, not a user error).
#define TG_ASSERT(cond, ...)                                                                      \
  do {                                                                                            \
    if (!(cond)) [[unlikely]]                                                                     \
      ::tg::fail<::tg::Error>("internal", __FILE__, ":", __LINE__, ": ", #cond, " " __VA_ARGS__); \
  } while (0)
