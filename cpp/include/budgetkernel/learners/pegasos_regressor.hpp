#pragma once
/// \file learners/pegasos_regressor.hpp
/// Budgeted SGD for regression: kernel Pegasos' step (Algorithm 1 of Wang, Crammer, Vucetic,
/// "Multi-class Pegasos on a Budget", ICML 2010, the BSGD paper) on the epsilon-insensitive,
/// squared and Huber losses, with one coefficient per SV and the classifier's budget
/// maintenance (budget/maintainer.hpp), whose merging and projection mathematics hold for any
/// coefficient column (here one).

#include "../budget/maintainer.hpp"
#include "combine_regression.hpp"
#include "pegasos_common.hpp"
#include "regressor_base.hpp"

#include <limits>
#include <sstream>
#include <stdexcept>

namespace budgetkernel {

/// The regression losses; files store the numbers.
enum class RegressionLoss : std::int32_t {
  EpsilonInsensitive = 0,  ///< max(0, |r| - epsilon) (support vector regression)
  Squared = 1,             ///< r^2 / 2 (kernel least mean squares with Pegasos' step)
  Huber = 2,               ///< r^2 / 2 for |r| <= epsilon, else epsilon (|r| - epsilon / 2)
};

inline constexpr detail::EnumName<RegressionLoss> regression_loss_names[] = {
    {RegressionLoss::EpsilonInsensitive, "epsilon_insensitive"},
    {RegressionLoss::Squared, "squared"},
    {RegressionLoss::Huber, "huber"}};

namespace detail {

/// The loss l(r) of residual r = y - f, and its slope -dl/df = dl/dr (a subgradient, 0 at the
/// kinks), which Pegasos' step multiplies by eta_t: beta_t = eta_t * slope.
inline double regression_loss(RegressionLoss loss, double eps, double r, double* slope) {
  const double a = std::abs(r);
  switch (loss) {
    case RegressionLoss::EpsilonInsensitive:
      *slope = a > eps ? (r > 0.0 ? 1.0 : -1.0) : 0.0;
      return (std::max)(0.0, a - eps);
    case RegressionLoss::Squared: *slope = r; return 0.5 * r * r;
    case RegressionLoss::Huber:
      *slope = a <= eps ? r : (r > 0.0 ? eps : -eps);
      return a <= eps ? 0.5 * r * r : eps * (a - 0.5 * eps);
  }
  *slope = 0.0;
  return 0.0;
}

}  // namespace detail

/// Parameters of the budgeted SGD regressor.
struct BSGDRegressorParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double lam = 1e-3;  ///< lambda of the objective lambda/2 ||w||^2 + mean loss; eta_t = 1 / (lambda (t + t0))
  /// Step offset t0 >= 0: eta_t = 1 / (lambda (t + t0)) (Bottou's SGD schedule; 0 is Pegasos'
  /// 1 / (lambda t)). Pegasos' first steps have eta ~ 1 / lambda, so with a small lambda the
  /// early expansion overshoots the targets by orders of magnitude; t0 ~ 1 / lambda starts at
  /// eta ~ 1 (as KLMS) and keeps the same limit (the minimiser of the objective).
  double t0 = 0.0;
  Index budget = 0;   ///< B; 0 = no budget
  Maintenance maintenance = Maintenance::Merge;
  RegressionLoss loss = RegressionLoss::EpsilonInsensitive;
  /// The insensitive zone of epsilon_insensitive, the threshold of huber (scikit-learn's
  /// SGDRegressor uses one `epsilon` for both); unused by squared.
  double epsilon = 0.1;
  /// Predict b + f(x) with b the running mean of the targets seen (the expansion learns the
  /// centred target); false: b = 0.
  bool fit_intercept = true;
  std::uint64_t seed = 0;  ///< seeds the generator of random removal

  void validate() const {
    detail::check_lam(lam);
    detail::require_non_negative(t0, "t0");
    detail::require_psd_kernel(kernel);
    detail::require(budget >= 0, "budget must be >= 1 (or 0 for no budget)");
    detail::require_enum(maintenance_names, maintenance, "maintenance");
    detail::require(budget == 0 || maintenance != Maintenance::Merge || kernel.unit_diagonal(), detail::kMergeNeedsRbf);
    detail::require_enum(regression_loss_names, loss, "loss");
    if (loss == RegressionLoss::Huber)
      detail::require_positive(epsilon, "epsilon");
    else
      detail::require_non_negative(epsilon, "epsilon");
  }
};

/// Kernel Pegasos for regression, with a budget (BSGD's Algorithm 1 with a regression loss).
///
/// The objective is lambda/2 ||w||^2 + (1/t) sum_s l(y_s - b_s - f(x_s)). Step t scores x_t
/// (the prequential prediction b + f(x_t)), shrinks w by (1 - 1/t), adds beta_t phi(x_t)
/// with beta_t = slope(r_t) / (lambda t) (the negative subgradient of l at the prediction;
/// t + t0 in place of t with the step offset t0 of the parameters),
/// runs one maintenance step when the store holds B + 1 SVs, and projects w onto the ball
/// that holds the minimiser: lambda/2 ||w*||^2 <= F(w*) <= F(0) = mean_s l(y_s - b_s), so
/// ||w*||^2 <= 2 L0 / lambda with L0 the largest l(y_s - b_s) seen (Pegasos' argument for its
/// radius 1/sqrt(lambda), with the regression loss at w = 0 in place of the hinge's 1). The
/// bias b is the running mean of the targets before the step; it is not regularised (with a
/// moving b the radius bounds the minimiser for the targets as centred so far, a heuristic
/// that only matters early: the ball is reached mostly in the first ~1/lambda steps).
///
/// As KernelPegasos: w = s * sum_j alpha_j phi(x_j) with a global scale s (the shrink and the
/// projection are O(1)), and ||w||^2 kept exactly and incrementally (docs/derivations.md,
/// "Pegasos: the scale trick"). Unlike KernelPegasos it always tracks ||w||^2 exactly (the
/// merging and removal steps keep their kernel-matrix cache), and has no averaging.
class BSGDRegressor : public OnlineRegressor<BSGDRegressor> {
 public:
  BSGDRegressor() = default;
  /// \param n_features  d (>= 1).  \param params  the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  BSGDRegressor(Index n_features, const BSGDRegressorParams& params) { reset(n_features, params); }

  /// Starts over: an empty model, counters at 0, the generator seeded from the parameters.
  void reset(Index n_features, const BSGDRegressorParams& params) {
    params.validate();
    init_base(n_features, params.budget);
    m_p = params;
    m_maint = BudgetMaintainer(params.maintenance, params.kernel, params.budget > 0);
    m_rng.seed(params.seed);
    const Index cap = params.budget > 0 ? params.budget + 1 : 64;
    m_sv.reset(n_features, 1, cap);
    m_maint.reserve(m_sv.capacity());
    m_scale = 1.0;
    m_norm2 = 0.0;
    m_bias = 0.0;
    m_loss0 = 0.0;
    detail::zero_fresh(m_krow, cap);
  }

  const BSGDRegressorParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_sv; }
  double scale() const { return m_scale; }
  double norm2() const { return m_norm2; }
  /// The intercept b (the running mean of the targets when fit_intercept).
  double intercept() const { return m_bias; }
  /// The largest loss at w = 0 seen: ||w||^2 <= 2 max_loss0() / lambda (the class comment).
  double max_loss0() const { return m_loss0; }
  /// True coefficients s * alpha, one row per SV.
  RowMatrix coefficients() const { return m_scale * m_sv.A().topRows(m_sv.size()); }

  /// One example: the prequential prediction b + f(x), then the step of the class comment.
  /// \param xp  n_features() values, already checked.  \param y  its target, already checked.
  /// \return the prediction made before learning.
  double step(const double* xp, double y) {
    const Eigen::Map<const Vector> x(xp, m_d);
    const double xsq = x.squaredNorm();
    const double f = score(x, xsq);
    const double pred = m_bias + f;
    const std::int64_t t = ++m_count.examples;
    const double tt = static_cast<double>(t) + m_p.t0;  // t + t0 (exactly t when t0 = 0)
    const double shrink = 1.0 - 1.0 / tt;               // 1 - eta_t lambda
    double slope = 0.0, slope0 = 0.0;
    detail::regression_loss(m_p.loss, m_p.epsilon, y - pred, &slope);
    const double loss0 = (std::max)(m_loss0, detail::regression_loss(m_p.loss, m_p.epsilon, y - m_bias, &slope0));
    if (slope0 != 0.0 && !(loss0 >= (std::numeric_limits<double>::min)())) {
      --m_count.examples;  // nothing of this example is learned
      refuse_tiny_targets(y - m_bias);
    }
    m_loss0 = loss0;
    shrink_weights(shrink);
    if (slope != 0.0) {
      add_example(x, xsq, t, shrink * f, slope / (m_p.lam * tt));
      if ((m_p.budget > 0 && m_sv.size() > m_p.budget) || m_maint.must_reduce()) maintain_budget();
    }
    project_onto_ball();
    if (m_scale < detail::min_scale) {  // fold the scale into alpha before it underflows
      m_sv.scale(m_scale);
      m_scale = 1.0;
    }
    if (m_p.fit_intercept) m_bias += (y - m_bias) / static_cast<double>(t);
    return pred;
  }

  /// The prediction b + f(x). `dots`: x's dot products with the SVs when known, else null.
  double decision(const double* xp, const double* dots = nullptr) const {
    const Index n = m_sv.size();
    if (n == 0) return m_bias;
    const Eigen::Map<const Vector> x(xp, m_d);
    thread_local Vector krow, f(1);
    if (krow.size() < n) krow.resize(n);
    m_sv.kernel_row(m_p.kernel, x, x.squaredNorm(), krow, dots);
    m_sv.scores(krow, f);
    return m_bias + m_scale * f(0);
  }

  /// decision() for every row of X, bit for bit, with dot products per block of rows.
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, double* out, StopPoll* stop) const {
    thread_local RowMatrix D;
    detail::for_row_blocks(X.rows(), m_sv.size(), stop, [&](Index i, Index b) {
      m_sv.dots_rows(X.middleRows(i, b), D);
      for (Index r = 0; r < b; ++r) out[i + r] = decision(X.row(i + r).data(), m_sv.empty() ? nullptr : D.row(r).data());
    });
  }

  // ---- combine (learners/combine_regression.hpp): a self-contained block ----
  /// combine() of one model within `budget` is a copy of it.
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  bool combine_is_copy(Index budget) const { return budget < 0 || budget == m_p.budget; }
  Index combine_size() const { return m_sv.size(); }

  /// This model becomes b + sum_k w_k f_k of `models`, as KernelPegasos::combine_from: the
  /// union of their SVs with coefficients w_k s_k alpha (scale 1) and the intercept
  /// sum_k w_k b_k. Over the budget the SVs enter most important first and each overflow runs
  /// this learner's maintenance step (projection or removal as in a stream; merging with the
  /// widened search MergeSearch::widened), rep.degradation summing their ||Delta w||^2 (eq. 14).
  /// ||w||^2 is recomputed exactly; the ball's L0 is the largest of the models' (the largest
  /// loss at w = 0 any of them saw); the generator is model 0's; the counters are
  /// combined_regression_counters (base counted once: the step size 1/(lambda t) goes on from
  /// the combined t).
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null.
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const BSGDRegressor*>& models, const CombinePlan& plan,
                    const BSGDRegressor* base, CombineReport& rep) {
    BSGDRegressorParams p = models[0]->m_p;
    for (const BSGDRegressor* m : models) check_combinable(p, m->m_p);
    if (plan.budget >= 0) p.budget = plan.budget;
    reset(models[0]->m_d, p);
    m_rng = models[0]->m_rng;
    const detail::ExpansionUnion u = detail::regression_union(models, plan, rep);
    // Merging folds the union's SVs by the widened search, without the maintainer's cache
    // (rebuilt at the end); projection and removal reduce as in a stream.
    const bool widened = m_p.maintenance == Maintenance::Merge && m_p.budget > 0;
    Merging widened_merge(m_p.kernel, MergeSearch::widened());
    widened_merge.track_norm(false, m_sv);
    for (Index r : detail::combine_order(u, m_p.budget, m_p.kernel)) {
      const Eigen::Map<const Vector> x(u.x(r), m_d);
      const double xsq = x.squaredNorm();
      if (m_krow.size() < m_sv.size() + 1) m_krow.conservativeResize(2 * (m_sv.size() + 1));
      if (!widened) m_sv.kernel_row(m_p.kernel, x, xsq, m_krow);
      m_sv.push(x, u.alpha(r), u.id(r));
      if (!widened) m_maint.on_push(m_sv, m_krow, m_p.kernel.self(xsq));
      if ((m_p.budget > 0 && m_sv.size() > m_p.budget) || m_maint.must_reduce()) {
        rep.degradation += (widened ? widened_merge.reduce(m_sv, m_p.kernel)
                                    : m_maint.reduce(m_sv, m_p.kernel, m_rng)).degradation;
        ++rep.reductions;
      }
    }
    if (widened) m_maint.rebuild(m_sv, m_p.kernel);
    m_count = detail::combined_regression_counters(models, base);
    m_count.degradation += rep.degradation;
    m_count.maintenance += rep.reductions;
    m_bias = detail::combined_intercept(models, plan);
    for (const BSGDRegressor* m : models) m_loss0 = (std::max)(m_loss0, m->m_loss0);
    const double w = unsquared_norm();
    m_norm2 = w * w;
    metadata = models[0]->metadata;
  }

  /// combine_from's check: the models must share every parameter but the seed.
  static void check_combinable(const BSGDRegressorParams& a, const BSGDRegressorParams& b) {
    const auto same = [](bool ok, const char* what) {
      detail::require(ok, std::string("combine: the models' ") + what + " differ");
    };
    same(detail::same_kernel(a.kernel, b.kernel), "kernels");
    same(a.lam == b.lam && a.t0 == b.t0, "lam or t0");
    same(a.budget == b.budget, "budgets");
    same(a.maintenance == b.maintenance, "maintenance strategies");
    same(a.loss == b.loss && a.epsilon == b.epsilon, "losses (loss, epsilon)");
    same(a.fit_intercept == b.fit_intercept, "fit_intercept settings");
  }
  // ---- end of the combine block ----

  /// Every field needed to predict (budgetkernel::Model reads sv.*, scale, bias) and to resume.
  void save(FieldMap& fm) const {
    write_base(fm, "bsgd_regressor");
    write_kernel(fm, m_p.kernel);
    fm.set("lam", m_p.lam);
    if (m_p.t0 != 0.0) fm.set("t0", m_p.t0);  // format v1: written only when nonzero
    fm.set_int("budget", m_p.budget);
    fm.set_int("maintenance", static_cast<std::int64_t>(m_p.maintenance));
    fm.set_int("loss", static_cast<std::int64_t>(m_p.loss));
    fm.set("epsilon", m_p.epsilon);
    fm.set_int("fit_intercept", m_p.fit_intercept ? 1 : 0);
    fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
    fm.set_bytes("rng", detail::rng_state(m_rng));
    fm.set("scale", m_scale);
    fm.set("norm2", m_norm2);
    fm.set("loss0", m_loss0);
    fm.set_matrix("bias", RowMatrix::Constant(1, 1, m_bias));
    write_svs(fm, m_sv);
    m_maint.save(fm);
  }

  /// Replaces this learner by the one save() wrote, checked field by field.
  /// \throws std::runtime_error ("model file: ...") if the fields are not a valid model.
  void load(const FieldMap& fm) {
    BSGDRegressorParams p;
    p.kernel = read_kernel(fm);
    p.lam = fm.get_f64("lam");
    p.t0 = fm.has("t0") ? fm.get_f64("t0") : 0.0;  // absent: 0 (see save)
    p.budget = fm.get_i64("budget");
    p.maintenance = detail::enum_from_code(maintenance_names, fm.get_i64("maintenance"), "maintenance");
    p.loss = detail::enum_from_code(regression_loss_names, fm.get_i64("loss"), "loss");
    p.epsilon = fm.get_f64("epsilon");
    p.fit_intercept = fm.get_i64("fit_intercept") != 0;
    p.seed = static_cast<std::uint64_t>(fm.get_i64("seed"));
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto d = fm.get_i64("n_features");
    const Field& x = fm.get("sv.x", Field::F64);  // n_features sizes the store: check it first
    if (d < 1 || d > (std::int64_t{1} << 40) || x.shape.size() != 2 || x.shape[1] != static_cast<std::uint64_t>(d))
      detail::corrupt("n_features does not match the columns of 'sv.x'");
    try {
      reset(d, p);
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    read_base(fm, "bsgd_regressor");
    detail::set_rng_state(m_rng, fm.get_bytes("rng"));
    m_scale = fm.get_f64("scale");
    m_norm2 = fm.get_f64("norm2");
    m_loss0 = fm.get_f64("loss0");
    m_bias = fm.get_matrix("bias", 1, 1)(0, 0);
    if (!(m_scale >= detail::min_scale && m_scale <= 1.0) || !(m_norm2 >= 0.0) || !std::isfinite(m_norm2) ||
        !(m_loss0 >= 0.0) || !std::isfinite(m_loss0) || !std::isfinite(m_bias) || (!p.fit_intercept && m_bias != 0.0))
      detail::corrupt("invalid scale, norm, loss or bias");
    read_svs(fm, d, 1, p.budget, p.budget > 0 ? p.budget + 1 : 64, m_sv);
    detail::zero_fresh(m_krow, m_sv.capacity());
    m_maint.load(fm, m_sv, p.kernel);
  }

 private:
  /// The kernel row of x (into m_krow, room for one more SV) and f(x) of w_t.
  double score(const Eigen::Map<const Vector>& x, double xsq) {
    const Index n = m_sv.size();
    if (m_krow.size() < n + 1) m_krow.conservativeResize(2 * (n + 1));
    if (n == 0) return 0.0;
    m_sv.kernel_row(m_p.kernel, x, xsq, m_krow);
    Eigen::Matrix<double, 1, 1> f;
    m_sv.scores(m_krow, f);
    return m_scale * f(0);
  }

  /// Algorithm 1, line 2: w <- (1 - 1/(t + t0)) w on the global scale; at t = 1 with t0 = 0 the factor is 0.
  void shrink_weights(double shrink) {
    if (shrink == 0.0) {
      m_sv.clear();
      m_maint.on_clear();
      m_scale = 1.0;
      m_norm2 = 0.0;
    } else {
      m_scale *= shrink;
      m_norm2 *= shrink * shrink;
    }
  }

  /// Algorithm 1, line 4: w <- w + beta phi(x), stored as beta / s; ||w + beta phi||^2 =
  /// ||w||^2 + 2 beta f_shrunk(x) + beta^2 k(x, x), with f_shrunk the score of the shrunk w.
  void add_example(const Eigen::Map<const Vector>& x, double xsq, std::int64_t t, double f_shrunk, double beta) {
    const double kappa = m_p.kernel.self(xsq);
    m_norm2 = (std::max)(0.0, m_norm2 + 2.0 * beta * f_shrunk + beta * beta * kappa);
    m_sv.push(x, Eigen::Matrix<double, 1, 1>(beta / m_scale), t);
    m_maint.on_push(m_sv, m_krow, kappa);
    ++m_count.updates;
  }

  /// Algorithm 1, lines 6-8: one maintenance step; its ||Delta w||^2 (eq. 14) is counted and
  /// its exact norm change kept (the maintainer always tracks the norm here).
  void maintain_budget() {
    const MaintenanceResult r = m_maint.reduce(m_sv, m_p.kernel, m_rng);
    const double s2 = m_scale * m_scale;
    const double norm2 = m_norm2 + s2 * r.norm_change;
    m_norm2 = std::isfinite(norm2) ? (std::max)(0.0, norm2) : std::numeric_limits<double>::infinity();
    const double degradation = s2 * r.degradation;
    m_count.degradation += std::isnan(degradation) ? std::numeric_limits<double>::infinity() : degradation;
    ++m_count.maintenance;
  }

  /// The ball's radius^2 2 L0 / lambda is a square of the residuals: when every residual at
  /// w = 0 so far (y - b) is below ~1.5e-154 in magnitude, L0 underflows to 0 (or a subnormal)
  /// while the steps do not, and ||w||^2 underflows with it, so the projection that bounds
  /// Pegasos' early overshoot (steps of 1 / (lambda t)) no longer acts and the predictions
  /// land orders of magnitude off the targets. Refused: the remedy is a rescaled target.
  [[noreturn]] static void refuse_tiny_targets(double residual) {
    std::ostringstream msg;
    msg << "BSGDRegressor: the targets are too small for the regression loss's arithmetic: |y - mean(y)| = "
        << std::abs(residual)
        << " so far, whose square (the loss and the radius of Pegasos' projection) underflows below 1e-308; "
           "rescale the targets (e.g. y / y.std()) and scale the predictions back";
    throw std::invalid_argument(msg.str());
  }

  /// Algorithm 1, line 9, with the regression radius: ||w||^2 <= 2 L0 / lambda (class comment).
  void project_onto_ball() {
    const double r2 = 2.0 * m_loss0 / m_p.lam;
    if (!(m_norm2 > r2)) return;
    if (r2 == 0.0) {  // radius 0 (every loss at w = 0 was 0): w = 0
      shrink_weights(0.0);
      return;
    }
    if (!std::isfinite(m_norm2)) {  // ||w||^2 overflowed (beta^2 k(x, x) beyond the double range)
      const double w = unsquared_norm();
      if (!(w * w > r2)) {
        m_norm2 = w * w;
        return;
      }
      m_scale *= std::sqrt(r2) / w;
    } else {
      m_scale *= std::sqrt(r2 / m_norm2);
    }
    m_norm2 = r2;
  }

  /// ||w|| = s ||sum_j alpha_j phi(x_j)|| without squaring beyond the double range: with
  /// c = max_j |alpha_j| sqrt(k_jj), every term of the quadratic form of alpha / c is at most
  /// 1 in magnitude (Cauchy-Schwarz), so ||w|| = s c sqrt(form). O(n^2 d), only on overflow.
  double unsquared_norm() const {
    const Index n = m_sv.size();
    double c = 0.0;
    for (Index j = 0; j < n; ++j)
      c = (std::max)(c, std::abs(m_sv.alpha(j)(0)) * std::sqrt(std::abs(m_p.kernel.self(m_sv.sqnorm()(j)))));
    if (!(c > 0.0)) return 0.0;
    const Vector a = m_sv.A().topRows(n).col(0) / c;
    Vector krow(n + 1);
    double form = 0.0;
    for (Index i = 0; i < n; ++i) {
      m_sv.kernel_row(m_p.kernel, m_sv.x(i).transpose(), m_sv.sqnorm()(i), krow);
      form += a(i) * a.dot(krow.head(n));
    }
    return m_scale * c * std::sqrt((std::max)(0.0, form));
  }

  BSGDRegressorParams m_p;
  SupportVectors m_sv;
  BudgetMaintainer m_maint;
  std::mt19937_64 m_rng;
  double m_scale = 1.0, m_norm2 = 0.0, m_bias = 0.0, m_loss0 = 0.0;
  Vector m_krow;
};

}  // namespace budgetkernel
