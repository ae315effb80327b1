#pragma once
/// \file learners/kaf/krls.hpp
/// Kernel recursive least squares with the approximate-linear-dependence (ALD) test (Engel,
/// Mannor & Meir, "The Kernel Recursive Least-Squares Algorithm", IEEE Trans. Signal
/// Processing 52(8), 2004, Table 1), regularised so that with every example in the dictionary
/// it is recursive kernel ridge regression: the derivation is docs/derivations.md, "Kernel
/// adaptive filters" (equation tags (KRLS-n) below refer to it).

#include "../../incremental_inverse.hpp"
#include "kaf_common.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace budgetkernel {

/// Parameters of KRLS-ALD.
struct KRLSParams {
  Kernel kernel{KernelType::RBF, 1.0};
  /// ALD threshold nu (Engel eq. 7): x_t joins the dictionary when its squared distance in
  /// feature space to the span of the dictionary, delta_t, exceeds nu; >= 0, finite.
  /// 0 switches the test off: every example joins (recursive kernel ridge regression, which
  /// needs lam > 0), and K~^{-1} is not kept (the kernel matrix of all the examples soon
  /// becomes numerically singular, while K + lam I stays well conditioned). A positive nu
  /// should stay well above the double precision: K~^{-1} has a condition ~ m max k(x, x) / nu.
  double nu = 1e-2;
  /// Ridge regularisation lam of ||w||^2 (the objective (KRLS-1)); >= 0, finite. 0 is Engel's
  /// unregularised KRLS.
  double lam = 1e-3;
  /// The dictionary's cap B; 0 = none (the dictionary grows while examples pass the ALD test).
  /// With B > 0 (needs nu > 0), an example that passes the test when the dictionary holds B
  /// elements joins, and then the element with the least ALD distance to the span of the others
  /// leaves (remove_least_novel). In [0, 2^24].
  Index budget = 0;

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_non_negative(nu, "nu");
    detail::require_non_negative(lam, "lam");
    detail::require(nu > 0.0 || lam > 0.0,
                    "nu = 0 (every example joins the dictionary) needs lam > 0: the kernel matrix of all the "
                    "examples is singular without regularisation");
    // delta_t <= k(x_t, x_t) = 1 with RBF, so nu >= 1 would admit no example: an empty model.
    if (kernel.type() == KernelType::RBF)
      detail::require(nu < 1.0, "nu must be < 1 with the RBF kernel: the ALD distance delta_t is at most "
                                "k(x, x) = 1, so no example would enter the dictionary");
    detail::require(budget >= 0 && budget <= (Index{1} << 24), "budget must be an integer in [0, 2^24]");
    detail::require(budget == 0 || nu > 0.0, "a budget needs nu > 0 (its removals use the ALD inverse K~^{-1})");
  }
};

/// KRLS-ALD with ridge regularisation. Dictionary D = {c_1..c_m} (the store's SVs), K~ its
/// kernel matrix. State, each kept in O(m^2) per step:
///   Kinv = K~^{-1} (IncrementalInverse: a_t = K~^{-1} k_t and delta_t of the ALD test; nu > 0),
///   P = (A^T A)^{-1} (Engel's P, A the n x m matrix of the a_t rows),
///   beta = P A^T y, R = (K~ + lam P)^{-1} (IncrementalInverse), K~ itself, and alpha, the
/// solution of (K~ + lam P) alpha = beta (KRLS-2): the minimiser of ||y - A K~ alpha||^2 +
/// lam alpha^T K~ alpha. With every example in the dictionary A = I: alpha = (K + lam I)^{-1} y,
/// kernel ridge regression on the seen examples.
/// alpha = R beta is refined by one step of iterative refinement against the stored K~ and P
/// (O(m^2)): the bordered inverse R carries errors ~ eps cond^2 (its rank-one updates divide
/// by Schur complements as small as lam), which with lam = 1e-4 and cond ~ 1e5 reached 1e-7
/// relative in alpha; the refined alpha is accurate to ~ eps cond, as a direct solve.
class KRLS : public OnlineRegressor<KRLS> {
 public:
  /// A one-feature KRLS with the default parameters (what load() replaces).
  KRLS() : KRLS(1) {}
  /// \param n_features  d, the values of every input row (>= 1).
  /// \param p           the parameters (validated).
  /// \throws std::invalid_argument on invalid parameters or dimensions.
  explicit KRLS(Index n_features, const KRLSParams& p = KRLSParams{}) {
    p.validate();
    detail::require(n_features >= 1, "n_features must be >= 1");
    init_base(n_features);
    m_p = p;
    m_ex.reset(n_features, 1, p.kernel, 64);
    m_kinv.reset(64);
    m_r.reset(64);
  }

  const KRLSParams& params() const { return m_p; }
  /// m, the size of the dictionary.
  Index n_support() const { return m_ex.size(); }
  /// The dictionary (rows 0 .. m-1), with alpha and ids (the step that added each element).
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  Vector coefficients() const { return m_ex.sv().A().col(0).head(m_ex.size()); }
  std::int64_t steps() const { return m_t; }
  /// K~^{-1} (0 x 0 when nu = 0), (K~ + lam P)^{-1}, P and beta (see the class), m x m / m.
  Eigen::MatrixXd kernel_inverse() const { return m_kinv.inverse(); }
  Eigen::MatrixXd regularised_inverse() const { return m_r.inverse(); }
  Eigen::MatrixXd P() const { return m_P.topLeftCorner(m_ex.size(), m_ex.size()); }
  /// K~, the dictionary's kernel matrix (its values as the kernel rows gave them).
  Eigen::MatrixXd dictionary_kernel() const { return m_K.topLeftCorner(m_ex.size(), m_ex.size()); }
  Vector beta() const { return m_beta.head(m_ex.size()); }

  /// Predicts f(x_t) = k_t^T alpha, then runs the ALD test and either grows the dictionary
  /// (delta_t > nu) or takes the reduced step; alpha = R beta (refined) afterwards.
  /// \param x  n_features() values (valid input: the caller checks).
  /// \param y  the target.
  /// \return the prediction made before learning.
  /// \throws std::runtime_error, learning nothing, when nu = 0 and K + lam I with x_t is
  ///         numerically singular (a lam far too small for the kernel's scale), or when the
  ///         budget's removal fails to rounding (remove_least_novel).
  double step(const double* x, double y) {
    const double ktt = m_ex.score(x);  // krow = k_t against the dictionary
    const double f = m_ex.f()(0);
    const Index m = m_ex.size();
    fit(m + 1);
    const Vector& kt = m_ex.krow();
    // ALD test (Engel eq. 6-7): a_t = K~^{-1} k_t, delta_t = k_tt - k_t^T a_t.
    const bool ald = m_p.nu > 0.0;
    double delta = 0.0;
    bool grow = true;
    if (ald) {
      delta = m_kinv.schur(kt, ktt, m_a);
      grow = delta > m_p.nu && delta > m_kinv.tolerance() * (std::max)(std::abs(ktt), 1.0);
    }
    double s = 0.0;
    if (grow) {  // R's Schur complement: >= lam in exact arithmetic, so it fails only for lam ~ 0
      s = m_r.schur(kt, ktt + m_p.lam, m_rk);
      grow = s > m_r.tolerance() * (std::max)(std::abs(ktt + m_p.lam), 1.0);
      if (!grow && !ald) detail::singular_ridge("KRLS", m_p.lam, s, ktt + m_p.lam);
    }
    if (grow) {
      add_to_dictionary(x, y, ktt, delta, s);
      if (m_p.budget > 0 && m_ex.size() > m_p.budget) {
        if (!remove_least_novel()) {
          undo_append();
          throw std::runtime_error("KRLS: the budget's removal met a non-positive pivot (the dictionary's "
                                   "kernel matrix is numerically singular); increase nu");
        }
        ++m_count.maintenance;
      }
      ++m_count.updates;
    } else if (m > 0) {
      reduced_step(y);
    }
    ++m_t;
    ++m_count.examples;
    if (m_ex.size() > 0) update_alpha();
    return f;
  }

  double decision(const double* x) const {
    double f = 0.0;
    m_ex.decision(x, &f);
    return f;
  }

  /// Writes the kernel, dictionary and alpha (the fields Model reads), nu, lam, the budget
  /// (only when set), the step counter and the state (Kinv, R, K~, P, beta).
  /// \throws std::runtime_error on a non-finite state (a file load() would refuse).
  void save(FieldMap& fm) const {
    detail::require_finite_state("KRLS", coefficients(), m_kinv.inverse(), m_r.inverse(), P(), beta());
    write_base(fm, "krls");
    m_ex.save(fm);
    fm.set("nu", m_p.nu);
    fm.set("lam", m_p.lam);
    if (m_p.budget > 0) fm.set_int("budget", m_p.budget);
    fm.set_int("kaf.steps", m_t);
    fm.set_matrix("kaf.kinv", m_kinv.inverse());
    fm.set_matrix("kaf.R", m_r.inverse());
    fm.set_matrix("kaf.K", dictionary_kernel());
    fm.set_matrix("kaf.P", P());
    fm.set_matrix("kaf.beta", beta());
  }

  /// Restores what save() wrote; all or nothing. Checks shapes, finiteness, the symmetry and
  /// positive diagonals of the three inverses, K~ against the dictionary, and that alpha
  /// solves (K~ + lam P) alpha = beta.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  void load(const FieldMap& fm) {
    KRLSParams p;
    p.kernel = read_kernel(fm);
    p.nu = fm.get_f64("nu");
    p.lam = fm.get_f64("lam");
    p.budget = fm.has("budget") ? fm.get_i64("budget") : 0;
    detail::validate_loaded(p);
    const Index d = detail::read_kaf_dim(fm);
    KRLS fresh(d, p);
    fresh.read_base(fm, "krls");
    fresh.m_t = detail::read_kaf_steps(fm, fresh.m_count);
    fresh.m_ex.load(fm, d, 1, p.budget, 64);
    const Index m = fresh.m_ex.size();
    if (p.budget > 0)
      check_unique_ids(fresh.m_ex.sv(), fresh.m_t);  // removals reorder the dictionary (swap-with-last)
    else
      detail::check_appended_ids(fresh.m_ex.sv(), fresh.m_t);
    fresh.m_kinv.assign(detail::read_spd_inverse(fm, "kaf.kinv", p.nu > 0.0 ? m : 0));
    fresh.m_r.assign(detail::read_spd_inverse(fm, "kaf.R", m));
    const Eigen::MatrixXd P = detail::read_spd_inverse(fm, "kaf.P", m);
    const Eigen::MatrixXd K = detail::read_kernel_matrix(fm, "kaf.K", fresh.m_ex.sv(), p.kernel);
    const Vector beta = detail::read_finite_vector(fm, "kaf.beta", m);
    fresh.fit(m + 1);
    fresh.m_P.topLeftCorner(m, m) = P;
    fresh.m_K.topLeftCorner(m, m) = K;
    fresh.m_beta.head(m) = beta;
    if (m > 0) {
      // residual of (K~ + lam P) alpha = beta against the scale of its terms
      const Vector alpha = fresh.m_ex.sv().A().col(0).head(m);
      const Vector r = beta - K * alpha - p.lam * (P * alpha);
      const double scale = beta.cwiseAbs().maxCoeff() +
                           (K.cwiseAbs().rowwise().sum().maxCoeff() + p.lam * P.cwiseAbs().rowwise().sum().maxCoeff()) *
                               alpha.cwiseAbs().maxCoeff();
      if (!(r.cwiseAbs().maxCoeff() <= 1e-8 * scale)) detail::corrupt("KRLS coefficients do not solve (K + lam P) alpha = beta");
    }
    *this = std::move(fresh);
  }

 private:
  /// Work buffers and the storage of K~, P and beta for n dictionary elements (capacity
  /// doubling: a step must not reallocate and copy its m x m state).
  void fit(Index n) {
    if (m_K.rows() < n) {
      const Index cap = (std::max)(2 * n, Index{64});
      m_K.conservativeResize(cap, cap);
      m_P.conservativeResize(cap, cap);
      m_beta.conservativeResize(cap);
    }
    if (m_a.size() < n) m_a.conservativeResize(2 * n);
    if (m_rk.size() < n) m_rk.conservativeResize(2 * n);
    if (m_w.size() < n) m_w.conservativeResize(2 * n);
    if (m_res.size() < n) m_res.conservativeResize(2 * n);
  }

  /// delta_t > nu: x_t joins D. Kinv and R grow by the block-inverse formula (Engel Table 1;
  /// (KRLS-3): R's new row has k_t and k_tt + lam), P = diag(P, 1), beta = [beta; y_t].
  void add_to_dictionary(const double* x, double y, double ktt, double delta, double s) {
    const Index m = m_ex.size();
    if (m_p.nu > 0.0) m_kinv.append_from_schur(m_a, delta, ktt);
    m_r.append_from_schur(m_rk, s, ktt + m_p.lam);
    m_K.row(m).head(m) = m_ex.krow().head(m).transpose();
    m_K.col(m).head(m) = m_ex.krow().head(m);
    m_K(m, m) = ktt;
    m_P.row(m).head(m).setZero();
    m_P.col(m).head(m).setZero();
    m_P(m, m) = 1.0;
    m_beta(m) = y;
    m_ex.push_last(x, Eigen::Matrix<double, 1, 1>::Zero(), m_t);
  }

  /// delta_t <= nu: A gains the row a_t^T, D stays (KRLS-4): with h = P a_t, g = 1 + a_t^T h,
  /// q = h / g: P -= h h^T / g, beta += q (y_t - a_t^T beta) (Engel Table 1), and
  /// R = (K~ + lam P)^{-1} follows the rank-one change -lam g q q^T by Sherman-Morrison.
  void reduced_step(double y) {
    const Index m = m_ex.size();
    auto a = m_a.head(m);
    auto h = m_w.head(m);
    auto P = m_P.topLeftCorner(m, m);
    auto beta = m_beta.head(m);
    h.setZero();
    detail::add_product_compact_order(h, P, a);
    const double g = 1.0 + a.dot(h);
    const double err = y - a.dot(beta);
    a = h / g;  // q; a_t is no longer needed
    h *= 1.0 / std::sqrt(g);
    P.noalias() -= h * h.transpose();  // P -= h h^T / g, exactly symmetric
    beta += a * err;
    if (m_p.lam > 0.0) {
      // R' = R + c v v^T / (1 - c q^T v), v = R q, c = lam g; 1 - c q^T v >= 1/g > 0 (KRLS-5).
      const double c = m_p.lam * g;
      detail::inverse_times(m_r, a, m_rk);
      const double denom = 1.0 - c * a.dot(m_rk.head(m));
      if (denom > 0.0) {
        m_rk.head(m) *= std::sqrt(c / denom);
        m_r.add_outer(m_rk);
      }
    }
  }

  /// The budget's removal, when the dictionary holds B + 1 elements: the element p with the
  /// least ALD distance delta_p = 1 / [K~^{-1}]_pp to the span of the others leaves, and is
  /// replaced in every example's ALD row by its own projection on the others,
  /// phi(c_p) ~ sum_{j != p} a_pj phi(c_j), a_p = K~_{-p}^{-1} k_{-p}(c_p) = -[K~^{-1}]_{-p,p} / [K~^{-1}]_pp:
  /// A' = A T with T = [I; a_p^T] (the rows of the remaining elements, then p's), exactly as if
  /// c_p had taken the reduced step (KRLS-4) against the others. The model is again the
  /// minimiser of (KRLS-1) over A', with ||phi(c_p) - sum_j a_pj phi(c_j)||^2 = delta_p the
  /// least feature-space error any single removal makes. This is the deletion of a basis vector
  /// of Csato & Opper ("Sparse on-line Gaussian processes", Neural Computation 14(3), 2002,
  /// Section 4: the removed element projected on the rest), scored by the ALD distance, the
  /// novelty criterion of Engel et al. (eq. 6); O(m^2).
  /// With S = [T, e_p] (invertible), Q = S^{-1} P S^{-T} = (S^T A^T A S)^{-1} and
  /// z = S^{-1} beta in O(m^2); then P' = (T^T A^T A T)^{-1} = Q_11 - Q_12 Q_21 / Q_22 and
  /// beta' = P' T^T A^T y = z_1 - Q_12 z_2 / Q_22 (the block inverse read backwards), and
  /// K~' + lam P' = (K~ + lam P)_{-p,-p} - (lam / Q_22) Q_12 Q_12^T: R' from R by erasing p,
  /// then Sherman-Morrison; K~^{-1} by erasing p.
  /// Returns false, changing nothing, when rounding makes Q_22 non-positive (it is a diagonal
  /// entry of the inverse of a positive definite matrix: > 0 in exact arithmetic).
  bool remove_least_novel() {
    const Index n = m_ex.size(), last = n - 1;
    Index p = 0;
    for (Index i = 1; i < n; ++i)
      if (m_kinv(i, i) > m_kinv(p, p)) p = i;  // the largest [K~^{-1}]_pp: the least delta_p
    // p is swapped with the last element (the stores' swap-with-last erase), then dropped.
    Vector g(n);
    for (Index i = 0; i < n; ++i) g(i) = m_kinv(i, p);
    std::swap(g(p), g(last));
    const Vector a = -g.head(last) / g(last);
    swap_last(m_P, p, n);
    auto P11 = m_P.topLeftCorner(last, last);
    Vector Pa = Vector::Zero(last);
    detail::add_product_compact_order(Pa, P11, a);
    const Vector q = m_P.col(last).head(last) - Pa;  // Q_12
    const double q22 = m_P(last, last) - 2.0 * a.dot(m_P.col(last).head(last)) + a.dot(Pa);
    if (!(q22 > 0.0) || !std::isfinite(q22) || !detail::all_finite(a.data(), a.size())) {
      swap_last(m_P, p, n);  // nothing changed
      return false;
    }
    swap_last(m_K, p, n);
    std::swap(m_beta(p), m_beta(last));
    m_kinv.erase(p);
    m_r.erase(p);
    m_ex.sv().erase(p);
    const double z2 = m_beta(last) - a.dot(m_beta.head(last));
    m_beta.head(last) -= q * (z2 / q22);
    const Vector w = q / std::sqrt(q22);
    P11.noalias() -= w * w.transpose();  // exactly symmetric
    if (m_p.lam > 0.0) {
      const double c = m_p.lam / q22;
      detail::inverse_times(m_r, q, m_rk);
      const double denom = 1.0 - c * q.dot(m_rk.head(last));
      if (denom > 0.0) {
        m_rk.head(last) *= std::sqrt(c / denom);
        m_r.add_outer(m_rk);
      }
    }
    return true;
  }

  /// Takes back add_to_dictionary (the bordering read backwards: erase of the newest element).
  void undo_append() {
    const Index last = m_ex.size() - 1;
    if (m_p.nu > 0.0) m_kinv.erase(last);
    m_r.erase(last);
    m_ex.sv().erase(last);  // K~, P and beta: their valid blocks shrink with the dictionary
  }

  /// Swaps row / column p with the last of the valid n x n block of a symmetric matrix (the
  /// stores' swap-with-last).
  static void swap_last(Eigen::MatrixXd& M, Index p, Index n) {
    const Index last = n - 1;
    if (p == last) return;
    M.row(p).head(n).swap(M.row(last).head(n));
    M.col(p).head(n).swap(M.col(last).head(n));
  }

  /// A budgeted dictionary's ids: distinct and below the step counter (removals reorder them).
  static void check_unique_ids(const SupportVectors& sv, std::int64_t steps) {
    std::vector<std::int64_t> ids(sv.ids().begin(), sv.ids().begin() + sv.size());
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= steps || (i > 0 && ids[i] == ids[i - 1]))
        detail::corrupt("invalid centre ids (each must be the step that added it, once)");
  }

  /// alpha = R beta refined once (KRLS-2): alpha += R (beta - (K~ + lam P) alpha), written
  /// into the store's coefficients. Products on exact-size matrices or in compact order:
  /// the same bits after a reload.
  void update_alpha() {
    const Index m = m_ex.size();
    detail::inverse_times(m_r, m_beta, m_rk);
    auto alpha = m_rk.head(m);
    auto r = m_res.head(m);
    r = m_beta.head(m);
    detail::add_product_compact_order(r, m_K.topLeftCorner(m, m), alpha, true);
    if (m_p.lam > 0.0) {
      m_w.head(m).setZero();
      detail::add_product_compact_order(m_w.head(m), m_P.topLeftCorner(m, m), alpha);
      r -= m_p.lam * m_w.head(m);
    }
    m_w.head(m).setZero();
    detail::add_product_compact_order(m_w.head(m), m_r.inverse(), r);
    alpha += m_w.head(m);
    detail::coef_column(m_ex.sv()) = alpha;
  }

  KRLSParams m_p;
  KernelExpansion m_ex;
  IncrementalInverse m_kinv, m_r;
  // K~ and P in capacity-sized storage (fit), the valid m x m blocks; their products in
  // compact order (detail::add_product_compact_order): the same bits whatever the capacity.
  Eigen::MatrixXd m_K, m_P;
  Vector m_beta, m_a, m_rk, m_w, m_res;
  std::int64_t m_t = 0;
};

}  // namespace budgetkernel
