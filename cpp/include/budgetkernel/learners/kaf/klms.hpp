#pragma once
/// \file learners/kaf/klms.hpp
/// Kernel least-mean-squares filters:
///   - KLMS (Liu, Pokharel & Principe, "The Kernel Least-Mean-Square Algorithm", IEEE Trans.
///     Signal Processing 56(2), 2008; Liu, Principe & Haykin, *Kernel Adaptive Filtering*,
///     Wiley 2010, chapter 2): stochastic gradient descent on the squared error in the RKHS,
///     f_t = f_{t-1} + eta e_t k(x_t, .), e_t = y_t - f_{t-1}(x_t); every example a centre.
///   - QKLMS (Chen, Zhao, Zhu & Principe, "Quantized Kernel Least Mean Square Algorithm",
///     IEEE Trans. Neural Networks and Learning Systems 23(1), 2012, Algorithm 1): the same
///     step, but an input within distance epsilon of its nearest centre adds eta e_t to that
///     centre's coefficient instead of becoming a centre (online vector quantisation).
/// Cost per step: O(n d) for n centres (one pass of dot products gives both the kernel row
/// and, for QKLMS, the distances).

#include "../combine_regression.hpp"
#include "kaf_common.hpp"

namespace budgetkernel {

/// Parameters of KLMS.
struct KLMSParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double eta = 0.5;  ///< step size (learning rate) eta; > 0, finite; < 2 with RBF (detail::require_lms_step)

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_positive(eta, "eta");
    detail::require_lms_step(kernel, eta);
  }
};

/// Parameters of QKLMS.
struct QKLMSParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double eta = 0.5;      ///< step size eta; > 0, finite; < 2 with RBF (detail::require_lms_step)
  /// Quantisation size epsilon_U (input-space Euclidean distance); >= 0, finite. An input x
  /// with ||x - c|| <= epsilon for its nearest centre c updates c. 0 turns quantisation off:
  /// every input becomes a centre, exactly as in KLMS (an exact duplicate of a centre too).
  double epsilon = 0.1;

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_positive(eta, "eta");
    detail::require_lms_step(kernel, eta);
    detail::require_non_negative(epsilon, "epsilon");
  }
};

/// KLMS: f_t = f_{t-1} + eta e_t k(x_t, .) (Liu et al. 2008, Algorithm 1). The store grows by
/// one centre per example (no budget), coefficient eta e_t.
class KLMS : public OnlineRegressor<KLMS> {
 public:
  /// A one-feature KLMS with the default parameters (what load() replaces).
  KLMS() : KLMS(1) {}
  /// \param n_features  d, the values of every input row (>= 1).
  /// \param p           the parameters (validated).
  /// \throws std::invalid_argument on invalid parameters or dimensions.
  explicit KLMS(Index n_features, const KLMSParams& p = KLMSParams{}) {
    p.validate();
    detail::require(n_features >= 1, "n_features must be >= 1");
    init_base(n_features);
    m_p = p;
    m_ex.reset(n_features, 1, p.kernel, 64);
  }

  const KLMSParams& params() const { return m_p; }
  Index n_support() const { return m_ex.size(); }
  /// The centres c_j (rows 0 .. n_support()-1) with their coefficients and ids (the step that added them).
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  /// The coefficients alpha_j of f = sum_j alpha_j k(c_j, .).
  Vector coefficients() const { return m_ex.sv().A().col(0).head(m_ex.size()); }
  std::int64_t steps() const { return m_t; }

  /// Predicts f_{t-1}(x), then adds x as a centre with coefficient eta (y - f_{t-1}(x)).
  /// \param x  n_features() values (valid input: the caller checks).
  /// \param y  the target.
  /// \return f_{t-1}(x), the prediction made before learning.
  /// \throws std::runtime_error, learning nothing, when the filter has diverged (detail::step_guard).
  double step(const double* x, double y) {
    const double ktt = m_ex.score(x);
    const double f = m_ex.f()(0);
    const double coef = m_p.eta * (y - f);
    detail::step_guard("KLMS", f, coef, m_p.eta, ktt, m_t);
    m_ex.push_last(x, Eigen::Matrix<double, 1, 1>::Constant(coef), m_t);
    ++m_t;
    ++m_count.examples;
    ++m_count.updates;
    return f;
  }

  /// f(x) with the current model; thread-safe for concurrent readers.
  double decision(const double* x) const {
    double f = 0.0;
    m_ex.decision(x, &f);
    return f;
  }

  // ---- combine (learners/combine_regression.hpp): a self-contained block ----
  /// combine() of one model is a copy of it: no budget applies, and a positive one at least
  /// its size asks for nothing.
  bool combine_is_copy(Index budget) const { return budget <= 0 || budget >= m_ex.size(); }
  Index combine_size() const { return m_ex.size(); }

  /// This model becomes sum_k w_k f_k of `models`, exactly: the union of their centres with
  /// coefficients w_k alpha (a centre several models hold, such as a common base's, kept once
  /// with its coefficients added). KLMS keeps no budget: a positive budget below the union is
  /// refused. Centres are renumbered 0 .. m-1 in the union's order, and the step counter is
  /// the combined examples (detail::push_union_quantised, combined_regression_counters).
  /// \param models  the models to combine: this class, the same parameters.
  /// \param plan    the validated weights and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counted once).
  /// \param rep     receives what the combination did (CombineReport).
  void combine_from(const std::vector<const KLMS*>& models, const CombinePlan& plan, const KLMS* base,
                    CombineReport& rep) {
    for (const KLMS* m : models) {
      detail::require(detail::same_kernel(m->m_p.kernel, models[0]->m_p.kernel), "combine: the models' kernels differ");
      detail::require(m->m_p.eta == models[0]->m_p.eta, "combine: the models' eta differ");
    }
    KLMS out(models[0]->m_d, models[0]->m_p);
    const detail::ExpansionUnion u = detail::regression_union(models, plan, rep);
    detail::require_union_fits(u, plan.budget, "KLMS");
    detail::push_union_quantised(out.m_ex, out.m_p.kernel, u, 0.0, rep);
    out.m_count = detail::combined_regression_counters(models, base);
    out.m_count.examples = (std::max)(out.m_count.examples, std::int64_t{out.m_ex.size()});
    out.m_t = out.m_count.examples;  // ids 0 .. m-1 are below it
    out.metadata = models[0]->metadata;
    *this = std::move(out);
  }
  // ---- end of the combine block ----

  /// Writes the kernel, the centres and coefficients (the fields Model reads), eta and the step counter.
  /// \throws std::runtime_error on non-finite coefficients (a file load() would refuse).
  void save(FieldMap& fm) const {
    detail::require_finite_state("KLMS", coefficients());
    write_base(fm, "klms");
    m_ex.save(fm);
    fm.set("eta", m_p.eta);
    fm.set_int("kaf.steps", m_t);
  }

  /// Restores what save() wrote (the parameters too); all or nothing.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  void load(const FieldMap& fm) {
    KLMSParams p;
    p.kernel = read_kernel(fm);
    p.eta = fm.get_f64("eta");
    detail::validate_loaded(p);
    const Index d = detail::read_kaf_dim(fm);
    KLMS fresh(d, p);
    fresh.read_base(fm, "klms");
    fresh.m_t = detail::read_kaf_steps(fm, fresh.m_count);
    fresh.m_ex.load(fm, d, 1, 0, 64);
    // Every step adds a centre (ids 0 .. t-1); a combined KLMS holds a centre several models
    // held once (combine_from), so at most one per step.
    if (fresh.m_ex.size() > fresh.m_t) detail::corrupt("KLMS holds at most one centre per step taken");
    detail::check_appended_ids(fresh.m_ex.sv(), fresh.m_t);
    *this = std::move(fresh);
  }

 private:
  KLMSParams m_p;
  KernelExpansion m_ex;
  std::int64_t m_t = 0;
};

/// QKLMS (Chen et al. 2012, Algorithm 1): e_t = y_t - f_{t-1}(x_t); with c_j* the nearest
/// centre, ||x_t - c_j*|| <= epsilon adds eta e_t to alpha_j*, otherwise x_t becomes a
/// centre with coefficient eta e_t. Distances from the dot products the kernel row needs,
/// ||x||^2 + ||c_j||^2 - 2 x.c_j (clamped at 0); ties to the lowest index.
class QKLMS : public OnlineRegressor<QKLMS> {
 public:
  /// A one-feature QKLMS with the default parameters (what load() replaces).
  QKLMS() : QKLMS(1) {}
  /// \param n_features  d, the values of every input row (>= 1).
  /// \param p           the parameters (validated).
  /// \throws std::invalid_argument on invalid parameters or dimensions.
  explicit QKLMS(Index n_features, const QKLMSParams& p = QKLMSParams{}) {
    p.validate();
    detail::require(n_features >= 1, "n_features must be >= 1");
    init_base(n_features);
    m_p = p;
    m_ex.reset(n_features, 1, p.kernel, 64);
    detail::zero_fresh(m_dots, 64);
  }

  const QKLMSParams& params() const { return m_p; }
  Index n_support() const { return m_ex.size(); }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  Vector coefficients() const { return m_ex.sv().A().col(0).head(m_ex.size()); }
  std::int64_t steps() const { return m_t; }

  /// Predicts f_{t-1}(x), then quantises x to its nearest centre or adds it (see the class).
  /// \param x  n_features() values (valid input: the caller checks).
  /// \param y  the target.
  /// \return f_{t-1}(x), the prediction made before learning.
  /// \throws std::runtime_error, learning nothing, when the filter has diverged (detail::step_guard).
  double step(const double* x, double y) {
    SupportVectors& sv = m_ex.sv();
    const Index n = sv.size();
    const Eigen::Map<const Vector> xv(x, sv.dim());
    const double xsq = xv.squaredNorm();
    double f = 0.0;
    Index nearest = -1;
    if (n > 0) {
      if (m_dots.size() < n) m_dots.resize(2 * n);
      Vector& krow = m_ex.krow();
      if (krow.size() < n) krow.resize(2 * n);
      sv.dots(xv, n, m_dots);
      if (m_p.epsilon > 0.0) nearest = nearest_within(sv, n, xsq);
      // The kernel row from the same dot products: KernelExpansion::score's values, bit for bit.
      m_p.kernel.row(sv.X(), sv.sqnorm(), n, xv, xsq, krow, m_dots.data());
      f = Eigen::Map<const Vector>(sv.A().data(), n).dot(krow.head(n));
    }
    const double update = m_p.eta * (y - f);
    const double coef = nearest >= 0 ? sv.alpha(nearest)(0) + update : update;
    detail::step_guard("QKLMS", f, coef, m_p.eta, m_p.kernel.self(xsq), m_t);
    if (nearest >= 0) {
      sv.alpha(nearest)(0) = coef;
    } else {
      sv.push(xv, Eigen::Matrix<double, 1, 1>::Constant(update), m_t);
      ++m_count.updates;
    }
    ++m_t;
    ++m_count.examples;
    return f;
  }

  double decision(const double* x) const {
    double f = 0.0;
    m_ex.decision(x, &f);
    return f;
  }

  // ---- combine (learners/combine_regression.hpp): a self-contained block ----
  /// combine() of one model is a copy of it: no budget applies, and a positive one at least
  /// its size asks for nothing.
  bool combine_is_copy(Index budget) const { return budget <= 0 || budget >= m_ex.size(); }
  Index combine_size() const { return m_ex.size(); }

  /// This model becomes sum_k w_k f_k of `models` quantised by QKLMS's own rule: the union of
  /// their centres with coefficients w_k alpha enters in the union's order, and a centre
  /// within epsilon of a kept one adds its coefficient to it (detail::push_union_quantised;
  /// rep.degradation sums the ||Delta f||^2 of those folds, rep.reductions counts them), so
  /// the combined centres stay epsilon apart as a stream's do. Exact when no two centres of
  /// different models lie within epsilon (always for epsilon = 0, which is KLMS's combine).
  /// \param models  the models to combine: this class, the same parameters.
  /// \param plan    the validated weights and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counted once).
  /// \param rep     receives what the combination did (CombineReport).
  void combine_from(const std::vector<const QKLMS*>& models, const CombinePlan& plan, const QKLMS* base,
                    CombineReport& rep) {
    for (const QKLMS* m : models) {
      detail::require(detail::same_kernel(m->m_p.kernel, models[0]->m_p.kernel), "combine: the models' kernels differ");
      detail::require(m->m_p.eta == models[0]->m_p.eta && m->m_p.epsilon == models[0]->m_p.epsilon, "combine: the models' eta or epsilon differ");
    }
    QKLMS out(models[0]->m_d, models[0]->m_p);
    const detail::ExpansionUnion u = detail::regression_union(models, plan, rep);
    detail::require_union_fits(u, plan.budget, "QKLMS");
    detail::push_union_quantised(out.m_ex, out.m_p.kernel, u, out.m_p.epsilon, rep);
    out.m_count = detail::combined_regression_counters(models, base);
    out.m_count.examples = (std::max)(out.m_count.examples, std::int64_t{out.m_ex.size()});
    out.m_t = out.m_count.examples;  // ids 0 .. m-1 are below it
    out.metadata = models[0]->metadata;
    *this = std::move(out);
  }
  // ---- end of the combine block ----

  /// Writes the kernel, the centres and coefficients, eta, epsilon and the step counter.
  /// \throws std::runtime_error on non-finite coefficients (a file load() would refuse).
  void save(FieldMap& fm) const {
    detail::require_finite_state("QKLMS", coefficients());
    write_base(fm, "qklms");
    m_ex.save(fm);
    fm.set("eta", m_p.eta);
    fm.set("epsilon", m_p.epsilon);
    fm.set_int("kaf.steps", m_t);
  }

  /// Restores what save() wrote; all or nothing.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  void load(const FieldMap& fm) {
    QKLMSParams p;
    p.kernel = read_kernel(fm);
    p.eta = fm.get_f64("eta");
    p.epsilon = fm.get_f64("epsilon");
    detail::validate_loaded(p);
    const Index d = detail::read_kaf_dim(fm);
    QKLMS fresh(d, p);
    fresh.read_base(fm, "qklms");
    fresh.m_t = detail::read_kaf_steps(fm, fresh.m_count);
    fresh.m_ex.load(fm, d, 1, 0, 64);
    detail::check_appended_ids(fresh.m_ex.sv(), fresh.m_t);
    *this = std::move(fresh);
  }

 private:
  /// The lowest-index centre nearest to x among the first n if within epsilon, else -1;
  /// m_dots holds x's dot products with them.
  Index nearest_within(const SupportVectors& sv, Index n, double xsq) const {
    Index best = -1;
    double best_d2 = std::numeric_limits<double>::infinity();
    for (Index j = 0; j < n; ++j) {
      const double d2 = (std::max)(0.0, sv.sqnorm()(j) + xsq - 2.0 * m_dots(j));
      if (d2 < best_d2) best_d2 = d2, best = j;
    }
    return best_d2 <= m_p.epsilon * m_p.epsilon ? best : -1;
  }

  QKLMSParams m_p;
  KernelExpansion m_ex;
  Vector m_dots;
  std::int64_t m_t = 0;
};

}  // namespace budgetkernel
