#include "kbuild/server/worker_pool.hpp"

#include <algorithm>
#include <thread>

namespace kbuild::server {

WorkerPool::WorkerPool(Limits limits) : m_limits(limits) {
  m_limits.base = std::max<std::size_t>(1, m_limits.base);
  m_limits.max = std::max(m_limits.max, m_limits.base);
  std::lock_guard lock(m_mutex);
  for (std::size_t i = 0; i < m_limits.base; ++i) start_thread();
}

WorkerPool::~WorkerPool() { shutdown(); }

// Threads are detached and counted: shutdown() waits for the count to reach zero, so that an extra
// thread may end on its own without anyone joining it.
// A thread counts as idle from its start: a woken or starting thread has not yet taken its task,
// so "every worker is busy" means more tasks wait than idle threads exist to take them (comparing
// with zero idle threads let a burst queue behind two workers that had been notified but not run).
void WorkerPool::start_thread() {
  ++m_idle;
  m_running = ++m_threads;
  m_peak = std::max(m_peak, m_threads);
  std::thread([this] { run(); }).detach();
}

bool WorkerPool::enqueue(std::function<void()> task) {
  std::lock_guard lock(m_mutex);
  if (m_stopping) return false;
  m_tasks.push_back(std::move(task));
  if (m_tasks.size() > m_idle && m_threads < m_limits.max)
    start_thread();
  else
    m_work.notify_one();
  return true;
}

void WorkerPool::run() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    // The base threads wait for work without end; the extra ones give up after `linger`.
    bool woken = m_work.wait_for(lock, m_limits.linger, [this] { return m_stopping || !m_tasks.empty(); });
    if (m_tasks.empty() && (m_stopping || (!woken && m_threads > m_limits.base))) break;
    if (m_tasks.empty()) continue;
    auto task = std::move(m_tasks.front());
    m_tasks.pop_front();
    --m_idle;
    lock.unlock();
    task();
    lock.lock();
    ++m_idle;
  }
  --m_idle;
  m_running = --m_threads;
  if (m_threads == 0) m_ended.notify_all();
}

void WorkerPool::shutdown() {
  std::unique_lock lock(m_mutex);
  m_stopping = true;
  m_work.notify_all();
  m_ended.wait(lock, [this] { return m_threads == 0; });
}

std::size_t WorkerPool::peak() const {
  std::lock_guard lock(m_mutex);
  return m_peak;
}

std::size_t WorkerPool::queued() const {
  std::lock_guard lock(m_mutex);
  return m_tasks.size();
}

}  // namespace kbuild::server
