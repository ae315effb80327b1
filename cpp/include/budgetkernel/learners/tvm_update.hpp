#pragma once
/// \file learners/tvm_update.hpp
/// Part of learners/twin_vector_machine.hpp (included at its end; include that header, not
/// this one): UpdateTV (Algorithm 3 of the TVM paper) and UpdateTVM for one twin entering a
/// machine.

#include <cmath>

namespace budgetkernel {

inline bool TwinVectorMachine::update_machine(Index k, const double* x, double sp, double sm, double fx,
                                              double* distortion) {
  IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
  detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
  const Index n = tw.size();
  Index new1 = -1, new2 = -1;
  // keys of the removed twins' sides (unlearned in UpdateTVM below)
  std::int64_t drop[4];
  int n_drop = 0;
  auto take_keys = [&](Index j) {
    if (tw.key_plus(j) != detail::TwinSet::no_key) drop[n_drop++] = tw.key_plus(j);
    if (tw.key_minus(j) != detail::TwinSet::no_key) drop[n_drop++] = tw.key_minus(j);
  };
  if (n < m_p.budget) {
    tw.set_twin(n, x, sp, sm);
    new1 = n;
  } else {
    Index far = 0;
    for (Index j = 1; j < n; ++j)
      if (std::fabs(tw.fval(j)) > std::fabs(tw.fval(far))) far = j;
    if (std::fabs(tw.fval(far)) > m_p.m2) {  // a twin well beyond the margin: replace it
      take_keys(far);
      tw.set_twin(far, x, sp, sm);
      new1 = far;
    } else {
      // the best pair among the B + 1 twins, TV_{B+1} = (x, sp, sm) with TVM(x) included
      detail::TwinMerge mg;
      const double eta = m_p.rejection_eta;
      auto tvm_at = [&svm](const double* z) { return svm.decision(z); };
      tw.set_overflow(x, sp, sm, fx);
      if (!tw.choose_merge(eta, merge_tries, tvm_at, mg, m_z.data())) return false;
      if (distortion) *distortion = mg.distortion;
      // (the overflow twin's weights are readable in its slot mg.j until the set_twin below)
      const double msp = tw.s_plus(mg.i) + tw.s_plus(mg.j), msm = tw.s_minus(mg.i) + tw.s_minus(mg.j);
      take_keys(mg.i);
      if (!mg.overflow) take_keys(mg.j);
      tw.set_twin(mg.i, m_z.data(), msp, msm);
      new1 = mg.i;
      if (!mg.overflow) {  // TV_i = merged, TV_j = TV_{B+1}
        tw.set_twin(mg.j, x, sp, sm);
        new2 = mg.j;
      }  // else (TV_p, TV_{B+1}) merged into TV_p: no slot freed, none filled
    }
    ++m_count.maintenance;
  }
  // UpdateTVM: decremental unlearning of the removed sides, control of C (4.3: C_t sum_j s_j =
  // C B once the twins' weight exceeds B, before learning the new twins), incremental learning.
  for (int r = 0; r < n_drop; ++r) svm.unlearn(drop[r]);
  if (m_p.fixed_C_total) {
    const double Ct = target_C(tw);
    if (Ct != svm.C()) svm.set_C(Ct);
  }
  learn_twin(svm, tw, new1);
  if (new2 >= 0) learn_twin(svm, tw, new2);
  refresh(svm, tw);
  return true;
}

}  // namespace budgetkernel
