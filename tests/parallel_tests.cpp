// The thread pool (core/parallel.cpp): every item of a range is visited exactly once whatever the
// thread count and however regions follow each other (back to back, while workers still poll for
// work, and after they have gone to sleep), exceptions reach the caller, nested loops run inline.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <tapegrad/core/error.h>
#include <tapegrad/core/parallel.h>

namespace {

using tg::get_num_threads;
using tg::parallel_for;
using tg::set_num_threads;

// Restores the thread count when a test case ends, also when a CHECK fails.
struct ThreadsGuard {
  int before = get_num_threads();
  ~ThreadsGuard() { set_num_threads(before); }
};

// Runs parallel_for over [begin, end) with `grain` and checks each item was visited once.
void check_covers(int64_t begin, int64_t end, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(end - begin));
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i - begin)].fetch_add(1);
  });
  int wrong = 0;
  for (const auto& h : hits) wrong += h.load() != 1;
  CHECK_MESSAGE(wrong == 0, "range [", begin, ", ", end, ") grain ", grain);
}

}  // namespace

TEST_CASE("parallel_for visits every item once, back to back and after idle") {
  ThreadsGuard guard;
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    CAPTURE(threads);
    for (int round = 0; round < 200; ++round) {  // back to back: workers still polling
      check_covers(0, 1000 + round, 1);
      check_covers(-7, 5, 1);                   // fewer items than chunks of other rounds
      check_covers(3, 3 + 4096 * 3 + 1, 4096);  // 4 chunks of grain, the last of one item
    }
    // Idle longer than the workers poll (TG_POOL_SPIN_US, 200 us by default): they sleep, and
    // the next region must wake them.
    for (int round = 0; round < 5; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      check_covers(0, 64, 1);
    }
  }
}

TEST_CASE("parallel_for hands chunks to the workers") {
  ThreadsGuard guard;
  set_num_threads(2);
  // Two chunks, each waiting (bounded) for the other to start: both run at once only if a
  // worker took one. The caller alone would run them one after the other and time out.
  std::atomic<int> started{0};
  std::atomic<bool> overlapped{false};
  parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (started.load() == 2) overlapped = true;
  });
  CHECK(overlapped.load());
}

TEST_CASE("parallel_for propagates a chunk's exception and stays usable") {
  ThreadsGuard guard;
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    CAPTURE(threads);
    for (int64_t bad : {int64_t{0}, int64_t{999}}) {  // the caller's chunk, the last chunk
      std::atomic<int64_t> visited{0};
      CHECK_THROWS_AS(parallel_for(0, 1000, 1,
                                   [&](int64_t b, int64_t e) {
                                     if (b <= bad && bad < e) throw std::runtime_error("chunk");
                                     visited.fetch_add(e - b);
                                   }),
                      std::runtime_error);
      CHECK(visited.load() < 1000);
    }
    check_covers(0, 1000, 1);
  }
}

TEST_CASE("nested parallel_for runs inline, and set_num_threads is refused inside a region") {
  ThreadsGuard guard;
  set_num_threads(2);
  std::atomic<int> inner_calls{0}, refused{0};
  parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) {
      if (b == 0 && e == 1 << 20) inner_calls.fetch_add(1);  // the whole range in one call
    });
    try {
      set_num_threads(1);
    } catch (const tg::ValueError&) {
      refused.fetch_add(1);
    }
  });
  CHECK(inner_calls.load() == 2);
  CHECK(refused.load() == 2);
  CHECK(get_num_threads() == 2);
}

TEST_CASE("parallel_for from several threads at once, while the pool is resized") {
  ThreadsGuard guard;
  set_num_threads(2);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < 2; ++t)
      callers.emplace_back([&] {
        for (int round = 0; round < 300; ++round) {
          std::vector<std::atomic<int>> hits(517);
          parallel_for(0, 517, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          });
          for (const auto& h : hits) failures += h.load() != 1;
        }
      });
    std::jthread resizer([&] {
      for (int i = 0; !stop.load(); ++i) {
        set_num_threads(1 + i % 3);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
    for (auto& c : callers) c.join();
    stop = true;
  }
  CHECK(failures.load() == 0);
}
