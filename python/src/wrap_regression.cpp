// Binding of the regressors (learners/regressor_base.hpp): the budgeted SGD regressor and the
// kernel adaptive filters (learners/kaf.hpp). Chunks run with the GIL released under the model
// lock and stop at Ctrl-C, as the classifiers'.
#include "params.hpp"

#include <budgetkernel/learners/kaf.hpp>
#include <budgetkernel/learners/pegasos_regressor.hpp>

namespace {

/// A kernel adaptive filter F with parameters P (already given their fields): the constructors,
/// params, steps and the regressor surface.
template <class F, class P>
void def_filter(py::module_& m, const char* name, const char* doc) {
  py::class_<F> f(m, name, py::module_local(), doc);
  f.def(py::init([](bk::Index n_features, const P& p) { return F(n_features, p); }), py::arg("n_features"),
        py::arg("params"))
      .def(py::init([](bk::Index n_features, const py::kwargs& kw) {
             return F(n_features, py::type::of<P>()(**kw).template cast<P>());
           }),
           py::arg("n_features"), "The parameters as keywords named as the fields of the Params class.")
      .def_property_readonly("params",
                             [](const F& s) {
                               UseGuard use(&s, false);
                               return s.params();
                             })
      .def_property_readonly("steps", read_guarded(&F::steps))
      .def_property_readonly("n_support", read_guarded(&F::n_support))
      .def_property_readonly("support_vectors",
                             [](const F& s) {
                               UseGuard use(&s, false);
                               const auto& sv = s.support_vectors();
                               return to_numpy(sv.X().topRows(sv.size()));
                             })
      .def_property_readonly("coefficients",  // n x 1, as BSGDRegressor's (one output column)
                             [](const F& s) {
                               UseGuard use(&s, false);
                               const bk::Vector a = s.coefficients();
                               return to_numpy(Eigen::Map<const bk::RowMatrix>(a.data(), a.size(), 1));
                             })
      .def_property_readonly("support_ids", [](const F& s) {
        UseGuard use(&s, false);
        const auto& sv = s.support_vectors();
        return std::vector<std::int64_t>(sv.ids().begin(), sv.ids().begin() + sv.size());
      });
  def_regressor_surface<F>(f);
  if constexpr (has_combine<F>::value) def_combine<F>(f);  // KLMS, QKLMS (not the KRLS family)
}

}  // namespace

void wrap_regression(py::module_& m) {
  ParamsClass<bk::BSGDRegressorParams>(m, "BSGDRegressorParams", "Parameters of BSGDRegressor (C++ BSGDRegressorParams).")
      .field("lam", &bk::BSGDRegressorParams::lam, "lambda of the objective, > 0")
      .field("t0", &bk::BSGDRegressorParams::t0, "step offset: eta_t = 1 / (lam (t + t0)), >= 0")
      .field("budget", &bk::BSGDRegressorParams::budget, "B; 0 = no budget")
      .enum_field("maintenance", &bk::BSGDRegressorParams::maintenance, bk::maintenance_names)
      .enum_field("loss", &bk::BSGDRegressorParams::loss, bk::regression_loss_names)
      .field("epsilon", &bk::BSGDRegressorParams::epsilon, "insensitive zone, or Huber's threshold")
      .field("fit_intercept", &bk::BSGDRegressorParams::fit_intercept, "intercept = running mean of the targets")
      .field("seed", &bk::BSGDRegressorParams::seed);
  py::class_<bk::BSGDRegressor> r(m, "BSGDRegressor", py::module_local(),
                                  "Budgeted SGD regression (kernel Pegasos' step on a regression loss).");
  r.def(py::init([](bk::Index n_features, const bk::BSGDRegressorParams& p) { return bk::BSGDRegressor(n_features, p); }),
        py::arg("n_features"), py::arg("params"))
      .def(py::init([](bk::Index n_features, const py::kwargs& kw) {
             return bk::BSGDRegressor(
                 n_features, py::type::of<bk::BSGDRegressorParams>()(**kw).cast<bk::BSGDRegressorParams>());
           }),
           py::arg("n_features"), "The parameters as keywords named as the fields of BSGDRegressorParams.")
      .def_property_readonly("params",
                             [](const bk::BSGDRegressor& s) {
                               UseGuard use(&s, false);
                               return s.params();
                             })
      .def_property_readonly("intercept", read_guarded(&bk::BSGDRegressor::intercept))
      .def_property_readonly("scale", read_guarded(&bk::BSGDRegressor::scale))
      .def_property_readonly("norm2", read_guarded(&bk::BSGDRegressor::norm2));
  def_kernel_expansion<bk::BSGDRegressor>(r);
  def_regressor_surface<bk::BSGDRegressor>(r);
  def_combine<bk::BSGDRegressor>(r);

  ParamsClass<bk::KLMSParams>(m, "KLMSParams", "Parameters of KLMS (C++ KLMSParams).")
      .field("eta", &bk::KLMSParams::eta, "step size, > 0");
  def_filter<bk::KLMS, bk::KLMSParams>(m, "KLMS", "Kernel least-mean-squares filter (learners/kaf/klms.hpp).");
  ParamsClass<bk::QKLMSParams>(m, "QKLMSParams", "Parameters of QKLMS (C++ QKLMSParams).")
      .field("eta", &bk::QKLMSParams::eta, "step size, > 0")
      .field("epsilon", &bk::QKLMSParams::epsilon, "quantisation size (input distance), >= 0; 0 = KLMS");
  def_filter<bk::QKLMS, bk::QKLMSParams>(m, "QKLMS", "Quantized KLMS (learners/kaf/klms.hpp).");
  ParamsClass<bk::KRLSParams>(m, "KRLSParams", "Parameters of KRLS (C++ KRLSParams).")
      .field("nu", &bk::KRLSParams::nu, "ALD threshold, >= 0; 0 = every example joins the dictionary")
      .field("lam", &bk::KRLSParams::lam, "ridge regularisation, >= 0")
      .field("budget", &bk::KRLSParams::budget, "the dictionary's cap B; 0 = none");
  def_filter<bk::KRLS, bk::KRLSParams>(m, "KRLS", "Kernel RLS with the ALD test (learners/kaf/krls.hpp).");
  ParamsClass<bk::SlidingKRLSParams>(m, "SlidingKRLSParams", "Parameters of SlidingWindowKRLS (C++ SlidingKRLSParams).")
      .field("budget", &bk::SlidingKRLSParams::budget, "window length B, >= 1")
      .field("lam", &bk::SlidingKRLSParams::lam, "ridge regularisation, > 0");
  def_filter<bk::SlidingWindowKRLS, bk::SlidingKRLSParams>(m, "SlidingWindowKRLS",
                                                           "Sliding-window KRLS (learners/kaf/sliding_krls.hpp).");
}
