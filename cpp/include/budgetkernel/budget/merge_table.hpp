#pragma once
/// \file budget/merge_table.hpp
/// The precomputed degradation table that ranks merge partners of binary stores without a
/// 1-D solve per candidate (after Glasmachers & Qaadan 2018; see docs/derivations.md,
/// "The merge lookup table"). The exact solve for the chosen pair is in merge_solver.hpp.

#include "merge_solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace budgetkernel {
namespace detail {

/// Binary lookup table (after Glasmachers & Qaadan 2018). With r = alpha_m/alpha_n in [-1, 1]
/// (m has the smallest |alpha|) the merge depends on (r, k) only. Tabulated once, with
/// h(r, k) = argmax_h r k^{(1-h)^2} + k^{h^2} (not kept: the solve no longer needs a start):
///   E(r, k) = D(r, k) / r^2,  D(r, k) = 1 + r^2 + 2 r k - (r k^{(1-h)^2} + k^{h^2})^2,
/// i.e. the degradation per unit alpha_m^2 (alpha_n^2 D = alpha_m^2 E). Ranking partners by E
/// is ranking them by alpha_j^2 D(alpha_m/alpha_j, k_mj), but E is smooth in r with
/// E(0, k) = 1 - k^2 (1 - 2 ln k), whereas interpolating D ~ r^2 E loses all relative accuracy
/// for |r| below the grid step (a partner with a much larger coefficient). 0 <= E <= 1 - k^2.
///
/// Grid: 257 x 257, uniform in r and in u = sqrt(1 - k) (0.5 MB, built once); u ~
/// sqrt(-ln k) is the natural scale near k = 1 (h ~ 1/sqrt(-2 ln k) as r -> -1), where a grid
/// uniform in k erred most and missed near-duplicate partners. The interpolation error is
/// largest at the fold k ~ e^-2, r ~ 1, where g turns bimodal; as a ranking the table rarely
/// picks a partner other than the exact best, and then one whose degradation is higher by a
/// tiny multiple of alpha_m^2 (the figures: docs/derivations.md, "The merge lookup table").
class MergeTable {
 public:
  static constexpr Index kR = 257, kK = 257;

  /// Bins (uniform in k) of the lower bound used to prune the partner search.
  static constexpr Index kLB = 1024;
  /// Steps (uniform in v on [0, 1]) of the tabulated prune_below.
  static constexpr Index kPQ = 4096;

  MergeTable()
      : m_e(static_cast<std::size_t>(kR * kK)),
        m_lb(static_cast<std::size_t>(kLB)),
        m_pq(static_cast<std::size_t>(kPQ + 1)) {
    for (Index i = 0; i < kR; ++i)
      for (Index j = 0; j < kK; ++j) {
        const double r = -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(kR - 1);
        const double u = static_cast<double>(j) / static_cast<double>(kK - 1);
        const double k = 1.0 - u * u;
        const std::size_t at = static_cast<std::size_t>(i * kK + j);
        m_e[at] = exact(r, k);
      }
    // per_unit(r, k) is a convex combination of the grid values of the two u-columns around
    // sqrt(1 - k); so min over those columns (all r) bounds it from below. Bin b covers
    // k in [b, b+1] / kLB; its columns are widened by one on each side against rounding.
    std::vector<double> colmin(static_cast<std::size_t>(kK), std::numeric_limits<double>::infinity());
    for (Index i = 0; i < kR; ++i)
      for (Index j = 0; j < kK; ++j) {
        double& c = colmin[static_cast<std::size_t>(j)];
        c = (std::min)(c, m_e[static_cast<std::size_t>(i * kK + j)]);
      }
    const double scale = static_cast<double>(kK - 1);
    for (Index b = 0; b < kLB; ++b) {
      const double k_lo = static_cast<double>(b) / static_cast<double>(kLB), k_hi = static_cast<double>(b + 1) / static_cast<double>(kLB);
      const Index ja = std::max<Index>(0, static_cast<Index>(std::sqrt(1.0 - k_hi) * scale) - 1);
      const Index jb = std::min<Index>(kK - 1, static_cast<Index>(std::sqrt(1.0 - k_lo) * scale) + 2);
      double lb = std::numeric_limits<double>::infinity();
      for (Index j = ja; j <= jb; ++j) lb = (std::min)(lb, colmin[static_cast<std::size_t>(j)]);
      // Running minimum: still a lower bound, and non-increasing in k, so that "bound above
      // a value" becomes "k below a threshold" (prune_below).
      m_lb[static_cast<std::size_t>(b)] = b == 0 ? lb : (std::min)(lb, m_lb[static_cast<std::size_t>(b - 1)]);
    }
    for (Index q = 0; q <= kPQ; ++q)
      m_pq[static_cast<std::size_t>(q)] = prune_below(static_cast<double>(q) / static_cast<double>(kPQ));
  }

  /// Exact E(r, k) (and h into *h_out), |r| <= 1, 0 <= k <= 1.
  static double exact(double r, double k, double* h_out = nullptr) {
    const double s = merge_s_from_k(k);
    const double h = merge_argmax(r, 1.0, s);
    if (h_out) *h_out = h;
    if (r == 0.0) return k == 0.0 ? 1.0 : 1.0 - k * k * (1.0 + 2.0 * s);
    const MergeTerms t = merge_terms(s, h);
    return (std::max)(0.0, t.u2 / (r * r) + t.u1 + 2.0 * t.c12 / r);
  }

  /// Bilinear interpolation of E(r, k) in (r, sqrt(1 - k)) (arguments clamped to the grid).
  double per_unit(double r, double k) const { return interpolate(m_e, r, k); }

  /// A lower bound of per_unit(r, k) over every r, up to rounding (per_unit(r, k) >=
  /// lower_bound(k) - lb_slack; tested), non-increasing in k. O(1), no sqrt.
  double lower_bound(double k) const {
    const double t = k * static_cast<double>(kLB);
    const Index b = t >= 1.0 ? std::min<Index>(static_cast<Index>(t), kLB - 1) : 0;  // NaN -> 0
    return m_lb[static_cast<std::size_t>(b)];
  }
  /// Rounding slack of lower_bound (the interpolation may land a few ulps below its nodes).
  static constexpr double lb_slack = 1e-14;
  /// The threshold t with: k < t  <=>  lower_bound(k) > v + lb_slack, for 0 <= k <= 1
  /// (+inf when every k qualifies). O(log kLB).
  double prune_below(double v) const {
    const double lim = v + lb_slack;
    const auto it = std::partition_point(m_lb.begin(), m_lb.end(), [lim](double lb) { return lb > lim; });
    if (it == m_lb.end()) return std::numeric_limits<double>::infinity();
    return static_cast<double>(it - m_lb.begin()) / static_cast<double>(kLB);
  }
  /// A threshold t' <= prune_below(v) (so k < t' still implies lower_bound(k) > v + lb_slack):
  /// prune_below at v rounded up to the grid of kPQ steps, by one look-up.
  double prune_below_fast(double v) const {
    if (!(v >= 0.0 && v < 1.0)) return prune_below(v);
    return m_pq[static_cast<std::size_t>(std::ceil(v * static_cast<double>(kPQ)))];
  }

 private:
  static double interpolate(const std::vector<double>& t, double r, double k) {
    // merge_partner lets NaN kernel values through and its callers handle a NaN result; a NaN
    // must not reach the casts to an index below (undefined behaviour; INT64_MIN on x86-64).
    if (std::isnan(r) || std::isnan(k)) return std::numeric_limits<double>::quiet_NaN();
    const double fr = (std::min)((std::max)((r + 1.0) * 0.5, 0.0), 1.0) * static_cast<double>(kR - 1);
    const double fk = std::sqrt((std::min)((std::max)(1.0 - k, 0.0), 1.0)) * static_cast<double>(kK - 1);
    const Index i = std::min<Index>(static_cast<Index>(fr), kR - 2), j = std::min<Index>(static_cast<Index>(fk), kK - 2);
    const double wr = fr - static_cast<double>(i), wk = fk - static_cast<double>(j);
    const double* p = t.data() + i * kK + j;
    return (1.0 - wr) * ((1.0 - wk) * p[0] + wk * p[1]) + wr * ((1.0 - wk) * p[kK] + wk * p[kK + 1]);
  }

  std::vector<double> m_e, m_lb, m_pq;
};

/// The process-wide table, built on first use (thread-safe static initialisation).
inline const MergeTable& merge_table() {
  static const MergeTable table;
  return table;
}

}  // namespace detail
}  // namespace budgetkernel
