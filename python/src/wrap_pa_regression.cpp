// Binding of PARegressor (learners/pa_regressor.hpp): PA / PA-I / PA-II regression, its
// budgeted (BPA) and sampled (SPA) steps and the averaged regressor; the chunk, single-example
// and state methods are every regressor's (def_regressor_surface, bindings.hpp).
#include "params.hpp"

#include <budgetkernel/learners/pa_regressor.hpp>

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
  def_regressor_surface<bk::PARegressor>(r);
  def_combine<bk::PARegressor>(r);
}
