#pragma once
// What partial_fit_many (partial_fit_many.cpp) needs of a learner of any bound class. def_learner_common
// registers every learner class it binds here, so a new learner class is trained by
// partial_fit_many with nothing more to write.
#include <budgetkernel/common.hpp>
#include <budgetkernel/stop_poll.hpp>

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace py = pybind11;
namespace bk = budgetkernel;

/// A learner of partial_fit_many's list, its class erased: the Python object (kept alive for
/// the call), the C++ learner (also the key of its UseGuard), its width, and its chunk check
/// and test-then-train loop (OnlineLearner::check_chunk and partial_fit).
struct ManyLearner {
  using Chunk = Eigen::Ref<const bk::RowMatrix>;
  py::object owner;
  void* learner = nullptr;
  bk::Index n_features = 0;
  void (*check)(const void* learner, const Chunk& X, const std::int32_t* y) = nullptr;
  void (*partial_fit)(void* learner, const Chunk& X, const std::int32_t* y, bk::StopPoll* stop) = nullptr;
};

/// Fills `out` and returns true if `h` is a learner of the class this function was made for.
using ManyCast = bool (*)(py::handle h, ManyLearner& out);

/// The learner classes of this module. Each extension module (_core, _core_avx2) has its own
/// list: pybind11 modules hide their symbols, so this static is not shared between them.
inline std::vector<ManyCast>& many_registry() {
  static std::vector<ManyCast> casts;
  return casts;
}

template <class L>
bool many_cast(py::handle h, ManyLearner& out) {
  // isinstance first: the class of this module only. pybind11 would also load the same C++
  // type from the other module (module_local types), whose objects this module's UseGuard
  // table does not know, so two threads could use one through the two modules at once.
  if (!py::isinstance<L>(h)) return false;
  L& l = h.cast<L&>();
  out.owner = py::reinterpret_borrow<py::object>(h);
  out.learner = &l;
  out.n_features = l.n_features();
  out.check = [](const void* p, const ManyLearner::Chunk& X, const std::int32_t* y) {
    static_cast<const L*>(p)->check_chunk(X, y, true);
  };
  out.partial_fit = [](void* p, const ManyLearner::Chunk& X, const std::int32_t* y, bk::StopPoll* stop) {
    static_cast<L*>(p)->partial_fit(X, y, nullptr, stop);  // what the partial_fit binding runs
  };
  return true;
}

/// Makes learner class L known to partial_fit_many (once, however often the module is set up).
template <class L>
void register_many() {
  std::vector<ManyCast>& casts = many_registry();
  if (std::find(casts.begin(), casts.end(), &many_cast<L>) == casts.end()) casts.push_back(&many_cast<L>);
}
