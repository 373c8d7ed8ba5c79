#pragma once
// One thread pool for CPU kernels, sharing its thread count with OpenBLAS. Idle workers poll for
// new work for a short while (TG_POOL_SPIN_US), then sleep.
#include <cstdint>
#include <memory>
#include <type_traits>

namespace tg {

// Threads used by CPU kernels and by OpenBLAS (default: the number of cores).
void set_num_threads(int n);
int get_num_threads();

// A non-owning reference to a callable fn(int64_t begin, int64_t end), valid while the callable
// lives: parallel_for's argument without std::function's copy (a heap allocation for a lambda
// capturing more than two references, paid even when the range runs inline).
class RangeFnRef {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFnRef>>>
  RangeFnRef(F&& f) noexcept {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
    using Fn = std::remove_reference_t<F>;
    if constexpr (std::is_function_v<Fn>) {
      target_.fn = &f;
      call_ = [](const Target& t, int64_t b, int64_t e) { t.fn(b, e); };
    } else {
      target_.obj = static_cast<const void*>(std::addressof(f));
      call_ = [](const Target& t, int64_t b, int64_t e) {
        (*static_cast<Fn*>(const_cast<void*>(t.obj)))(b, e);
      };
    }
  }
  void operator()(int64_t begin, int64_t end) const { call_(target_, begin, end); }

 private:
  union Target {
    const void* obj;
    void (*fn)(int64_t, int64_t);
  };
  Target target_{};
  void (*call_)(const Target&, int64_t, int64_t) = nullptr;
};

// Runs fn(begin, end) over [begin, end) split into chunks of at least `grain` items, in parallel
// when there is more than one chunk and we are not already inside a parallel region.
void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFnRef fn);

// Items below which a simple elementwise loop is not worth splitting.
inline constexpr int64_t kElementwiseGrain = 32768;

// Bytes below which a plain copy (memcpy) is not worth splitting: a chunk must outlast handing
// it to a worker (under a microsecond when the worker is polling, several when it sleeps) many
// times over.
inline constexpr int64_t kCopyGrainBytes = int64_t{1} << 18;

}  // namespace tg
