#pragma once
/// \file learners/twin_vector_machine.hpp
/// Twin Vector Machine (Wang & Vucetic, "Twin Vector Machines for Online Learning on a
/// Budget", SDM 2009; the TVM paper) and the paper's "Random" baseline. Section and
/// algorithm numbers refer to that paper.
///
/// A twin vector TV_j = {(q_j, +1, s_j+), (q_j, -1, s_j-)} is a prototype q_j with the
/// numbers s_j+ / s_j- of positive / negative examples it summarises (section 3.1). The
/// model is an exact weighted SVM (IncrementalSVM: alpha <= C s) trained on the two weighted
/// examples of every twin; a side of weight 0 is not stored in the machine. TVM(x) is the
/// machine's decision value.
///
/// Per example (Algorithm 1): Beneficial (Algorithm 2: fewer than B twins or |TVM(x)| <= m1),
/// then UpdateTV (Algorithm 3: add the overflow twin while there is room; else replace the
/// twin with the largest |TVM(q_j)| if it exceeds m2; else merge the best pair among the B + 1
/// twins, the overflow twin TV_{B+1} included, and put the overflow twin in the freed slot, or,
/// when the best pair is (TV_p, TV_{B+1}), merge the overflow twin into TV_p), then UpdateTVM
/// (decremental unlearning of the removed twin sides, control of C, incremental learning of
/// the new ones).
///
/// Why the overflow twin is a merge candidate: Algorithm 3 picks "the best pair TV_i, TV_j
/// (i < j)" right after creating TV_{B+1}, which reads naturally over all B + 1 twins (for
/// j = B + 1, "TV_i = merged; TV_j = TV_{B+1}" leaves only the merged twin). With pairs among
/// the B stored twins only, nothing in the merge choice depends on the new example: once
/// Rejection (4.2.4) refuses every stored pair it refuses them for every later overflow too,
/// and the model never changes again.
///
/// Multi-class (c > 2): one-vs-rest, c independent TVMs. Machine k has its OWN twin set
/// (budget B each, so up to c B twins in all) and sees the whole stream with y = +1 for class
/// k and -1 otherwise; Beneficial, removal, merging and the control of C run per machine.
/// n_twins(), twin_points() and twin_weights() stack the machines' twins (machine 0 first);
/// twin_weights() has 2 columns per machine (s+ of machine k in column 2k, s- in 2k + 1),
/// zero in the other machines' columns. Binary: one machine.
///
/// Costs per example: Beneficial O(B d) (one decision value per machine); an update O(B^2)
/// per adiabatic IDSVM bookkeeping step (unlearning, set_C, learning) plus the merging
/// bookkeeping, O(B d) expected (see detail::TwinSet), one O(B d) scan for the overflow
/// twin's best partner, plus at most merge_tries decision values O(B d) for Rejection. Feature-space merging adds a 1-D solve per pair evaluated
/// (RBF: pruned by a one-exp lower bound; polynomial: ~100 O(1) evaluations).
///
/// Counters: updates = examples that changed some machine's twin set; maintenance = removals
/// plus merges (summed over machines); labels = examples some machine found Beneficial (the
/// others were not needed: Beneficial looks at |TVM(x)| only); degradation stays 0.
///
/// Failure: when an IncrementalSVM operation throws (std::runtime_error, a numerical
/// breakdown, see its header), step() leaves the learner exactly as before the call (twin
/// sets, machines, counters, generator) and rethrows: one UpdateTVM is several machine
/// operations (unlearns, set_C, learns) after the twin set already changed, so each machine
/// it touches runs them inside one IncrementalSVM transaction and its twin set is copied
/// first (O(B d), small next to the update's O(B^2) steps); a failure in machine k rolls back
/// machines 0..k of the step. In a chunk (partial_fit) the examples before the failing one
/// stay learned and the exception says how many they are. TVMParams::ridge > 0 trains every
/// machine on K + ridge I (IncrementalSVM's ridge; decision values, TVM(x) and TVM(q_j), use
/// the plain kernel), the way around that breakdown on a numerically rank-deficient kernel
/// matrix. The two sides of a twin are two stored examples: each gets the ridge.
///
/// The "Random" baseline (TVMParams::random_baseline): an IDSVM on a reservoir sample of the
/// stream (Vitter's Algorithm R: example t > B replaces slot j = uniform[0, t) when j < B),
/// every kept example a weight-1 example; the same slot decision for all machines.

#include "../budget/merging.hpp"
#include "../detail/random.hpp"
#include "../svm/incremental_svm.hpp"
#include "learner_base.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace budgetkernel {

/// Where two twins are merged: input space (4.2.1, the paper's default) or feature space (4.2.2).
enum class TVMMerge : std::int32_t { Input = 0, Feature = 1 };
/// Their names (TwinVectorMachine's `merge`; files store the number).
inline constexpr detail::EnumName<TVMMerge> tvm_merge_names[] = {{TVMMerge::Input, "input"},
                                                                 {TVMMerge::Feature, "feature"}};
inline const char* tvm_merge_name(TVMMerge m) { return detail::enum_name(tvm_merge_names, m); }

/// Parameters of the Twin Vector Machine (defaults: the paper's, section 5.2).
struct TVMParams {
  Kernel kernel{KernelType::RBF, 1.0};
  Index budget = 100;          ///< B >= 1 twin vectors (per machine)
  double C = 1.0;              ///< slack parameter (with fixed_C_total: the C of the first B examples)
  double m1 = 1.0;             ///< Beneficial threshold (Algorithm 2), finite, >= 0
  double m2 = 2.0;             ///< removal threshold of UpdateTV (Algorithm 3), m2 > m1 (+inf: never remove)
  TVMMerge merge = TVMMerge::Input;
  bool one_sided = true;       ///< One-Sided merging (4.2.3); false = Global
  double rejection_eta = 0.2;  ///< Rejection (4.2.4); < 0 = off
  /// 4.3: keep C_t * sum_j (s_j+ + s_j-) = C * B, i.e. C_t = C * B / max(B, sum_j s_j).
  bool fixed_C_total = true;
  bool random_baseline = false;  ///< the paper's "Random": an IDSVM on a reservoir sample of size B
  std::uint64_t seed = 0;        ///< seeds the reservoir sampling of the Random baseline
  double ridge = 0.0;            ///< machines train on K + ridge I (IncrementalSVM); 0 = exact SVM

  void validate() const {
    detail::require(budget >= 1, "budget must be >= 1");
    detail::require(std::isfinite(C) && C > 0.0, "C must be a positive finite number");
    detail::require(std::isfinite(m1) && m1 >= 0.0, "m1 must be a non-negative finite number");
    detail::require(!std::isnan(m2) && m2 > m1, "m2 must be greater than m1 (+inf: never remove)");
    detail::require_enum(tvm_merge_names, merge, "merge");
    detail::require(std::isfinite(rejection_eta), "rejection_eta must be finite (< 0 turns Rejection off)");
    detail::require(std::isfinite(ridge) && ridge >= 0.0, "ridge must be a finite number >= 0");
  }
};

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

/// Twin Vector Machine (Algorithms 1-3 of the TVM paper) and the Random baseline; see the
/// file comment for the multi-class layout.
class TwinVectorMachine : public OnlineLearner<TwinVectorMachine> {
 public:
  /// Merge candidates tested by Rejection (4.2.4) before the overflow twin is ignored: the
  /// best pair and up to 9 next-best ones (each test costs one decision value, O(B d)).
  static constexpr Index merge_tries = 10;

  TwinVectorMachine() { reset(1, 2, TVMParams()); }
  TwinVectorMachine(Index n_features, Index n_classes, const TVMParams& params) {
    reset(n_features, n_classes, params);
  }

  /// \throws std::invalid_argument on invalid parameters or dimensions.
  void reset(Index n_features, Index n_classes, const TVMParams& params) {
    params.validate();
    init_base(n_features, n_classes, params.budget);
    m_p = params;
    m_rng.seed(params.seed);
    sync_rng_undo();
    const Index c = n_outputs();
    m_svm.clear();
    m_tw.clear();
    for (Index k = 0; k < c; ++k) {
      m_svm.emplace_back(n_features, params.kernel, params.C, params.ridge);
      m_tw.emplace_back();
      m_tw.back().reset(n_features, params.budget, params.kernel, params.merge, params.one_sided);
    }
    m_tw_undo.assign(static_cast<std::size_t>(c), detail::TwinSet());
    m_f.setZero(c);
    m_z.setZero(n_features);
  }

  const TVMParams& params() const { return m_p; }

  /// Predicts with the current machines, then runs Algorithm 1 (or the reservoir step of the
  /// Random baseline) on every machine. Returns the prediction.
  /// \throws std::runtime_error on a numerical breakdown of a machine (see IncrementalSVM); the
  ///         learner is then exactly as before the call (see "Failure" in the file comment).
  std::int32_t step(const double* x, std::int32_t y) {
    const Index c = n_outputs();
    for (Index k = 0; k < c; ++k) m_f(k) = m_svm[static_cast<std::size_t>(k)].decision(x);
    const std::int32_t pred = detail::predict_from_scores(m_f);
    const Counters count = m_count;
    const std::int64_t t = ++m_count.examples;
    bool changed = false, used_label = false, hit = false;
    try {
      if (m_p.random_baseline) {
        Index slot = -1;
        const Index n = m_tw[0].size();
        if (n < m_p.budget) {
          slot = n;
        } else {
          CountingEngine draw{m_rng};
          const Index j = detail::uniform_index(draw, static_cast<Index>(t));  // Algorithm R
          if (j < m_p.budget) {
            // The replacement below can fail, and a failed step must not consume its draw:
            // bring the lagging copy to the generator's state before this draw.
            slot = j;
            hit = true;
            m_rng_undo.discard(m_rng_lag);
            m_rng_lag = draw.n;
          } else {
            m_rng_lag += draw.n;  // a miss changes nothing that could fail
          }
        }
        if (slot >= 0) {
          for (Index k = 0; k < c; ++k) {
            begin_update(k);
            replace_twin(k, slot, x, label_of(k, y));
          }
          changed = used_label = true;
        }
      } else {
        for (Index k = 0; k < c; ++k) {
          const detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
          if (!(tw.size() < m_p.budget || std::fabs(m_f(k)) <= m_p.m1)) continue;  // Algorithm 2
          used_label = true;
          begin_update(k);
          changed = update_machine(k, x, label_of(k, y), m_f(k)) || changed;
        }
      }
    } catch (...) {
      // Every machine that began this step goes back, with its twin set (they must agree).
      for (Index k = 0; k < c; ++k) {
        IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
        if (!svm.in_transaction()) continue;
        svm.rollback();
        std::swap(m_tw[static_cast<std::size_t>(k)], m_tw_undo[static_cast<std::size_t>(k)]);
      }
      m_count = count;
      if (hit) {
        m_rng = m_rng_undo;  // the state before this step's draw
        m_rng_lag = 0;
      }
      throw;
    }
    for (auto& svm : m_svm) svm.commit();
    if (changed) ++m_count.updates;
    m_label_unused = !used_label;  // Beneficial needs no label (active-learning reading)
    return pred;
  }

  /// Test-then-train over a chunk (OnlineLearner::partial_fit); on a numerical breakdown the
  /// examples before the failing one stay learned and the exception says how many they are.
  /// (The base's size-checked IndexVector overloads forward to this one.)
  using OnlineLearner::partial_fit;
  void partial_fit(const Eigen::Ref<const RowMatrix>& X, const std::int32_t* y, std::int32_t* pred = nullptr,
                   StopPoll* stop = nullptr) {
    // Python's ReservoirSVC is this class with random_baseline: name what the user built.
    const char* who = m_p.random_baseline ? "TwinVectorMachine::partial_fit (random baseline, ReservoirSVC)"
                                          : "TwinVectorMachine::partial_fit";
    detail::report_chunk_failure(who, m_count.examples, [&] { OnlineLearner::partial_fit(X, y, pred, stop); });
  }

  /// Decision values TVM_k(x) of one example (n_outputs values).
  void decision(const double* x, double* out) const {
    for (Index k = 0; k < n_outputs(); ++k) out[k] = m_svm[static_cast<std::size_t>(k)].decision(x);
  }

  /// decision() for every row of X into the rows of out, bit for bit, with each machine's dot
  /// products (with its own twins) taken per block of rows (detail::for_row_blocks).
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    thread_local std::vector<RowMatrix> D;
    D.resize(m_svm.size());
    Index n = 0;
    for (const IncrementalSVM& svm : m_svm) n += svm.size();
    detail::for_row_blocks(X.rows(), n, stop, [&](Index i, Index b) {
      for (std::size_t k = 0; k < m_svm.size(); ++k) m_svm[k].dots_rows(X.middleRows(i, b), D[k]);
      for (Index r = 0; r < b; ++r)
        for (std::size_t k = 0; k < m_svm.size(); ++k)
          out(i + r, static_cast<Index>(k)) = m_svm[k].decision(X.row(i + r).data(), D[k].row(r).data());
    });
  }

  /// Twins of all machines (binary: of the one machine).
  Index n_twins() const {
    Index n = 0;
    for (const auto& tw : m_tw) n += tw.size();
    return n;
  }
  /// Twins of machine k.
  Index n_twins(Index k) const { return twins(k).size(); }

  /// q_j, one row per twin, machines stacked (machine 0 first).
  RowMatrix twin_points() const {
    RowMatrix Q(n_twins(), m_d);
    Index r = 0;
    for (const auto& tw : m_tw) {
      Q.middleRows(r, tw.size()) = tw.points().topRows(tw.size());
      r += tw.size();
    }
    return Q;
  }

  /// n_twins() x (2 n_outputs): s_j+ of machine k in column 2k, s_j- in column 2k + 1, rows
  /// as twin_points(); zero in the columns of the machines a twin does not belong to.
  RowMatrix twin_weights() const {
    RowMatrix W = RowMatrix::Zero(n_twins(), 2 * n_outputs());
    Index r = 0;
    for (Index k = 0; k < n_outputs(); ++k) {
      const detail::TwinSet& tw = twins(k);
      for (Index j = 0; j < tw.size(); ++j, ++r) {
        W(r, 2 * k) = tw.s_plus(j);
        W(r, 2 * k + 1) = tw.s_minus(j);
      }
    }
    return W;
  }

  /// n_twins() x n_outputs: alpha_j+ - alpha_j- of each twin in its machine's column (the
  /// expansion TVM(x) = sum_j (alpha_j+ - alpha_j-) K(q_j, x) + b of section 3.1).
  RowMatrix twin_coefficients() const {
    RowMatrix A = RowMatrix::Zero(n_twins(), n_outputs());
    Index r = 0;
    for (Index k = 0; k < n_outputs(); ++k) {
      const detail::TwinSet& tw = twins(k);
      const IncrementalSVM& svm = machine(k);
      for (Index j = 0; j < tw.size(); ++j, ++r) {
        double a = 0.0;
        if (tw.key_plus(j) != detail::TwinSet::no_key) a += svm.alpha(svm.index_of(tw.key_plus(j)));
        if (tw.key_minus(j) != detail::TwinSet::no_key) a -= svm.alpha(svm.index_of(tw.key_minus(j)));
        A(r, k) = a;
      }
    }
    return A;
  }

  const IncrementalSVM& machine(Index k) const {
    detail::require(k >= 0 && k < n_outputs(), "machine index out of range");
    return m_svm[static_cast<std::size_t>(k)];
  }
  /// Twin set (with its merging bookkeeping) of machine k.
  const detail::TwinSet& twins(Index k) const {
    detail::require(k >= 0 && k < n_outputs(), "machine index out of range");
    return m_tw[static_cast<std::size_t>(k)];
  }
  /// The C of the machines now: C * B / max(B, sum_j s_j) with fixed_C_total (per machine).
  double current_C(Index k) const { return machine(k).C(); }

  /// Exact state (learner "tvm"): resumes bit for bit. Also writes the fields
  /// budgetkernel::Model reads: sv.x (twin_points), sv.alpha (twin_coefficients), bias,
  /// scale = 1 and the kernel.
  void save(FieldMap& fm) const {
    write_base(fm, "tvm");
    write_kernel(fm, m_p.kernel);
    fm.set_int("tvm.budget", m_p.budget);
    fm.set("tvm.C", m_p.C);
    fm.set("tvm.m1", m_p.m1);
    fm.set("tvm.m2", m_p.m2);
    fm.set_int("tvm.merge", static_cast<std::int64_t>(m_p.merge));
    fm.set_int("tvm.one_sided", m_p.one_sided ? 1 : 0);
    fm.set("tvm.rejection_eta", m_p.rejection_eta);
    fm.set_int("tvm.fixed_C_total", m_p.fixed_C_total ? 1 : 0);
    fm.set_int("tvm.random_baseline", m_p.random_baseline ? 1 : 0);
    fm.set_int("tvm.seed", static_cast<std::int64_t>(m_p.seed));
    fm.set("tvm.ridge", m_p.ridge);
    fm.set_bytes("rng", detail::rng_state(m_rng));
    RowMatrix bias(1, n_outputs());
    for (Index k = 0; k < n_outputs(); ++k) {
      const detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
      const std::string pre = "tvm.m" + std::to_string(k) + ".";
      const Index n = tw.size();
      RowMatrix S(n, 2);
      std::vector<std::int64_t> keys(static_cast<std::size_t>(2 * n));
      for (Index j = 0; j < n; ++j) {
        S(j, 0) = tw.s_plus(j);
        S(j, 1) = tw.s_minus(j);
        keys[static_cast<std::size_t>(2 * j)] = tw.key_plus(j);
        keys[static_cast<std::size_t>(2 * j + 1)] = tw.key_minus(j);
      }
      fm.set_matrix(pre + "q", tw.points().topRows(n));
      fm.set_matrix(pre + "s", S);
      fm.set_ints(pre + "keys", keys);
      m_svm[static_cast<std::size_t>(k)].save(fm, pre + "svm.");
      bias(0, k) = m_svm[static_cast<std::size_t>(k)].bias();
    }
    fm.set("scale", 1.0);
    fm.set_matrix("sv.x", twin_points());
    fm.set_matrix("sv.alpha", twin_coefficients());
    fm.set_matrix("bias", bias);
  }

  /// \throws std::runtime_error (detail::corrupt) on a field that is missing, malformed or
  ///         inconsistent (twins vs. the machine's examples, weights, budget, C).
  void load(const FieldMap& fm) {
    TVMParams p;
    p.kernel = read_kernel(fm);
    p.budget = fm.get_i64("tvm.budget");
    p.C = fm.get_f64("tvm.C");
    p.m1 = fm.get_f64("tvm.m1");
    p.m2 = fm.get_f64("tvm.m2");
    p.merge = detail::enum_from_code(tvm_merge_names, fm.get_i64("tvm.merge"), "merge");
    p.one_sided = read_flag(fm, "tvm.one_sided");
    p.rejection_eta = fm.get_f64("tvm.rejection_eta");
    p.fixed_C_total = read_flag(fm, "tvm.fixed_C_total");
    p.random_baseline = read_flag(fm, "tvm.random_baseline");
    p.seed = static_cast<std::uint64_t>(fm.get_i64("tvm.seed"));
    p.ridge = fm.has("tvm.ridge") ? fm.get_f64("tvm.ridge") : 0.0;  // absent in older files
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto [d, c] = detail::read_dims(fm, [](Index k) { return "tvm.m" + std::to_string(k) + ".svm.dim"; });
    reset(d, c, p);
    read_base(fm, "tvm");
    detail::set_rng_state(m_rng, fm.get_bytes("rng"));
    sync_rng_undo();
    for (Index k = 0; k < n_outputs(); ++k) load_machine(fm, k);
  }

 private:
  static bool read_flag(const FieldMap& fm, const std::string& name) {
    const auto v = fm.get_i64(name);
    if (v != 0 && v != 1) detail::corrupt("field '" + name + "' must be 0 or 1");
    return v == 1;
  }

  /// +1 / -1 label of machine k (binary: class 1 is positive; multi-class: one-vs-rest).
  double label_of(Index k, std::int32_t y) const {
    if (n_outputs() == 1) return y == 1 ? 1.0 : -1.0;
    return y == k ? 1.0 : -1.0;
  }

  /// std::mt19937_64 that counts the outputs it hands out (the Random baseline's draws).
  struct CountingEngine {
    using result_type = std::mt19937_64::result_type;
    static constexpr result_type (min)() { return (std::mt19937_64::min)(); }
    static constexpr result_type (max)() { return (std::mt19937_64::max)(); }
    result_type operator()() {
      ++n;
      return g();
    }
    std::mt19937_64& g;
    unsigned long long n = 0;
  };

  /// Makes the undo copy of the generator equal to it (no lag).
  void sync_rng_undo() {
    m_rng_undo = m_rng;
    m_rng_lag = 0;
  }

  /// Opens the undo of machine k's update in this step: a copy of its twin set (O(B d), no
  /// allocation once the copy has the set's sizes) and a transaction of its IncrementalSVM
  /// (whose journal costs O(B |S| + |S|^2) once, the order of one bookkeeping step).
  void begin_update(Index k) {
    m_tw_undo[static_cast<std::size_t>(k)] = m_tw[static_cast<std::size_t>(k)];
    m_svm[static_cast<std::size_t>(k)].begin_transaction();
  }

  /// Decremental unlearning of both sides of twin j (UpdateTVM).
  void unlearn_twin(IncrementalSVM& svm, detail::TwinSet& tw, Index j) {
    if (tw.key_plus(j) != detail::TwinSet::no_key) svm.unlearn(tw.key_plus(j));
    if (tw.key_minus(j) != detail::TwinSet::no_key) svm.unlearn(tw.key_minus(j));
    tw.set_keys(j, detail::TwinSet::no_key, detail::TwinSet::no_key);
  }

  /// Incremental learning of the sides of twin j with positive weight (UpdateTVM).
  void learn_twin(IncrementalSVM& svm, detail::TwinSet& tw, Index j) {
    const double* q = tw.points().data() + j * m_d;
    const std::int64_t kp = tw.s_plus(j) > 0.0 ? svm.learn(q, 1.0, tw.s_plus(j)) : detail::TwinSet::no_key;
    const std::int64_t km = tw.s_minus(j) > 0.0 ? svm.learn(q, -1.0, tw.s_minus(j)) : detail::TwinSet::no_key;
    tw.set_keys(j, kp, km);
  }

  /// Random baseline: the example (x, yk) as a weight-1 example in slot `slot`.
  void replace_twin(Index k, Index slot, const double* x, double yk) {
    IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
    detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
    if (slot < tw.size()) unlearn_twin(svm, tw, slot);
    tw.set_twin(slot, x, yk > 0.0 ? 1.0 : 0.0, yk > 0.0 ? 0.0 : 1.0);
    learn_twin(svm, tw, slot);
  }

  /// UpdateTV (Algorithm 3) + UpdateTVM for a beneficial example of machine k, fx = TVM_k(x).
  /// Returns whether the twin set changed (false: the overflow twin was ignored by Rejection).
  bool update_machine(Index k, const double* x, double yk, double fx) {
    IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
    detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
    const double sp = yk > 0.0 ? 1.0 : 0.0, sm = 1.0 - sp;  // the overflow twin TV_{B+1}
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

  double target_C(const detail::TwinSet& tw) const {
    const double B = static_cast<double>(m_p.budget);
    return m_p.C * B / (std::max)(B, tw.total_weight());
  }

  /// TVM(q_j) of every twin (O(1) each from the machine), then the merging bookkeeping.
  void refresh(const IncrementalSVM& svm, detail::TwinSet& tw) {
    for (Index j = 0; j < tw.size(); ++j) {
      const std::int64_t key = tw.key_plus(j) != detail::TwinSet::no_key ? tw.key_plus(j) : tw.key_minus(j);
      tw.set_fval(j, svm.decision_at(key));
    }
    tw.update_partners();
  }

  void load_machine(const FieldMap& fm, Index k) {
    IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
    detail::TwinSet& tw = m_tw[static_cast<std::size_t>(k)];
    const std::string pre = "tvm.m" + std::to_string(k) + ".";
    const RowMatrix Q = fm.get_matrix(pre + "q", -1, m_d);
    const Index n = Q.rows();
    const RowMatrix S = fm.get_matrix(pre + "s", n, 2);
    const auto keys = fm.get_ints(pre + "keys", 2 * n);
    if (n > m_p.budget) detail::corrupt("more twin vectors than the budget");
    if (!detail::all_finite(Q.data(), Q.size())) detail::corrupt("non-finite twin vector");
    try {
      svm.load(fm, pre + "svm.");
    } catch (const std::invalid_argument& e) {
      detail::corrupt(std::string("invalid machine: ") + e.what());
    }
    if (svm.dim() != m_d) detail::corrupt("machine dimension differs from n_features");
    if (svm.ridge() != m_p.ridge) detail::corrupt("machine ridge differs from the learner's");
    const Kernel& kern = svm.kernel();
    if (kern.type() != m_p.kernel.type() || kern.gamma() != m_p.kernel.gamma() || kern.degree() != m_p.kernel.degree() ||
        kern.coef0() != m_p.kernel.coef0())
      detail::corrupt("machine kernel differs from the learner's");
    Index sides = 0;
    for (Index j = 0; j < n; ++j) {
      const double w[2] = {S(j, 0), S(j, 1)};
      if (!(w[0] >= 0.0 && w[1] >= 0.0 && std::isfinite(w[0]) && std::isfinite(w[1]) && w[0] + w[1] > 0.0))
        detail::corrupt("invalid twin weights");
      if (m_p.random_baseline && w[0] + w[1] != 1.0) detail::corrupt("invalid weight of a Random-baseline example");
      tw.set_twin(j, Q.row(j).data(), w[0], w[1]);
      std::int64_t kk[2] = {keys[static_cast<std::size_t>(2 * j)], keys[static_cast<std::size_t>(2 * j + 1)]};
      for (int side = 0; side < 2; ++side) {
        if (w[side] == 0.0) {
          if (kk[side] != detail::TwinSet::no_key) detail::corrupt("key of a twin side of weight 0");
          continue;
        }
        Index i = -1;
        try {
          i = svm.index_of(kk[side]);
        } catch (const std::exception&) {
          detail::corrupt("twin key not in the machine");
        }
        if (i < 0 || i >= svm.size() || svm.y(i) != (side == 0 ? 1.0 : -1.0) || svm.weight(i) != w[side] ||
            svm.X().row(i) != Q.row(j))
          detail::corrupt("twin vector does not match the machine's example");
        ++sides;
      }
      tw.set_keys(j, kk[0], kk[1]);
    }
    if (sides != svm.size()) detail::corrupt("machine holds examples that are no twin side");
    const double Ct = m_p.fixed_C_total && !m_p.random_baseline ? target_C(tw) : m_p.C;
    if (svm.C() != Ct) detail::corrupt("machine C differs from the C the twins imply");
    if (m_p.random_baseline) return;
    for (Index j = 0; j < n; ++j) {
      const std::int64_t key = tw.key_plus(j) != detail::TwinSet::no_key ? tw.key_plus(j) : tw.key_minus(j);
      tw.set_fval(j, svm.decision_at(key));
    }
    tw.rebuild_partners();
  }

  TVMParams m_p;
  std::vector<IncrementalSVM> m_svm;
  std::vector<detail::TwinSet> m_tw;
  std::mt19937_64 m_rng;
  // The undo of a step (see "Failure"): the twin sets as before it; for the generator a copy
  // that lags it by m_rng_lag outputs and is brought forward (discard) only when a draw hits,
  // i.e. before an update that can fail: a copy of the 2.5 KB engine per draw cost the
  // Random baseline 7% of its throughput (4.6M vs 4.9M ex/s, B = 100).
  std::vector<detail::TwinSet> m_tw_undo;
  std::mt19937_64 m_rng_undo;
  unsigned long long m_rng_lag = 0;
  Vector m_f, m_z;
};

}  // namespace budgetkernel
