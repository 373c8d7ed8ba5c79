#pragma once
// Small helpers shared by the test files.
#include <tapegrad/tapegrad.h>

#include <string>

namespace tg_test {

// The message of the ErrorType (any tg::Error by default) that fn throws, or "" when it throws
// none.
template <typename ErrorType = tg::Error, typename Fn> std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ErrorType& e) {
    return e.what();
  }
  return "";
}

}  // namespace tg_test
