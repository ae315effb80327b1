// Binding of kernel Pegasos / Budgeted SGD and linear Pegasos.
#include "bindings.hpp"

namespace {

bk::BSGDParams make_params(int kernel, double gamma, int degree, double coef0, double lam, bk::Index budget,
                           int maintenance, std::uint64_t seed) {
  bk::BSGDParams p;
  if (kernel < 0 || kernel > 2) throw std::invalid_argument("unknown kernel id");
  p.kernel = bk::Kernel(static_cast<bk::KernelType>(kernel), gamma, degree, coef0);
  p.lam = lam;
  p.budget = budget;
  if (maintenance < 0 || maintenance > 5) throw std::invalid_argument("unknown maintenance id");
  p.maintenance = static_cast<bk::Maintenance>(maintenance);
  p.seed = seed;
  return p;
}

py::array_t<double> to_numpy(const bk::RowMatrix& m) {
  py::array_t<double> out({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  std::copy(m.data(), m.data() + m.size(), out.mutable_data());
  return out;
}

}  // namespace

void wrap_pegasos(py::module_& m) {
  py::class_<bk::KernelPegasos> kp(m, "KernelPegasos", py::module_local(),
                                   "Kernel Pegasos; with a budget, Budgeted SGD (BSGD paper, Algorithm 1).");
  kp.def(py::init([](bk::Index d, bk::Index c, int kernel, double gamma, int degree, double coef0, double lam,
                     bk::Index budget, int maintenance, std::uint64_t seed) {
           return bk::KernelPegasos(d, c, make_params(kernel, gamma, degree, coef0, lam, budget, maintenance, seed));
         }),
         py::arg("n_features"), py::arg("n_classes"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
         py::arg("coef0"), py::arg("lam"), py::arg("budget"), py::arg("maintenance"), py::arg("seed"))
      .def_property_readonly("n_support", [](const bk::KernelPegasos& s) { return s.support_vectors().size(); })
      .def_property_readonly("support_vectors",
                             [](const bk::KernelPegasos& s) {
                               const auto& sv = s.support_vectors();
                               return to_numpy(sv.X().topRows(sv.size()));
                             })
      .def_property_readonly("coefficients", [](const bk::KernelPegasos& s) { return to_numpy(s.coefficients()); })
      .def_property_readonly("support_ids",
                             [](const bk::KernelPegasos& s) {
                               const auto& sv = s.support_vectors();
                               return std::vector<std::int64_t>(sv.ids().begin(), sv.ids().begin() + sv.size());
                             })
      .def_property_readonly("scale", &bk::KernelPegasos::scale)
      .def_property_readonly("norm2", &bk::KernelPegasos::norm2);
  def_learner_common<bk::KernelPegasos>(kp);

  py::class_<bk::LinearPegasos> lp(m, "LinearPegasos", py::module_local(), "Linear Pegasos with mini-batches and the ball projection.");
  lp.def(py::init<bk::Index, bk::Index, double, bk::Index>(), py::arg("n_features"), py::arg("n_classes"),
         py::arg("lam"), py::arg("batch_size"))
      .def_property_readonly("weights",
                             [](const bk::LinearPegasos& s) {
                               const Eigen::MatrixXd w = s.weights();
                               return to_numpy(bk::RowMatrix(w));
                             })
      .def_property_readonly("iterations", &bk::LinearPegasos::iterations);
  def_learner_common<bk::LinearPegasos>(lp);
}
