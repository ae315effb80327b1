#pragma once
/// \file parallel.hpp
/// Running independent tasks (one learner each) on a few threads.
///
/// A self-tuning search trains many candidate learners on the same chunk: each candidate is
/// independent of the others, so they can run side by side on several cores. run_tasks is the
/// small pool that does it: it owns no learner and knows nothing of learning. Every task is
/// run by one thread from its start to its end, so a learner that a task uses alone is never
/// touched by two threads at once, and the learner's result is the one a sequential loop
/// gives: it cannot depend on the number of threads or on which thread ran it (the learners'
/// scratch buffers are thread_local and hold nothing between two examples).
///
/// Stopping: every task gets a StopPoll (stop_poll.hpp) that says stop once the run is asked
/// to stop. That happens when a task throws Interrupted or when the caller's `stop_requested`,
/// polled from the calling thread while it waits, returns true (the Python module passes one
/// that runs Python's signal handlers, for Ctrl-C). Tasks not yet started are then skipped,
/// running ones stop at their next poll, and run_tasks throws Interrupted once all threads
/// have ended. A task that throws anything else does not stop the others; after all threads
/// have ended, the exception of the lowest-numbered failed task is rethrown, so which error a
/// caller sees does not depend on timing either.

#include "stop_poll.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace budgetkernel {

namespace detail {

/// The state the threads of one run_tasks call share.
class TaskRun {
 public:
  using Task = std::function<void(std::size_t, StopPoll*)>;

  TaskRun(std::size_t n_tasks, const Task& task) : m_task(task), m_errors(n_tasks) {}
  /// Stops and joins what still runs (only on an exception from start() or wait()).
  ~TaskRun() {
    m_stop.store(true);
    join();
  }
  TaskRun(const TaskRun&) = delete;
  TaskRun& operator=(const TaskRun&) = delete;

  /// A thread's loop: takes the next task in index order until none is left or a stop.
  void work() {
    for (;;) {
      if (m_stop.load()) break;
      const std::size_t i = m_next.fetch_add(1);
      if (i >= m_errors.size()) break;
      // An atomic read is cheap, so the task's poll may look often: a stop is seen in ~1 ms.
      StopPoll poll(&read_flag, &m_stop, std::chrono::milliseconds(1));
      try {
        m_task(i, &poll);
        ++m_completed;
      } catch (const Interrupted&) {
        m_stop.store(true);
      } catch (...) {
        m_errors[i] = std::current_exception();  // slot i is only written by the thread of task i
        ++m_completed;
      }
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      --m_running;
    }
    m_ended.notify_all();
  }

  /// Starts `n_threads` threads running work().
  void start(std::size_t n_threads) {
    m_threads.reserve(n_threads);
    for (std::size_t t = 0; t < n_threads; ++t) {
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        ++m_running;
      }
      try {
        m_threads.emplace_back([this] { work(); });
      } catch (...) {  // no thread (std::system_error): the destructor stops those that started
        std::lock_guard<std::mutex> lock(m_mutex);
        --m_running;
        throw;
      }
    }
  }

  /// Waits for every thread, calling `stop_requested` (if any) about every `interval` until it
  /// returns true, which stops the run. Returns whether it did.
  bool wait(const std::function<bool()>& stop_requested, std::chrono::steady_clock::duration interval) {
    bool asked = false;
    std::unique_lock<std::mutex> lock(m_mutex);
    const auto all_ended = [this] { return m_running == 0; };
    while (!all_ended()) {
      if (!stop_requested || asked) {
        m_ended.wait(lock, all_ended);
        break;
      }
      if (m_ended.wait_for(lock, interval, all_ended)) break;
      lock.unlock();
      asked = stop_requested();  // if it throws, the destructor stops the run
      if (asked) m_stop.store(true);
      lock.lock();
    }
    lock.unlock();
    join();
    return asked;
  }

  /// After wait(): Interrupted if the run was stopped, else the first task's exception by index.
  void rethrow(bool asked) const {
    if (asked || m_stop.load()) throw Interrupted(static_cast<Index>(m_completed.load()));
    for (const std::exception_ptr& e : m_errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  static bool read_flag(void* flag) { return static_cast<std::atomic<bool>*>(flag)->load(); }

  void join() {
    for (std::thread& t : m_threads)
      if (t.joinable()) t.join();
  }

  const Task& m_task;
  std::vector<std::exception_ptr> m_errors;  // one per task
  std::atomic<std::size_t> m_next{0};        // the next task to start
  std::atomic<std::size_t> m_completed{0};   // tasks that ran to their end (or failed)
  std::atomic<bool> m_stop{false};
  std::mutex m_mutex;  // guards m_running
  std::condition_variable m_ended;
  std::size_t m_running = 0;  // threads not yet ended
  std::vector<std::thread> m_threads;
};

}  // namespace detail

/// Runs task(i, stop) for every i in [0, n_tasks) on min(n_jobs, n_tasks) new threads, and
/// returns when all have ended. Tasks start in index order, each on one thread from start to
/// end; `stop` is that task's poll, to pass to the chunk loops of the core (it says stop once
/// the run is stopped). The calling thread only waits; while it does, it calls
/// `stop_requested` (when given) about every `interval`, until that returns true.
///
/// \param n_tasks  number of tasks (0: returns at once).
/// \param n_jobs   threads to run them on, >= 1 (more than n_tasks is fine).
/// \param task     called as task(i, stop); must be safe to call from several threads at once
///                 for different i (e.g. each i trains its own learner on shared read-only data).
/// \param stop_requested  optional; true stops the run (it is not called again after that).
/// \param interval  how often the waiting thread calls `stop_requested`.
/// \throws std::invalid_argument if n_jobs < 1 (before any task runs).
/// \throws Interrupted (with the number of tasks that ran to their end) if the run was stopped,
///         by `stop_requested` or by a task that threw Interrupted: tasks not started were
///         skipped, the others stopped at their poll.
/// \throws otherwise the exception of the lowest-numbered task that threw, after every other
///         task ran to its end; or the exception of `stop_requested` or of std::thread.
inline void run_tasks(std::size_t n_tasks, int n_jobs, const std::function<void(std::size_t, StopPoll*)>& task,
                      const std::function<bool()>& stop_requested = {},
                      std::chrono::steady_clock::duration interval = std::chrono::milliseconds(20)) {
  detail::require(n_jobs >= 1, "run_tasks: n_jobs must be >= 1, got " + std::to_string(n_jobs));
  if (n_tasks == 0) return;
  detail::TaskRun run(n_tasks, task);
  run.start((std::min)(static_cast<std::size_t>(n_jobs), n_tasks));
  run.rethrow(run.wait(stop_requested, interval));
}

}  // namespace budgetkernel
