// Binding of the Passive-Aggressive family (PA, PA-I/II, ramp loss, BPA-S/P/NN, PA+Rand).
#include "bindings.hpp"

void wrap_passive_aggressive(py::module_& m) {
  py::class_<bk::PassiveAggressive> pa(m, "PassiveAggressive", py::module_local(),
                                       "Kernel Passive-Aggressive; with a budget, Budgeted PA (BPA paper, Algorithm 1).");
  pa.def(py::init([](bk::Index d, bk::Index c, int kernel, double gamma, int degree, double coef0, double C,
                     int pa_type, int loss, bk::Index budget, int variant, std::uint64_t seed, bool averaged) {
           bk::PAParams p;
           p.kernel = make_kernel(kernel, gamma, degree, coef0);
           p.C = C;
           p.pa_type = pa_type;
           if (loss < 0 || loss > 1) throw std::invalid_argument("unknown loss id");
           p.loss = static_cast<bk::PALoss>(loss);
           p.budget = budget;
           if (variant < 0 || variant > 3) throw std::invalid_argument("unknown variant id");
           p.variant = static_cast<bk::BPAVariant>(variant);
           p.seed = seed;
           p.averaged = averaged;
           return bk::PassiveAggressive(d, c, p);
         }),
         py::arg("n_features"), py::arg("n_classes"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
         py::arg("coef0"), py::arg("C"), py::arg("pa_type"), py::arg("loss"), py::arg("budget"), py::arg("variant"),
         py::arg("seed"), py::arg("averaged") = false)
      .def(
          "active_run",
          [](bk::PassiveAggressive& self, const CArray& X, bk::Index start, LabelArray& pred) {
            auto Xm = as_matrix(X);
            if (pred.ndim() != 1 || pred.shape(0) != Xm.rows())
              throw std::invalid_argument("pred must be 1-D with one entry per row");
            if (start < 0 || start > Xm.rows()) throw std::invalid_argument("start out of range");
            // The whole chunk is checked once, by the call that starts it, so that a bad row
            // fails before any row is used. Checking it on every call (one per label asked
            // for) made a chunk cost O(n) per label: 80,000 rows and 21,775 labels took 5.5 s,
            // 180 times partial_fit's time. The rows a later call reaches are checked again
            // by active_run itself, so a caller cannot get past the check by starting later.
            if (start == 0) self.check_chunk(Xm, nullptr, true);
            std::int32_t* out = pred.mutable_data();
            bk::Index next = 0;
            run_guarded(self, true, [&](bk::StopPoll* stop) { next = self.active_run(Xm, start, out, stop); });
            return next;
          },
          py::arg("X"), py::arg("start"), py::arg("pred").noconvert(),
          "Predicts rows start.. that need no label (ramp loss outside the margin); returns the index of the "
          "first row whose label is needed (len(X) when none).");
  def_params<bk::PassiveAggressive>(pa, [](const bk::PAParams& p, py::dict& d) {
    d["C"] = p.C;
    d["pa_type"] = p.pa_type;
    d["loss"] = static_cast<int>(p.loss);
    d["budget"] = p.budget;
    d["variant"] = static_cast<int>(p.variant);
    d["seed"] = p.seed;
    d["averaged"] = p.averaged;
  });
  def_kernel_expansion<bk::PassiveAggressive>(pa);
  def_average<bk::PassiveAggressive>(pa);
  def_learner_common<bk::PassiveAggressive>(pa);
}
