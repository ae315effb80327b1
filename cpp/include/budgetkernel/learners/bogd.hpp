#pragma once
/// \file learners/bogd.hpp
/// Kernel online gradient descent on the regularised hinge loss (Kivinen, Smola & Williamson,
/// "Online Learning with Kernels", IEEE TSP 2004) and its bounded version BOGD / BOGD++
/// (Zhao, Wang, Wu, Jin & Hoi, "Fast Bounded Online Gradient Descent Algorithms for Scalable
/// Kernel-Based Online Learning", ICML 2012).

#include "../detail/random.hpp"
#include "uniform_average.hpp"

#include <limits>

namespace budgetkernel {

/// How BOGD picks the SV to discard when the store is full.
enum class BOGDSampling : std::int32_t { Uniform = 0, NonUniform = 1 };
/// Their names (BOGDClassifier's `sampling`; files store the number).
inline constexpr detail::EnumName<BOGDSampling> bogd_sampling_names[] = {{BOGDSampling::Uniform, "uniform"},
                                                                        {BOGDSampling::NonUniform, "nonuniform"}};
/// \param s  a sampling rule.
/// \return its name in bogd_sampling_names.
inline const char* bogd_sampling_name(BOGDSampling s) { return detail::enum_name(bogd_sampling_names, s); }

/// Parameters of kernel OGD / BOGD.
struct BOGDParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double eta = 0.5;     ///< step size, > 0
  double lam = 0.0;     ///< regularisation lambda, >= 0 with eta * lam < 1 (file key "lambda")
  Index budget = 0;     ///< B; 0 = unbudgeted kernel OGD
  BOGDSampling sampling = BOGDSampling::Uniform;
  /// BOGD's bounded domain: after a discard every coefficient row is clipped to norm
  /// <= eta * max_coef (the BOGD paper's gamma); +inf = off (the step is then exactly unbiased).
  double max_coef = std::numeric_limits<double>::infinity();
  bool averaged = false;  ///< predict with the mean of every classifier held (not sparse)
  std::uint64_t seed = 0;

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_positive(eta, "eta");
    detail::require_non_negative(lam, "lam");
    detail::require(eta * lam < 1.0, "eta * lam must be < 1 (the shrink factor 1 - eta lam must stay positive)");
    detail::require(budget >= 0, "budget must be >= 1 (or 0 for no budget)");
    detail::require(max_coef > 0.0, "max_coef must be positive (or infinite: no bound)");
    detail::require_enum(bogd_sampling_names, sampling, "sampling");
  }
};

namespace detail {

/// BOGD++'s keep probabilities (see BOGD), in place: w (the weights w_i, >= 0) becomes q with
/// q_i = min(1, c w_i) and sum_i q_i = n - 1 (the water-filling of the class comment; c
/// grows as SVs are capped, so a capped SV stays capped). Zero weights (a coefficient row
/// that underflowed): one of them is discarded, uniformly, and nothing else changes.
inline void bogd_keep_probabilities(Vector& w) {
  const Index n = w.size();
  // Scale-free, so divide by the largest weight first: the sums below cannot overflow. A
  // weight that overflowed to inf outweighs every finite one.
  const double top = w.maxCoeff();
  if (std::isinf(top))
    w = (w.array() == top).cast<double>().matrix();
  else if (top > 0.0)
    w /= top;
  const Index zeros = (w.array() == 0.0).count();
  if (zeros > 0) {
    for (Index i = 0; i < n; ++i) w(i) = w(i) == 0.0 ? 1.0 - 1.0 / static_cast<double>(zeros) : 1.0;
    return;
  }
  double mass = static_cast<double>(n - 1), c = 0.0;
  for (bool capped = true; capped;) {  // at most n - 1 rounds; in practice one or two
    double free = 0.0;                 // weight of the SVs not capped yet (marked by w < 0)
    for (Index i = 0; i < n; ++i)
      if (w(i) > 0.0) free += w(i);
    c = mass / free;
    capped = false;
    for (Index i = 0; i < n; ++i)
      if (w(i) > 0.0 && c * w(i) >= 1.0) {
        w(i) = -1.0;
        mass -= 1.0;
        capped = true;
      }
  }
  for (Index i = 0; i < n; ++i) w(i) = w(i) < 0.0 ? 1.0 : c * w(i);
}

}  // namespace detail

/// Kernel OGD (NORMA with the hinge loss): f_{t+1} = (1 - eta lambda) f_t + eta u k(x_t, .)
/// when the margin m of detail::max_loss_direction is < 1 (u = y binary; u = e_y - e_r
/// multi-class, the max-loss hinge), else f_{t+1} = (1 - eta lambda) f_t.
///
/// BOGD: when the store holds B SVs and x_t must be added, one of the B old SVs is discarded
/// at random and the others rescaled so that the step stays unbiased, E[f_{t+1} | f_t] =
/// the OGD step: SV i is kept with probability q_i (sum_i q_i = B - 1: exactly one goes) and
/// every survivor is divided by q_i (E[coefficient_i] = q_i alpha_i / q_i = alpha_i).
///   - uniform (BOGD): q_i = (B - 1) / B, survivors times B / (B - 1);
///   - non-uniform (BOGD++): q_i proportional to w_i = ||alpha_i|| sqrt(k_ii), i.e. discard
///     probability 1 - (B - 1) w_i / sum_j w_j, the q that minimises the variance of the
///     unbiased estimate sum_i alpha_i (Z_i / q_i) k(x_i, .). A weight above sum_j w_j / (B - 1)
///     would ask for q_i > 1: such SVs are kept for sure and the remaining keep mass is shared
///     in proportion to w among the others (the same variance-optimal choice under q_i <= 1).
///     The uncapped survivors' rescaled coefficients all get the same norm times sqrt(k_ii).
/// With B = 1 the single SV is discarded. Cost O(n d) per example (the kernel row) and O(n c)
/// for the shrink; with averaging O(n c) more, and the average keeps every discarded SV.
class BOGD : public OnlineLearner<BOGD> {
 public:
  BOGD() { reset(1, 2, BOGDParams{}); }
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  BOGD(Index n_features, Index n_classes, const BOGDParams& params) { reset(n_features, n_classes, params); }

  /// Starts over. \throws std::invalid_argument on invalid parameters or dimensions.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  void reset(Index n_features, Index n_classes, const BOGDParams& params) {
    params.validate();
    init_base(n_features, n_classes, params.budget);
    m_p = params;
    m_ex.reset(n_features, n_outputs(), params.kernel, params.budget > 0 ? params.budget + 1 : 64);
    m_avg.reset(m_ex.sv(), params.averaged);
    m_rng.seed(params.seed);
    m_u.setZero(n_outputs());
    m_w.resize(0);
  }

  const BOGDParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  RowMatrix coefficients() const { return m_ex.sv().A().topRows(m_ex.size()); }
  const UniformAverage& average() const { return m_avg; }
  double n_classifiers() const { return static_cast<double>(m_count.examples) + 1.0; }
  /// Reseeds the generator (a Monte Carlo test of the unbiased removal restarts one state
  /// under many seeds).
  /// \param seed  the generator's new seed.
  void reseed(std::uint64_t seed) { m_rng.seed(seed); }

  /// Scores x (with the average when averaged), then takes the (B)OGD step.
  /// \param x  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* x, std::int32_t y) {
    const double kappa = m_ex.score(x);
    const std::int32_t pred = m_avg.predict_scored(m_ex, x, n_classifiers(), m_favg);
    note_scores(m_avg.enabled() ? m_favg : m_ex.f());
    const double t = static_cast<double>(++m_count.examples);
    const double m = detail::max_loss_direction(m_ex.f(), y, m_u);
    const bool add = m < 1.0 && kappa > 0.0;  // hinge subgradient -u k(x_t, .) is nonzero
    const double shrink = 1.0 - m_p.eta * m_p.lam;
    if (shrink == 1.0 && !add) return pred;

    SupportVectors& sv = m_ex.sv();
    m_avg.begin_all(sv, t);
    if (shrink != 1.0) sv.A().topRows(sv.size()) *= shrink;
    if (add && m_p.budget > 0 && sv.size() >= m_p.budget) discard_one();
    m_avg.end_all(sv, t);
    if (add) {
      const Index i = m_ex.push_last(x, m_p.eta * m_u, m_count.examples);
      m_avg.end(sv, i, t);
      ++m_count.updates;
    }
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

  /// combine() of one model within `budget` is a copy of it (learners/combine.hpp).
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  /// \return whether combining this model alone within `budget` is a plain copy of it.
  bool combine_is_copy(Index budget) const { return budget < 0 || budget == m_p.budget; }
  Index combine_size() const { return m_ex.size(); }

  /// This model becomes sum_k w_k f_k of `models` (learners/combine.hpp): the union of their
  /// SVs with coefficients w_k alpha and, averaged, sum_k w_k fbar_k as its average
  /// (detail::averaged_union). Over the budget the SVs enter most important first and each
  /// overflow of the B + 1 stored SVs runs BOGD's own step, discard_one() (the one step()
  /// runs before adding x_t, here over the B + 1: one SV discarded at random, uniformly or
  /// BOGD++'s way, the survivors rescaled so that the combined f is kept in expectation, then
  /// clipped by max_coef), with model 0's generator. rep.degradation sums what the counter
  /// sums for it, ||alpha_r||^2 k_rr of the discarded SV: the exact ||Delta w||^2 would add
  /// the survivors' rescaling, a quadratic form over the whole store per step.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const BOGD*>& models, const CombinePlan& plan, const BOGD* base,
                    CombineReport& rep) {
    BOGDParams p = models[0]->m_p;
    for (const BOGD* m : models) {
      const BOGDParams& q = m->m_p;
      detail::require_same(detail::same_kernel(p.kernel, q.kernel), "kernels");
      detail::require_same(p.eta == q.eta && p.lam == q.lam, "step parameters (eta, lam)");
      detail::require_same(p.budget == q.budget, "budgets");
      detail::require_same(p.sampling == q.sampling, "sampling rules");
      detail::require_same(p.max_coef == q.max_coef, "max_coef bounds");
      detail::require_same(p.averaged == q.averaged, "averaged flags");
    }
    if (plan.budget >= 0) p.budget = plan.budget;
    reset(models[0]->m_d, plan.n_classes, p);
    m_rng = models[0]->m_rng;
    const Counters count = detail::combined_counters_of(models, base);
    const double N = static_cast<double>(count.examples) + 1.0;  // the result's n_classifiers()
    const detail::ExpansionUnion u = detail::averaged_union(models, plan, N, m_avg);
    rep.union_size = u.size();
    rep.duplicates = u.duplicates();
    const bool begun = m_avg.enabled() && m_p.budget > 0 && u.size() > m_p.budget;
    SupportVectors& sv = m_ex.sv();
    m_count = Counters{};  // counts discard_one's steps (finish_combined_counters)
    for (Index r : detail::combine_order(u, m_p.budget, m_p.kernel)) {
      const Index i = sv.push(Eigen::Map<const Vector>(u.x(r), m_d), u.alpha(r), u.id(r));
      m_avg.enter(sv, i, u.carried(r), N, begun);
      if (m_p.budget > 0 && sv.size() > m_p.budget) discard_one();
    }
    if (begun) m_avg.end_all(sv, N);
    detail::finish_combined_counters(m_count, count, rep);
    metadata = models[0]->metadata;
  }

  /// Writes the whole state (learner "bogd"); a loaded learner resumes bit for bit.
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    write_base(fm, "bogd");
    m_ex.save(fm);
    fm.set("eta", m_p.eta);
    fm.set("lambda", m_p.lam);
    fm.set_int("budget", m_p.budget);
    fm.set_int("sampling", static_cast<std::int64_t>(m_p.sampling));
    fm.set("max_coef", m_p.max_coef);
    fm.set_int("averaged", m_p.averaged ? 1 : 0);
    fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
    fm.set_bytes("rng", detail::rng_state(m_rng));
    m_avg.save(fm, m_ex.sv(), n_classifiers());
  }

  /// Restores what save() wrote; all or nothing.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  void load(const FieldMap& fm) {
    if (fm.get_bytes("learner") != "bogd") detail::corrupt("holds a '" + fm.get_bytes("learner") + "' model, not 'bogd'");
    BOGDParams p;
    p.kernel = read_kernel(fm);
    p.eta = fm.get_f64("eta");
    p.lam = fm.get_f64("lambda");
    p.budget = fm.get_i64("budget");
    p.sampling = detail::enum_from_code(bogd_sampling_names, fm.get_i64("sampling"), "sampling");
    p.max_coef = fm.get_f64("max_coef");
    p.averaged = fm.get_i64("averaged") != 0;
    p.seed = static_cast<std::uint64_t>(fm.get_i64("seed"));
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto [d, c] = detail::read_dims(fm, "sv.alpha");
    BOGD fresh(d, c, p);
    fresh.read_base(fm, "bogd");
    fresh.m_ex.load(fm, d, fresh.n_outputs(), p.budget, p.budget > 0 ? p.budget + 1 : 64);
    for (Index i = 0; i < fresh.m_ex.size(); ++i)
      if (fresh.m_ex.sv().id(i) < 1 || fresh.m_ex.sv().id(i) > fresh.m_count.examples) detail::corrupt("invalid SV id");
    fresh.m_avg.load(fm, fresh.m_ex.sv());
    if (fresh.m_avg.enabled() != p.averaged) detail::corrupt("averaging flag disagrees with the averaged state");
    detail::set_rng_state(fresh.m_rng, fm.get_bytes("rng"));
    *this = std::move(fresh);
  }

 private:
  /// Discards one of the B stored SVs and rescales the survivors (unbiased; see the class
  /// comment). The averaged rows are in the begun state, so the discarded SV retires with
  /// its sum.
  void discard_one() {
    SupportVectors& sv = m_ex.sv();
    const Index n = sv.size();
    Index r = 0;
    if (n > 1 && m_p.sampling == BOGDSampling::Uniform) {
      r = detail::uniform_index(m_rng, n);
      m_w.setConstant(n, 1.0 - 1.0 / static_cast<double>(n));
    } else if (n > 1) {
      m_w.resize(n);
      for (Index i = 0; i < n; ++i) m_w(i) = row_norm(sv.alpha(i)) * std::sqrt(m_p.kernel.self(sv.sqnorm()(i)));
      detail::bogd_keep_probabilities(m_w);
      // the discard probabilities 1 - q_i sum to 1 (up to rounding)
      const double u = detail::uniform01(m_rng) * (1.0 - m_w.array()).sum();
      double acc = 0.0;
      r = -1;
      for (Index i = 0; i < n; ++i) {
        acc += 1.0 - m_w(i);
        if (u < acc) {
          r = i;
          break;
        }
      }
      // u at the very end of the rounded total: the last SV that can go
      for (Index i = n - 1; r < 0; --i)
        if (m_w(i) < 1.0) r = i;
    }
    m_count.degradation += sv.alpha(r).squaredNorm() * m_p.kernel.self(sv.sqnorm()(r));
    for (Index i = 0; i < n && n > 1; ++i)
      if (i != r) sv.alpha(i) /= m_w(i);  // survivors: unbiased rescaling
    const double bound = m_p.eta * m_p.max_coef;
    if (std::isfinite(bound))
      for (Index i = 0; i < n; ++i) {
        const double a = row_norm(sv.alpha(i));
        if (a > bound) sv.alpha(i) *= bound / a;
      }
    ++m_count.maintenance;
    m_avg.retire(sv, r);
    sv.erase(r);
  }

  /// ||alpha_i||. norm() squares first, so above ~1e154 it gives inf (then inf / inf = NaN
  /// discard probabilities, which spread NaN through the rescaling); the overflow-safe
  /// stableNorm() is slower, so it only redoes those rows.
  template <class Row>
  static double row_norm(const Row& a) {
    const double v = a.norm();
    return std::isfinite(v) ? v : a.stableNorm();
  }

  BOGDParams m_p;
  KernelExpansion m_ex;
  UniformAverage m_avg;
  std::mt19937_64 m_rng;
  Vector m_u, m_favg, m_w;
};

}  // namespace budgetkernel
