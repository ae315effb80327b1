#pragma once
/// \file budget/projection.hpp
/// Budget maintenance by projecting one SV onto the span of the others (BSGD paper,
/// section 4.2, eq. 15-17), in O(B^2) per step with a maintained inverse kernel matrix.

#include "../incremental_inverse.hpp"
#include "../io.hpp"
#include "../sv_store.hpp"
#include "result.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace budgetkernel {

/// Projection-based budget maintenance (BSGD paper, section 4.2): SV p is projected onto the
/// span of the others (eq. 16) and p chosen by the smallest ||alpha_p||^2 k_pp or by eq. (17),
/// in O(B^2) per step from G = K^{-1} kept as an IncrementalInverse: Delta alpha_{-p} =
/// -alpha_p G_{-p,p} / G_pp and the degradation ||alpha_p||^2 / G_pp, no solve (the paper
/// states O(B^3) for eq. 17; docs/derivations.md, "Projection from a maintained inverse").
/// K is copied from the rows the learner already computed. Index i of K and G is index i of
/// the store; every erase mirrors the store's swap-with-last. Memory: two capacity^2 matrices.
///
/// Lazy activation: until the first reduce(sv, kernel) (the learner calls it only when the
/// store overflows) nothing is kept and on_push is O(1), so a learner whose store never
/// exceeds its budget equals unbudgeted kernel Pegasos exactly; activate() then builds K and G.
///
/// Protocol for a learner:
///   sv.push(x, alpha, id);  proj.on_push(sv, krow, kappa);
///   if (sv.size() > budget || proj.pending()) result = proj.reduce(sv, kernel);
/// reduce() removes at least one SV, so size() <= budget holds afterwards either way.
///
/// Numerically dependent SVs: a new SV whose Schur complement s (its squared distance to the
/// others' span) is <= dependence_tolerance() * max(kappa, max_j k_jj beta_j^2), beta = K^{-1} k,
/// is not appended to G (that would poison it) but marked pending, and the next reduce()
/// projects exactly it (degradation ||alpha_new||^2 max(s, 0)), even under the budget. The
/// second term keeps every old SV's residual above tol k_jj, so cond(K) stays below ~n / tol
/// (docs/derivations.md, "Projection from a maintained inverse", also for why tol = 1e-8).
///
/// Drift control, O(n^2) per step: each step verifies the one column of G it uses against K
/// and refines it once; the whole of G is probed every check_interval() updates (and after
/// every update while K is ill-conditioned); a residual above drift_tolerance() refactors G
/// from K in O(n^3). save() / load() restore either state exactly (a resumed learner continues
/// bit for bit).
class Projection {
 public:
  /// \param exact false: project the smallest SV, argmin ||alpha_p||^2 k_pp (the paper's
  ///        cheap rule); true: the exact minimiser of eq. (17), argmin ||alpha_p||^2 / G_pp.
  explicit Projection(bool exact = false) : m_exact(exact) {
    // Dependence is decided here (dependence_tolerance); G only has to refuse exact
    // singularity, also in refactor.
    m_g.set_tolerance(0.0);
  }

  bool exact() const { return m_exact; }
  void set_exact(bool exact) { m_exact = exact; }

  /// Forgets every SV and becomes inactive (keeps the storage and the settings).
  void clear() {
    m_active = false;
    m_n = 0;
    m_g.clear();
    m_pending = false;
    m_floor = 0.0;
    m_ops = 0;
    m_ops_since_refactor = 0;
  }
  /// Same as clear(): drops K and G and goes back to the inactive state, in which the next
  /// reduce(sv, kernel) rebuilds them from the store (e.g. after loading a model whose file
  /// has no saved projection state).
  void deactivate() { clear(); }

  /// Whether K and G are maintained (see the class comment: false until the first reduce).
  bool active() const { return m_active; }
  /// Number of SVs tracked in K (== the store's size between calls while active; 0 inactive).
  Index size() const { return m_n; }
  /// Whether the newest SV is numerically dependent and waits for reduce() (never inactive).
  bool pending() const { return m_pending; }
  /// Schur complement of the pending SV (meaningful only while pending()).
  double pending_schur() const { return m_pending_s; }

  /// Call right after the learner pushed a new SV (now at index sv.size() - 1).
  /// krow.head(sv.size() - 1) = k(x_i, x_new) for the previous SVs (the row the learner
  /// computed to score the example) and kappa = k(x_new, x_new). Inactive: does nothing,
  /// O(1). Active: O(n^2).
  /// \throws std::logic_error (active only) when the store and this object disagree in
  ///         size, or the previous SV is still pending.
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    if (!m_active) return;
    const Index n = sv.size();
    if (n != m_n + 1 || m_pending) {
      std::ostringstream msg;
      msg << "Projection::on_push: out of sync (store has " << n << " SVs, projection tracks " << m_n
          << (m_pending ? " with a pending dependent SV: call reduce() first)" : ")");
      throw std::logic_error(msg.str());
    }
    detail::require(krow.size() >= n - 1, "Projection::on_push: krow is shorter than the number of previous SVs");
    add_row(krow.head(n - 1), kappa);
  }

  /// One maintenance step. Inactive: activates first (activate(); O(n^2 d + n^3)), and if
  /// that already folded one or more dependent SVs, stops there -- the contract is "remove
  /// at least one SV", so the caller's size bound holds. Otherwise (and always when active)
  /// projects one SV onto the others, adds Delta alpha to their coefficient rows (all c
  /// columns), erases it from the store and from G: the pending SV if there is one, else by
  /// the rule (see exact()). O(n^2).
  /// Reports degradation = ||w_before - w_after||^2 and norm_change = ||w_after||^2 -
  /// ||w_before||^2 over the whole call (for one projection: ||alpha_p||^2 / G_pp and
  /// -degradation).
  /// \throws std::invalid_argument when the store is empty; std::logic_error when active and
  ///         the store and this object disagree in size.
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel) {
    if (!m_active) {
      const Index n = sv.size();
      detail::require(n >= 1, "Projection::reduce: the support-vector store is empty");
      const MaintenanceResult r = activate(sv, kernel);
      if (sv.size() < n) return r;
    }
    return reduce(sv);
  }

  /// reduce() for an active object (the kernel is only needed to activate).
  /// \throws std::logic_error when inactive.
  MaintenanceResult reduce(SupportVectors& sv) {
    if (!m_active)
      throw std::logic_error("Projection::reduce(sv): the projection is inactive; call reduce(sv, kernel)");
    const Index n = sv.size();
    if (n != m_n) throw std::logic_error("Projection::reduce: the store and the projection are out of sync");
    detail::require(n >= 1, "Projection::reduce: the support-vector store is empty");
    auto A = sv.A().topRows(n);
    MaintenanceResult r;
    if (m_pending) {
      // The newest SV p = n - 1 is not in G (= K_{-p}^{-1}); m_gk = G k_p from on_push.
      const Index p = n - 1;
      const Eigen::RowVectorXd ap = A.row(p);  // copy: A is written below
      A.topRows(p).noalias() += m_gk.head(p) * ap;
      sv.carry_project(m_gk.head(p), p);
      r.degradation = ap.squaredNorm() * (std::max)(m_pending_s, 0.0);
      r.norm_change = -r.degradation;
      sv.erase(p);
      --m_n;
      m_pending = false;
      return r;
    }
    return project_out(sv, choose(sv), true);
  }

  /// Projects the given SV p onto the others (eq. 16 with a caller's choice of p, e.g. the
  /// r* of BPA-P), exactly as reduce() does for its own choice. O(n^2). The pending SV, if
  /// any, can only be projected as p = size() - 1 (it is not in G; reduce() handles it).
  /// \throws std::invalid_argument when p is out of range or another SV is pending;
  ///         std::logic_error when inactive or out of sync.
  MaintenanceResult reduce_at(SupportVectors& sv, Index p) {
    if (!m_active) throw std::logic_error("Projection::reduce_at: the projection is inactive");
    const Index n = sv.size();
    if (n != m_n) throw std::logic_error("Projection::reduce_at: the store and the projection are out of sync");
    detail::require(p >= 0 && p < n, "Projection::reduce_at: SV index out of range");
    if (m_pending) {
      detail::require(p == n - 1, "Projection::reduce_at: another SV is pending; reduce it first");
      return reduce(sv);
    }
    return project_out(sv, p, false);
  }

  /// The projection of a candidate point onto the span of the tracked SVs, without adding
  /// it: returns beta = K^{-1} k (refined once against K, as on_push does) and sets s =
  /// kappa - k^T beta, the squared distance of phi(x) to the span (Projectron's ||delta||^2,
  /// the Schur complement of appending x). k = k(x_j, x) for the size() tracked SVs. O(n^2).
  /// Only the first size() entries of the returned vector are meaningful; it stays valid
  /// until the next call on this object.
  /// \throws std::logic_error when inactive or an SV is pending.
  const Vector& project_candidate(const Eigen::Ref<const Vector>& k, double kappa, double& s) {
    if (!m_active || m_pending)
      throw std::logic_error("Projection::project_candidate: needs an active projection with nothing pending");
    detail::require(k.size() >= m_n, "Projection::project_candidate: k is shorter than the number of SVs");
    reserve(m_n + 1);
    s = kappa;
    if (m_n == 0) return m_cand;
    const auto kk = k.head(m_n);
    auto beta = m_cand.head(m_n);
    auto res = m_r.head(m_n);
    const double kmax = (std::max)(kk.cwiseAbs().maxCoeff(), 1e-300);
    double rn = schur_residual(kk, beta, res) / kmax;
    if (rn > threshold()) {
      drift_refactor(rn);
      rn = schur_residual(kk, beta, res) / kmax;
    }
    if (rn > 0.0) beta.noalias() += m_g.inverse() * res;  // beta -> K^{-1} k to second order
    s = kappa - kk.dot(beta);
    return m_cand;
  }

  /// G_jj of the maintained inverse: 1 / G_jj is SV j's squared distance to the span of the
  /// others, so ||alpha_j||^2 / G_jj is the weight degradation of projecting it (eq. 17).
  double inverse_diagonal(Index j) const { return m_g(j, j); }

 private:
  MaintenanceResult project_out(SupportVectors& sv, Index p, bool may_rechoose) {
    const Index n = sv.size();
    auto A = sv.A().topRows(n);
    MaintenanceResult r;
    auto g = m_gk.head(n);
    auto res = m_r.head(n);
    // Verify column p of G against K: res = K g - e_p.
    double rn = column_residual(p, g, res);
    if (rn > threshold() || !(g(p) > 0.0)) {
      drift_refactor(rn);
      if (may_rechoose) p = choose(sv);
      rn = column_residual(p, g, res);
    }
    if (rn > 0.0) g.noalias() -= m_g.inverse() * res;  // one step of refinement
    const double gpp = g(p);
    const Eigen::RowVectorXd ap = A.row(p);
    // eq. (16) via the block-inverse identity: Delta alpha_j = alpha_p (K_{-p}^{-1} k_p)_j
    // = -alpha_p G_jp / G_pp. Applied to row p as well, which becomes 0 and is erased anyway.
    A.noalias() -= (g * (1.0 / gpp)) * ap;
    sv.carry_project(g * (-1.0 / gpp), p);
    // Degradation ||Delta w||^2 = ||alpha_p||^2 ||r||^2, r = phi_p - sum_{j != p} beta_j phi_j
    // the projection residual, ||r||^2 = k_pp - k_p^T K_{-p}^{-1} k_p = 1 / G_pp (eq. 17).
    // norm_change = -degradation: w_after = w - alpha_p r and r is orthogonal to phi_j for all
    // j != p, so <w, r> = alpha_p <phi_p, r> = alpha_p ||r||^2 and ||w_after||^2 =
    // ||w||^2 - 2 ||alpha_p||^2 ||r||^2 + ||alpha_p||^2 ||r||^2 (per class, then summed).
    r.degradation = ap.squaredNorm() / gpp;
    r.norm_change = -r.degradation;
    sv.erase(p);
    m_g.erase(p);
    erase_k(p);
    ++m_ops_since_refactor;
    maybe_check_drift();
    return r;
  }

 public:
  /// Activates an inactive object for the current store. K: row i is computed as the learner
  /// computes it, kernel.row over the first i SVs with x_i as the query (i.e. as if the store
  /// had been pushed in order, which it was when nothing was removed before), mirrored into
  /// column i. G: the SVs are appended in store order with the dependence test of on_push;
  /// an SV that fails it is folded into the SVs before it right away -- its coefficients go
  /// to them (Delta alpha = alpha_i beta, beta = G k_i) and it is erased from the store with
  /// swap-with-last, so the former last SV lands in slot i and is processed next. Every SV
  /// thus ends either in G or folded; afterwards G covers the whole store and nothing is
  /// pending. O(n^2 d + n^3) (+ O(n^2) per folded SV).
  /// Returns the exact totals over all folds (0 when none): degradation = ||w_before -
  /// w_after||^2 and norm_change = ||w_after||^2 - ||w_before||^2. Unlike a single pending
  /// fold, these are not ||alpha_i||^2 s per fold: the SVs after slot i are not yet in G,
  /// so the residual r_i = phi_i - sum_j beta_j phi_j is not orthogonal to them (nor to the
  /// residuals of other folds), and the cross terms are accounted for (via <phi_j, r_i>).
  /// The number of folded SVs is the decrease of sv.size().
  /// \throws std::logic_error when already active.
  MaintenanceResult activate(SupportVectors& sv, const Kernel& kernel) {
    if (m_active) throw std::logic_error("Projection::activate: already active");
    clear();
    const Index n0 = sv.size();
    reserve(n0);
    Vector row(std::max<Index>(n0, 1));
    for (Index i = 0; i < n0; ++i) {
      kernel.row(sv.X(), sv.sqnorm(), i, sv.x(i).transpose(), sv.sqnorm()(i), row);
      m_k.col(i).head(i) = row.head(i);
      m_k.row(i).head(i) = row.head(i).transpose();
      m_k(i, i) = kernel.self(sv.sqnorm()(i));
    }
    m_n = n0;
    m_active = true;
    MaintenanceResult total;
    Eigen::MatrixXd kd;  // kd(j, :) = <phi_j, w_now - w_before> per class (allocated at the first fold)
    for (Index i = 0; i < m_n;) {
      if (append_to_g(i))
        ++i;
      else
        fold(sv, i, kd, total);
    }
    total.degradation = (std::max)(total.degradation, 0.0);
    return total;
  }

  /// Writes the exact state so that a loaded learner continues bit for bit: the `active`
  /// flag, the settings and the drift bookkeeping, and when active K, G and the storage
  /// capacity (Eigen's gemv blocks its summation by the matrices' column stride, so the
  /// capacity is part of the arithmetic for >= 128 SVs).
  /// \throws std::invalid_argument while an SV is pending (reduce first).
  void save(FieldMap& fm, const std::string& prefix) const {
    detail::require(!m_pending, "Projection::save: a dependent SV is pending; reduce first");
    fm.set_int(prefix + "active", m_active ? 1 : 0);
    fm.set_ints(prefix + "state", {m_ops, m_ops_since_refactor, m_refactors, m_check_interval});
    fm.set(prefix + "floor", m_floor);
    fm.set(prefix + "drift_tol", m_drift_tol);
    fm.set(prefix + "dep_tol", m_dep_tol);
    if (!m_active) return;
    fm.set_int(prefix + "capacity", m_k.rows());
    fm.set_matrix(prefix + "K", m_k.topLeftCorner(m_n, m_n));
    fm.set_matrix(prefix + "G", m_g.inverse());
  }

  /// Restores what save() wrote (either state); checks it against the store's size. The
  /// exact() choice is not part of the file (the learner sets it from its maintenance kind).
  /// \throws std::runtime_error ("model file: ...") on missing or invalid fields.
  void load(const FieldMap& fm, const std::string& prefix, const SupportVectors& sv) {
    const Index n = sv.size();
    const auto active = fm.get_i64(prefix + "active");
    const auto st = fm.get_ints(prefix + "state", 4);
    const double floor = fm.get_f64(prefix + "floor");
    const double drift_tol = fm.get_f64(prefix + "drift_tol");
    const double dep_tol = fm.get_f64(prefix + "dep_tol");
    constexpr std::int64_t most = detail::kMaxLoadedCount;
    if ((active != 0 && active != 1) || st[0] < 0 || st[1] < 0 || st[2] < 0 || st[3] < 0 || st[0] > most ||
        st[1] > most || st[2] > most || st[3] > most ||
        !(floor >= 0.0 && std::isfinite(floor)) || !(drift_tol > 0.0 && std::isfinite(drift_tol)) ||
        !(dep_tol >= 0.0 && dep_tol < 1.0))
      detail::corrupt("invalid projection state");
    Eigen::MatrixXd K, G;
    Index cap = 0;
    if (active) {
      cap = fm.get_i64(prefix + "capacity");
      K = fm.get_matrix(prefix + "K", n, n);
      G = fm.get_matrix(prefix + "G", n, n);
      if (cap < n || !detail::all_finite(K.data(), K.size()) || !detail::all_finite(G.data(), G.size()) ||
          K != K.transpose())
        detail::corrupt("invalid projection state");
    }
    clear();
    m_ops = st[0];
    m_ops_since_refactor = st[1];
    m_refactors = st[2];
    m_check_interval = st[3];
    m_floor = floor;
    m_drift_tol = drift_tol;
    m_dep_tol = dep_tol;
    if (!active) return;
    // The saved capacity only steers Eigen's blocking; bounded so that a corrupt file cannot
    // demand a huge allocation (a real one is at most twice the largest store size seen).
    reserve((std::min)(cap, 2 * (std::max)(sv.capacity(), n)));
    m_k.topLeftCorner(n, n) = K;
    m_n = n;
    m_g.assign(G);
    m_active = true;
  }

  /// Checks the whole of G against K now (O(n^2) probe max|G (K v) - v| with a fixed +-1
  /// vector v, or the full O(n^3) max|G K - I| when `full`) and refactors G from K when the
  /// residual exceeds the drift threshold. Returns the residual measured before any
  /// refactorisation.
  double check_drift(bool full = false) {
    m_ops = 0;
    const Index m = m_g.size();
    if (m == 0) return 0.0;
    const auto K = m_k.topLeftCorner(m, m);
    const double res = full ? m_g.residual(K) : m_g.probe_residual(K);
    if (res > threshold() || !std::isfinite(res)) drift_refactor(res);
    return res;
  }

  Index check_interval() const { return m_check_interval; }
  /// Updates of G (appends and erases) between two whole-matrix probes (0 disables them).
  void set_check_interval(Index n) {
    detail::require(n >= 0, "Projection: check interval must be >= 0");
    m_check_interval = n;
  }
  double drift_tolerance() const { return m_drift_tol; }
  /// Residual above which G is refactored from K (default 1e-8).
  void set_drift_tolerance(double tol) {
    detail::require(tol > 0.0, "Projection: drift tolerance must be > 0");
    m_drift_tol = tol;
  }
  double dependence_tolerance() const { return m_dep_tol; }
  /// A new SV with s <= tol * max(kappa, max_j k_jj beta_j^2) is treated as dependent
  /// (default 1e-8; see the class comment).
  void set_dependence_tolerance(double tol) {
    detail::require(tol >= 0.0 && tol < 1.0, "Projection: dependence tolerance must be in [0, 1)");
    m_dep_tol = tol;
  }
  /// How often G was refactored from K by the drift control.
  Index refactor_count() const { return m_refactors; }

  /// G = K^{-1} of the SVs it covers (all of them, or all but the pending newest one).
  const IncrementalInverse& inverse() const { return m_g; }
  /// The kernel matrix of all tracked SVs (top-left size() x size() block).
  auto kernel_matrix() const { return m_k.topLeftCorner(m_n, m_n); }

 private:
  static constexpr Index kFloorLifetime = 1000;  // updates of G during which a raised bar holds
  static constexpr double kMaxRaisedBar = 1e-4;  // beyond this even the refined columns degrade
  static constexpr double kIllConditioned = 1e6;  // probe after every update above this

  Index choose(const SupportVectors& sv) const {
    Index best = 0;
    double best_v = 0.0;
    for (Index j = 0; j < m_n; ++j) {
      const double a2 = sv.alpha(j).squaredNorm();
      // exact: eq. (17) = ||alpha_j||^2 / G_jj; cheap: ||alpha_j||^2 k_jj (smallest SV).
      // 1 / G_jj <= k_jj always; a non-positive G_jj (only from a broken G) falls back to it.
      const double gjj = m_g(j, j);
      const double v = (m_exact && gjj > 0.0) ? a2 / gjj : a2 * m_k(j, j);
      if (j == 0 || detail::smaller_or_older(v, sv.id(j), best_v, sv.id(best))) best_v = v, best = j;
    }
    return best;
  }

  /// g = column p of G, res = K g - e_p; returns max|res|.
  template <class GT, class RT>
  double column_residual(Index p, GT& g, RT& res) const {
    const Index n = m_g.size();
    g = m_g.inverse().col(p);
    res.noalias() = m_k.topLeftCorner(n, n) * g;
    res(p) -= 1.0;
    return res.cwiseAbs().maxCoeff();
  }

  double threshold() const {
    if (m_ops_since_refactor >= kFloorLifetime) return m_drift_tol;
    return (std::max)(m_drift_tol, (std::min)(10.0 * m_floor, kMaxRaisedBar));
  }

  /// Refactors G from K; when even the fresh inverse misses the tolerance (or K is too
  /// ill-conditioned to factor, in which case the old G is kept), raises the bar to 10x
  /// that residual for the next kFloorLifetime updates instead of refactoring every step.
  void drift_refactor(double measured) {
    const Index m = m_g.size();
    const auto K = m_k.topLeftCorner(m, m);
    try {
      m_g.refactor(K);
      ++m_refactors;
      m_floor = m_g.probe_residual(K);
    } catch (const std::runtime_error&) {
      m_floor = std::isfinite(measured) ? measured : 0.0;
    }
    m_ops_since_refactor = 0;
  }

  /// Appends the SV with kernel column `col` (against the m_n tracked SVs) and diagonal kappa
  /// to K, and to G unless it is numerically dependent (then it becomes pending).
  template <class Col>
  void add_row(const Eigen::MatrixBase<Col>& col, double kappa) {
    const Index m = m_n;
    reserve(m + 1);
    m_k.col(m).head(m) = col;
    m_k.row(m).head(m) = col.transpose();
    m_k(m, m) = kappa;
    ++m_n;
    if (!append_to_g(m)) m_pending = true;
  }

  /// Appends SV i (its K row/column already stored; G covers exactly SVs 0..i-1) to G unless
  /// it is numerically dependent on them. Either way m_gk.head(i) = beta = K_{0..i-1}^{-1} k_i
  /// (refined) and, when dependent, m_pending_s = its Schur complement. Returns whether it was
  /// appended.
  bool append_to_g(Index i) {
    const auto k = m_k.col(i).head(i);
    const double kappa = m_k(i, i);
    auto gk = m_gk.head(i);
    double s = kappa;
    if (i > 0) {
      // gk = G k, verified against K: res = k - K gk; refactor if G drifted, then refine.
      auto res = m_r.head(i);
      const double kmax = (std::max)(k.cwiseAbs().maxCoeff(), 1e-300);
      double rn = schur_residual(k, gk, res) / kmax;
      if (rn > threshold()) {
        drift_refactor(rn);
        rn = schur_residual(k, gk, res) / kmax;
      }
      if (rn > 0.0) gk.noalias() += m_g.inverse() * res;  // gk -> K^{-1} k to second order
      s = kappa - k.dot(gk);
    }
    // Dependent if s <= tol * max(kappa, max_j K_jj gk_j^2): the first term is the new SV's own
    // residual against the others; the second catches the new SV making an *old* SV j
    // dependent, since the residual of j against all others becomes 1 / G'_jj <= s / gk_j^2.
    // So no SV in G ever has a residual below tol * k_jj against the rest, which keeps
    // cond(K) <= ~n / tol however the SVs come and go (erasing only increases residuals).
    double scale = kappa;
    for (Index j = 0; j < i; ++j) scale = (std::max)(scale, m_k(j, j) * gk(j) * gk(j));
    if (!(s > m_dep_tol * scale)) {
      m_pending_s = s;
      return false;
    }
    // The refined gk and its s: G' is then the exact inverse of the bordered matrix with k
    // perturbed by ~|res| (backward stable), and measured to drift far less than with G k.
    m_g.append_from_schur(gk, s, kappa);
    ++m_ops_since_refactor;
    maybe_check_drift();
    return true;
  }

  /// Activation: folds SV i, just found dependent on SVs 0..i-1 (beta = m_gk.head(i)), into
  /// them and erases it (swap-with-last in the store, K and kd). SVs i+1.. are in K but not
  /// yet in G. Adds the exact change of ||w_before - w||^2 and ||w||^2 to `total`; kd(j, :)
  /// = <phi_j, w - w_before> for the current SVs j carries the cross terms between folds.
  void fold(SupportVectors& sv, Index i, Eigen::MatrixXd& kd, MaintenanceResult& total) {
    const Index n = m_n;
    auto A = sv.A().topRows(n);
    if (kd.rows() == 0) kd.setZero(n, sv.n_coef());
    const auto beta = m_gk.head(i);
    const Eigen::RowVectorXd a = A.row(i);  // copy: A is written below
    // v_j = <phi_j, r> for the residual r = phi_i - sum_{l < i} beta_l phi_l (with the beta
    // actually applied); ||r||^2 = <phi_i, r> - beta^T <phi_{0..i-1}, r>.
    Vector v = m_k.col(i).head(n);
    if (i > 0) v.noalias() -= m_k.topLeftCorner(n, i) * beta;
    const double rr = v(i) - beta.dot(v.head(i));
    // The fold changes w by -a r (per class): ||w - a r||^2 - ||w||^2 = -2 a.<w, r> + |a|^2 rr
    // and ||D - a r||^2 - ||D||^2 = -2 a.<D, r> + |a|^2 rr for D = w - w_before.
    const Eigen::RowVectorXd wr = v.transpose() * A;
    Eigen::RowVectorXd dr = kd.row(i);
    if (i > 0) dr.noalias() -= beta.transpose() * kd.topRows(i);
    const double a2 = a.squaredNorm();
    total.degradation += a2 * rr - 2.0 * a.dot(dr);
    total.norm_change += a2 * rr - 2.0 * a.dot(wr);
    A.topRows(i).noalias() += beta * a;
    sv.carry_project(beta, i);
    kd.topRows(n).noalias() -= v * a;
    const Index last = n - 1;
    if (i != last) kd.row(i) = kd.row(last);
    sv.erase(i);
    erase_k(i);
  }

  template <class KT, class GT, class RT>
  double schur_residual(const KT& k, GT& gk, RT& res) const {
    const Index m = m_g.size();
    gk.noalias() = m_g.inverse() * k;
    res = k;
    res.noalias() -= m_k.topLeftCorner(m, m) * gk;
    return res.cwiseAbs().maxCoeff();
  }

  /// After each update of G: a whole-matrix probe every check_interval() updates, or right
  /// away when K is ill-conditioned (max_j G_jj k_jj, a lower bound of cond(K), above 1e6),
  /// where one update can multiply the error by |G|.
  void maybe_check_drift() {
    ++m_ops;
    const Index m = m_g.size();
    double cond_bound = 0.0;
    for (Index j = 0; j < m; ++j) cond_bound = (std::max)(cond_bound, m_g(j, j) * m_k(j, j));
    if ((m_check_interval > 0 && m_ops >= m_check_interval) || cond_bound > kIllConditioned) check_drift(false);
  }

  /// Swap-with-last removal of row/column p of K.
  void erase_k(Index p) {
    const Index last = m_n - 1;
    if (p != last) {
      m_k.row(p).head(m_n).swap(m_k.row(last).head(m_n));
      m_k.col(p).head(m_n).swap(m_k.col(last).head(m_n));
    }
    m_n = last;
  }

  void reserve(Index cap) {
    if (cap <= m_k.rows()) return;
    const Index c = std::max<Index>(cap, 2 * m_k.rows());
    m_k.conservativeResize(c, c);
    m_gk.conservativeResize(c);
    m_r.conservativeResize(c);
    m_cand.conservativeResize(c);
    m_g.reserve(c);
  }

  bool m_exact = false;
  bool m_active = false;  // K and G maintained (see the class comment)
  bool m_pending = false;
  double m_pending_s = 0.0;
  Index m_n = 0;  // SVs tracked in K (== store size while active, 0 inactive); G has m_n or
                  // m_n - 1 (pending) rows, fewer during activate()
  Index m_ops = 0;  // updates of G since the last whole-matrix probe
  Index m_check_interval = 100;
  Index m_ops_since_refactor = 0;
  Index m_refactors = 0;
  double m_drift_tol = 1e-8;
  double m_dep_tol = 1e-8;
  double m_floor = 0.0;  // residual of the last fresh inverse (raises the bar, see threshold())
  Eigen::MatrixXd m_k;
  Vector m_gk;  // G k of the last added SV (kept for a pending reduce) / column p in reduce
  Vector m_r;   // residual work vector
  Vector m_cand;  // K^{-1} k of the last project_candidate
  IncrementalInverse m_g;
};

}  // namespace budgetkernel
