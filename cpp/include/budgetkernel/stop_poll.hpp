#pragma once
/// \file stop_poll.hpp
/// Stopping a long call between examples.
///
/// A chunk can run long: an unbudgeted learner costs O(n^2) kernel values over n rows, the
/// exact SVM O(|S|) kernel rows per example, and decision values O(n B d). A program that
/// embeds the library wants to cancel such a call (a Cancel button, a deadline), and the
/// Python module wants Ctrl-C (and Jupyter's "interrupt kernel") to stop it, which it can only
/// notice while it holds the GIL that the chunk runs without. The chunk loops
/// (OnlineLearner::partial_fit, decision_function and predict,
/// IncrementalSVC::partial_fit_weighted) therefore take an optional StopPoll and ask it before
/// every example (scoring 32+ features: before every block of rows); when it says stop, they
/// throw Interrupted. So do IncrementalSVC's set_C, unlearn and set_weight, before every
/// bookkeeping step, and undo themselves. A learner stopped in partial_fit has learned exactly
/// the examples before the one it stopped at: it is the model of a shorter stream, consistent
/// and resumable.

#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

namespace budgetkernel {

/// Asks a callback whether to stop, at most about once per `interval` of work.
///
/// requested() is called before every example, so its idle path is one decrement: the clock
/// is read only when a countdown of examples runs out, and the countdown adapts (doubling
/// while reads come faster than interval / 4, halving when slower than interval) so that the
/// clock is read a few times per interval whatever an example costs. The callback runs when
/// at least `interval` has passed since the poll was made or last called it, so a call
/// shorter than `interval` never calls it. An interval of zero calls it before every example
/// (for tests). Not thread-safe: one poll per call.
class StopPoll {
 public:
  using Callback = bool (*)(void* context);
  using Clock = std::chrono::steady_clock;

  /// \param callback  asked whether to stop (true = stop); not null. Runs on the thread of the
  ///                  call that polls, so it must be cheap and may not call into the same learner.
  /// \param context   passed to callback unchanged (e.g. a flag another thread sets).
  /// \param interval  least time between two calls of callback (>= 0; 0 = before every example).
  /// \throws std::invalid_argument if callback is null or interval negative.
  explicit StopPoll(Callback callback, void* context = nullptr,
                    Clock::duration interval = std::chrono::milliseconds(20))
      : m_callback(callback), m_context(context), m_interval(interval), m_last_read(Clock::now()),
        m_last_call(m_last_read) {
    detail::require(callback != nullptr, "StopPoll: callback is null");
    detail::require(interval.count() >= 0, "StopPoll: interval is negative");
  }

  /// Whether to stop before the next example.
  /// \return callback's answer when it was called, else false.
  bool requested() {
    if (--m_left > 0) return false;
    return check();
  }

 private:
  bool check() {
    const Clock::time_point now = Clock::now();
    const Clock::duration since = now - m_last_read;
    m_last_read = now;
    if (since < m_interval / 4)
      m_every = (std::min)(2 * m_every, kMaxEvery);
    else if (since > m_interval && m_every > 1)
      m_every /= 2;
    m_left = m_every;
    if (now - m_last_call < m_interval) return false;
    m_last_call = now;
    return m_callback(m_context);
  }

  static constexpr std::int64_t kMaxEvery = std::int64_t{1} << 20;
  Callback m_callback;
  void* m_context;
  Clock::duration m_interval;
  Clock::time_point m_last_read, m_last_call;
  std::int64_t m_every = 1, m_left = 1;
};

/// Thrown by a chunk loop whose StopPoll asked to stop. Not a std::runtime_error, so that the
/// exact SVMs' failure reports (detail::report_chunk_failure), which undo a failing example,
/// let it pass: no example was being learned when it was thrown.
class Interrupted : public std::exception {
 public:
  /// \param done  examples of the call completed before it stopped (see done()).
  explicit Interrupted(Index done) : m_done(done) {}
  /// Examples of the call completed before it stopped (rows learned or scored).
  Index done() const { return m_done; }
  const char* what() const noexcept override { return "budgetkernel: call stopped by its StopPoll"; }

 private:
  Index m_done;
};

namespace detail {

/// Throws Interrupted(done) when `stop` (may be null) asks to stop before example `done`.
inline void poll_stop(StopPoll* stop, Index done) {
  if (stop && stop->requested()) throw Interrupted(done);
}

}  // namespace detail

}  // namespace budgetkernel
