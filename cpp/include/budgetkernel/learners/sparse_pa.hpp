#pragma once
/// \file learners/sparse_pa.hpp
/// Sparse Passive-Aggressive learning (Lu, Zhao & Hoi, "Online Sparse Passive Aggressive
/// Learning with Kernels", SDM 2016; the SPA paper): an example becomes an SV only with a
/// probability that grows with its loss, and SVs are never removed, so the average of all
/// the classifiers is as sparse as the last one.

#include "../detail/random.hpp"
#include "uniform_average.hpp"

namespace budgetkernel {

/// Parameters of SPA (Algorithm 1 of the SPA paper).
struct SPAParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double alpha = 1.0;    ///< loss cap of the sampling probability, > 0
  double beta = 20.0;    ///< divisor of the sampling probability, >= alpha
  double eta = 1.0;      ///< aggressiveness, > 0
  bool averaged = false; ///< predict with the mean of every classifier held (SPA-avg)
  std::uint64_t seed = 0;

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_positive(alpha, "alpha");
    detail::require(std::isfinite(beta) && beta >= alpha, "beta must be a finite number >= alpha");
    detail::require_positive(eta, "eta");
  }
};

/// The draw of Z_t ~ Bernoulli(rho_t) (Algorithm 1) from the learner's generator. A learner
/// takes another at construction (SparsePA's last argument): the tests force Z_t = 1 to compare
/// the steps with Proposition 1's closed form. It is not a parameter: files do not store it.
using SPASampling = bool (*)(std::mt19937_64& rng, double rho);
/// The default sampling: a Bernoulli(rho) draw from the learner's generator.
/// \param rng  the learner's generator.
/// \param rho  the probability of keeping the example.
/// \return whether to keep it.
inline bool spa_bernoulli(std::mt19937_64& rng, double rho) { return detail::uniform01(rng) < rho; }

/// SPA: per example, loss L = [1 - m]_+ (m the margin of detail::max_loss_direction),
/// sampling probability rho = min(alpha, L) / beta, Z ~ Bernoulli(rho) from the learner's own
/// generator, and when Z = 1 the closed form of Proposition 1: add x_t with coefficient row
/// tau u, tau = min(eta / rho, L / (||u||^2 k(x_t, x_t))). Multi-class is the max-loss
/// multi-class PA (u = e_y - e_r), the binary case of the paper when c = 2.
///
/// Cost per example: the kernel row O(n d) and O(1) more; with averaging (UniformAverage) one
/// more O(n c) dot product for the prediction and O(1) bookkeeping per new SV. The expected
/// number of SVs after T examples is E[sum_t rho_t] (Theorem 3.2), reported as
/// expected_support().
class SparsePA : public OnlineLearner<SparsePA> {
 public:
  SparsePA() { reset(1, 2, SPAParams{}); }
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \param sampling    draws whether to keep an example with probability rho (tests replace it).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  SparsePA(Index n_features, Index n_classes, const SPAParams& params, SPASampling sampling = spa_bernoulli)
      : m_sampling(sampling) {
    reset(n_features, n_classes, params);
  }

  /// Starts over. \throws std::invalid_argument on invalid parameters or dimensions.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  void reset(Index n_features, Index n_classes, const SPAParams& params) {
    params.validate();
    init_base(n_features, n_classes);
    m_p = params;
    m_ex.reset(n_features, n_outputs(), params.kernel, 64);
    m_avg.reset(m_ex.sv(), params.averaged);
    m_rng.seed(params.seed);
    m_u.setZero(n_outputs());
    m_rho_sum = 0.0;
  }

  const SPAParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  RowMatrix coefficients() const { return m_ex.sv().A().topRows(m_ex.size()); }
  const UniformAverage& average() const { return m_avg; }
  /// sum_t rho_t so far: the expected number of SVs (Theorem 3.2: E[#SV] = E[sum rho_t]).
  double expected_support() const { return m_rho_sum; }
  /// Classifiers held so far (f_1 = 0 included): what the average divides by.
  double n_classifiers() const { return static_cast<double>(m_count.examples) + 1.0; }

  /// Scores x (with the average when averaged), then learns from (x, y).
  /// \param x  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* x, std::int32_t y) {
    const double kappa = m_ex.score(x);
    const std::int32_t pred = m_avg.predict_scored(m_ex, x, n_classifiers(), m_favg);
    note_scores(m_avg.enabled() ? m_favg : m_ex.f());
    const double t = static_cast<double>(++m_count.examples);
    const double L = 1.0 - detail::max_loss_direction(m_ex.f(), y, m_u);
    // rho = 0 (no loss), or an example that cannot change any score (k(x,x) = 0): no draw,
    // no change, and it counts 0 towards the expected SV count.
    if (!(L > 0.0) || !(kappa > 0.0)) return pred;
    const double rho = (std::min)(m_p.alpha, L) / m_p.beta;
    m_rho_sum += rho;
    const bool z = m_sampling(m_rng, rho);
    if (!z) return pred;
    // Proposition 1: tau = min(eta Z / rho, L / k(x_t, x_t)), with ||u||^2 = 2 for multi-class.
    const double u2 = n_outputs() == 1 ? 1.0 : 2.0;
    const double tau = (std::min)(m_p.eta / rho, L / (u2 * kappa));
    const Index i = m_ex.push_last(x, tau * m_u, m_count.examples);
    m_avg.end(m_ex.sv(), i, t);
    ++m_count.updates;
    return pred;
  }

  /// Decision values (of the average when averaged); thread-safe for concurrent readers.
  /// \param x    n_features() values.
  /// \param out  receives n_outputs() decision values.
  void decision(const double* x, double* out) const { m_avg.decision(m_ex, x, n_classifiers(), out); }
  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// taken per block of rows (OnlineLearner::decision_function calls it).
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_outputs(), receives the values.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    m_avg.decision_rows(m_ex, X, n_classifiers(), out, stop);
  }

  /// combine() of one model is a copy of it: SPA keeps no budget, and a positive budget at
  /// least its size asks for nothing (learners/combine.hpp).
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  /// \return whether combining this model alone within `budget` is a plain copy of it.
  bool combine_is_copy(Index budget) const { return budget <= 0 || budget >= m_ex.size(); }
  Index combine_size() const { return m_ex.size(); }

  /// This model becomes sum_k w_k f_k of `models` (learners/combine.hpp): SPA never removes an
  /// SV and keeps no budget, so the result is the whole union, exact, with coefficients w_k
  /// alpha and, averaged, sum_k w_k fbar_k as its average (detail::averaged_union).
  /// expected_support() becomes base + sum_k (model_k - base) like the counters; the
  /// generator and the sampling draw are model 0's.
  /// \throws std::invalid_argument when plan.budget is positive and smaller than the union
  /// ("SparsePA keeps no budget"), or when the models' parameters differ.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const SparsePA*>& models, const CombinePlan& plan, const SparsePA* base,
                    CombineReport& rep) {
    const SPAParams& p = models[0]->m_p;
    for (const SparsePA* m : models) {
      detail::require_same(detail::same_kernel(p.kernel, m->m_p.kernel), "kernels");
      detail::require_same(p.alpha == m->m_p.alpha && p.beta == m->m_p.beta, "sampling parameters (alpha, beta)");
      detail::require_same(p.eta == m->m_p.eta, "eta");
      detail::require_same(p.averaged == m->m_p.averaged, "averaged flags");
    }
    SparsePA out(models[0]->m_d, plan.n_classes, p, models[0]->m_sampling);
    out.m_rng = models[0]->m_rng;
    const Counters count = detail::combined_counters_of(models, base);
    const double N = static_cast<double>(count.examples) + 1.0;  // the result's n_classifiers()
    const detail::ExpansionUnion u = detail::averaged_union(models, plan, N, out.m_avg);
    detail::require(plan.budget <= 0 || u.size() <= plan.budget,
                    "SparsePA keeps no budget: the union of the models' SVs (" + std::to_string(u.size()) +
                        ") cannot be reduced to " + std::to_string(plan.budget) + "; combine them without a budget");
    rep.union_size = u.size();
    rep.duplicates = u.duplicates();
    for (Index r = 0; r < u.size(); ++r) {
      const Index i = out.m_ex.sv().push(Eigen::Map<const Vector>(u.x(r), models[0]->m_d), u.alpha(r), u.id(r));
      out.m_avg.enter(out.m_ex.sv(), i, u.carried(r), N, false);
    }
    double rho = 0.0;
    for (const SparsePA* m : models) rho += m->m_rho_sum;
    if (base) rho -= static_cast<double>(models.size() - 1) * base->m_rho_sum;
    out.m_rho_sum = (std::max)(rho, 0.0);
    out.m_count = count;
    out.metadata = models[0]->metadata;
    *this = std::move(out);
  }

  /// Writes the whole state (learner "spa"); with averaging also the averaged predictor
  /// that budgetkernel::Model uses. A loaded learner resumes bit for bit.
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    write_base(fm, "spa");
    m_ex.save(fm);
    fm.set("alpha", m_p.alpha);
    fm.set("beta", m_p.beta);
    fm.set("eta", m_p.eta);
    fm.set_int("averaged", m_p.averaged ? 1 : 0);
    fm.set_int("force_sample", 0);  // reserved (see load)
    fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
    fm.set_bytes("rng", detail::rng_state(m_rng));
    fm.set("rho_sum", m_rho_sum);
    m_avg.save(fm, m_ex.sv(), n_classifiers());
  }

  /// Restores what save() wrote; all or nothing.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  void load(const FieldMap& fm) {
    if (fm.get_bytes("learner") != "spa") detail::corrupt("holds a '" + fm.get_bytes("learner") + "' model, not 'spa'");
    SPAParams p;
    p.kernel = read_kernel(fm);
    p.alpha = fm.get_f64("alpha");
    p.beta = fm.get_f64("beta");
    p.eta = fm.get_f64("eta");
    p.averaged = fm.get_i64("averaged") != 0;
    // Reserved, always 0: files of versions <= 0.1.0 could hold 1, a test setting that drew no
    // Z_t; resuming such a state with Bernoulli draws would silently be another algorithm.
    if (fm.get_i64("force_sample") != 0)
      detail::corrupt("force_sample = 1: a state learned with forced sampling (a former test setting), which this "
                      "version does not resume; the field is reserved and always 0");
    p.seed = static_cast<std::uint64_t>(fm.get_i64("seed"));
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto [d, c] = detail::read_dims(fm, "sv.alpha");
    SparsePA fresh(d, c, p, m_sampling);
    fresh.read_base(fm, "spa");
    fresh.m_ex.load(fm, d, fresh.n_outputs(), 0, 64);
    for (Index i = 0; i < fresh.m_ex.size(); ++i)
      if (fresh.m_ex.sv().id(i) < 1 || fresh.m_ex.sv().id(i) > fresh.m_count.examples) detail::corrupt("invalid SV id");
    fresh.m_avg.load(fm, fresh.m_ex.sv());
    if (fresh.m_avg.enabled() != p.averaged) detail::corrupt("averaging flag disagrees with the averaged state");
    detail::set_rng_state(fresh.m_rng, fm.get_bytes("rng"));
    fresh.m_rho_sum = fm.get_f64("rho_sum");
    if (!(fresh.m_rho_sum >= 0.0) || !std::isfinite(fresh.m_rho_sum)) detail::corrupt("invalid rho_sum");
    *this = std::move(fresh);
  }

 private:
  SPASampling m_sampling = spa_bernoulli;
  SPAParams m_p;
  KernelExpansion m_ex;
  UniformAverage m_avg;
  std::mt19937_64 m_rng;
  Vector m_u, m_favg;
  double m_rho_sum = 0.0;
};

}  // namespace budgetkernel
