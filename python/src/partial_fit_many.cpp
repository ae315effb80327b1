// Binding of partial_fit_many: one chunk through many learners at once (the candidates of a
// self-tuning search), each on one thread of a pool, with the GIL released.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace {

std::string position(std::size_t i) { return "models[" + std::to_string(i) + "]"; }

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

/// The learner behind models[i]: a learner class registered by def_learner_common.
ManyLearner many_learner(py::handle h, std::size_t i) {
  ManyLearner l;
  for (ManyCast cast : many_registry())
    if (cast(h, l)) return l;
  throw py::type_error("partial_fit_many: " + position(i) + " is a " + type_name(h) +
                       ", not a learner of this core module");
}

/// The learners of `models`, checked before any is used: each of a learner class, each once,
/// each as wide as X.
std::vector<ManyLearner> many_learners(const py::sequence& models, bk::Index n_features) {
  std::vector<ManyLearner> learners;
  learners.reserve(models.size());
  for (std::size_t i = 0; i < models.size(); ++i) {
    learners.push_back(many_learner(models[i], i));
    if (learners[i].n_features != n_features)
      throw py::value_error("X has " + std::to_string(n_features) + " features, but " + position(i) + " (" +
                            type_name(learners[i].owner) + ") was fitted with " +
                            std::to_string(learners[i].n_features));
  }
  std::vector<std::pair<const void*, std::size_t>> by_address;  // a learner twice would race itself
  for (std::size_t i = 0; i < learners.size(); ++i) by_address.emplace_back(learners[i].learner, i);
  std::sort(by_address.begin(), by_address.end(), [](const auto& a, const auto& b) {
    return std::less<const void*>()(a.first, b.first) || (a.first == b.first && a.second < b.second);
  });
  for (std::size_t k = 1; k < by_address.size(); ++k)
    if (by_address[k].first == by_address[k - 1].first)
      throw py::value_error("partial_fit_many: " + position(by_address[k].second) + " is the same model as " +
                            position(by_address[k - 1].second) + "; each model may be given once");
  return learners;
}

/// partial_fit_many(models, X, y, n_jobs): models[i].partial_fit(X, y) for every i.
void partial_fit_many(const py::sequence& models, const CArray& X, const LabelArray& y, int n_jobs) {
  // Everything checked while the GIL is held, before any model learns.
  if (n_jobs < 1) throw py::value_error("n_jobs must be >= 1, got " + std::to_string(n_jobs));
  auto Xm = as_matrix(X);
  if (y.ndim() != 1 || y.shape(0) != Xm.rows()) throw std::invalid_argument("y must be 1-D with one label per row");
  std::vector<ManyLearner> learners = many_learners(models, Xm.cols());
  std::vector<const void*> keys;
  for (const ManyLearner& l : learners) keys.push_back(l.learner);
  UseGuards use(std::move(keys));  // every model written by this call alone, until it returns
  const std::int32_t* labels = y.data();

  // The rows and labels every model checks (check_chunk, as its partial_fit would), so that a
  // bad row or label raises before any model learns (the models may differ: kernel, classes).
  // One pass of O(rows x features) each, in this thread: no pool of threads started for it
  // (learn_one of a search hands over one row per call). Each partial_fit checks its chunk
  // again, a pass that costs about 1/B of its learning.
  {
    py::gil_scoped_release release;
    for (const ManyLearner& l : learners) l.check(l.learner, Xm, labels);
  }
  // Each task trains its own model on the shared, read-only chunk, alone from start to end:
  // a model's result is the one of its own partial_fit and cannot depend on n_jobs or on
  // which thread ran it. Ctrl-C stops every model at a row (run_tasks_released).
  run_tasks_released(learners.size(), n_jobs, [&](std::size_t i, bk::StopPoll* stop) {
    learners[i].partial_fit(learners[i].learner, Xm, labels, stop);
  });
}

}  // namespace

void wrap_many(py::module_& m) {
  m.def("partial_fit_many", &partial_fit_many, py::arg("models"), py::arg("X"), py::arg("y"), py::arg("n_jobs"),
        "models[i].partial_fit(X, y) for every learner of the list, in parallel on n_jobs threads with the GIL "
        "released; the same bytes as calling each in turn. Checks everything (classes, duplicates, shapes, rows, "
        "labels) before any model learns. Ctrl-C stops every model at a row. Returns None.");
}
