// Bindings of Sparse PA (SPA paper) and kernel OGD / BOGD, and the averaged views shared
// with the PA family.
#include "params.hpp"

#include <budgetkernel/learners/bogd.hpp>
#include <budgetkernel/learners/sparse_pa.hpp>

void wrap_sparse(py::module_& m) {
  ParamsClass<bk::SPAParams>(m, "SPAParams", "Parameters of SparsePA (C++ SPAParams).")
      .field("alpha", &bk::SPAParams::alpha, "loss cap of the sampling probability, > 0")
      .field("beta", &bk::SPAParams::beta, "divisor of the sampling probability, >= alpha")
      .field("eta", &bk::SPAParams::eta, "aggressiveness, > 0")
      .field("averaged", &bk::SPAParams::averaged, "predict with the mean of every classifier held (SPA-avg)")
      .field("seed", &bk::SPAParams::seed);
  py::class_<bk::SparsePA> spa(m, "SparsePA", py::module_local(),
                               "Sparse Passive-Aggressive learning (SPA paper, Algorithm 1).");
  def_init_from_params<bk::SparsePA, bk::SPAParams>(spa);
  spa.def_property_readonly("expected_support", read_guarded(&bk::SparsePA::expected_support),
                            "sum of the sampling probabilities so far: E[#SV] (Theorem 3.2)");
  def_kernel_expansion<bk::SparsePA>(spa);
  def_average<bk::SparsePA>(spa);
  def_learner_common<bk::SparsePA>(spa);

  ParamsClass<bk::BOGDParams>(m, "BOGDParams", "Parameters of BOGD (C++ BOGDParams).")
      .field("eta", &bk::BOGDParams::eta, "step size, > 0")
      .field("lam", &bk::BOGDParams::lam, "regularisation lambda, >= 0 with eta * lam < 1")
      .field("budget", &bk::BOGDParams::budget, "B; 0 = unbudgeted kernel OGD")
      .enum_field("sampling", &bk::BOGDParams::sampling, bk::bogd_sampling_names)
      .field("max_coef", &bk::BOGDParams::max_coef, "bound of a coefficient row's norm / eta; inf = none")
      .field("averaged", &bk::BOGDParams::averaged, "predict with the mean of every classifier held")
      .field("seed", &bk::BOGDParams::seed);
  py::class_<bk::BOGD> bogd(m, "BOGD", py::module_local(),
                            "Kernel OGD on the hinge loss; with a budget, BOGD / BOGD++ (Zhao et al., ICML 2012).");
  def_init_from_params<bk::BOGD, bk::BOGDParams>(bogd);
  bogd.def("reseed", write_released(&bk::BOGD::reseed), py::arg("seed"));
  def_kernel_expansion<bk::BOGD>(bogd);
  def_average<bk::BOGD>(bogd);
  def_learner_common<bk::BOGD>(bogd);
}
