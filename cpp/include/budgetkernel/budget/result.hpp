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
  /// exact without recomputing it.
  double norm_change = 0.0;
};

}  // namespace budgetkernel
