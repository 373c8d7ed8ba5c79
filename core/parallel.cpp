// A small fork-join pool: the calling thread runs the first chunk, sleeping workers run the rest.
#include <tapegrad/core/parallel.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <tapegrad/core/error.h>

#ifdef TG_WITH_BLAS
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace tg {

namespace {

thread_local bool in_parallel_region = false;

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return num_threads_.load(std::memory_order_relaxed); }

  // Safe while other threads call run(): it waits for the region in flight (call_mutex_), and
  // they read the size through an atomic. A region started after it sees the new workers.
  void resize(int threads) {
    std::lock_guard<std::mutex> call_lock(call_mutex_);
    stop_workers();
    const int n = std::max(1, threads);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = false;
    }
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
    num_threads_.store(n, std::memory_order_relaxed);
  }

  // Runs task(chunk) for chunk in [0, chunks); chunk 0 on the calling thread.
  void run(int chunks, const std::function<void(int)>& task) {
    std::unique_lock<std::mutex> call_lock(call_mutex_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      chunks_ = chunks;
      next_chunk_ = 1;
      pending_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    run_chunk(task, 0);
    while (true) {  // help with remaining chunks, then wait for the workers
      int c = claim();
      if (c < 0) break;
      run_chunk(task, c);
      finish_one();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  int claim() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!task_ || next_chunk_ >= chunks_) return -1;
    return next_chunk_++;
  }
  void finish_one() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0) done_.notify_all();
  }
  void run_chunk(const std::function<void(int)>& task, int c) {
    in_parallel_region = true;
    try {
      task(c);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    in_parallel_region = false;
  }
  void worker_loop(int) {
    uint64_t seen = 0;
    while (true) {
      const std::function<void(int)>* task = nullptr;
      int c = -1;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          return stopping_ || (generation_ != seen && task_ && next_chunk_ < chunks_);
        });
        if (stopping_) return;
        seen = generation_;
        task = task_;
        c = next_chunk_++;
      }
      run_chunk(*task, c);
      finish_one();
    }
  }
  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  std::atomic<int> num_threads_{1};
  std::vector<std::thread> workers_;
  std::mutex call_mutex_, mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  int chunks_ = 0, next_chunk_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool& pool() {
  static ThreadPool* p = [] {
    auto* tp = new ThreadPool(default_threads());  // leaked on purpose: no join at exit
#ifdef TG_WITH_BLAS
    openblas_set_num_threads(tp->size());
#endif
    return tp;
  }();
  return *p;
}

}  // namespace

void set_num_threads(int n) {
  TG_CHECK(n >= 1, ValueError, "set_num_threads", "n must be at least 1, got ", n);
  // From inside a parallel region it would wait for the region it runs in.
  TG_CHECK(!in_parallel_region, ValueError, "set_num_threads",
           "cannot be called from inside a parallel region");
  pool().resize(n);
#ifdef TG_WITH_BLAS
  openblas_set_num_threads(n);
#endif
}

int get_num_threads() { return pool().size(); }

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int threads = in_parallel_region ? 1 : pool().size();
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(begin, end);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
  pool().run(static_cast<int>(chunks), [&](int c) {
    int64_t b = begin + c * per, e = std::min(end, b + per);
    if (b < e) fn(b, e);
  });
}

}  // namespace tg
