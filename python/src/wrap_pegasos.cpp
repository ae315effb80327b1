// Binding of kernel Pegasos / Budgeted SGD and linear Pegasos.
#include "bindings.hpp"

namespace {

bk::BSGDParams make_params(int kernel, double gamma, int degree, double coef0, double lam, bk::Index budget,
                           int maintenance, std::uint64_t seed, std::int64_t average_start, double average_decay) {
  bk::BSGDParams p;
  p.kernel = make_kernel(kernel, gamma, degree, coef0);
  p.lam = lam;
  p.budget = budget;
  if (maintenance < 0 || maintenance > 5) throw std::invalid_argument("unknown maintenance id");
  p.maintenance = static_cast<bk::Maintenance>(maintenance);
  p.seed = seed;
  p.average_start = average_start;
  p.average_decay = average_decay;
  return p;
}

}  // namespace

void wrap_pegasos(py::module_& m) {
  py::class_<bk::KernelPegasos> kp(m, "KernelPegasos", py::module_local(),
                                   "Kernel Pegasos; with a budget, Budgeted SGD (BSGD paper, Algorithm 1).");
  kp.def(py::init([](bk::Index d, bk::Index c, int kernel, double gamma, int degree, double coef0, double lam,
                     bk::Index budget, int maintenance, std::uint64_t seed, std::int64_t average_start,
                     double average_decay) {
           return bk::KernelPegasos(d, c,
                                    make_params(kernel, gamma, degree, coef0, lam, budget, maintenance, seed,
                                                average_start, average_decay));
         }),
         py::arg("n_features"), py::arg("n_classes"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
         py::arg("coef0"), py::arg("lam"), py::arg("budget"), py::arg("maintenance"), py::arg("seed"),
         py::arg("average_start") = 0, py::arg("average_decay") = 10.0)
      .def_property_readonly("averaged_iterates", read_guarded(&bk::KernelPegasos::averaged_iterates))
      .def_property_readonly("predictor_coefficients", read_guarded_array(&bk::KernelPegasos::predictor_coefficients))
      .def_property_readonly("scale", read_guarded(&bk::KernelPegasos::scale))
      .def_property_readonly("norm2", read_guarded(&bk::KernelPegasos::norm2));
  def_params<bk::KernelPegasos>(kp, [](const bk::BSGDParams& p, py::dict& d) {
    d["lam"] = p.lam;
    d["budget"] = p.budget;
    d["maintenance"] = static_cast<int>(p.maintenance);
    d["seed"] = p.seed;
    d["average_start"] = p.average_start;
    d["average_decay"] = p.average_decay;
  });
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
