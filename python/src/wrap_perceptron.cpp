// Binding of the kernel perceptron and its budgeted versions (Stoptron, random removal,
// Forgetron, max-margin removal, Projectron, Projectron++).
#include "bindings.hpp"

void wrap_perceptron(py::module_& m) {
  py::class_<bk::KernelPerceptron> kp(m, "KernelPerceptron", py::module_local(),
                                      "Kernel perceptron, unbudgeted or with a budget-maintenance rule.");
  kp.def(py::init([](bk::Index d, bk::Index c, int kernel, double gamma, int degree, double coef0, bk::Index budget,
                     int maintenance, double eta, double beta, std::uint64_t seed) {
           bk::PerceptronParams p;
           p.kernel = make_kernel(kernel, gamma, degree, coef0);
           p.budget = budget;
           if (maintenance < 0 || maintenance > 5) throw std::invalid_argument("unknown maintenance id");
           p.maintenance = static_cast<bk::PerceptronBudget>(maintenance);
           p.eta = eta;
           p.beta = beta;
           p.seed = seed;
           return bk::KernelPerceptron(d, c, p);
         }),
         py::arg("n_features"), py::arg("n_classes"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
         py::arg("coef0"), py::arg("budget"), py::arg("maintenance"), py::arg("eta"), py::arg("beta"),
         py::arg("seed"));
  def_params<bk::KernelPerceptron>(kp, [](const bk::PerceptronParams& p, py::dict& d) {
    d["budget"] = p.budget;
    d["maintenance"] = static_cast<int>(p.maintenance);
    d["eta"] = p.eta;
    d["beta"] = p.beta;
    d["seed"] = p.seed;
  });
  def_kernel_expansion<bk::KernelPerceptron>(kp);
  def_learner_common<bk::KernelPerceptron>(kp);
}
