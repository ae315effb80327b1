#pragma once
/// \file learners/pa_step.hpp
/// What the Passive-Aggressive classifier (passive_aggressive.hpp) and regressor
/// (pa_regressor.hpp) share: the PA step rule of Crammer et al., "Online Passive-Aggressive
/// Algorithms" (JMLR 2006), with the objective BPA compares its candidates by (Wang &
/// Vucetic, AISTATS 2010; the budget rules themselves are in bpa_rules.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace budgetkernel::detail {

/// The PA step of type pa_type (0 = PA, 1 = PA-I, 2 = PA-II) with aggressiveness C (SPA's
/// sampled step passes C / rho).
struct PAStep {
  std::int32_t pa_type;
  double C;

  /// Step size for loss L > 0 and effective squared norm q = ||u||^2 x k-quantity (eq. 3 / 9
  /// of Crammer et al.): PA tau = L/q, PA-I min(C, L/q), PA-II L/(q + 1/(2C)). With q = 0 the
  /// step cannot reduce the loss: tau = 0 (PA: infeasible, tau = +inf).
  double step_size(double L, double q) const {
    if (!(q > 0.0)) return pa_type == 0 ? std::numeric_limits<double>::infinity() : 0.0;
    switch (pa_type) {
      case 0: return L / q;
      case 1: return (std::min)(C, L / q);
      default: return L / (q + 0.5 / C);
    }
  }

  /// The slack part of Q after a step tau: xi = max(0, L - tau q); 0 (hard margin, where
  /// xi > 0 is infeasible: +inf), C xi (PA-I), C xi^2 (PA-II).
  double penalty(double L, double tau, double q) const {
    if (pa_type == 0) return (q > 0.0) ? 0.0 : std::numeric_limits<double>::infinity();
    const double xi = (std::max)(0.0, L - tau * q);
    return pa_type == 1 ? C * xi : C * xi * xi;
  }

  /// Q (BPA's eq. 7) of the candidate that removes nothing (r = t): a step tau' (returned in
  /// taup) along a projection of x_t with squared norm qp.
  double objective_t(double L, double qp, double& taup) const {
    taup = step_size(L, qp);
    if (!std::isfinite(taup)) return std::numeric_limits<double>::infinity();
    return 0.5 * taup * taup * qp + penalty(L, taup, qp);
  }
};

}  // namespace budgetkernel::detail
