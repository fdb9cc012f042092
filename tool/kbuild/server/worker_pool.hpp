#pragma once
// The registry's worker threads (connection.hpp): `base` threads always, and more while every thread
// is busy and tasks wait, up to `max`. A worker serves one connection at a time and may be blocked
// on that client's bytes (a slow upload, a slow download); a pool of fixed size would then make every
// other client wait behind the slow ones. Here a task that finds no idle worker gets a new thread, so
// the queue drains as long as fewer than `max` connections are being served; the extra threads end
// once idle for `linger`. `max` bounds the threads (and, with the per-client cap, what any group of
// clients can hold); the body deadlines of guard.hpp bound how long a slow client holds one.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace kbuild::server {

class WorkerPool {
 public:
  struct Limits {
    std::size_t base = 64;
    std::size_t max = 1024;
    std::chrono::milliseconds linger{10'000};
  };

  explicit WorkerPool(Limits limits);
  /// Runs shutdown().
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `task`; starts a thread for it when none is idle and fewer than `max` run. False after
  /// shutdown() (the task is dropped).
  bool enqueue(std::function<void()> task);
  /// Lets the queued tasks run, then waits for every thread to end.
  void shutdown();

  std::size_t threads() const { return m_running; }  ///< running now (lock-free)
  std::size_t base() const { return m_limits.base; }
  std::size_t peak() const;    ///< the most that ever ran at once
  std::size_t queued() const;  ///< tasks no thread has taken yet

 private:
  void run();
  void start_thread();  // m_mutex held

  Limits m_limits;
  mutable std::mutex m_mutex;
  std::condition_variable m_work;
  std::condition_variable m_ended;
  std::deque<std::function<void()>> m_tasks;
  std::size_t m_threads = 0, m_idle = 0, m_peak = 0;
  std::atomic<std::size_t> m_running{0};  ///< m_threads, for readers without the lock
  bool m_stopping = false;
};

}  // namespace kbuild::server
