#pragma once
/// \file budget/result.hpp
/// What one budget-maintenance step reports.

#include "../common.hpp"

namespace budgetkernel {

/// Outcome of one budget-maintenance step, in the units of the stored (unscaled)
/// coefficients: a learner that keeps w = s * sum_i alpha_i phi(x_i) multiplies both by s^2.
struct MaintenanceResult {
  /// ||w_before - w_after||^2 summed over classes (eq. 14 of the BSGD paper).
  double degradation = 0.0;
  /// ||w_after||^2 - ||w_before||^2 summed over classes, so a learner can keep ||w||^2
  /// exact without recomputing it. NaN when !norm_exact.
  double norm_change = 0.0;
  /// False when the step skipped norm_change (a merge while the learner only bounds ||w||,
  /// see Merging::track_norm): then ||w_after|| <= ||w_before|| + sqrt(degradation) is all
  /// the learner may use.
  bool norm_exact = true;
};

}  // namespace budgetkernel
