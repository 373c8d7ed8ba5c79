// A small fork-join pool: each thread (the caller is thread 0) runs its own run of chunks, then
// helps with what others have left.
//
// Handing a chunk to a sleeping worker costs a futex wake and, on a virtual machine whose idle
// vCPU has halted, tens of microseconds before the worker runs: more than a whole row reduction
// of [4096, 1024] takes. So, as libgomp (GOMP_SPINCOUNT) and the Intel runtime (KMP_BLOCKTIME)
// do, a worker that finishes polls for the next region for a while before it sleeps, and the
// caller polls for its workers before it sleeps. Polling pauses the core (cpu_relax) and, after
// the first few microseconds, yields between polls, so another process that wants the core gets
// it; after TG_POOL_SPIN_US microseconds (default kDefaultSpinUs) the thread sleeps on a
// condition variable as before. A region whose worker is late (its core busy elsewhere) does not
// wait for it: chunks are claimed, not assigned, and the caller claims whatever is left.
// Each thread first claims from its own contiguous run of chunks, so that thread t works on the
// same part of the data in every region, as OpenMP's static schedule does: where each core (or
// each core complex, on a VM spread over two) has its own cache, a tensor that fits in them
// together stays where it was used. With one shared counter the chunks went to whichever thread
// asked first, and a [4096, 1024] float32 add (16 MiB in, 16 MiB out) took 0.30 ms at 2 threads
// where libtorch took 0.23; with the runs, 0.23.
#include <tapegrad/core/parallel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <tapegrad/core/env.h>
#include <tapegrad/core/error.h>

#ifdef TG_WITH_BLAS
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace tg {

namespace {

thread_local bool in_parallel_region = false;

// Polling budget before sleeping, and the part of it spent without yielding.
constexpr int64_t kDefaultSpinUs = 200;
constexpr int64_t kNoYieldNs = 5000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

int64_t spin_ns_from_env() {
  const std::optional<int64_t> us = env_integer("TG_POOL_SPIN_US");
  if (!us || *us < 0) return kDefaultSpinUs * 1000;
  return std::min<int64_t>(*us, 1000000) * 1000;  // at most a second
}

// Polls ready() until it holds or spin_ns have passed; returns whether it holds.
template <typename Ready> bool spin_until(Ready ready, int64_t spin_ns) {
  if (spin_ns <= 0) return ready();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (;;) {
    for (int i = 0; i < 16; ++i) {  // a clock read is a few times dearer than a pause
      if (ready()) return true;
      cpu_relax();
    }
    const int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    if (ns >= spin_ns) return ready();
    if (ns >= kNoYieldNs) std::this_thread::yield();  // another process may want this core
  }
}

// One parallel region: fn over [begin, end) in chunks of `per` items.
struct Region {
  RangeFnRef fn;
  int64_t begin, end, per;
  void run(int c) const {
    const int64_t b = begin + c * per, e = std::min(end, b + per);
    if (b < e) fn(b, e);
  }
};

// A thread's run of chunks in one word, so that a thread can claim a chunk of the region it saw
// and of no later one: generation (bits 32-63), next unclaimed chunk (16-31), end of the run
// (0-15). state_ holds the generation alone (bits 32-63), to publish a region.
constexpr int kMaxChunks = 0xffff;
constexpr int64_t kChunksPerThread = 4;
inline uint32_t generation_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
inline int next_of(uint64_t s) { return static_cast<int>((s >> 16) & 0xffff); }
inline int end_of(uint64_t s) { return static_cast<int>(s & 0xffff); }

// One thread's run, on its own cache line: the threads claim from their own runs at once.
struct alignas(64) Run {
  std::atomic<uint64_t> word{0};
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : spin_ns_(spin_ns_from_env()) { resize(threads); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return num_threads_.load(std::memory_order_relaxed); }

  // Safe while other threads call run(): it waits for the region in flight (call_mutex_), and
  // they read the size through an atomic. A region started after it sees the new workers; one
  // whose chunk count came from the old size still completes (the caller claims what is left).
  void resize(int threads) {
    std::lock_guard<std::mutex> call_lock(call_mutex_);
    stop_workers();
    const int n = std::clamp(threads, 1, kMaxChunks);
    stopping_.store(false, std::memory_order_relaxed);
    // Workers start from the current generation: a region published before one of them first
    // runs is still theirs to help with.
    const uint32_t gen = generation_of(state_.load(std::memory_order_relaxed));
    runs_ = std::make_unique<Run[]>(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) runs_[i].word.store(uint64_t{gen} << 32, std::memory_order_relaxed);
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, gen, i] { worker_loop(gen, i); });
    num_threads_.store(n, std::memory_order_relaxed);
  }

  // Runs region.run(chunk) for chunk in [0, chunks), chunks <= kMaxChunks; the calling thread
  // takes the first run of chunks.
  void run(int chunks, const Region& region) {
    std::lock_guard<std::mutex> call_lock(call_mutex_);  // one parallel region at a time
    region_ = &region;
    error_ = nullptr;
    pending_.store(chunks, std::memory_order_relaxed);
    const uint32_t gen = generation_of(state_.load(std::memory_order_relaxed)) + 1;
    // Thread t's run: chunks [t * chunks / n, (t + 1) * chunks / n). No thread of the last
    // region touches a run any more (every chunk of it was claimed and has finished), and a
    // late one sees the new generation in the word and claims nothing.
    const int n = size();
    for (int t = 0; t < n; ++t) {
      const uint64_t first = static_cast<uint64_t>(int64_t{t} * chunks / n);
      const uint64_t end = static_cast<uint64_t>(int64_t{t + 1} * chunks / n);
      runs_[t].word.store(uint64_t{gen} << 32 | first << 16 | end, std::memory_order_relaxed);
    }
    // seq_cst (so the runs are visible to whoever sees it), and sleepers_ read after it: either
    // a worker about to sleep sees this region, or we see it counted and wake it (the worker's
    // side is in wait_for_region).
    state_.store(uint64_t{gen} << 32);
    if (sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      wake_.notify_all();
    }
    for (int c; (c = claim(gen, 0)) >= 0;) run_chunk(region, c);
    wait_for_workers();
    region_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Claims the next chunk of region `gen` for thread `self`: from its own run, else from the
  // runs after it in turn; -1 when none is left or that region is over.
  int claim(uint32_t gen, int self) {
    const int n = size();
    for (int k = 0; k < n; ++k) {
      std::atomic<uint64_t>& word = runs_[(self + k) % n].word;
      uint64_t s = word.load(std::memory_order_acquire);
      while (generation_of(s) == gen && next_of(s) < end_of(s))
        if (word.compare_exchange_weak(s, s + (uint64_t{1} << 16), std::memory_order_acq_rel,
                                       std::memory_order_acquire))
          return next_of(s);
    }
    return -1;
  }
  void run_chunk(const Region& region, int c) {
    in_parallel_region = true;
    try {
      region.run(c);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    in_parallel_region = false;
    // seq_cst, and caller_sleeping_ read after it: see wait_for_workers.
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_.notify_all();
    }
  }
  void wait_for_workers() {
    auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
    if (spin_until(done, spin_ns_)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true);
    done_.wait(lock, [this] { return pending_.load() == 0; });
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }
  // Waits until a region later than `seen` is published or the pool stops; returns the state.
  uint64_t wait_for_region(uint32_t seen) {
    uint64_t s = 0;
    auto ready = [&] {
      s = state_.load(std::memory_order_acquire);
      return generation_of(s) != seen || stopping_.load(std::memory_order_acquire);
    };
    if (spin_until(ready, spin_ns_)) return s;
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    wake_.wait(lock, [&] {
      s = state_.load();
      return generation_of(s) != seen || stopping_.load();
    });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return s;
  }
  void worker_loop(uint32_t seen, int self) {
    while (true) {
      const uint64_t s = wait_for_region(seen);
      if (stopping_.load(std::memory_order_acquire)) return;
      seen = generation_of(s);
      // A successful claim keeps region `seen` (and region_) alive until this chunk is done.
      for (int c; (c = claim(seen, self)) >= 0;) run_chunk(*region_, c);
    }
  }
  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_.store(true);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  const int64_t spin_ns_;
  std::atomic<int> num_threads_{1};
  std::vector<std::thread> workers_;
  std::mutex call_mutex_, mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> state_{0};
  std::unique_ptr<Run[]> runs_;  // one per thread, the caller's first
  std::atomic<int> pending_{0}, sleepers_{0};
  std::atomic<bool> stopping_{false}, caller_sleeping_{false};
  const Region* region_ = nullptr;  // written before state_ publishes a region
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

void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFnRef fn) {
  int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t threads = in_parallel_region ? 1 : pool().size();
  if (threads <= 1 || n <= grain) {
    fn(begin, end);
    return;
  }
  // A few chunks per thread, claimed as threads get to them: when a thread is held up (its core
  // taken by another process), the others take its share but the chunk it is running.
  const int64_t chunks =
      std::min({threads * kChunksPerThread, (n + grain - 1) / grain, int64_t{kMaxChunks}});
  if (chunks <= 1) {
    fn(begin, end);
    return;
  }
  const Region region{fn, begin, end, (n + chunks - 1) / chunks};
  pool().run(static_cast<int>(chunks), region);
}

}  // namespace tg
