#pragma once
/// \file learners/passive_aggressive.hpp
/// Kernel Passive-Aggressive learners (Crammer et al., "Online Passive-Aggressive
/// Algorithms", JMLR 2006: PA, PA-I, PA-II, binary and max-loss multi-class) and their
/// budgeted versions of Wang & Vucetic, "Online Passive-Aggressive Algorithms on a Budget",
/// AISTATS 2010 (the BPA paper): BPA-S, BPA-NN, BPA-P, the PA+Rand baseline, and the ramp-loss
/// versions PA^R / BPA^R (section 4). Equation numbers refer to the BPA paper.

#include "bpa_rules.hpp"

#include <limits>

namespace budgetkernel {

/// Hinge loss (PA, eq. 1) or ramp loss (PA^R, eq. 13).
enum class PALoss : std::int32_t { Hinge = 0, Ramp = 1 };

/// The names (BudgetedPAClassifier's `variant` and `loss`; files store the numbers).
inline constexpr detail::EnumName<BPAVariant> bpa_variant_names[] = {
    {BPAVariant::Simple, "simple"}, {BPAVariant::NearestNeighbor, "nn"}, {BPAVariant::Project, "project"},
    {BPAVariant::Random, "random"}};
inline constexpr detail::EnumName<PALoss> pa_loss_names[] = {{PALoss::Hinge, "hinge"}, {PALoss::Ramp, "ramp"}};

/// \param v  a variant.
/// \return its name in bpa_variant_names.
inline const char* bpa_variant_name(BPAVariant v) { return detail::enum_name(bpa_variant_names, v); }
/// \param l  a loss.
/// \return its name in pa_loss_names.
inline const char* pa_loss_name(PALoss l) { return detail::enum_name(pa_loss_names, l); }

/// Parameters of the Passive-Aggressive family.
struct PAParams {
  Kernel kernel{KernelType::RBF, 1.0};
  double C = 1.0;               ///< aggressiveness; > 0 and finite (ignored by pa_type 0)
  std::int32_t pa_type = 1;     ///< 0 = hard-margin PA, 1 = PA-I, 2 = PA-II (Crammer et al. 2006)
  PALoss loss = PALoss::Hinge;  ///< Ramp = PA^R / BPA^R (eq. 13-15, 18-19)
  Index budget = 0;             ///< B; 0 = unbudgeted PA
  /// BPA-NN by default: the same O(B) order of cost as BPA-S, and closer to the best of a
  /// tuning grid in hindsight (docs/tuning.md, "Defaults"). Averaging is not the
  /// default: its average keeps every removed SV, so it is not a budget.
  BPAVariant variant = BPAVariant::NearestNeighbor;
  std::uint64_t seed = 0;  ///< generator of the Random variant (PA+Rand)
  /// Predict with the mean of every classifier held (UniformAverage; with a budget the
  /// average keeps every removed SV, so it is not sparse).
  bool averaged = false;

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require_positive(C, "C");
    detail::require(pa_type >= 0 && pa_type <= 2, "pa_type must be 0 (hard margin), 1 (PA-I) or 2 (PA-II)");
    detail::require_enum(pa_loss_names, loss, "loss");
    detail::require(budget >= 0, "budget must be >= 1 (or 0 for no budget)");
    detail::require_enum(bpa_variant_names, variant, "variant");
  }
};

/// Kernel PA / PA-I / PA-II with an optional budget (BPA, Algorithm 1) and hinge or ramp loss.
///
/// Notation (binary and multi-class alike): f = the scores of x_t; binary: u = y in {+1, -1},
/// ||u||^2 = 1, margin m = y f; multi-class (c > 2 columns, the max-loss multi-class PA):
/// r' = highest-scoring wrong class (ties: lowest index), u = e_y - e_r', ||u||^2 = 2, m =
/// f_y - f_r'. Loss L = 1 - m. A step adds tau u phi(x_t) (a coefficient *row* tau u).
///
/// Budgeted step (store holds B SVs, L > 0, ramp test passed): Algorithm 1 by the variant's
/// rule (bpa_rules.hpp, one class per variant, chosen by reset()).
///
/// An example whose feature vector is zero (k(x_t, x_t) = 0, possible with the linear or
/// polynomial kernel) cannot change any score: it is passed over.
class PassiveAggressive : public OnlineLearner<PassiveAggressive> {
 public:
  PassiveAggressive() { reset(1, 2, PAParams{}); }
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  PassiveAggressive(Index n_features, Index n_classes, const PAParams& params) {
    reset(n_features, n_classes, params);
  }

  /// Starts over with the given dimensions and parameters.
  /// \throws std::invalid_argument on invalid parameters or dimensions.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  void reset(Index n_features, Index n_classes, const PAParams& params) {
    params.validate();
    init_base(n_features, n_classes, params.budget);
    m_p = params;
    const Index cap = params.budget > 0 ? params.budget + 1 : 64;
    m_ex.reset(n_features, n_outputs(), params.kernel, cap);
    m_avg.reset(m_ex.sv(), params.averaged);
    m_rng.seed(params.seed);
    m_bpa.proj = Projection();  // BPA-P's inverse, inactive until the store first fills
    m_bpa.nn.reset(params.budget > 0 && params.variant == BPAVariant::NearestNeighbor ? cap : 1);
    m_u.setZero(n_outputs());
    m_row.setZero(n_outputs());
    m_bpa.obj.resize(0);
    m_bpa.beta.resize(0);
    m_bpa.removed = -1;
    m_bpa.rule = &detail::bpa_rule(params.variant, params.budget, detail::BPASimple::Residual::Quotient);
  }

  const PAParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  /// The coefficient rows, one per SV (n_outputs columns).
  RowMatrix coefficients() const { return m_ex.sv().A().topRows(m_ex.size()); }
  const UniformAverage& average() const { return m_avg; }
  /// Classifiers held so far (f_1 = 0 included): what the average divides by.
  double n_classifiers() const { return static_cast<double>(m_count.examples) + 1.0; }

  /// Scores x (the prequential prediction; of the average when averaged), then learns from
  /// (x, y). Returns the prediction.
  /// \param x  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* x, std::int32_t y) {
    const double kappa = m_ex.score(x);
    const std::int32_t pred = m_avg.predict_scored(m_ex, x, n_classifiers(), m_favg);
    note_scores(m_avg.enabled() ? m_favg : m_ex.f());
    ++m_count.examples;
    if (m_p.loss == PALoss::Ramp && !label_needed(m_ex.f())) {
      m_label_unused = true;  // |f| > 1 (gap > 1): no update whatever the label (eq. 15, 19)
      return pred;
    }
    double L = 0.0;
    if (!wants_update(y, L) || !(kappa > 0.0)) return pred;
    // Every coefficient the update changes is bracketed for the average (O(n c), the order
    // of the kernel row); SVs that leave retire with their sums.
    const double t = static_cast<double>(m_count.examples);
    m_avg.begin_all(m_ex.sv(), t);
    update(x, y, kappa, L);
    m_avg.end_all(m_ex.sv(), t);
    return pred;
  }

  /// Decision values of one example (of the average when averaged); thread-safe for
  /// concurrent readers.
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
  /// SVs with coefficients w_k alpha, and with averaging sum_k w_k fbar_k as the average
  /// (detail::averaged_union), reduced to the budget by the variant's rule without a new
  /// example (detail::bpa_combine). rep.degradation sums the exact ||Delta w||^2 of those
  /// steps. Counters: combined (detail::combined_counters) plus the reduction's steps; the
  /// generator is model 0's.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const PassiveAggressive*>& models, const CombinePlan& plan,
                    const PassiveAggressive* base, CombineReport& rep) {
    PAParams p = models[0]->m_p;
    for (const PassiveAggressive* m : models) check_combinable(p, m->m_p);
    if (plan.budget >= 0) p.budget = plan.budget;
    reset(models[0]->m_d, plan.n_classes, p);
    m_rng = models[0]->m_rng;
    const Counters count = detail::combined_counters_of(models, base);
    const double N = static_cast<double>(count.examples) + 1.0;  // the result's n_classifiers()
    m_count = Counters{};  // counts the reduction's maintenance steps (finish_combined_counters)
    detail::BPAContext c = context();
    detail::bpa_combine(*m_bpa.rule, c, models, plan, N, m_bpa.obj, rep);
    detail::finish_combined_counters(m_count, count, rep);
    m_bpa.obj.resize(0);  // the test hooks read as after load()
    m_bpa.removed = -1;
    metadata = models[0]->metadata;
  }

 private:
  /// The PA / BPA step for an example with loss L > 0 (the ramp test passed).
  void update(const double* x, std::int32_t y, double kappa, double L) {
    detail::BPAContext c = context();
    if (!(m_p.budget > 0 && m_ex.size() >= m_p.budget && m_bpa.rule->weighs_candidates()))
      return add_example(c, x, kappa, L);
    if (m_bpa.rule->prepare_full(c)) {
      // BPA-P's lazy activation (projection.hpp) folded numerically dependent SVs into the
      // others: the model and the store order changed, so x is scored again and the step
      // decided afresh under the budget.
      kappa = m_ex.score(x);
      const bool ramp_ok = m_p.loss == PALoss::Hinge || label_needed(m_ex.f());
      if (ramp_ok && wants_update(y, L) && kappa > 0.0)
        add_example(c, x, kappa, L);  // counts the update
      else
        ++m_count.updates;  // the fold alone changed the model
      return;
    }
    const detail::BPAExample e{x, kappa, L, m_u, u2(), rule(), m_count.examples};
    detail::bpa_budgeted_update(*m_bpa.rule, c, e, m_bpa.obj, m_row);
  }

 public:
  /// Active learning (ramp loss, BPA paper 4.3). Scores x; when the update cannot depend on
  /// the label (ramp loss and |f| > 1, multi-class: the top two scores more than 1 apart) it
  /// counts the example as seen (no label, no update, no mistake: the label is unknown),
  /// writes the prediction into *pred (when pred is not null) and returns false. Otherwise it
  /// changes nothing and returns true: the caller gets the label and calls learn_one(x, y).
  /// Hinge-loss learners always return true (and do not score). x must be finite.
  /// \param x     n_features() values.
  /// \param pred  null, or receives the prediction when no label is needed.
  /// \return whether the example needs its label (then call learn_one).
  bool observe(const double* x, std::int32_t* pred) {
    if (m_p.loss != PALoss::Ramp) return true;
    m_ex.score(x);
    if (label_needed(m_ex.f())) return true;
    const std::int32_t p = m_avg.predict_scored(m_ex, x, n_classifiers(), m_favg);  // what step() predicts
    ++m_count.examples;
    if (pred) *pred = p;
    return false;
  }

  /// observe() over rows start.. of X; returns the index of the first row that needs a label
  /// (X.rows() when none). pred (may be null) receives the predictions of the skipped rows at
  /// their index. Rows are validated one at a time as they are reached. `stop` (may be null)
  /// is asked before every row (Interrupted: done() rows of this call observed; stop_poll.hpp).
  /// \throws std::invalid_argument on a wrong column count, start out of range, or a
  ///         non-finite row (the rows before it are already processed).
  /// \param X      the examples, one per row.
  /// \param start  the first row to observe.
  /// \param pred   null, or room for X.rows() predictions.
  /// \param stop   null, or the poll that can cancel the call.
  /// \return the index of the first row that needs a label, X.rows() when none does.
  Index active_run(const Eigen::Ref<const RowMatrix>& X, Index start, std::int32_t* pred, StopPoll* stop = nullptr) {
    detail::require(X.cols() == m_d, "active_run: X has " + std::to_string(X.cols()) + " features, expected " +
                                         std::to_string(m_d));
    detail::require(start >= 0 && start <= X.rows(), "active_run: start out of range");
    for (Index i = start; i < X.rows(); ++i) {
      detail::poll_stop(stop, i - start);
      const double* row = X.row(i).data();
      if (const char* problem = learn_row_problem(row))
        detail::invalid("active_run: row " + std::to_string(i) + " " + describe_row_problem(row, problem));
      if (observe(row, pred ? pred + i : nullptr)) return i;
    }
    return X.rows();
  }

  /// Test hooks for the last budgeted update of BPA-S/NN/P (full store, positive loss): the
  /// objective Q(w^r) of every candidate, index i < n for old SV i (store order before the
  /// update) and n for r = t (+inf for an infeasible candidate, or for every r != t when
  /// BPA-P found x_t in the span of the SVs and took r = t directly); and the chosen index.
  /// PA+Rand leaves the objectives empty and reports the removed index (n for x_t).
  /// Empty / -1 before any such update (and after load()).
  const Vector& last_objectives() const { return m_bpa.obj; }
  Index last_removed() const { return m_bpa.removed; }
  /// BPA-NN bookkeeping (maintained only for the NearestNeighbor variant with a budget).
  const NearestNeighbors& nearest_neighbors() const { return m_bpa.nn; }
  /// BPA-P's maintained inverse (active after the first budgeted update).
  const Projection& projection() const { return m_bpa.proj; }

  /// Writes the whole state (learner name "pa"): parameters, counters, the kernel expansion
  /// (the fields budgetkernel::Model reads), the generator, and the BPA-NN bookkeeping or the
  /// BPA-P projection state, so that a loaded learner resumes training bit for bit.
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    write_base(fm, "pa");
    m_ex.save(fm);
    fm.set("C", m_p.C);
    fm.set_int("pa_type", m_p.pa_type);
    fm.set_int("loss", static_cast<std::int64_t>(m_p.loss));
    fm.set_int("budget", m_p.budget);
    fm.set_int("variant", static_cast<std::int64_t>(m_p.variant));
    fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
    fm.set_bytes("rng", detail::rng_state(m_rng));
    detail::save_bpa_state(fm, m_p.variant, m_p.budget, m_bpa.nn, m_bpa.proj);
    fm.set_int("averaged", m_p.averaged ? 1 : 0);
    m_avg.save(fm, m_ex.sv(), n_classifiers());
  }

  /// Restores what save() wrote.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  void load(const FieldMap& fm) {
    if (fm.get_bytes("learner") != "pa") detail::corrupt("holds a '" + fm.get_bytes("learner") + "' model, not 'pa'");
    PAParams p;
    p.kernel = read_kernel(fm);
    p.C = fm.get_f64("C");
    p.pa_type = detail::read_pa_type(fm);
    p.loss = detail::enum_from_code(pa_loss_names, fm.get_i64("loss"), "loss");
    p.variant = detail::enum_from_code(bpa_variant_names, fm.get_i64("variant"), "variant");
    p.budget = fm.get_i64("budget");
    p.seed = static_cast<std::uint64_t>(fm.get_i64("seed"));
    p.averaged = fm.get_i64("averaged") != 0;
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto [d, c] = detail::read_dims(fm, "sv.alpha");
    PassiveAggressive fresh;
    fresh.reset(d, c, p);
    fresh.read_base(fm, "pa");
    fresh.m_ex.load(fm, d, fresh.n_outputs(), p.budget, p.budget > 0 ? p.budget + 1 : 64);
    for (Index i = 0; i < fresh.m_ex.size(); ++i)
      if (fresh.m_ex.sv().id(i) < 0 || fresh.m_ex.sv().id(i) > fresh.m_count.examples) detail::corrupt("invalid SV id");
    detail::set_rng_state(fresh.m_rng, fm.get_bytes("rng"));
    detail::load_bpa_state(fm, p.variant, p.budget, fresh.m_ex.sv(), fresh.m_bpa.nn, fresh.m_bpa.proj);
    fresh.m_avg.load(fm, fresh.m_ex.sv());
    if (fresh.m_avg.enabled() != p.averaged) detail::corrupt("averaging flag disagrees with the averaged state");
    *this = std::move(fresh);  // all or nothing: a failed load leaves the learner unchanged
  }

 private:
  /// The PA step of these parameters (pa_step.hpp).
  detail::PAStep rule() const { return {m_p.pa_type, m_p.C}; }
  /// What the budget rule reads and changes.
  detail::BPAContext context() {
    return detail::bpa_context(m_ex, m_avg, m_bpa, m_count, m_rng, m_p.kernel, m_p.budget);
  }

  /// combine_from's check: the models must share every parameter but the seed.
  static void check_combinable(const PAParams& a, const PAParams& b) {
    detail::require_same(detail::same_kernel(a.kernel, b.kernel), "kernels");
    detail::require_same(a.C == b.C, "C");
    detail::require_same(a.pa_type == b.pa_type, "pa_type");
    detail::require_same(a.loss == b.loss, "losses");
    detail::require_same(a.budget == b.budget, "budgets");
    detail::require_same(a.variant == b.variant, "variants");
    detail::require_same(a.averaged == b.averaged, "averaged flags");
  }

  double u2() const { return n_outputs() == 1 ? 1.0 : 2.0; }

  /// Whether the label can change the update (ramp loss): binary |f| <= 1; multi-class the
  /// top two scores at most 1 apart (otherwise m > 1 or m < -1 whatever the label).
  bool label_needed(const Vector& f) const {
    if (f.size() == 1) return std::abs(f(0)) <= 1.0;
    double top = -std::numeric_limits<double>::infinity(), second = top;
    for (Index i = 0; i < f.size(); ++i) {
      if (f(i) > top)
        second = top, top = f(i);
      else if (f(i) > second)
        second = f(i);
    }
    return top - second <= 1.0;
  }

  /// Sets m_u and the loss L = 1 - m for label y from the current scores; returns whether
  /// the example triggers an update: L > 0, and for the ramp loss also m >= -1 (eq. 15).
  bool wants_update(std::int32_t y, double& L) {
    const double m = detail::max_loss_direction(m_ex.f(), y, m_u);
    L = 1.0 - m;
    if (!(L > 0.0)) return false;
    return m_p.loss == PALoss::Hinge || m >= -1.0;
  }

  /// Unbudgeted PA / the under-budget branch of Algorithm 1 (and PA+Rand): add x_t with
  /// coefficient row tau u, tau from q = ||u||^2 k(x_t, x_t) (eq. 3 kernelised).
  void add_example(detail::BPAContext& c, const double* x, double kappa, double L) {
    m_row = rule().step_size(L, u2() * kappa) * m_u;
    detail::bpa_add(*m_bpa.rule, c, x, kappa, m_row, m_count.examples);
  }

  PAParams m_p;
  KernelExpansion m_ex;
  std::mt19937_64 m_rng;
  UniformAverage m_avg;
  detail::BPASideState m_bpa;  // the variant's rule and its side state
  Vector m_u, m_row, m_favg;  // the class direction u, a coefficient-row buffer, averaged scores
};

}  // namespace budgetkernel
