// Binding of PARegressor (learners/pa_regressor.hpp): PA / PA-I / PA-II regression, its
// budgeted (BPA) and sampled (SPA) steps and the averaged regressor. The chunk, single-example
// and state methods are those of the other regressors (wrap_regression.cpp), under their own
// name here: the unity build shares one anonymous namespace between the binding files.
#include "params.hpp"

namespace {

using PARegTargets = py::array_t<double, py::array::c_style>;

/// The regressor surface of PARegressor: chunks with the GIL released under the model lock
/// (stopping at Ctrl-C), one example at a time, the counters and the model bytes.
template <class L, class Cls>
void def_pa_regressor_surface(Cls& cls) {
  cls.def(
         "partial_fit",
         [](L& self, const CArray& X, const PARegTargets& y, bool record) -> py::object {
           auto Xm = as_matrix(X);
           if (y.ndim() != 1 || y.shape(0) != Xm.rows()) throw std::invalid_argument("y must be 1-D with one target per row");
           PARegTargets pred(record ? Xm.rows() : 0);
           double* out = record ? pred.mutable_data() : nullptr;
           run_guarded(self, true, [&](bk::StopPoll* stop) { self.partial_fit(Xm, y.data(), out, stop); });
           if (record) return std::move(pred);
           return py::none();
         },
         py::arg("X"), py::arg("y"), py::arg("record") = false,
         "Test-then-train over a chunk; returns the prequential predictions when record=True.")
      .def(
          "predict",
          [](const L& self, const CArray& X) {
            auto Xm = as_matrix(X);
            PARegTargets out(Xm.rows());
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
      .def_property_readonly("counters", [](const L& self) {
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

}  // namespace

void wrap_pa_regression(py::module_& m) {
  using P = bk::PARegressorParams;
  ParamsClass<P>(m, "PARegressorParams", "Parameters of PARegressor (C++ PARegressorParams).")
      .field("C", &P::C, "aggressiveness, > 0 (ignored by pa_type 0)")
      .field("pa_type", &P::pa_type, "0 = PA, 1 = PA-I, 2 = PA-II")
      .field("epsilon", &P::epsilon, "insensitive zone, >= 0")
      .field("budget", &P::budget, "B; 0 = unbudgeted PA")
      .enum_field("variant", &P::variant, bk::pa_regressor_variant_names)
      .field("sampling", &P::sampling, "SPA: add an SV with probability min(alpha, loss) / beta")
      .field("alpha", &P::alpha, "SPA's loss cap, > 0")
      .field("beta", &P::beta, "SPA's divisor, >= alpha")
      .field("averaged", &P::averaged, "predict with the mean of every regressor held")
      .field("fit_intercept", &P::fit_intercept, "intercept = running mean of the targets")
      .field("seed", &P::seed);
  py::class_<bk::PARegressor> r(m, "PARegressor", py::module_local(),
                                "Passive-Aggressive regression; with a budget, BPA; with sampling, SPA.");
  r.def(py::init([](bk::Index n_features, const P& p) { return bk::PARegressor(n_features, p); }), py::arg("n_features"),
        py::arg("params"))
      .def(py::init([](bk::Index n_features, const py::kwargs& kw) {
             return bk::PARegressor(n_features, py::type::of<P>()(**kw).cast<P>());
           }),
           py::arg("n_features"), "The parameters as keywords named as the fields of PARegressorParams.")
      .def_property_readonly("params",
                             [](const bk::PARegressor& s) {
                               UseGuard use(&s, false);
                               return s.params();
                             })
      .def_property_readonly("intercept", read_guarded(&bk::PARegressor::predict_intercept))
      .def_property_readonly("expected_support", read_guarded(&bk::PARegressor::expected_support))
      .def_property_readonly("last_objectives",
                             [](const bk::PARegressor& s) {
                               UseGuard use(&s, false);
                               const bk::Vector& o = s.last_objectives();
                               return std::vector<double>(o.data(), o.data() + o.size());
                             })
      .def_property_readonly("last_removed", read_guarded(&bk::PARegressor::last_removed));
  def_kernel_expansion<bk::PARegressor>(r);
  def_average<bk::PARegressor>(r);
  def_pa_regressor_surface<bk::PARegressor>(r);
}
