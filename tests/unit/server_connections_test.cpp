// The registry's defences against slow clients (server/guard.hpp: the body's average rate) and its
// worker threads (server/worker_pool.hpp), as plain logic with their own clock and tasks.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kbuild/server/guard.hpp"
#include "kbuild/server/worker_pool.hpp"

using namespace kbuild::server;

TEST(ServerGuard, ABodyTrickledAboveThePaceIsStillDueAtTheMinimumAverageRate) {
  using namespace std::chrono_literals;
  ReadBudget::Limits limits;  // 10 s pace of 64 KiB, 64 KiB/s on average after 30 s
  ReadBudget budget(limits);
  auto t0 = ReadBudget::Clock::time_point{} + 1h;
  budget.begin_request(t0);
  budget.begin_body(t0);
  // 64 KiB every 8 s keeps the pace, and for the first 30 s nothing more is asked.
  std::chrono::seconds t = 0s;
  for (int i = 0; i < 3; ++i) {
    t += 8s;
    ASSERT_LE(t0 + t, budget.read_deadline()) << i;
    EXPECT_TRUE(budget.account_read(std::string(64 * 1024, 'b'), t0 + t));
  }
  // 192 KiB came in: three seconds of the average rate beyond the grace, so the body is due at 33 s,
  // before the pace's next deadline (24 + 10 s), and the next trickle at 32 s is the last it gets.
  EXPECT_EQ(budget.read_deadline(), t0 + 33s);
  EXPECT_TRUE(budget.account_read(std::string(64 * 1024, 'b'), t0 + 32s));
  EXPECT_EQ(budget.read_deadline(), t0 + 34s);
  // A body at the rate is never due: 64 KiB per second for a minute.
  budget.begin_request(t0);
  budget.begin_body(t0);
  for (int second = 1; second <= 60; ++second) {
    ASSERT_LT(t0 + std::chrono::seconds(second), budget.read_deadline()) << second;
    EXPECT_TRUE(budget.account_read(std::string(64 * 1024, 'b'), t0 + std::chrono::seconds(second)));
  }
  // Headers are not bodies: their deadline is the timeout alone.
  budget.begin_request(t0);
  EXPECT_EQ(budget.read_deadline(), t0 + 10s);
}

TEST(ServerWorkers, TasksThatFindEveryWorkerBusyGetANewOneUpToTheMaximum) {
  using namespace std::chrono_literals;
  WorkerPool pool({2, 5, 200ms});
  EXPECT_EQ(pool.threads(), 2u);
  // Five tasks blocked on their clients (here: a gate), and a sixth queued behind them.
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
  std::atomic<int> running{0}, done{0};
  auto blocked = [&] {
    ++running;
    std::unique_lock lock(mutex);
    opened.wait(lock, [&] { return open; });
    ++done;
  };
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(pool.enqueue(blocked));
  for (int i = 0; i < 1000 && running < 5; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(running, 5);  // every one of them holds a thread: nobody queued behind the first two
  EXPECT_EQ(pool.threads(), 5u);
  EXPECT_EQ(pool.queued(), 1u);  // the maximum is reached: the sixth waits
  {
    std::lock_guard lock(mutex);
    open = true;
  }
  opened.notify_all();
  for (int i = 0; i < 1000 && done < 6; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(done, 6);
  EXPECT_EQ(pool.peak(), 5u);
  // The extra threads end once idle for the linger time; the base ones stay.
  for (int i = 0; i < 1000 && pool.threads() > 2; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pool.threads(), 2u);
  pool.shutdown();
  EXPECT_EQ(pool.threads(), 0u);
  EXPECT_FALSE(pool.enqueue([] {}));
}
