#pragma once
// Whether ops record on the autograd tape (per thread).
namespace tg {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// RAII: sets grad mode for a scope and restores the previous value.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

// Nothing inside this scope is recorded on the tape.
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

// Recording is on inside this scope (e.g. in a NoGradGuard region).
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

namespace detail {
// initial-exec: a plain TLS load, no __tls_get_addr call, on every op.
inline thread_local bool grad_enabled __attribute__((tls_model("initial-exec"))) = true;
}  // namespace detail
inline bool GradMode::is_enabled() { return detail::grad_enabled; }
inline void GradMode::set_enabled(bool enabled) { detail::grad_enabled = enabled; }

}  // namespace tg
