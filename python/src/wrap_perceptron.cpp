// Binding of the kernel perceptron and its budgeted versions (Stoptron, random removal,
// Forgetron, max-margin removal, Projectron, Projectron++).
#include "params.hpp"

#include <budgetkernel/learners/perceptron.hpp>

void wrap_perceptron(py::module_& m) {
  ParamsClass<bk::PerceptronParams>(m, "PerceptronParams", "Parameters of KernelPerceptron (C++ PerceptronParams).")
      .field("budget", &bk::PerceptronParams::budget, "B; 0 = unbudgeted")
      .enum_field("maintenance", &bk::PerceptronParams::maintenance, bk::perceptron_budget_names)
      .field("eta", &bk::PerceptronParams::eta, "Projectron(++): project when ||delta_t|| <= eta")
      .field("beta", &bk::PerceptronParams::beta, "max-margin: update when the margin is <= beta")
      .field("seed", &bk::PerceptronParams::seed);
  py::class_<bk::KernelPerceptron> kp(m, "KernelPerceptron", py::module_local(),
                                      "Kernel perceptron, unbudgeted or with a budget-maintenance rule.");
  def_init_from_params<bk::KernelPerceptron, bk::PerceptronParams>(kp);
  def_kernel_expansion<bk::KernelPerceptron>(kp);
  def_learner_common<bk::KernelPerceptron>(kp);
}
