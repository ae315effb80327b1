// Binding of kernel Pegasos / Budgeted SGD and linear Pegasos.
#include "params.hpp"

#include <budgetkernel/learners/pegasos.hpp>
#include <budgetkernel/learners/linear_pegasos.hpp>

void wrap_pegasos(py::module_& m) {
  ParamsClass<bk::BSGDParams>(m, "BSGDParams", "Parameters of KernelPegasos (C++ BSGDParams).")
      .field("lam", &bk::BSGDParams::lam, "regularisation lambda of eq. (1), > 0")
      .field("budget", &bk::BSGDParams::budget, "B; 0 = no budget (kernel Pegasos)")
      .enum_field("maintenance", &bk::BSGDParams::maintenance, bk::maintenance_names)
      .enum_field("loss", &bk::BSGDParams::loss, bk::pegasos_loss_names)
      .field("seed", &bk::BSGDParams::seed)
      .field("average_start", &bk::BSGDParams::average_start, "0 = last iterate; t0 >= 1 = average from t0 on")
      .field("average_decay", &bk::BSGDParams::average_decay, "eta of polynomial-decay averaging; 0 = plain mean");
  py::class_<bk::KernelPegasos> kp(m, "KernelPegasos", py::module_local(),
                                   "Kernel Pegasos; with a budget, Budgeted SGD (BSGD paper, Algorithm 1).");
  def_init_from_params<bk::KernelPegasos, bk::BSGDParams>(kp);
  kp.def_property_readonly("averaged_iterates", read_guarded(&bk::KernelPegasos::averaged_iterates))
      .def_property_readonly("predictor_coefficients", read_guarded_array(&bk::KernelPegasos::predictor_coefficients))
      .def_property_readonly("scale", read_guarded(&bk::KernelPegasos::scale))
      .def_property_readonly("norm2", read_guarded(&bk::KernelPegasos::norm2));
  def_kernel_expansion<bk::KernelPegasos>(kp);
  def_learner_common<bk::KernelPegasos>(kp);

  py::class_<bk::LinearPegasos> lp(m, "LinearPegasos", py::module_local(), "Linear Pegasos with mini-batches and the ball projection.");
  lp.def(py::init<bk::Index, bk::Index, double, bk::Index>(), py::arg("n_features"), py::arg("n_classes"),
         py::arg("lam"), py::arg("batch_size"))
      .def_property_readonly("weights",
                             [](const bk::LinearPegasos& s) {
                               UseGuard use(&s, false);
                               const Eigen::MatrixXd w = s.weights();
                               return to_numpy(bk::RowMatrix(w));
                             })
      .def_property_readonly("iterations", read_guarded(&bk::LinearPegasos::iterations))
      .def_property_readonly("lam", read_guarded(&bk::LinearPegasos::lam))
      .def_property_readonly("batch_size", read_guarded(&bk::LinearPegasos::batch_size))
      .def_property_readonly("pending", read_guarded(&bk::LinearPegasos::pending),
                             "Examples scored since the last step (the pending partial mini-batch).")
      .def("flush", write_released(&bk::LinearPegasos::flush),
           "One step on the pending partial mini-batch (fit calls it at the end of each pass).");
  def_learner_common<bk::LinearPegasos>(lp);
}
