#pragma once
// Deterministic algorithms, as torch.use_deterministic_algorithms: process-wide, off by default.
//
// Off: the CUDA backend accumulates scatter_add, index_add, scatter_reduce and index_reduce
// (sum, prod, mean, amax, amin) with atomics, one thread per source element. Sums and products
// of floating values then come out in whatever order the threads ran, so the last bits may
// differ from run to run and from the CPU (integers, amax and amin are exact either way).
// On: those ops sort their entries by destination and reduce each destination in index order,
// the CPU's order, so sum and prod give the CPU's bits on every run. The CPU backend is
// deterministic in both modes; assignments (scatter, index_copy, index_put) and every backward
// always take the sorted path.
namespace tg {

void use_deterministic_algorithms(bool on);
bool are_deterministic_algorithms_enabled();

// RAII: sets the mode for a scope and restores the previous value (tests).
class DeterministicGuard {
 public:
  explicit DeterministicGuard(bool on) : prev_(are_deterministic_algorithms_enabled()) {
    use_deterministic_algorithms(on);
  }
  ~DeterministicGuard() { use_deterministic_algorithms(prev_); }
  DeterministicGuard(const DeterministicGuard&) = delete;
  DeterministicGuard& operator=(const DeterministicGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tg
