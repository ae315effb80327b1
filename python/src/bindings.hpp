#pragma once
// Shared pieces of the thin pybind11 layer: array conversion and the methods every
// learner exposes. Validation of user input happens in Python; the core re-checks what
// it must so that nothing reaching it can crash the interpreter. Every class is
// py::module_local(): _core and _core_avx2 define the same types and must not collide in
// pybind11's global registry.
//
// Only what this layer itself uses is included here; each wrap_*.cpp includes the headers of
// the learners it binds. The umbrella header budgetkernel.hpp would make every translation
// unit instantiate the Eigen code of every inline function of the library, called or not
// (the compiler instantiates what a function body uses when it parses the body; docs/install.md,
// "Build time").
#include <budgetkernel/io.hpp>
#include <budgetkernel/learners/calibration.hpp>
#include <budgetkernel/learners/combine.hpp>
#include <budgetkernel/learners/combine_regression.hpp>
#include <budgetkernel/learners/learner_base.hpp>
#include <budgetkernel/learners/regressor_base.hpp>
#include <budgetkernel/stop_poll.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "partial_fit_many.hpp"  // register_many: the learner classes partial_fit_many takes
#include "model_lock.hpp"  // UseGuard, run_guarded, read_guarded, write_released

namespace py = pybind11;
namespace bk = budgetkernel;

using CArray = py::array_t<double, py::array::c_style>;
using LabelArray = py::array_t<std::int32_t, py::array::c_style>;

inline Eigen::Map<const bk::RowMatrix> as_matrix(const CArray& X) {
  if (X.ndim() != 2) throw std::invalid_argument("expected a 2-D array");
  return {X.data(), X.shape(0), X.shape(1)};
}

/// A copy of a matrix as a new numpy array.
inline py::array_t<double> to_numpy(const bk::RowMatrix& m) {
  py::array_t<double> out({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  std::copy(m.data(), m.data() + m.size(), out.mutable_data());
  return out;
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

/// The chunk methods of learner class L: each runs in C++ with the GIL released, under the
/// model lock (a writer for partial_fit, a reader otherwise), and stops at Ctrl-C.
template <class L, class Cls>
void def_chunk_methods(Cls& cls) {
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
          "check_chunk",
          [](const L& self, const CArray& X, const LabelArray& y) {
            auto Xm = as_matrix(X);
            if (y.ndim() != 1 || y.shape(0) != Xm.rows()) throw std::invalid_argument("y must be 1-D with one label per row");
            run_guarded(self, false, [&](bk::StopPoll*) { self.check_chunk(Xm, y.data(), true); });
          },
          py::arg("X"), py::arg("y"),
          "The checks partial_fit makes of a chunk before it learns any row (rows, label indices); learns "
          "nothing. Raises ValueError naming the first rejected row.")
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
      .def(
          "predict_proba",
          [](const L& self, const CArray& X, bool log) {
            auto Xm = as_matrix(X);
            py::array_t<double> out({static_cast<py::ssize_t>(Xm.rows()), static_cast<py::ssize_t>(self.n_classes())});
            Eigen::Map<bk::RowMatrix> o(out.mutable_data(), Xm.rows(), self.n_classes());
            run_guarded(self, false, [&](bk::StopPoll* stop) { self.predict_proba(Xm, o, log, stop); });
            return out;
          },
          py::arg("X"), py::arg("log") = false,
          "Class probabilities (or their logs with log=True), n x n_classes (OnlineLearner::predict_proba).");
}

/// The single-example path of learner class L: no validation beyond shape and finiteness, no
/// copies; the GIL stays held.
template <class L, class Cls>
void def_single_example_methods(Cls& cls) {
  cls.def(
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
          py::arg("x"));
}

/// The metadata and the model bytes of learner class L (classifiers and regressors alike).
template <class L, class Cls>
void def_model_bytes(Cls& cls) {
  cls.def_property(
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

/// The sizes, counters, metadata and model bytes of classifier class L.
template <class L, class Cls>
void def_state_methods(Cls& cls) {
  cls.def_property_readonly("n_features", &L::n_features)
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
          "probability",
          [](const L& self) {
            UseGuard use(&self, false);
            return self.probability();
          },
          [](L& self, bool on) {
            UseGuard use(&self, true);
            self.set_probability(on);
          },
          "Whether the learner calibrates its decision values online (OnlineLearner::set_probability).")
      .def_property_readonly("has_probabilities",
                             [](const L& self) {
                               UseGuard use(&self, false);
                               return self.has_probabilities();
                             })
      .def_property_readonly("calibration",
                             [](const L& self) {
                               UseGuard use(&self, false);
                               const bk::PlattCalibration& c = self.calibration();
                               const bk::ProbabilityMap m = self.probability_map();
                               py::dict d;
                               d["seen"] = c.seen();
                               d["a_pos"] = m.a_pos;
                               d["a_neg"] = m.a_neg;
                               d["a"] = m.a;
                               const bk::Index n = c.size(), k = self.n_outputs();
                               bk::RowMatrix F = Eigen::Map<const bk::RowMatrix>(c.window_f().data(), n, k);
                               d["f"] = to_numpy(F);
                               d["y"] = std::vector<std::int32_t>(c.window_y().begin(), c.window_y().end());
                               return d;
                             },
                             "The online Platt calibration: pairs seen, the fitted map (slopes a_pos, a_neg for two "
                             "classes, inverse temperature a for more) and the window of prequential pairs (f, y).");
  cls.def(
      "pool_calibration",
      [](L& self, const py::sequence& parts, const L* base) {
        // copies, each under its model's read use (a model may be given twice, or be self)
        std::vector<bk::PlattCalibration> cals;
        for (py::handle h : parts) {
          const L& m = h.cast<const L&>();
          UseGuard use(&m, false);
          cals.push_back(m.calibration());
        }
        std::vector<bk::PlattCalibration> base_cal;
        if (base) {
          UseGuard use(base, false);
          base_cal.push_back(base->calibration());
        }
        std::vector<const bk::PlattCalibration*> ptrs;
        for (const bk::PlattCalibration& c : cals) ptrs.push_back(&c);
        UseGuard use(&self, true);
        self.pool_calibration(base_cal.empty() ? nullptr : &base_cal[0], ptrs);
      },
      py::arg("parts"), py::arg("base").none(true) = py::none(),
      "Replaces the calibration by the pooled prequential pairs of models mixed from `base` "
      "(OnlineLearner::pool_calibration).");
  def_model_bytes<L>(cls);
}

/// Whether learner L can be combined (has combine_from, learners/combine.hpp).
template <class L, class = void>
struct has_combine : std::false_type {};
template <class L>
struct has_combine<L, std::void_t<decltype(&L::combine_from)>> : std::true_type {};

/// L.combine(models, weights, budget, class_maps, n_classes, base) -> (L, report dict):
/// budgetkernel::combine, for a classifier or a regressor (which takes no class maps:
/// learners/combine_regression.hpp). Each model is copied under its own read use (so any number of
/// models, one model given twice, or a model another thread is training all work), then the
/// copies are combined with the GIL released.
template <class L, class Cls>
void def_combine(Cls& cls) {
  cls.def_static(
      "combine",
      [](const py::sequence& models, std::vector<double> weights, bk::Index budget,
         std::vector<std::vector<std::int32_t>> class_maps, bk::Index n_classes, const L* base) {
        std::vector<L> copies;
        copies.reserve(models.size());
        for (std::size_t i = 0; i < models.size(); ++i) {
          py::handle h = models[i];
          if (!py::isinstance<L>(h))
            throw py::type_error("combine: models[" + std::to_string(i) + "] is a " +
                                 std::string(py::str(py::type::handle_of(h).attr("__name__"))) + ", not a " +
                                 std::string(py::str(py::type::of<L>().attr("__name__"))));
          const L& m = h.cast<const L&>();
          UseGuard use(&m, false);
          copies.push_back(m);
        }
        std::vector<L> base_copy;
        if (base) {
          UseGuard use(base, false);
          base_copy.push_back(*base);
        }
        std::vector<const L*> ptrs;
        for (const L& m : copies) ptrs.push_back(&m);
        const bk::CombineOptions opt{std::move(weights), budget, std::move(class_maps), n_classes};
        bk::CombineReport rep;
        L out;
        {
          py::gil_scoped_release nogil;
          out = bk::combine(ptrs, opt, base_copy.empty() ? nullptr : &base_copy[0], &rep);
        }
        py::dict r;
        r["degradation"] = rep.degradation;
        r["union_size"] = rep.union_size;
        r["duplicates"] = rep.duplicates;
        r["reductions"] = rep.reductions;
        return py::make_tuple(std::move(out), r);
      },
      py::arg("models"), py::arg("weights") = std::vector<double>{}, py::arg("budget") = -1,
      py::arg("class_maps") = std::vector<std::vector<std::int32_t>>{}, py::arg("n_classes") = 0,
      py::arg("base") = nullptr,
      "The weighted average sum_k w_k f_k of models of this class (budgetkernel::combine); returns "
      "(model, report).");
}

/// The methods shared by every learner class L (an OnlineLearner with save/load), and L's
/// place among the classes partial_fit_many takes.
template <class L, class Cls>
void def_learner_common(Cls& cls) {
  def_chunk_methods<L>(cls);
  def_single_example_methods<L>(cls);
  def_state_methods<L>(cls);
  if constexpr (has_combine<L>::value) def_combine<L>(cls);
  register_many<L>();
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

/// The chunk, single-example and state methods of regressor class L (an OnlineRegressor,
/// learners/regressor_base.hpp): chunks with the GIL released under the model lock (stopping at
/// Ctrl-C), one example at a time, the counters and the model bytes.
template <class L, class Cls>
void def_regressor_surface(Cls& cls) {
  using TargetArray = py::array_t<double, py::array::c_style>;
  cls.def(
         "partial_fit",
         [](L& self, const CArray& X, const TargetArray& y, bool record) -> py::object {
           auto Xm = as_matrix(X);
           if (y.ndim() != 1 || y.shape(0) != Xm.rows()) throw std::invalid_argument("y must be 1-D with one target per row");
           TargetArray pred(record ? Xm.rows() : 0);
           double* out = record ? pred.mutable_data() : nullptr;
           run_guarded(self, true, [&](bk::StopPoll* stop) { self.partial_fit(Xm, y.data(), out, stop); });
           if (record) return std::move(pred);
           return py::none();
         },
         py::arg("X"), py::arg("y"), py::arg("record") = false,
         "Test-then-train over a chunk; returns the prequential predictions when record=True.")
      .def(
          "check_chunk",
          [](const L& self, const CArray& X, const TargetArray& y) {
            auto Xm = as_matrix(X);
            if (y.ndim() != 1 || y.shape(0) != Xm.rows()) throw std::invalid_argument("y must be 1-D with one target per row");
            run_guarded(self, false, [&](bk::StopPoll*) { self.check_chunk(Xm, y.data(), true); });
          },
          py::arg("X"), py::arg("y"),
          "The checks partial_fit makes of a chunk before it learns any row (rows, targets); learns nothing. "
          "Raises ValueError naming the first rejected row or target.")
      .def(
          "predict",
          [](const L& self, const CArray& X) {
            auto Xm = as_matrix(X);
            TargetArray out(Xm.rows());
            double* o = out.mutable_data();
            run_guarded(self, false, [&](bk::StopPoll* stop) { self.predict(Xm, o, stop); });
            return out;
          },
          py::arg("X"))
      .def(
          "learn_one",
          [](L& self, const CArray& x, double y) {
            check_one(self, x, true);
            if (const char* problem = L::target_problem(y)) throw std::invalid_argument(std::string("y ") + problem);
            UseGuard use(&self, true);
            return self.learn_one(x.data(), y);
          },
          py::arg("x"), py::arg("y"))
      .def(
          "predict_one",
          [](const L& self, const CArray& x) {
            check_one(self, x, false);
            UseGuard use(&self, false);
            return self.decision(x.data());
          },
          py::arg("x"))
      .def_property_readonly("n_features", &L::n_features)
      .def_property_readonly("n_outputs", &L::n_outputs)
      .def_property_readonly("counters",
                             [](const L& self) {
                               UseGuard use(&self, false);
                               const bk::RegressionCounters& c = self.counters();
                               py::dict d;
                               d["examples"] = c.examples;
                               d["updates"] = c.updates;
                               d["maintenance_steps"] = c.maintenance;
                               d["degradation"] = c.degradation;
                               d["squared_error"] = c.sse;
                               d["absolute_error"] = c.sae;
                               return d;
                             });
  def_model_bytes<L>(cls);
}

void wrap_pegasos(py::module_& m);
void wrap_passive_aggressive(py::module_& m);
void wrap_perceptron(py::module_& m);
void wrap_svm(py::module_& m);
void wrap_sparse(py::module_& m);
void wrap_many(py::module_& m);
void wrap_regression(py::module_& m);
