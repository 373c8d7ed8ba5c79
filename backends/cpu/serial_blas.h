#pragma once
// OpenBLAS single-threaded for a scope, for kernels that run their own GEMMs across the pool.
#ifdef TG_WITH_BLAS
#include <cblas.h>

#include <tapegrad/core/parallel.h>

namespace tg::cpu {

// While the pool's threads each run their own GEMMs, OpenBLAS runs single-threaded: its
// pthreads build has one process-wide thread count, so concurrent callers would queue for its
// one extra worker, and that worker's spin-wait would take the core a pool thread runs on.
class SerialBlas {
 public:
  explicit SerialBlas(bool active) : active_(active) {
    if (active_) openblas_set_num_threads(1);
  }
  ~SerialBlas() {
    if (active_) openblas_set_num_threads(get_num_threads());
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  bool active_;
};

}  // namespace tg::cpu
#endif
