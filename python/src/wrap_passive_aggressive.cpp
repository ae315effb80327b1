// Binding of the Passive-Aggressive family (PA, PA-I/II, ramp loss, BPA-S/P/NN, PA+Rand).
#include "params.hpp"

#include <budgetkernel/learners/passive_aggressive.hpp>

void wrap_passive_aggressive(py::module_& m) {
  ParamsClass<bk::PAParams>(m, "PAParams", "Parameters of PassiveAggressive (C++ PAParams).")
      .field("C", &bk::PAParams::C, "aggressiveness, > 0 (ignored by pa_type 0)")
      .field("pa_type", &bk::PAParams::pa_type, "0 = PA, 1 = PA-I, 2 = PA-II")
      .enum_field("loss", &bk::PAParams::loss, bk::pa_loss_names)
      .field("budget", &bk::PAParams::budget, "B; 0 = unbudgeted PA")
      .enum_field("variant", &bk::PAParams::variant, bk::bpa_variant_names)
      .field("seed", &bk::PAParams::seed)
      .field("averaged", &bk::PAParams::averaged, "predict with the mean of every classifier held");
  py::class_<bk::PassiveAggressive> pa(m, "PassiveAggressive", py::module_local(),
                                       "Kernel Passive-Aggressive; with a budget, Budgeted PA (BPA paper, Algorithm 1).");
  def_init_from_params<bk::PassiveAggressive, bk::PAParams>(pa);
  pa.def(
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
  def_kernel_expansion<bk::PassiveAggressive>(pa);
  def_average<bk::PassiveAggressive>(pa);
  def_learner_common<bk::PassiveAggressive>(pa);
}
