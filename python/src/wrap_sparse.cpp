// Bindings of Sparse PA (SPA paper) and kernel OGD / BOGD, and the averaged views shared
// with the PA family.
#include "bindings.hpp"

void wrap_sparse(py::module_& m) {
  py::class_<bk::SparsePA> spa(m, "SparsePA", py::module_local(),
                               "Sparse Passive-Aggressive learning (SPA paper, Algorithm 1).");
  spa.def(py::init([](bk::Index d, bk::Index c, int kernel, double gamma, int degree, double coef0, double alpha,
                      double beta, double eta, bool averaged, std::uint64_t seed, bool force_sample) {
            bk::SPAParams p;
            p.kernel = make_kernel(kernel, gamma, degree, coef0);
            p.alpha = alpha;
            p.beta = beta;
            p.eta = eta;
            p.averaged = averaged;
            p.seed = seed;
            p.force_sample = force_sample;
            return bk::SparsePA(d, c, p);
          }),
          py::arg("n_features"), py::arg("n_classes"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
          py::arg("coef0"), py::arg("alpha"), py::arg("beta"), py::arg("eta"), py::arg("averaged"), py::arg("seed"),
          py::arg("force_sample") = false)
      .def_property_readonly("expected_support", read_guarded(&bk::SparsePA::expected_support),
                             "sum of the sampling probabilities so far: E[#SV] (Theorem 3.2)");
  def_params<bk::SparsePA>(spa, [](const bk::SPAParams& p, py::dict& d) {
    d["alpha"] = p.alpha;
    d["beta"] = p.beta;
    d["eta"] = p.eta;
    d["averaged"] = p.averaged;
    d["force_sample"] = p.force_sample;
    d["seed"] = p.seed;
  });
  def_kernel_expansion<bk::SparsePA>(spa);
  def_average<bk::SparsePA>(spa);
  def_learner_common<bk::SparsePA>(spa);

  py::class_<bk::BOGD> bogd(m, "BOGD", py::module_local(),
                            "Kernel OGD on the hinge loss; with a budget, BOGD / BOGD++ (Zhao et al., ICML 2012).");
  bogd.def(py::init([](bk::Index d, bk::Index c, int kernel, double gamma, int degree, double coef0, double eta,
                       double lambda, bk::Index budget, int sampling, double max_coef, bool averaged,
                       std::uint64_t seed) {
             bk::BOGDParams p;
             p.kernel = make_kernel(kernel, gamma, degree, coef0);
             p.eta = eta;
             p.lambda = lambda;
             p.budget = budget;
             if (sampling < 0 || sampling > 1) throw std::invalid_argument("unknown sampling id");
             p.sampling = static_cast<bk::BOGDSampling>(sampling);
             p.max_coef = max_coef;
             p.averaged = averaged;
             p.seed = seed;
             return bk::BOGD(d, c, p);
           }),
           py::arg("n_features"), py::arg("n_classes"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
           py::arg("coef0"), py::arg("eta"), py::arg("lam"), py::arg("budget"), py::arg("sampling"),
           py::arg("max_coef"), py::arg("averaged"), py::arg("seed"))
      .def("reseed", write_released(&bk::BOGD::reseed), py::arg("seed"));
  def_params<bk::BOGD>(bogd, [](const bk::BOGDParams& p, py::dict& d) {
    d["eta"] = p.eta;
    d["lam"] = p.lambda;
    d["budget"] = p.budget;
    d["sampling"] = static_cast<int>(p.sampling);
    d["max_coef"] = p.max_coef;  // inf: no bound
    d["averaged"] = p.averaged;
    d["seed"] = p.seed;
  });
  def_kernel_expansion<bk::BOGD>(bogd);
  def_average<bk::BOGD>(bogd);
  def_learner_common<bk::BOGD>(bogd);
}
