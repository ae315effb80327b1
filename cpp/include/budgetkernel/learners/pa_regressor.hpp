#pragma once
/// \file learners/pa_regressor.hpp
/// Passive-Aggressive regression (Crammer et al., "Online Passive-Aggressive Algorithms",
/// JMLR 2006, section 5: PA, PA-I, PA-II on the epsilon-insensitive loss) with the budgeted
/// steps of Wang & Vucetic, "Online Passive-Aggressive Algorithms on a Budget" (AISTATS 2010;
/// BPA-S, BPA-NN, BPA-P), the loss-proportional sampling of Lu, Zhao & Hoi, "Online Sparse
/// Passive Aggressive Learning with Kernels" (SDM 2016; SPA) and the averaged regressor.
/// docs/derivations.md, "PA regression on a budget", shows that the regression step is the
/// binary classifier's with the label replaced by the sign of the residual.

#include "bpa_rules.hpp"
#include "combine_regression.hpp"
#include "passive_aggressive.hpp"
#include "regressor_base.hpp"
#include "sparse_pa.hpp"

#include <limits>

namespace budgetkernel {

/// The budget variants of the regressor (BPA-S, BPA-NN, BPA-P; PA+Rand is not offered).
inline constexpr detail::EnumName<BPAVariant> pa_regressor_variant_names[] = {
    {BPAVariant::Simple, "simple"}, {BPAVariant::NearestNeighbor, "nn"}, {BPAVariant::Project, "project"}};

/// Parameters of PARegressor.
struct PARegressorParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double C = 1.0;            ///< aggressiveness; > 0 and finite (ignored by pa_type 0)
  std::int32_t pa_type = 1;  ///< 0 = PA, 1 = PA-I, 2 = PA-II (Crammer et al. 2006, section 5)
  double epsilon = 0.1;      ///< the insensitive zone, >= 0
  Index budget = 0;          ///< B; 0 = unbudgeted PA
  BPAVariant variant = BPAVariant::NearestNeighbor;
  bool sampling = false;  ///< SPA: add an SV with probability rho = min(alpha, loss) / beta
  double alpha = 1.0;     ///< SPA's loss cap, > 0
  double beta = 20.0;     ///< SPA's divisor, >= alpha
  bool averaged = false;  ///< predict with the mean of every regressor held (UniformAverage)
  bool fit_intercept = true;  ///< b = the running mean of the targets (as BSGDRegressor)
  std::uint64_t seed = 0;     ///< the generator of SPA's draws

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_positive(C, "C");
    detail::require(pa_type >= 0 && pa_type <= 2, "pa_type must be 0 (PA), 1 (PA-I) or 2 (PA-II)");
    detail::require_non_negative(epsilon, "epsilon");
    detail::require(budget >= 0, "budget must be >= 1 (or 0 for no budget)");
    detail::require_enum(pa_regressor_variant_names, variant, "variant");
    detail::require_positive(alpha, "alpha");
    detail::require(std::isfinite(beta) && beta >= alpha, "beta must be a finite number >= alpha");
  }
};

/// Kernel PA regression, unbudgeted or on a budget of B SVs.
///
/// Step t: residual r = y - b - f(x_t), loss l = max(0, |r| - epsilon), s = sign(r). With
/// l > 0 (and, sampling, Z ~ Bernoulli(rho) = 1) the PA step adds tau s k(x_t, .) with q =
/// k(x_t, x_t): tau = l / q (PA), min(C w, l / q) (PA-I), l / (q + 1 / (2 C w)) (PA-II),
/// where w = Z / rho is SPA's unbiased weight of the loss (eq. 2.1; w = 1 without sampling).
/// With a full store, BPA's Algorithm 1 with u = s: every candidate r (an SV, or t itself)
/// projects x_r's part onto S (BPA-S: {t}, BPA-NN: {t, NN(r)}, BPA-P: every other SV) and
/// the least objective Q (eq. 7) wins; the closed forms are the binary classifier's
/// (PassiveAggressive) with the label replaced by s, because removing x_r and projecting it
/// onto a set that holds x_t leaves f(x_t), hence r, s and l, unchanged.
class PARegressor : public OnlineRegressor<PARegressor> {
 public:
  PARegressor() { reset(1, PARegressorParams{}); }
  /// \param n_features  d (>= 1).  \param params  the parameters (validated).
  /// \param sampling    SPA's draw (tests replace it; files do not store it).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  PARegressor(Index n_features, const PARegressorParams& params, SPASampling sampling = spa_bernoulli)
      : m_sampling(sampling) {
    reset(n_features, params);
  }

  /// Starts over: an empty model, counters at 0, the generator seeded from the parameters.
  void reset(Index n_features, const PARegressorParams& params) {
    params.validate();
    init_base(n_features, params.budget);
    m_p = params;
    const Index cap = params.budget > 0 ? params.budget + 1 : 64;
    m_ex.reset(n_features, 1, params.kernel, cap);
    m_avg.reset(m_ex.sv(), params.averaged);
    m_rng.seed(params.seed);
    m_bpa.proj = Projection();  // BPA-P's inverse, inactive until the store first fills
    m_bpa.nn.reset(params.budget > 0 && params.variant == BPAVariant::NearestNeighbor ? cap : 1);
    m_bpa.obj.resize(0);
    m_bpa.beta.resize(0);
    m_u.setOnes(1);
    m_row.setZero(1);
    m_bpa.removed = -1;
    m_bpa.rule = &detail::bpa_rule(params.variant, params.budget, detail::BPASimple::Residual::Coefficient);
    m_bias = m_bias_sum = m_rho_sum = 0.0;
  }

  const PARegressorParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  RowMatrix coefficients() const { return m_ex.sv().A().topRows(m_ex.size()); }
  const UniformAverage& average() const { return m_avg; }
  /// Regressors held so far (f_1 = 0 included): what the average divides by.
  double n_classifiers() const { return static_cast<double>(m_count.examples) + 1.0; }
  /// The current intercept b (the running mean of the targets when fit_intercept).
  double intercept() const { return m_bias; }
  /// The intercept predictions use: b, or the mean of b_1 = 0, ..., b_N when averaged.
  double predict_intercept() const { return m_avg.enabled() ? m_bias_sum / n_classifiers() : m_bias; }
  /// SPA: sum_t rho_t so far, the expected number of sampled SVs.
  double expected_support() const { return m_rho_sum; }
  /// Test hooks of the last budgeted step, as PassiveAggressive's (Q of every candidate,
  /// index n for r = t; the chosen index). Empty / -1 before any such step and after load().
  const Vector& last_objectives() const { return m_bpa.obj; }
  Index last_removed() const { return m_bpa.removed; }

  /// One example: the prequential prediction, then the step of the class comment.
  /// \param x  n_features() values, already checked.  \param y  its target, already checked.
  /// \return the prediction made before learning (of the average when averaged).
  double step(const double* x, double y) {
    const double kappa = m_ex.score(x);
    const double f = m_ex.f()(0);
    const double pred = m_avg.enabled() ? averaged_prediction(x) : m_bias + f;
    const double t = static_cast<double>(++m_count.examples);
    const double r = y - m_bias - f;
    const double L = std::abs(r) - m_p.epsilon;
    if (L > 0.0 && kappa > 0.0 && sampled(L)) {
      m_u(0) = r > 0.0 ? 1.0 : -1.0;
      m_avg.begin_all(m_ex.sv(), t);
      update(x, y, kappa, L);
      m_avg.end_all(m_ex.sv(), t);
    }
    if (m_p.fit_intercept) m_bias += (y - m_bias) / t;
    m_bias_sum += m_bias;  // b of the regressor N = t + 1
    return pred;
  }

  /// The prediction (of the average when averaged); thread-safe for concurrent readers.
  /// `dots` / `retired_dots`: x's dot products with the SVs / retired SVs when known.
  double decision(const double* x, const double* dots = nullptr, const double* retired_dots = nullptr) const {
    double f = 0.0;
    m_avg.decision(m_ex, x, n_classifiers(), &f, dots, retired_dots);
    return predict_intercept() + f;
  }
  /// decision() for every row of X, bit for bit, with dot products per block of rows.
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, double* out, StopPoll* stop) const {
    Eigen::Map<RowMatrix> o(out, X.rows(), 1);
    m_avg.decision_rows(m_ex, X, n_classifiers(), o, stop);
    const double b = predict_intercept();
    for (Index i = 0; i < X.rows(); ++i) out[i] = b + out[i];
  }

  // ---- combine (learners/combine_regression.hpp): a self-contained block ----
  /// combine() of one model within `budget` is a copy of it.
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  bool combine_is_copy(Index budget) const { return budget < 0 || budget == m_p.budget; }
  Index combine_size() const { return m_ex.size(); }

  /// This model becomes b + sum_k w_k f_k of `models`, as PassiveAggressive::combine_from
  /// with one output: the union of their SVs with coefficients w_k alpha and, averaged,
  /// sum_k w_k fbar_k as the average (detail::averaged_union; the averaged intercept
  /// sum_k w_k mean(b_k) too), reduced to the budget by the variant's rule without a new
  /// example (detail::bpa_combine); rep.degradation sums the exact ||Delta f||^2 of
  /// those steps. The counters are combined_regression_counters plus the reduction's steps,
  /// SPA's rho_sum adds up as they do, the intercept is combined_intercept, the generator is
  /// model 0's.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counted once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const PARegressor*>& models, const CombinePlan& plan, const PARegressor* base,
                    CombineReport& rep) {
    PARegressorParams p = models[0]->m_p;
    for (const PARegressor* m : models) check_combinable(p, m->m_p);
    if (plan.budget >= 0) p.budget = plan.budget;
    m_sampling = models[0]->m_sampling;
    reset(models[0]->m_d, p);
    m_rng = models[0]->m_rng;
    const RegressionCounters count = detail::combined_regression_counters(models, base);
    const double N = static_cast<double>(count.examples) + 1.0;  // the result's n_classifiers()
    m_count = RegressionCounters{};  // counts the reduction's maintenance steps
    detail::BPAContext c = context();
    detail::bpa_combine(*m_bpa.rule, c, models, plan, N, m_bpa.obj, rep);
    rep.degradation = m_count.degradation;
    rep.reductions = m_count.maintenance;
    m_count = count;
    m_count.degradation += rep.degradation;
    m_count.maintenance += rep.reductions;
    combine_intercepts(models, plan, base, N);
    m_bpa.obj.resize(0);  // the test hooks read as after load()
    m_bpa.removed = -1;
    metadata = models[0]->metadata;
  }
  // ---- end of the combine block ----

  /// Every field to predict (budgetkernel::Model: sv.*, scale, bias, predict.* when averaged)
  /// and to resume bit for bit.
  void save(FieldMap& fm) const {
    write_base(fm, "pa_regressor");
    m_ex.save(fm);
    fm.set("C", m_p.C);
    fm.set_int("pa_type", m_p.pa_type);
    fm.set("epsilon", m_p.epsilon);
    fm.set_int("budget", m_p.budget);
    fm.set_int("variant", static_cast<std::int64_t>(m_p.variant));
    fm.set_int("sampling", m_p.sampling ? 1 : 0);
    fm.set("alpha", m_p.alpha);
    fm.set("beta", m_p.beta);
    fm.set_int("averaged", m_p.averaged ? 1 : 0);
    fm.set_int("fit_intercept", m_p.fit_intercept ? 1 : 0);
    fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
    fm.set_bytes("rng", detail::rng_state(m_rng));
    fm.set("intercept", m_bias);
    fm.set("intercept_sum", m_bias_sum);
    fm.set("rho_sum", m_rho_sum);
    fm.set_matrix("bias", RowMatrix::Constant(1, 1, predict_intercept()));
    detail::save_bpa_state(fm, m_p.variant, m_p.budget, m_bpa.nn, m_bpa.proj);
    m_avg.save(fm, m_ex.sv(), n_classifiers());
  }

  /// Restores what save() wrote; all or nothing.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  void load(const FieldMap& fm) {
    PARegressorParams p;
    p.kernel = read_kernel(fm);
    p.C = fm.get_f64("C");
    p.pa_type = detail::read_pa_type(fm);
    p.epsilon = fm.get_f64("epsilon");
    p.budget = fm.get_i64("budget");
    p.variant = detail::enum_from_code(pa_regressor_variant_names, fm.get_i64("variant"), "variant");
    p.sampling = fm.get_i64("sampling") != 0;
    p.alpha = fm.get_f64("alpha");
    p.beta = fm.get_f64("beta");
    p.averaged = fm.get_i64("averaged") != 0;
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
    PARegressor fresh;
    fresh.m_sampling = m_sampling;
    try {
      fresh.reset(d, p);
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    fresh.read_base(fm, "pa_regressor");
    fresh.m_ex.load(fm, d, 1, p.budget, p.budget > 0 ? p.budget + 1 : 64);
    for (Index i = 0; i < fresh.m_ex.size(); ++i)
      if (fresh.m_ex.sv().id(i) < 1 || fresh.m_ex.sv().id(i) > fresh.m_count.examples) detail::corrupt("invalid SV id");
    detail::set_rng_state(fresh.m_rng, fm.get_bytes("rng"));
    fresh.m_bias = fm.get_f64("intercept");
    fresh.m_bias_sum = fm.get_f64("intercept_sum");
    fresh.m_rho_sum = fm.get_f64("rho_sum");
    if (!std::isfinite(fresh.m_bias) || !std::isfinite(fresh.m_bias_sum) || (!p.fit_intercept && fresh.m_bias != 0.0) ||
        !(fresh.m_rho_sum >= 0.0) || !std::isfinite(fresh.m_rho_sum))
      detail::corrupt("invalid intercept or rho_sum");
    detail::load_bpa_state(fm, p.variant, p.budget, fresh.m_ex.sv(), fresh.m_bpa.nn, fresh.m_bpa.proj);
    fresh.m_avg.load(fm, fresh.m_ex.sv());
    if (fresh.m_avg.enabled() != p.averaged) detail::corrupt("averaging flag disagrees with the averaged state");
    *this = std::move(fresh);
  }

 private:
  /// The PA step (pa_step.hpp) with SPA's weight of this step: C Z / rho, C without sampling.
  detail::PAStep rule() const { return {m_p.pa_type, m_cw}; }

  /// combine_from's check: the models must share every parameter but the seed.
  static void check_combinable(const PARegressorParams& a, const PARegressorParams& b) {
    detail::require_same(detail::same_kernel(a.kernel, b.kernel), "kernels");
    detail::require_same(a.C == b.C && a.pa_type == b.pa_type && a.epsilon == b.epsilon, "C, pa_type or epsilon");
    detail::require_same(a.budget == b.budget && a.variant == b.variant, "budgets or variants");
    detail::require_same(a.sampling == b.sampling && a.alpha == b.alpha && a.beta == b.beta,
                         "sampling settings (sampling, alpha, beta)");
    detail::require_same(a.averaged == b.averaged, "averaged flags");
    detail::require_same(a.fit_intercept == b.fit_intercept, "fit_intercept settings");
  }

  /// combine_from's intercepts: b = sum_k w_k b_k; the averaged one mean(b) = sum_k w_k
  /// mean(b_k), i.e. intercept_sum = N sum_k w_k intercept_sum_k / N_k (kept averaged or not,
  /// as step() keeps it); rho_sum, a sum over examples, adds up as the counters do.
  void combine_intercepts(const std::vector<const PARegressor*>& models, const CombinePlan& plan,
                          const PARegressor* base, double N) {
    m_bias = detail::combined_intercept(models, plan);
    m_bias_sum = 0.0;
    m_rho_sum = 0.0;
    for (std::size_t k = 0; k < models.size(); ++k) {
      m_bias_sum += plan.w[k] * models[k]->m_bias_sum / models[k]->n_classifiers();
      m_rho_sum += models[k]->m_rho_sum;
    }
    m_bias_sum *= N;
    if (base) m_rho_sum -= (static_cast<double>(models.size()) - 1.0) * base->m_rho_sum;
    m_rho_sum = (std::max)(m_rho_sum, 0.0);
  }

  /// mean_k b_k + fbar(x) for the example just scored (before step t counts it).
  double averaged_prediction(const double* x) {
    const double N = n_classifiers();
    m_favg = m_ex.f();
    m_avg.add_to_scores(m_ex.sv(), m_ex.kernel(), Eigen::Map<const Vector>(x, m_d), m_ex.last_sqnorm(), m_ex.krow(), N,
                        m_favg);
    return m_bias_sum / N + m_favg(0);
  }

  /// SPA's draw for loss L > 0 (always true without sampling); sets the weight w = Z / rho of
  /// the loss in the step (SPA eq. 2.1), 1 without sampling.
  bool sampled(double L) {
    m_cw = m_p.C;
    if (!m_p.sampling) return true;
    const double rho = (std::min)(m_p.alpha, L) / m_p.beta;
    m_rho_sum += rho;
    if (!m_sampling(m_rng, rho)) return false;
    m_cw = m_p.C / rho;
    return true;
  }

  /// What the budget rule reads and changes.
  detail::BPAContext context() {
    return detail::bpa_context(m_ex, m_avg, m_bpa, m_count, m_rng, m_p.kernel, m_p.budget);
  }

  /// The PA / BPA step for loss L > 0 in direction u = sign of the residual.
  void update(const double* x, double y, double kappa, double L) {
    detail::BPAContext c = context();
    if (!(m_p.budget > 0 && m_ex.size() >= m_p.budget)) return add_example(c, x, kappa, L);
    if (m_bpa.rule->prepare_full(c)) {
      // The fold changed the model (projection.hpp's lazy activation): decide afresh.
      kappa = m_ex.score(x);
      const double r = y - m_bias - m_ex.f()(0);
      L = std::abs(r) - m_p.epsilon;
      m_u(0) = r > 0.0 ? 1.0 : -1.0;
      if (L > 0.0 && kappa > 0.0)
        add_example(c, x, kappa, L);
      else
        ++m_count.updates;  // the fold alone changed the model
      return;
    }
    // ||u||^2 = 1: the binary classifier's step (the class comment).
    const detail::BPAExample e{x, kappa, L, m_u, 1.0, rule(), m_count.examples};
    detail::bpa_budgeted_update(*m_bpa.rule, c, e, m_bpa.obj, m_row);
  }

  /// Unbudgeted PA (and the under-budget branch): x_t joins with coefficient tau s.
  void add_example(detail::BPAContext& c, const double* x, double kappa, double L) {
    m_row = rule().step_size(L, kappa) * m_u;
    detail::bpa_add(*m_bpa.rule, c, x, kappa, m_row, m_count.examples);
  }

  SPASampling m_sampling = spa_bernoulli;
  PARegressorParams m_p;
  KernelExpansion m_ex;
  std::mt19937_64 m_rng;
  UniformAverage m_avg;
  detail::BPASideState m_bpa;  // the variant's rule and its side state
  Vector m_favg;  // the averaged score
  Vector m_u, m_row;  // the step's direction (sign(r), one value); a coefficient-row buffer
  double m_cw = 1.0;  // the step's weight C Z / rho
  double m_bias = 0.0, m_bias_sum = 0.0, m_rho_sum = 0.0;
};

}  // namespace budgetkernel
