#pragma once
/// \file budget/twin_set.hpp
/// The twin set of a Twin Vector Machine (Wang & Vucetic, "Twin Vector Machines for Online
/// Learning on a Budget", SDM 2009; the TVM paper): budget maintenance by merging weighted
/// prototypes, with the paper's partner bookkeeping (4.2.1), input- or feature-space merging
/// (4.2.1, 4.2.2), One-Sided merging (4.2.3) and the Rejection test (4.2.4). Section numbers
/// refer to that paper. The learner that uses it is learners/twin_vector_machine.hpp.
///
/// A twin vector TV_j = {(q_j, +1, s_j+), (q_j, -1, s_j-)} is a prototype q_j with the
/// numbers s_j+ / s_j- of positive / negative examples it summarises (section 3.1).

#include "../common.hpp"
#include "../detail/enum_names.hpp"
#include "../kernel.hpp"
#include "merge_solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace budgetkernel {

/// Where two twins are merged: input space (4.2.1, the paper's default) or feature space (4.2.2).
enum class TVMMerge : std::int32_t { Input = 0, Feature = 1 };
/// Their names (TwinVectorMachine's `merge`; files store the number).
inline constexpr detail::EnumName<TVMMerge> tvm_merge_names[] = {{TVMMerge::Input, "input"},
                                                                 {TVMMerge::Feature, "feature"}};
inline const char* tvm_merge_name(TVMMerge m) { return detail::enum_name(tvm_merge_names, m); }

namespace detail {

/// Rejection test of 4.2.4: accept iff TVM(q_new) lies strictly inside the band
/// ((1 - eta) T^, (1 + eta) T^) (ends swapped for T^ < 0; empty for T^ = 0), where
/// T^ = (s_i TVM(q_i) + s_j TVM(q_j)) / (s_i + s_j). eta < 0: always accept (Rejection off).
inline bool tvm_accept_merge(double tvm_new, double t_hat, double eta) {
  if (eta < 0.0) return true;
  double lo = (1.0 - eta) * t_hat, hi = (1.0 + eta) * t_hat;
  if (lo > hi) std::swap(lo, hi);
  return lo < tvm_new && tvm_new < hi;
}

/// T^ of 4.2.4, the value of TVM at the merged point under the linear assumption.
inline double tvm_linear_estimate(double si, double fi, double sj, double fj) { return (si * fi + sj * fj) / (si + sj); }

/// 1 - exp(-s t^2) without cancellation; 0 for t == 0 or s == 0 (also when s = inf).
inline double tvm_one_minus_kpow(double s, double t) { return (t == 0.0 || s == 0.0) ? 0.0 : -std::expm1(-s * t * t); }

/// A chosen merge: twins i < j, the pre-image parameter h (q_new = h q_i + (1 - h) q_j) and
/// the pair's distortion. overflow: j is the overflow twin TV_{B+1} (j == TwinSet::size(), its
/// scratch slot), not a stored twin.
struct TwinMerge {
  Index i = -1, j = -1;
  double h = 0.0;
  double distortion = std::numeric_limits<double>::infinity();
  bool overflow = false;
};

/// The twin set of one machine with the paper's merging bookkeeping (4.2.1): for every twin
/// its best merge partner and their distortion, kept up to date after each change.
///
/// Pair rule: cost(i, j) = the pair's distortion, +inf when the pair may not merge (One-Sided:
/// different signs of TVM(q), sign of 0 counted as positive). Input space: d*_ij =
/// s_i s_j |q_i - q_j|^2 / (s_i + s_j) (4.2.1). Feature space: the pre-image z = h q_i +
/// (1 - h) q_j on the segment minimising (4.2) (Kwok & Tsang; for RBF the 1-D problem
/// max_h s_i k^{(1-h)^2} + s_j k^{h^2}, k = k(q_i, q_j), solved exactly by merge_h_s of the BSGD
/// merging; polynomial: minimised over h in [0, 1] by a 33-point grid and golden section;
/// linear: the exact pre-image h = s_i / (s_i + s_j)) and the distortion d = s_i |phi(q_i) -
/// phi(z)|^2 + s_j |phi(q_j) - phi(z)|^2 of that z. The feature-space bookkeeping is the same
/// exact scheme as the input-space one with this cost (one 1-D solve per pair evaluated), so
/// both equal a brute-force scan of their rule. Every cost is evaluated by one function with
/// the pair in canonical order (lower slot first), so it is bitwise symmetric.
///
/// partner(i) = argmin_j (cost(i, j), j) (ties to the lowest slot; -1 when no pair is allowed).
/// After a change (set_twin, or a sign change in One-Sided mode) the changed twins are
/// "dirty"; update_partners() gives each dirty twin a full O(n) row, offers it to every
/// other twin (one comparison each), and rescans only the twins whose remembered partner was
/// dirty: O(n d) expected per change (4.2.1).
///
/// The overflow twin TV_{B+1} of Algorithm 3 (set_overflow) lives in a scratch slot at index
/// size() (the storage has budget + 1 rows). It is never a member of the bookkeeping: no twin
/// remembers it as a partner and nothing marks it dirty; its own best partner among the
/// size() twins, under the same pair rule, is found by one O(n d) scan and offered to
/// choose_merge as one more candidate. It is consumed by choose_merge and invalidated by any
/// set_twin.
class TwinSet {
 public:
  static constexpr std::int64_t no_key = -1;

  void reset(Index dim, Index budget, const Kernel& kernel, TVMMerge merge, bool one_sided) {
    m_d = dim;
    m_budget = budget;
    m_kernel = kernel;
    m_merge = merge;
    m_one_sided = one_sided;
    m_n = 0;
    // budget + 1 rows: slot size() <= budget is the overflow twin's scratch slot
    detail::zero_fresh(m_q, budget + 1, dim);
    detail::zero_fresh(m_sp, budget + 1);
    detail::zero_fresh(m_sm, budget + 1);
    detail::zero_fresh(m_f, budget + 1);
    m_dist.setConstant(budget, std::numeric_limits<double>::infinity());
    m_kp.assign(static_cast<std::size_t>(budget), no_key);
    m_km.assign(static_cast<std::size_t>(budget), no_key);
    m_group.assign(static_cast<std::size_t>(budget + 1), 0);
    m_partner.assign(static_cast<std::size_t>(budget), -1);
    m_dirty.assign(static_cast<std::size_t>(budget), 0);
    m_rescan.assign(static_cast<std::size_t>(budget), 0);
    m_dirty_list.clear();
    m_dirty_list.reserve(static_cast<std::size_t>(budget));
    m_cand.clear();
    m_cand.reserve(static_cast<std::size_t>(budget + 1));
    clear_overflow();
  }

  Index size() const { return m_n; }
  Index budget() const { return m_budget; }
  Index dim() const { return m_d; }
  const Kernel& kernel() const { return m_kernel; }
  TVMMerge merge_space() const { return m_merge; }
  bool one_sided() const { return m_one_sided; }
  /// Prototypes, one row per slot (the first size() rows are the twins; row size() is the
  /// overflow twin's scratch slot).
  const RowMatrix& points() const { return m_q; }
  double s_plus(Index j) const { return m_sp(j); }
  double s_minus(Index j) const { return m_sm(j); }
  double weight(Index j) const { return m_sp(j) + m_sm(j); }
  /// Keys of the twin's two weighted examples in the machine (no_key for a side of weight 0).
  std::int64_t key_plus(Index j) const { return m_kp[static_cast<std::size_t>(j)]; }
  std::int64_t key_minus(Index j) const { return m_km[static_cast<std::size_t>(j)]; }
  void set_keys(Index j, std::int64_t kp, std::int64_t km) {
    m_kp[static_cast<std::size_t>(j)] = kp;
    m_km[static_cast<std::size_t>(j)] = km;
  }
  /// TVM(q_j) as last refreshed by set_fval (j = size(): the overflow twin's TVM(x)).
  double fval(Index j) const { return m_f(j); }
  /// One-Sided region: 0 for TVM(q_j) >= 0, 1 below (always 0 for Global merging).
  int group(Index j) const { return m_group[static_cast<std::size_t>(j)]; }
  Index partner(Index j) const { return m_partner[static_cast<std::size_t>(j)]; }
  double partner_distortion(Index j) const { return m_dist(j); }
  /// sum_j (s_j+ + s_j-) (4.3); exact, the weights being counts.
  double total_weight() const { return m_sp.head(m_n).sum() + m_sm.head(m_n).sum(); }

  /// Puts twin (q, s+, s-) into slot j (j == size() appends); keys reset to none. The twin
  /// becomes dirty (provisionally in the positive region until set_fval).
  void set_twin(Index j, const double* q, double sp, double sm) {
    clear_overflow();  // its partner scan refers to the old set
    if (j == m_n) ++m_n;
    m_q.row(j) = Eigen::Map<const Eigen::Matrix<double, 1, Eigen::Dynamic>>(q, m_d);
    m_sp(j) = sp;
    m_sm(j) = sm;
    m_f(j) = 0.0;
    m_group[static_cast<std::size_t>(j)] = 0;
    set_keys(j, no_key, no_key);
    mark_dirty(j);
  }

  /// Records TVM(q_j); in One-Sided mode a sign change makes the twin dirty.
  void set_fval(Index j, double f) {
    m_f(j) = f;
    if (!m_one_sided) return;
    const int g = f >= 0.0 ? 0 : 1;
    if (g != m_group[static_cast<std::size_t>(j)]) {
      m_group[static_cast<std::size_t>(j)] = g;
      mark_dirty(j);
    }
  }

  /// The pair rule (+inf when the pair may not merge); i != j, both < size(), or one of them
  /// size() (the overflow twin) while has_overflow().
  double pair_distortion(Index i, Index j) const {
    double h = 0.0;
    return cost((std::min)(i, j), (std::max)(i, j), h);
  }

  /// Pre-image parameter h of the pair (i, j), i < j: q_new = h q_i + (1 - h) q_j. Ignores
  /// the One-Sided restriction.
  double merge_h(Index i, Index j) const {
    double h = 0.0;
    unrestricted_cost(i, j, h);
    return h;
  }

  /// q_new of the pair (i, j), i < j, into z[0..d): input space the weighted mean of 4.2.1,
  /// feature space the pre-image h q_i + (1 - h) q_j formed from the nearer end. Returns h.
  double merge_point(Index i, Index j, double* z) const {
    const double si = weight(i), sj = weight(j);
    if (m_merge == TVMMerge::Input) {
      for (Index l = 0; l < m_d; ++l) z[l] = (si * m_q(i, l) + sj * m_q(j, l)) / (si + sj);
      return si / (si + sj);
    }
    const double h = merge_h(i, j);
    for (Index l = 0; l < m_d; ++l) {
      const double a = m_q(i, l), b = m_q(j, l);
      z[l] = h >= 0.5 ? a + (h - 1.0) * (a - b) : b + h * (a - b);
    }
    return h;
  }

  /// The paper's bookkeeping step: brings partner() / partner_distortion() up to date after
  /// the changes made since the last call (see the class comment).
  void update_partners() {
    if (m_dirty_list.empty()) return;
    const double inf = std::numeric_limits<double>::infinity();
    for (Index i = 0; i < m_n; ++i) {
      const Index p = partner(i);
      m_rescan[static_cast<std::size_t>(i)] = !m_dirty[static_cast<std::size_t>(i)] && p >= 0 && m_dirty[static_cast<std::size_t>(p)];
    }
    std::sort(m_dirty_list.begin(), m_dirty_list.end());
    for (const Index c : m_dirty_list) {
      Index best = -1;
      double bd = inf;
      for (Index j = 0; j < m_n; ++j) {
        if (j == c) continue;
        const auto uj = static_cast<std::size_t>(j);
        const bool offer = !m_dirty[uj] && !m_rescan[uj];
        const double v = cost_below((std::min)(c, j), (std::max)(c, j), offer ? (std::max)(bd, m_dist(j)) : bd);
        if (v < bd) bd = v, best = j;
        if (offer && v < inf && (v < m_dist(j) || (v == m_dist(j) && c < m_partner[uj])))
          m_dist(j) = v, m_partner[uj] = c;
      }
      m_partner[static_cast<std::size_t>(c)] = best;
      m_dist(c) = bd;
    }
    for (Index i = 0; i < m_n; ++i)
      if (m_rescan[static_cast<std::size_t>(i)]) scan(i);
    for (const Index c : m_dirty_list) m_dirty[static_cast<std::size_t>(c)] = 0;
    m_dirty_list.clear();
  }

  /// Every partner from scratch (O(n^2) pair evaluations): after loading.
  void rebuild_partners() {
    for (Index i = 0; i < m_n; ++i) scan(i);
    for (const Index c : m_dirty_list) m_dirty[static_cast<std::size_t>(c)] = 0;
    m_dirty_list.clear();
  }

  /// Puts the overflow twin TV_{B+1} = (x, s+, s-) of Algorithm 3, with f = TVM(x), into the
  /// scratch slot size() and finds its best partner among the size() twins: argmin_j
  /// (cost(j, size()), j) under the same pair rule (One-Sided: TVM(x) gives its region). One
  /// O(n d) scan; the twins' own partners are left as they are. Call after update_partners().
  void set_overflow(const double* x, double sp, double sm, double f) {
    const Index o = m_n;
    m_q.row(o) = Eigen::Map<const Eigen::Matrix<double, 1, Eigen::Dynamic>>(x, m_d);
    m_sp(o) = sp;
    m_sm(o) = sm;
    m_f(o) = f;
    m_group[static_cast<std::size_t>(o)] = m_one_sided && f < 0.0 ? 1 : 0;
    m_over_partner = -1;
    m_over_dist = std::numeric_limits<double>::infinity();
    for (Index j = 0; j < o; ++j) {
      const double v = cost_below(j, o, m_over_dist);  // canonical order: the overflow slot is the highest
      if (v < m_over_dist) m_over_dist = v, m_over_partner = j;
    }
    m_has_over = true;
  }
  bool has_overflow() const { return m_has_over; }
  /// Slot of the overflow twin (size()).
  Index overflow_slot() const { return m_n; }
  /// Best partner of the overflow twin among the twins (-1: none allowed) and their distortion.
  Index overflow_partner() const { return m_over_partner; }
  double overflow_distortion() const { return m_over_dist; }
  void clear_overflow() {
    m_has_over = false;
    m_over_partner = -1;
    m_over_dist = std::numeric_limits<double>::infinity();
  }

  /// Pair selection of UpdateTV with Rejection (4.2.4). Candidates: the distinct pairs
  /// (i, partner(i)) and, when an overflow twin is set, (overflow_partner(), size()), in
  /// increasing order of (distortion, i, j); the first is the best pair overall among the
  /// B + 1 twins of Algorithm 3. At most `tries` of them are tested; `tvm(z)` evaluates TVM at
  /// a merged point, the twins' TVM(q) are the fval()s (the overflow twin's: TVM(x)). With
  /// eta < 0 the first candidate is taken. Returns false when no candidate passes (the
  /// overflow twin is then ignored); otherwise the merge, with q_new in z[0..d). Consumes the
  /// overflow twin (has_overflow() is false afterwards; its slot's values stay readable until
  /// the next set_twin).
  template <class Eval>
  bool choose_merge(double eta, Index tries, Eval&& tvm, TwinMerge& out, double* z) {
    m_cand.clear();
    for (Index i = 0; i < m_n; ++i) {
      const Index p = partner(i);
      if (p < 0 || (p < i && partner(p) == i)) continue;  // a mutual pair once
      m_cand.push_back({m_dist(i), (std::min)(i, p), (std::max)(i, p)});
    }
    // TV_{B+1} as a candidate (Algorithm 3 over all B + 1 twins): the only candidate that
    // depends on the new example, so a set whose stored pairs all fail Rejection can still change.
    if (m_has_over && m_over_partner >= 0) m_cand.push_back({m_over_dist, m_over_partner, m_n});
    m_has_over = false;
    const auto k = static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(std::max<Index>(tries, 0)), m_cand.size()));
    std::partial_sort(m_cand.begin(), m_cand.begin() + k, m_cand.end(), [](const Cand& a, const Cand& b) {
      if (a.d != b.d) return a.d < b.d;
      if (a.i != b.i) return a.i < b.i;
      return a.j < b.j;
    });
    for (std::ptrdiff_t c = 0; c < k; ++c) {
      const Cand& cd = m_cand[static_cast<std::size_t>(c)];
      const double h = merge_point(cd.i, cd.j, z);
      if (eta >= 0.0) {
        const double t_hat = tvm_linear_estimate(weight(cd.i), fval(cd.i), weight(cd.j), fval(cd.j));
        if (!tvm_accept_merge(tvm(z), t_hat, eta)) continue;
      }
      out.i = cd.i;
      out.j = cd.j;
      out.h = h;
      out.distortion = cd.d;
      out.overflow = cd.j == m_n;
      return true;
    }
    return false;
  }

 private:
  struct Cand {
    double d;
    Index i, j;
  };

  void mark_dirty(Index j) {
    if (m_dirty[static_cast<std::size_t>(j)]) return;
    m_dirty[static_cast<std::size_t>(j)] = 1;
    m_dirty_list.push_back(j);
  }

  void scan(Index i) {
    Index best = -1;
    double bd = std::numeric_limits<double>::infinity();
    for (Index j = 0; j < m_n; ++j) {
      if (j == i) continue;
      const double v = cost_below((std::min)(i, j), (std::max)(i, j), bd);
      if (v < bd) bd = v, best = j;
    }
    m_partner[static_cast<std::size_t>(i)] = best;
    m_dist(i) = bd;
  }

  double sqdist(Index i, Index j) const {
    const double* a = m_q.data() + i * m_d;
    const double* b = m_q.data() + j * m_d;
    double s = 0.0;
    for (Index l = 0; l < m_d; ++l) s += (a[l] - b[l]) * (a[l] - b[l]);
    return s;
  }

  double dot(Index i, Index j) const {
    const double* a = m_q.data() + i * m_d;
    const double* b = m_q.data() + j * m_d;
    double s = 0.0;
    for (Index l = 0; l < m_d; ++l) s += a[l] * b[l];
    return s;
  }

  /// cost(lo, hi), or +inf when the pair's cost provably exceeds `threshold` (then it can
  /// neither be the minimum nor tie it, so skipping it changes no choice). RBF feature space:
  /// no pre-image beats the exact feature-space mean, so d >= s_i s_j |phi(q_i) - phi(q_j)|^2 /
  /// (s_i + s_j) = 2 s_i s_j (1 - k) / (s_i + s_j), one expm1 instead of the 1-D solve (taken
  /// with a 1e-9 relative safety margin against rounding).
  double cost_below(Index lo, Index hi, double threshold) const {
    double h = 0.0;
    if (m_merge == TVMMerge::Feature && m_kernel.type() == KernelType::RBF && threshold < std::numeric_limits<double>::infinity()) {
      if (m_one_sided && m_group[static_cast<std::size_t>(lo)] != m_group[static_cast<std::size_t>(hi)])
        return std::numeric_limits<double>::infinity();
      const double si = weight(lo), sj = weight(hi);
      const double lb = 2.0 * si * sj * tvm_one_minus_kpow(m_kernel.gamma() * sqdist(lo, hi), 1.0) / (si + sj);
      if (lb * (1.0 - 1e-9) > threshold) return std::numeric_limits<double>::infinity();
    }
    return cost(lo, hi, h);
  }

  /// The pair rule for lo < hi (the only evaluation order used).
  double cost(Index lo, Index hi, double& h) const {
    if (m_one_sided && m_group[static_cast<std::size_t>(lo)] != m_group[static_cast<std::size_t>(hi)])
      return std::numeric_limits<double>::infinity();
    return unrestricted_cost(lo, hi, h);
  }

  double unrestricted_cost(Index i, Index j, double& h) const {
    const double si = weight(i), sj = weight(j);
    if (m_merge == TVMMerge::Input) {
      h = si / (si + sj);
      return (si * sj) * sqdist(i, j) / (si + sj);  // d*_ij of 4.2.1
    }
    if (m_kernel.type() == KernelType::RBF) {
      // (4.2) with |phi| = 1: maximise <phi(z), s_i phi(q_i) + s_j phi(q_j)>, i.e.
      // s_i k^{(1-h)^2} + s_j k^{h^2} (the BSGD eq. (21) problem with coefficients s_i, s_j).
      const double s = m_kernel.gamma() * sqdist(i, j);
      const Eigen::Matrix<double, 1, 1> a(si), b(sj);
      h = merge_h_s(a, b, s);
      return 2.0 * (si * tvm_one_minus_kpow(s, 1.0 - h) + sj * tvm_one_minus_kpow(s, h));
    }
    // Dot-product kernels: along z = h q_i + (1 - h) q_j every kernel value is a scalar
    // function of the three dot products.
    const double a = dot(i, i), b = dot(j, j), c = dot(i, j);
    auto dist = [&](double t) {
      const double zi = t * a + (1.0 - t) * c, zj = t * c + (1.0 - t) * b;
      const double zz = t * t * a + 2.0 * t * (1.0 - t) * c + (1.0 - t) * (1.0 - t) * b;
      const double kzz = m_kernel.from_dot(zz, zz, zz);
      return si * (m_kernel.from_dot(a, a, a) - 2.0 * m_kernel.from_dot(zi, a, zz) + kzz) +
             sj * (m_kernel.from_dot(b, b, b) - 2.0 * m_kernel.from_dot(zj, b, zz) + kzz);
    };
    if (m_kernel.type() == KernelType::Linear) {
      h = si / (si + sj);  // phi = identity: the exact pre-image
    } else {
      h = minimise_on_unit(dist);
    }
    return (std::max)(0.0, dist(h));
  }

  /// argmin over [0, 1] of a 1-D function: best of a 33-point grid, then golden section on
  /// the two neighbouring grid cells.
  template <class F>
  static double minimise_on_unit(const F& f) {
    constexpr int G = 32;
    int gb = 0;
    double fb = f(0.0);
    for (int g = 1; g <= G; ++g) {
      const double v = f(static_cast<double>(g) / G);
      if (v < fb) fb = v, gb = g;
    }
    double lo = static_cast<double>((std::max)(gb - 1, 0)) / G, hi = static_cast<double>((std::min)(gb + 1, G)) / G;
    const double r = 0.5 * (std::sqrt(5.0) - 1.0);
    double x1 = hi - r * (hi - lo), x2 = lo + r * (hi - lo), f1 = f(x1), f2 = f(x2);
    for (int it = 0; it < 80 && hi - lo > 1e-13; ++it) {
      if (f1 <= f2) {
        hi = x2, x2 = x1, f2 = f1;
        x1 = hi - r * (hi - lo), f1 = f(x1);
      } else {
        lo = x1, x1 = x2, f1 = f2;
        x2 = lo + r * (hi - lo), f2 = f(x2);
      }
    }
    const double xm = 0.5 * (lo + hi), fm = f(xm);
    return fm <= fb ? xm : static_cast<double>(gb) / G;
  }

  Index m_d = 1, m_budget = 1, m_n = 0;
  Kernel m_kernel;
  TVMMerge m_merge = TVMMerge::Input;
  bool m_one_sided = true;
  RowMatrix m_q;
  Vector m_sp, m_sm, m_f, m_dist;
  std::vector<std::int64_t> m_kp, m_km;
  std::vector<int> m_group;
  std::vector<Index> m_partner;
  std::vector<char> m_dirty, m_rescan;
  std::vector<Index> m_dirty_list;
  std::vector<Cand> m_cand;
  bool m_has_over = false;  // the overflow twin TV_{B+1} is in slot m_n
  Index m_over_partner = -1;
  double m_over_dist = std::numeric_limits<double>::infinity();
};

}  // namespace detail

}  // namespace budgetkernel
