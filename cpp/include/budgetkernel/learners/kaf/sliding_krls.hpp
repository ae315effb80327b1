#pragma once
/// \file learners/kaf/sliding_krls.hpp
/// Sliding-window kernel RLS (Van Vaerenbergh, Via & Santamaria, "A Sliding-Window Kernel RLS
/// Algorithm and Its Application to Nonlinear Channel Identification", ICASSP 2006): kernel
/// ridge regression on the last B examples, its inverse (K + lam I)^{-1} kept in O(B^2) per
/// step by appending the new example and erasing the oldest (docs/derivations.md, "Kernel
/// adaptive filters").

#include "../../incremental_inverse.hpp"
#include "kaf_common.hpp"

#include <cmath>
#include <stdexcept>

namespace budgetkernel {

/// Parameters of the sliding-window KRLS.
struct SlidingKRLSParams {
  Kernel kernel{KernelType::RBF, 1.0};
  Index budget = 100;  ///< B, the window's length (the last B examples); >= 1
  double lam = 1e-2;   ///< ridge regularisation c of the paper; > 0, finite (K + lam I must be invertible)

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require(budget >= 1 && budget <= (Index{1} << 24), "budget must be an integer in [1, 2^24]");
    detail::require_positive(lam, "lam");
  }
};

/// Sliding-window KRLS: after step t the model is alpha = (K_w + lam I)^{-1} y_w over the
/// window w of the last min(t, B) examples (its centres, in the store's order: swap-with-last
/// erase, mirrored by the inverse and the targets). Each step predicts with the current
/// window, appends (x_t, y_t) (block-inverse formula), then, when the window holds B + 1
/// examples, erases the oldest (the same formula read backwards). Every B steps a probe of
/// max|(R (K + lam I) v - v)| checks the inverse against the window and refactors it when
/// the updates have drifted (check_drift; O(B^2) every B steps). alpha = R y_w is refined
/// by one step of iterative refinement against the stored K_w (O(B^2), see KRLS: the
/// bordered inverse's errors grow like eps cond^2, the refined alpha's like eps cond).
class SlidingWindowKRLS : public OnlineRegressor<SlidingWindowKRLS> {
 public:
  /// A one-feature filter with the default parameters (what load() replaces).
  SlidingWindowKRLS() : SlidingWindowKRLS(1) {}
  /// \param n_features  d, the values of every input row (>= 1).
  /// \param p           the parameters (validated).
  /// \throws std::invalid_argument on invalid parameters or dimensions.
  explicit SlidingWindowKRLS(Index n_features, const SlidingKRLSParams& p = SlidingKRLSParams{}) {
    p.validate();
    detail::require(n_features >= 1, "n_features must be >= 1");
    detail::require(p.budget <= (Index{1} << 31) / n_features - 1, "budget too large for n_features");
    init_base(n_features);
    m_p = p;
    m_ex.reset(n_features, 1, p.kernel, p.budget + 1);
    m_r.reset(p.budget + 1);
    detail::zero_fresh(m_y, p.budget + 1);
    detail::zero_fresh(m_rk, p.budget + 1);
    detail::zero_fresh(m_res, p.budget + 1);
    detail::zero_fresh(m_w, p.budget + 1);
    detail::zero_fresh(m_K, p.budget + 1, p.budget + 1);
  }

  const SlidingKRLSParams& params() const { return m_p; }
  /// The window's length so far, min(steps, B).
  Index n_support() const { return m_ex.size(); }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  Vector coefficients() const { return m_ex.sv().A().col(0).head(m_ex.size()); }
  std::int64_t steps() const { return m_t; }
  /// (K_w + lam I)^{-1} and y_w, in the store's order.
  Eigen::MatrixXd regularised_inverse() const { return m_r.inverse(); }
  Vector targets() const { return m_y.head(m_ex.size()); }
  /// K_w, the window's kernel matrix (its values as the kernel rows gave them).
  Eigen::MatrixXd window_kernel() const { return m_K.topLeftCorner(m_ex.size(), m_ex.size()); }

  /// Predicts f(x_t) with the current window, then slides the window over (x_t, y_t).
  /// \param x  n_features() values (valid input: the caller checks).
  /// \param y  the target.
  /// \return the prediction made before learning.
  /// \throws std::runtime_error, learning nothing, when K + lam I with x_t is numerically
  ///         singular (a lam far too small for the kernel's scale).
  double step(const double* x, double y) {
    const double ktt = m_ex.score(x);
    const double f = m_ex.f()(0);
    const Index n = m_ex.size();
    const double kappa = ktt + m_p.lam;
    const double s = m_r.schur(m_ex.krow(), kappa, m_rk);
    if (!(s > m_r.tolerance() * (std::max)(std::abs(kappa), 1.0)))
      detail::singular_ridge("SlidingWindowKRLS", m_p.lam, s, kappa);
    m_r.append_from_schur(m_rk, s, kappa);
    m_K.row(n).head(n) = m_ex.krow().head(n).transpose();
    m_K.col(n).head(n) = m_ex.krow().head(n);
    m_K(n, n) = ktt;
    m_ex.push_last(x, Eigen::Matrix<double, 1, 1>::Zero(), m_t);
    m_y(n) = y;
    if (n + 1 > m_p.budget) {
      erase_oldest();
      ++m_count.maintenance;
    }
    ++m_t;
    ++m_count.examples;
    ++m_count.updates;
    if (m_t % m_p.budget == 0) check_drift();
    update_alpha();
    return f;
  }

  double decision(const double* x) const {
    double f = 0.0;
    m_ex.decision(x, &f);
    return f;
  }

  /// Writes the kernel, window and alpha (the fields Model reads), budget, lam, the step
  /// counter, R = (K_w + lam I)^{-1}, K_w and y_w.
  /// \throws std::runtime_error on a non-finite state (a file load() would refuse).
  void save(FieldMap& fm) const {
    detail::require_finite_state("SlidingWindowKRLS", coefficients(), m_r.inverse());
    write_base(fm, "sliding_krls");
    m_ex.save(fm);
    fm.set_int("budget", m_p.budget);
    fm.set("lam", m_p.lam);
    fm.set_int("kaf.steps", m_t);
    fm.set_matrix("kaf.R", m_r.inverse());
    fm.set_matrix("kaf.K", window_kernel());
    fm.set_matrix("kaf.y", m_y.head(m_ex.size()));
  }

  /// Restores what save() wrote; all or nothing. Checks that the window holds exactly the
  /// last min(t, B) steps, the inverse's shape, symmetry and diagonal, K_w against the
  /// window, and that alpha solves (K_w + lam I) alpha = y_w.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  void load(const FieldMap& fm) {
    SlidingKRLSParams p;
    p.kernel = read_kernel(fm);
    p.budget = fm.get_i64("budget");
    p.lam = fm.get_f64("lam");
    detail::validate_loaded(p);
    const Index d = detail::read_kaf_dim(fm);
    if (p.budget > (Index{1} << 31) / d - 1) detail::corrupt("budget too large for n_features");
    SlidingWindowKRLS fresh(d, p);
    fresh.read_base(fm, "sliding_krls");
    fresh.m_t = detail::read_kaf_steps(fm, fresh.m_count);
    fresh.m_ex.load(fm, d, 1, p.budget, p.budget + 1);
    const Index n = fresh.m_ex.size();
    check_window(fresh.m_ex.sv(), fresh.m_t, p.budget);
    fresh.m_r.assign(detail::read_spd_inverse(fm, "kaf.R", n));
    fresh.m_y.head(n) = detail::read_finite_vector(fm, "kaf.y", n);
    fresh.m_K.topLeftCorner(n, n) = detail::read_kernel_matrix(fm, "kaf.K", fresh.m_ex.sv(), p.kernel);
    if (n > 0) {
      const Eigen::MatrixXd M = fresh.window_matrix();
      const Vector alpha = fresh.m_ex.sv().A().col(0).head(n);
      const Vector y_w = fresh.m_y.head(n);
      const double scale = y_w.cwiseAbs().maxCoeff() + M.cwiseAbs().rowwise().sum().maxCoeff() * alpha.cwiseAbs().maxCoeff();
      if (!((y_w - M * alpha).cwiseAbs().maxCoeff() <= 1e-8 * scale))
        detail::corrupt("sliding-window KRLS coefficients do not solve (K + lam I) alpha = y");
    }
    *this = std::move(fresh);
  }

 private:
  /// Erases the oldest example (smallest id) from the store, the inverse and the targets,
  /// all three with swap-with-last.
  void erase_oldest() {
    const SupportVectors& sv = m_ex.sv();
    Index p = 0;
    for (Index i = 1; i < sv.size(); ++i)
      if (sv.id(i) < sv.id(p)) p = i;
    const Index last = m_ex.sv().erase(p);
    m_r.erase(p);
    m_y(p) = m_y(last);
    if (p != last) {  // K_w's symmetric permutation, then the old p (now last) is dropped
      m_K.row(p).head(last + 1).swap(m_K.row(last).head(last + 1));
      m_K.col(p).head(last + 1).swap(m_K.col(last).head(last + 1));
    }
  }

  /// The probe of the class comment: refactors R from K_w + lam I when it has drifted beyond
  /// 1e-12 cond_bound, cond_bound = 1 + n max_j k_jj / lam >= cond(K_w + lam I) (a fresh
  /// inverse's own residual is ~1e-16 cond).
  void check_drift() {
    const Eigen::MatrixXd M = window_matrix();
    const double cond_bound = 1.0 + static_cast<double>(M.rows()) * (M.diagonal().maxCoeff() - m_p.lam) / m_p.lam;
    if (m_r.probe_residual(M) > 1e-12 * cond_bound) m_r.refactor(M);
  }

  /// K_w + lam I (a compact copy).
  Eigen::MatrixXd window_matrix() const {
    Eigen::MatrixXd M = window_kernel();
    M.diagonal().array() += m_p.lam;
    return M;
  }

  /// The window of a loaded file must be the last min(t, B) steps, each once.
  static void check_window(const SupportVectors& sv, std::int64_t t, Index budget) {
    const Index n = sv.size();
    if (n != (std::min)(static_cast<std::int64_t>(budget), t)) detail::corrupt("window length disagrees with the steps taken");
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    for (Index i = 0; i < n; ++i) {
      const std::int64_t age = t - 1 - sv.id(i);  // 0 for the newest
      if (age < 0 || age >= n || seen[static_cast<std::size_t>(age)]) detail::corrupt("window ids are not the last steps");
      seen[static_cast<std::size_t>(age)] = true;
    }
  }

  /// alpha = R y_w refined once: alpha += R (y_w - (K_w + lam I) alpha), into the store's
  /// coefficients. Products in compact order (the same bits after a reload).
  void update_alpha() {
    const Index n = m_ex.size();
    detail::inverse_times(m_r, m_y, m_rk);
    auto alpha = m_rk.head(n);
    auto r = m_res.head(n);
    r = m_y.head(n) - m_p.lam * alpha;
    detail::add_product_compact_order(r, m_K.topLeftCorner(n, n), alpha, true);
    m_w.head(n).setZero();
    detail::add_product_compact_order(m_w.head(n), m_r.inverse(), r);
    alpha += m_w.head(n);
    detail::coef_column(m_ex.sv()) = alpha;
  }

  SlidingKRLSParams m_p;
  KernelExpansion m_ex;
  IncrementalInverse m_r;
  Eigen::MatrixXd m_K;  // (B + 1) x (B + 1); the valid block mirrors the store's order
  Vector m_y, m_rk, m_res, m_w;
  std::int64_t m_t = 0;
};

}  // namespace budgetkernel
