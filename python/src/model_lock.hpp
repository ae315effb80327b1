#pragma once
// The one lock around a core learner used from Python: every binding that reads or changes a
// learner holds a UseGuard for it (readers together, a writer alone, a waiting writer first,
// Ctrl-C ends a wait, nested use from a finaliser reads and a nested change raises). These are
// the guarantees docs/guide/contract.md states for calls on one model from several threads.
//
// Why the Python estimators keep a lock of their own (budgetkernel/_publish.py) and the two
// cannot be one: a UseGuard is keyed on a learner object and held for one core call, while an
// estimator's state is wider than its learner and outlives it. The first call has no learner
// yet to lock (two of them must not both build one), fit() replaces the learner by a new one (a
// lock keyed on the old one says nothing about which learner the estimator holds), and
// classes_, the label map and n_features_in_ must change together with the learner. Their
// nesting rules differ too: a change nested in a use of the same learner raises here (it would
// corrupt the loop using it), while the estimator's lock must be re-entrant
// (partial_fit_active's oracle may save the model it is building; a signal handler may call
// set_params or save while its thread holds that lock). So the estimator's lock guards only
// that choice (which learner, with which labels: taken by fit, a first call, set_params and
// save), never a use of the learner: predictions and learning on a built model take no Python
// lock and meet here, in one place.
#include <budgetkernel/parallel.hpp>    // run_tasks
#include <budgetkernel/stop_poll.hpp>   // StopPoll, Interrupted

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;
namespace bk = budgetkernel;

/// One learner used from several Python threads at once: chunk calls release the GIL, so
/// another thread could read or change the learner while one of them runs (found: training in
/// one thread while another predicted crashed the interpreter). Every call that releases the
/// GIL, and every accessor, registers its use here while it holds the GIL; a use that
/// conflicts (any use during a writer, a writer during any use) waits, with the GIL released,
/// until the other uses end: what a lock around the model would do. Concurrent readers
/// (decision_function in two threads) run together, but a waiting writer goes first: no new
/// reader starts while one waits (else readers that overlap one another, e.g. two threads
/// predicting in a loop, kept the count above 0 and a partial_fit waited forever). The table
/// is only touched with the GIL held, which is its lock.
///
/// Python code can run in the thread that holds a use: an accessor that builds a dict can set
/// off the garbage collector, whose finalizers (__del__, weakref callbacks) run right there.
/// Such code calling the same model would deadlock for good while a writer waits (its read
/// queued behind the writer, which waits for the read that runs the finalizer, e.g. a
/// __del__ that predicts). So a thread remembers the uses it holds: a nested read
/// under its own read starts at once (the outer read already keeps writers out), and any
/// other nesting (a change while the thread reads or writes, a read while it writes) raises
/// RuntimeError instead of waiting for itself. With those, a waiting thread holds no use, so
/// waits cannot form a cycle. (UseGuards, below, waits while it holds uses, but only of
/// learners at lower addresses than the one it waits for: a lock order, which forms none.)
///
/// A wait is also interruptible as a Python lock's acquire is: Ctrl-C in a main thread that
/// waits behind a long chunk of another thread raises KeyboardInterrupt there (not only once
/// the chunk ends), and the wait is abandoned cleanly.
class UseGuard {
 public:
  UseGuard(const void* learner, bool write) : m_learner(learner), m_write(write) {
    if (!enter_nested(learner, write)) wait_for_turn(learner, write);
    if (!push_held({&m_learner, 1, write})) {
      release(learner, write);  // undo the registration just made
      notify();
      throw too_many_nested();
    }
  }
  ~UseGuard() {  // the GIL is held again here: guards are made before releasing it
    --held_here().n;  // uses end in reverse order of their start (scoped guards)
    release(m_learner, m_write);
    notify();
  }
  UseGuard(const UseGuard&) = delete;
  UseGuard& operator=(const UseGuard&) = delete;

 private:
  friend class UseGuards;
  struct Uses {
    int active = 0;           // > 0: that many readers; -1: a writer
    int writers_waiting = 0;  // writers queued for this learner (readers wait behind them)
  };
  struct Use {
    const void* const* learners;  // one learner, or a UseGuards' list (sorted by address)
    std::size_t n;
    bool write;
    bool holds(const void* learner) const {
      return n == 1 ? learners[0] == learner
                    : std::binary_search(learners, learners + n, learner, std::less<const void*>());
    }
  };
  struct Held {  // the uses this thread holds, innermost last (almost always 0 or 1)
    static constexpr int kMax = 16;
    Use uses[kMax];
    int n;
  };
  /// A use nested in one this thread holds of the same learner (a finalizer or callback):
  /// a read under a read starts at once (the outer read keeps writers out already); any other
  /// nesting raises instead of waiting for itself. False: no such use, wait for a turn.
  static bool enter_nested(const void* learner, bool write) {
    Held& held = held_here();
    for (int i = 0; i < held.n; ++i) {
      if (!held.uses[i].holds(learner)) continue;
      if (write || held.uses[i].write)
        throw std::runtime_error(
            "a model was used again by code that runs while the same thread uses it (a finalizer or "
            "callback); only reading it there is possible");
      ++table()[learner].active;
      return true;
    }
    return false;
  }
  /// Waits until the use may start (readers together, a writer alone, a queued writer before
  /// new readers), then registers it.
  static void wait_for_turn(const void* learner, bool write) {
    bool queued = false;  // this writer counted in writers_waiting
    for (;;) {
      Uses& u = table()[learner];
      if (write ? u.active == 0 : u.active >= 0 && u.writers_waiting == 0) {
        if (queued) --u.writers_waiting;
        u.active = write ? -1 : u.active + 1;
        return;
      }
      if (write && !queued) {
        ++u.writers_waiting;
        queued = true;
      }
      wait_for_a_use_to_end();
      // Out of the writers' queue while signal handlers may run: a handler that uses this
      // model (saves it on Ctrl-C) would otherwise wait behind this thread's own place. With
      // no signal pending nothing runs and the GIL is never let go of in between, so no other
      // thread sees the gap; the next turn of the loop queues again.
      if (queued) {
        unqueue(learner);
        queued = false;
      }
      if (PyErr_CheckSignals() != 0) give_up_wait();  // a handler raised
    }
  }
  /// Waits for some use to end (~UseGuard bumps the generation under the mutex, so one that
  /// ends between here and the wait is not missed), at most 50 ms, with the GIL released: the
  /// caller then looks again, and checks with the GIL for a signal (Ctrl-C) to handle.
  static void wait_for_a_use_to_end() {
    const std::uint64_t seen = generation();
    py::gil_scoped_release nogil;
    std::unique_lock<std::mutex> lock(mutex());
    ended().wait_for(lock, std::chrono::milliseconds(50), [seen] { return generation() != seen; });
  }
  /// Abandons a wait whose signal handler raised (the exception is set in this thread).
  [[noreturn]] static void give_up_wait() {
    notify();  // readers held back by this writer may go now
    // Marked, so that Python tells it from an interruption after a chunk that ran (whose
    // curve point it records): this call did nothing. The attribute is best effort.
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyErr_NormalizeException(&type, &value, &trace);
    if (value && PyObject_SetAttrString(value, "_budgetkernel_not_run", Py_True) != 0) PyErr_Clear();
    PyErr_Restore(type, value, trace);
    throw py::error_already_set();
  }
  static std::unordered_map<const void*, Uses>& table() {
    static std::unordered_map<const void*, Uses> uses;
    return uses;
  }
  // Plain data, so that the thread_local needs no construction guard or destructor: the
  // single-example path pays a few loads and stores for it.
  static Held& held_here() {
    thread_local Held h{};
    return h;
  }
  /// Records a use this thread holds; false when 16 are held already (only a runaway
  /// recursion of finalizers gets there).
  static bool push_held(const Use& use) {
    Held& held = held_here();
    if (held.n == Held::kMax) return false;
    held.uses[held.n++] = use;
    return true;
  }
  static std::runtime_error too_many_nested() {
    return std::runtime_error("too many nested uses of budgetkernel models in one thread");
  }
  /// Ends a registered use of `learner` in the table (the caller notifies).
  static void release(const void* learner, bool write) {
    auto it = table().find(learner);
    Uses& u = it->second;
    u.active = write ? 0 : u.active - 1;
    if (u.active == 0 && u.writers_waiting == 0) table().erase(it);
  }
  static void unqueue(const void* learner) {
    Uses& u = table()[learner];
    --u.writers_waiting;
    if (u.active == 0 && u.writers_waiting == 0) table().erase(learner);
  }
  static void notify() {
    {
      std::lock_guard<std::mutex> lock(mutex());
      ++generation();
    }
    ended().notify_all();
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::condition_variable& ended() {
    static std::condition_variable cv;
    return cv;
  }
  static std::uint64_t& generation() {  // read and written under mutex() (or the GIL, to seed a wait)
    static std::uint64_t g = 0;
    return g;
  }
  const void* m_learner;
  bool m_write;
};

/// Write uses of several learners held together for one call (partial_fit_many): what as many
/// write UseGuards would do, with two differences. They are taken in order of address, so two
/// calls that share learners wait for each other instead of each holding a learner the other
/// waits for. And they are one entry of this thread's held uses (a use nested in any of them
/// raises as for a UseGuard), so their number is not limited by the nesting depth. A wait
/// interrupted by a signal handler (Ctrl-C) gives back the uses taken so far.
class UseGuards {
 public:
  /// `learners`: distinct learners (the caller rejects a learner given twice).
  explicit UseGuards(std::vector<const void*> learners) : m_learners(std::move(learners)) {
    std::sort(m_learners.begin(), m_learners.end(), std::less<const void*>());
    for (const void* l : m_learners) UseGuard::enter_nested(l, true);  // raises if nested
    // Held from the start and grown as uses are taken: a signal handler that runs while a
    // later learner is waited for and uses one already taken must raise, not wait for itself.
    if (!UseGuard::push_held({m_learners.data(), 0, true})) throw UseGuard::too_many_nested();
    UseGuard::Use& held = UseGuard::held_here().uses[UseGuard::held_here().n - 1];
    try {
      for (const void* l : m_learners) {
        UseGuard::wait_for_turn(l, true);
        ++held.n;
      }
    } catch (...) {
      end(held.n);
      throw;
    }
  }
  ~UseGuards() { end(m_learners.size()); }
  UseGuards(const UseGuards&) = delete;
  UseGuards& operator=(const UseGuards&) = delete;

 private:
  /// Ends the uses of the first `taken` learners and this thread's record of them.
  void end(std::size_t taken) {
    --UseGuard::held_here().n;
    for (std::size_t i = 0; i < taken; ++i) UseGuard::release(m_learners[i], true);
    UseGuard::notify();
  }
  std::vector<const void*> m_learners;
};

/// Runs Python's signal handlers, taking the GIL for it: whether one raised (Ctrl-C's
/// KeyboardInterrupt), whose exception is then set in this thread. Outside the main thread
/// Python runs no handlers and this returns false.
inline bool python_signal_raised() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

/// Runs f(bk::StopPoll*), a chunk loop of the core, with the GIL released, and lets Python's
/// signal handlers stop it between two examples (stop_poll.hpp). Without this, Ctrl-C (or
/// Jupyter's "interrupt kernel") during partial_fit, decision_function or predict was seen
/// only when the whole chunk had run, however long the exact SVM or an unbudgeted learner
/// took over it. The poll takes the GIL back about every 20 ms to run
/// PyErr_CheckSignals (in the main thread; elsewhere it does nothing); a handler that raises
/// (KeyboardInterrupt) leaves its exception set in this thread and stops the loop, and the
/// exception is raised here once the GIL is held again. A partial_fit stopped this way keeps
/// the rows before the one it stopped at learned.
template <class F>
void run_released(F&& f) {
  bk::StopPoll poll([](void*) { return python_signal_raised(); });
  bool stopped = false;
  {
    py::gil_scoped_release release;
    try {
      f(&poll);
    } catch (const bk::Interrupted&) {
      stopped = true;
    }
  }
  if (stopped) throw py::error_already_set();
}

/// bk::run_tasks (parallel.hpp) with the GIL released, stopped by Ctrl-C as run_released is:
/// the worker threads cannot run Python's signal handlers, so the calling thread, which only
/// waits for them, takes the GIL about every 20 ms to run them. A handler that raised stops
/// every task at its next example (each keeps the rows before its stop learned; tasks not
/// started did nothing), and its exception is raised here once all threads have ended. A
/// task's own exception propagates as run_tasks rethrows it (the lowest-numbered task's).
inline void run_tasks_released(std::size_t n_tasks, int n_jobs,
                               const std::function<void(std::size_t, bk::StopPoll*)>& task) {
  bool signalled = false;
  {
    py::gil_scoped_release release;
    try {
      bk::run_tasks(n_tasks, n_jobs, task, [&signalled] { return signalled = python_signal_raised(); });
    } catch (const bk::Interrupted&) {
      if (!signalled) throw;  // a task stopped itself: not a stop of ours, report it as it is
    }
  }
  if (signalled) throw py::error_already_set();
}

/// run_released under a UseGuard of `learner` (write: exclusive use) held for the whole run.
template <class L, class F>
void run_guarded(const L& learner, bool write, F&& f) {
  UseGuard use(&learner, write);
  run_released(std::forward<F>(f));
}

/// A const member getter of L as a binding lambda that holds a read UseGuard while it runs
/// (the result is copied out under the guard).
template <class L, class R>
auto read_guarded(R (L::*getter)() const) {
  return [getter](const L& self) {
    UseGuard use(&self, false);
    return std::decay_t<R>((self.*getter)());
  };
}

/// A member function of L that changes it, as a binding lambda that holds a write UseGuard
/// and releases the GIL while it runs.
template <class L, class... A>
auto write_released(void (L::*method)(A...)) {
  return [method](L& self, A... args) {
    UseGuard use(&self, true);
    py::gil_scoped_release release;
    (self.*method)(args...);
  };
}
