#pragma once
// Shared pieces of the thin pybind11 layer: array conversion and the methods every
// learner exposes. Validation of user input happens in Python; the core re-checks what
// it must so that nothing reaching it can crash the interpreter. Every class is
// py::module_local(): _core and _core_avx2 define the same types and must not collide in
// pybind11's global registry.
#include <budgetkernel/budgetkernel.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
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
/// Such code calling the same model used to deadlock for good when a writer was waiting (its
/// read queued behind the writer, which waited for the read that ran the finalizer; found
/// with a __del__ that predicted). So a thread remembers the uses it holds: a nested read
/// under its own read starts at once (the outer read already keeps writers out), and any
/// other nesting (a change while the thread reads or writes, a read while it writes) raises
/// RuntimeError instead of waiting for itself. With those, a waiting thread holds no use, so
/// waits cannot form a cycle.
///
/// A wait is also interruptible as a Python lock's acquire is: Ctrl-C in a main thread that
/// waits behind a long chunk of another thread raises KeyboardInterrupt there (it used to be
/// seen only once the chunk ended), and the wait is abandoned cleanly.
class UseGuard {
 public:
  UseGuard(const void* learner, bool write) : m_learner(learner), m_write(write) {
    Held& held = held_here();
    for (int i = 0; i < held.n; ++i) {
      if (held.uses[i].learner != learner) continue;
      if (write || held.uses[i].write)
        throw std::runtime_error(
            "a model was used again by code that runs while the same thread uses it (a finalizer or "
            "callback); only reading it there is possible");
      ++table()[learner].active;  // a nested read: the outer read keeps writers out already
      push_held(learner, false);
      return;
    }
    bool queued = false;  // this writer counted in writers_waiting
    for (;;) {
      Uses& u = table()[learner];
      if (write ? u.active == 0 : u.active >= 0 && u.writers_waiting == 0) {
        if (queued) --u.writers_waiting;
        u.active = write ? -1 : u.active + 1;
        push_held(learner, write);
        return;
      }
      if (write && !queued) {
        ++u.writers_waiting;
        queued = true;
      }
      // Wait for some use to end (~UseGuard bumps the generation under the mutex, so one
      // that ends between here and the wait is not missed), then look again; every 50 ms,
      // with the GIL, for a signal (Ctrl-C) to handle.
      const std::uint64_t seen = generation();
      {
        py::gil_scoped_release nogil;
        std::unique_lock<std::mutex> lock(mutex());
        ended().wait_for(lock, std::chrono::milliseconds(50), [seen] { return generation() != seen; });
      }
      // Out of the writers' queue while signal handlers may run: a handler that uses this
      // model (saves it on Ctrl-C) would otherwise wait behind this thread's own place. With
      // no signal pending nothing runs and the GIL is never let go of in between, so no other
      // thread sees the gap; the next turn of the loop queues again.
      if (queued) {
        unqueue(learner);
        queued = false;
      }
      if (PyErr_CheckSignals() != 0) {  // a handler raised: give up the wait
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
    }
  }
  ~UseGuard() {  // the GIL is held again here: guards are made before releasing it
    Held& held = held_here();  // uses end in reverse order of their start (scoped guards)
    --held.n;
    auto it = table().find(m_learner);
    Uses& u = it->second;
    u.active = m_write ? 0 : u.active - 1;
    if (u.active == 0 && u.writers_waiting == 0) table().erase(it);
    notify();
  }
  UseGuard(const UseGuard&) = delete;
  UseGuard& operator=(const UseGuard&) = delete;

 private:
  struct Uses {
    int active = 0;           // > 0: that many readers; -1: a writer
    int writers_waiting = 0;  // writers queued for this learner (readers wait behind them)
  };
  struct Use {
    const void* learner;
    bool write;
  };
  struct Held {  // the uses this thread holds, innermost last (almost always 0 or 1)
    static constexpr int kMax = 16;
    Use uses[kMax];
    int n;
  };
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
  static void push_held(const void* learner, bool write) {
    Held& held = held_here();
    if (held.n == Held::kMax) {  // 16 nested uses: only a runaway recursion of finalizers
      Uses& u = table()[learner];  // undo the registration just made
      u.active = write ? 0 : u.active - 1;
      if (u.active == 0 && u.writers_waiting == 0) table().erase(learner);
      notify();
      throw std::runtime_error("too many nested uses of budgetkernel models in one thread");
    }
    held.uses[held.n++] = {learner, write};
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
  bk::StopPoll poll([](void*) {
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  });
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

/// run_released under a UseGuard of `learner` (write: exclusive use) held for the whole run.
template <class L, class F>
void run_guarded(const L& learner, bool write, F&& f) {
  UseGuard use(&learner, write);
  run_released(std::forward<F>(f));
}

using CArray = py::array_t<double, py::array::c_style>;
using LabelArray = py::array_t<std::int32_t, py::array::c_style>;

/// A const member getter of L as a binding lambda that holds a read UseGuard while it runs
/// (the result is copied out under the guard).
template <class L, class R>
auto read_guarded(R (L::*getter)() const) {
  return [getter](const L& self) {
    UseGuard use(&self, false);
    return std::decay_t<R>((self.*getter)());
  };
}

inline Eigen::Map<const bk::RowMatrix> as_matrix(const CArray& X) {
  if (X.ndim() != 2) throw std::invalid_argument("expected a 2-D array");
  return {X.data(), X.shape(0), X.shape(1)};
}

/// The single-example path's only validation (no copies): shape and the learner's row check.
template <class L>
void check_one(const L& self, const CArray& x, bool learning) {
  if (x.ndim() != 1)
    throw std::invalid_argument("x must be one example, a 1-D array; got " + std::to_string(x.ndim()) + " dimensions");
  if (x.shape(0) != self.n_features())
    throw std::invalid_argument("x has " + std::to_string(x.shape(0)) + " features, but the model was fitted with " +
                                std::to_string(self.n_features()) + " (n_features_in_)");
  if (const char* problem = learning ? self.learn_row_problem(x.data()) : self.row_problem(x.data()))
    throw std::invalid_argument("x " + self.describe_row_problem(x.data(), problem));
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

/// The methods shared by every learner class L (an OnlineLearner with save/load).
template <class L, class Cls>
void def_learner_common(Cls& cls) {
  cls.def(
         "partial_fit",
         [](L& self, const CArray& X, const LabelArray& y, bool record) -> py::object {
           auto Xm = as_matrix(X);
           if (y.ndim() != 1 || y.shape(0) != Xm.rows()) throw std::invalid_argument("y must be 1-D with one label per row");
           LabelArray pred(record ? Xm.rows() : 0);
           std::int32_t* out = record ? pred.mutable_data() : nullptr;
           run_guarded(self, true, [&](bk::StopPoll* stop) { self.partial_fit(Xm, y.data(), out, stop); });
           if (record) return std::move(pred);
           return py::none();
         },
         py::arg("X"), py::arg("y"), py::arg("record") = false,
         "Test-then-train over a chunk; returns the prequential predictions when record=True.")
      .def(
          "decision_function",
          [](const L& self, const CArray& X) {
            auto Xm = as_matrix(X);
            py::array_t<double> out({static_cast<py::ssize_t>(Xm.rows()), static_cast<py::ssize_t>(self.n_outputs())});
            Eigen::Map<bk::RowMatrix> o(out.mutable_data(), Xm.rows(), self.n_outputs());
            run_guarded(self, false, [&](bk::StopPoll* stop) { self.decision_function(Xm, o, stop); });
            return out;
          },
          py::arg("X"))
      .def(
          "predict",
          [](const L& self, const CArray& X) {
            auto Xm = as_matrix(X);
            LabelArray out(Xm.rows());
            std::int32_t* o = out.mutable_data();
            run_guarded(self, false, [&](bk::StopPoll* stop) { self.predict(Xm, o, stop); });
            return out;
          },
          py::arg("X"))
      // The single-example path: no validation beyond shape and finiteness, no copies.
      .def(
          "learn_one",
          [](L& self, const CArray& x, std::int32_t y) {
            check_one(self, x, true);
            if (y < 0 || y >= self.n_classes()) throw std::invalid_argument("label index out of range");
            UseGuard use(&self, true);
            return self.learn_one(x.data(), y);
          },
          py::arg("x"), py::arg("y"))
      .def(
          "decision_one",
          [](const L& self, const CArray& x) {
            check_one(self, x, false);
            py::array_t<double> out(self.n_outputs());
            UseGuard use(&self, false);
            self.decision(x.data(), out.mutable_data());
            return out;
          },
          py::arg("x"))
      .def_property_readonly("n_features", &L::n_features)
      .def_property_readonly("n_classes", &L::n_classes)
      .def_property_readonly("n_outputs", &L::n_outputs)
      .def_property_readonly("counters",
                             [](const L& self) {
                               UseGuard use(&self, false);
                               const bk::Counters& c = self.counters();
                               py::dict d;
                               d["examples"] = c.examples;
                               d["updates"] = c.updates;
                               d["maintenance_steps"] = c.maintenance;
                               d["degradation"] = c.degradation;
                               d["mistakes"] = c.mistakes;
                               d["labels"] = c.labels;
                               return d;
                             })
      .def_property(
          "metadata",
          [](const L& self) {
            UseGuard use(&self, false);
            return py::bytes(self.metadata);
          },
          [](L& self, const py::bytes& b) {
            UseGuard use(&self, true);
            self.metadata = std::string(b);
          })
      .def("to_bytes",
           [](const L& self) {
             UseGuard use(&self, false);
             bk::FieldMap fm;
             self.save(fm);
             return py::bytes(fm.to_bytes());
           })
      .def_static(
          "from_bytes",
          [](const py::bytes& b) {
            L l;
            l.load(bk::FieldMap::from_bytes(std::string(b)));
            return l;
          },
          py::arg("data"));
}

/// A copy of a matrix as a new numpy array.
inline py::array_t<double> to_numpy(const bk::RowMatrix& m) {
  py::array_t<double> out({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  std::copy(m.data(), m.data() + m.size(), out.mutable_data());
  return out;
}

/// read_guarded for a const member returning a matrix: a NumPy copy made under the guard.
template <class L>
auto read_guarded_array(bk::RowMatrix (L::*getter)() const) {
  return [getter](const L& self) {
    UseGuard use(&self, false);
    return to_numpy((self.*getter)());
  };
}

/// The read-only views every kernel-expansion learner L (support_vectors(), coefficients()) has.
template <class L, class Cls>
void def_kernel_expansion(Cls& cls) {
  cls.def_property_readonly("n_support",
                            [](const L& s) {
                              UseGuard use(&s, false);
                              return s.support_vectors().size();
                            })
      .def_property_readonly("support_vectors",
                             [](const L& s) {
                               UseGuard use(&s, false);
                               const auto& sv = s.support_vectors();
                               return to_numpy(sv.X().topRows(sv.size()));
                             })
      .def_property_readonly("coefficients", read_guarded_array(&L::coefficients))
      .def_property_readonly("support_ids", [](const L& s) {
        UseGuard use(&s, false);
        const auto& sv = s.support_vectors();
        return std::vector<std::int64_t>(sv.ids().begin(), sv.ids().begin() + sv.size());
      });
}

/// The averaged predictor of a learner L with a UniformAverage (average(), n_classifiers()).
template <class L, class Cls>
void def_average(Cls& cls) {
  cls.def_property_readonly(
         "n_support_average",
         [](const L& s) {
           UseGuard use(&s, false);
           return s.average().size(s.support_vectors());
         },
         "SVs the averaged classifier predicts with (current + retired)")
      .def_property_readonly(
          "average_expansion",
          [](const L& s) {
            UseGuard use(&s, false);
            bk::RowMatrix X, A;
            s.average().predictor(s.support_vectors(), s.n_classifiers(), X, A);
            return py::make_tuple(to_numpy(X), to_numpy(A));
          },
          "(support vectors, coefficients) of the averaged classifier");
}

void wrap_pegasos(py::module_& m);
void wrap_passive_aggressive(py::module_& m);
void wrap_perceptron(py::module_& m);
void wrap_svm(py::module_& m);
void wrap_sparse(py::module_& m);
