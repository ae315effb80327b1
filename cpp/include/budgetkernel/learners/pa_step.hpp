#pragma once
/// \file learners/pa_step.hpp
/// What the Passive-Aggressive classifier (passive_aggressive.hpp) and regressor
/// (pa_regressor.hpp) share: the PA step rule of Crammer et al., "Online Passive-Aggressive
/// Algorithms" (JMLR 2006), with the objective BPA compares its candidates by, and BPA-NN's
/// projection of an SV onto {x_t, its nearest neighbour} (Wang & Vucetic, AISTATS 2010).

#include "../budget/nearest_neighbor.hpp"
#include "kernel_expansion.hpp"

#include <algorithm>
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

/// BPA-NN projection of stored SV r onto S = {t, NN(r)} (section 3.1.3) for the example `ex`
/// last scored (inv_kappa = 1 / k_tt): returns res_r = k_rr - k_r^T K_S^{-1} k_r and the
/// coefficients b = K_S^{-1} k_r (bm on NN(r), bt on x_t). Solved by elimination against t
/// first: the residual of NN(r) against t is s_m = k_mm - k_mt^2 / k_tt; when it vanishes
/// (NN(r) in the span of x_t) or r has no other SV, S = {t} (BPA-S). O(1), one division.
/// `with_t` false (no new example, combine_from): S = {NN(r)} alone, i.e. the same
/// elimination with every k_.t = 0 (then bt = 0, s_m = k_mm, bm = k_rm / k_mm).
inline double bpa_nn_projection(const KernelExpansion& ex, const Kernel& kernel, const NearestNeighbors& nn, Index r,
                                double inv_kappa, double& bm, double& bt, bool with_t = true) {
  const SupportVectors& sv = ex.sv();
  const Vector& krow = ex.krow();
  const double krt = with_t ? krow(r) : 0.0;
  const double krr = kernel.self(sv.sqnorm()(r));
  bt = krt * inv_kappa;
  bm = 0.0;
  double res = krr - krt * bt;
  const Index m = nn.nn(r);
  if (m != NearestNeighbors::none) {
    const double kmm = kernel.self(sv.sqnorm()(m));
    const double kmt = with_t ? krow(m) : 0.0;
    const double kmt_k = kmt * inv_kappa;  // k_mt / k_tt
    const double sm = kmm - kmt * kmt_k;
    if (sm > 1e-12 * kmm) {
      const double c = nn.kernel_value(r) - krt * kmt_k;  // <residual of r, residual of m>
      bm = c / sm;
      bt -= bm * kmt_k;
      res -= c * bm;
    }
  }
  return (std::max)(0.0, res);
}

}  // namespace budgetkernel::detail
