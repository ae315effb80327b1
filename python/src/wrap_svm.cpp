// Binding of the exact incremental-decremental SVM (IDSVM) and the Twin Vector Machine.
#include "params.hpp"

#include <budgetkernel/learners/incremental_svc.hpp>
#include <budgetkernel/learners/twin_vector_machine.hpp>
#include <budgetkernel/svm/incremental_svm.hpp>

namespace {

/// The fields budgetkernel::Model reads (support vectors or twins, their coefficients, the
/// biases) as NumPy arrays.
py::dict expansion_dict(const bk::RowMatrix& X, const bk::RowMatrix& A, const bk::RowMatrix& bias) {
  py::dict d;
  d["support_vectors"] = to_numpy(X);
  d["coefficients"] = to_numpy(A);
  d["bias"] = to_numpy(bias);
  return d;
}

/// TVM: the twins with their coefficients, as its model file writes them.
py::dict tvm_expansion(const bk::TwinVectorMachine& self) {
  UseGuard use(&self, false);
  bk::FieldMap fm;
  self.save(fm);
  return expansion_dict(fm.get_matrix("sv.x", -1, self.n_features()), fm.get_matrix("sv.alpha", -1, self.n_outputs()),
                        fm.get_matrix("bias", 1, self.n_outputs()));
}

/// IncrementalSVC: its gathered support vectors (what save() writes, without writing every
/// machine's state).
py::dict svc_expansion(const bk::IncrementalSVC& self) {
  UseGuard use(&self, false);
  const auto s = self.support();
  const bk::Index n = s->sv.size();
  return expansion_dict(s->sv.X().topRows(n), s->sv.A().topRows(n), s->bias.transpose());
}

/// IncrementalSVC: the state of binary machine k, for tests and inspection.
py::dict svc_machine_state(const bk::IncrementalSVC& self, bk::Index k) {
  if (k < 0 || k >= self.n_outputs()) throw std::invalid_argument("machine index out of range");
  UseGuard use(&self, false);
  const bk::IncrementalSVM& s = self.machine(k);
  const bk::Index n = s.size();
  py::array_t<double> alpha(n), g(n), y(n), w(n);
  py::array_t<std::int64_t> keys(n);
  py::array_t<std::int8_t> sets(n);
  for (bk::Index i = 0; i < n; ++i) {
    alpha.mutable_at(i) = s.alpha(i);
    g.mutable_at(i) = s.g(i);
    y.mutable_at(i) = s.y(i);
    w.mutable_at(i) = s.weight(i);
    keys.mutable_at(i) = s.key(i);
    sets.mutable_at(i) = static_cast<std::int8_t>(s.set(i));
  }
  py::dict d;
  d["X"] = to_numpy(s.X().topRows(n));
  d["alpha"] = alpha;
  d["g"] = g;
  d["y"] = y;
  d["weight"] = w;
  d["key"] = keys;
  d["set"] = sets;
  d["bias"] = s.bias();
  d["C"] = s.C();
  d["ridge"] = s.ridge();
  d["dual_objective"] = s.dual_objective();
  d["kkt_violation"] = s.kkt_violation();
  return d;
}

void wrap_incremental_svc(py::module_& m) {
  ParamsClass<bk::IDSVMParams>(m, "IDSVMParams", "Parameters of IncrementalSVC (C++ IDSVMParams).")
      .field("C", &bk::IDSVMParams::C, "upper bound of alpha_i is C * weight_i")
      .field("ridge", &bk::IDSVMParams::ridge, "added to the diagonal of the kernel matrix; 0 = exact SVM");
  py::class_<bk::IncrementalSVC> svc(m, "IncrementalSVC", py::module_local(),
                                     "Exact incremental-decremental SVM (Cauwenberghs & Poggio), one-vs-rest.");
  // A fresh model (files load through from_bytes, unchecked): a C or ridge that makes even the
  // first example fail is named before learning (RBF; others when it fails).
  def_init_from_params<bk::IncrementalSVC, bk::IDSVMParams>(svc, [](bk::Index d, bk::Index c, const bk::IDSVMParams& p) {
    bk::IncrementalSVM::check_scale(p.kernel, p.C, p.ridge);
    return bk::IncrementalSVC(d, c, p);
  });
  svc.def(
          "partial_fit_weighted",
          [](bk::IncrementalSVC& self, const CArray& X, const LabelArray& y, const CArray& w) {
            auto Xm = as_matrix(X);
            if (y.ndim() != 1 || y.shape(0) != Xm.rows() || w.ndim() != 1 || w.shape(0) != Xm.rows())
              throw std::invalid_argument("y and sample_weight must be 1-D with one entry per row");
            run_guarded(self, true,
                        [&](bk::StopPoll* stop) { self.partial_fit_weighted(Xm, y.data(), w.data(), nullptr, stop); });
          },
          py::arg("X"), py::arg("y"), py::arg("sample_weight"))
      // Ctrl-C stops these between two bookkeeping steps and leaves the machines as before.
      .def(
          "unlearn",
          [](bk::IncrementalSVC& self, std::int64_t example) {
            run_guarded(self, true, [&](bk::StopPoll* stop) { self.unlearn(example, stop); });
          },
          py::arg("example"))
      .def(
          "set_C",
          [](bk::IncrementalSVC& self, double C) {
            bk::IncrementalSVM::check_scale(self.params().kernel, C, self.params().ridge);  // as at construction
            run_guarded(self, true, [&](bk::StopPoll* stop) { self.set_C(C, stop); });
          },
          py::arg("C"))
      .def(
          "set_weight",
          [](bk::IncrementalSVC& self, std::int64_t example, double weight) {
            run_guarded(self, true, [&](bk::StopPoll* stop) { self.set_weight(example, weight, stop); });
          },
          py::arg("example"), py::arg("weight"))
      .def_property_readonly("n_support", read_guarded(&bk::IncrementalSVC::n_support))
      .def("expansion", &svc_expansion)
      .def("machine_state", &svc_machine_state,
          py::arg("k"),
          "The state of binary machine k (stored examples, alpha, g, S/E/R sets, bias, C, ridge; "
          "g = y f(x) + ridge alpha - 1, the gradient of the dual on K + ridge I).");
  def_learner_common<bk::IncrementalSVC>(svc);
}

void wrap_twin_vector_machine(py::module_& m) {
  ParamsClass<bk::TVMParams>(m, "TVMParams", "Parameters of TwinVectorMachine (C++ TVMParams).")
      .field("budget", &bk::TVMParams::budget, "B >= 1 twin vectors per machine")
      .field("C", &bk::TVMParams::C)
      .field("m1", &bk::TVMParams::m1, "Beneficial threshold (Algorithm 2)")
      .field("m2", &bk::TVMParams::m2, "removal threshold of UpdateTV (Algorithm 3), > m1; inf = never remove")
      .enum_field("merge", &bk::TVMParams::merge, bk::tvm_merge_names)
      .field("one_sided", &bk::TVMParams::one_sided, "One-Sided merging (4.2.3); false = Global")
      .field("rejection_eta", &bk::TVMParams::rejection_eta, "Rejection (4.2.4); < 0 = off")
      .field("fixed_C_total", &bk::TVMParams::fixed_C_total, "4.3: C_t = C * B / max(B, sum_j s_j)")
      .field("random_baseline", &bk::TVMParams::random_baseline, "an IDSVM on a reservoir sample of size B")
      .field("seed", &bk::TVMParams::seed)
      .field("ridge", &bk::TVMParams::ridge);
  py::class_<bk::TwinVectorMachine> tvm(m, "TwinVectorMachine", py::module_local(),
                                        "Twin Vector Machine (Wang & Vucetic, SDM 2009) on the exact IDSVM.");
  def_init_from_params<bk::TwinVectorMachine, bk::TVMParams>(tvm, [](bk::Index d, bk::Index c, const bk::TVMParams& p) {
    bk::IncrementalSVM::check_scale(p.kernel, p.C, p.ridge);  // as IncrementalSVC's
    return bk::TwinVectorMachine(d, c, p);
  });
  tvm.def_property_readonly("n_twins", read_guarded(&bk::TwinVectorMachine::n_twins))
      .def_property_readonly("twin_points", read_guarded_array(&bk::TwinVectorMachine::twin_points))
      .def_property_readonly("twin_weights", read_guarded_array(&bk::TwinVectorMachine::twin_weights))
      .def("expansion", &tvm_expansion);
  def_learner_common<bk::TwinVectorMachine>(tvm);
}

}  // namespace

void wrap_svm(py::module_& m) {
  wrap_incremental_svc(m);
  wrap_twin_vector_machine(m);
}
