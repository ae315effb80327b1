#pragma once
/// \file learners/perceptron.hpp
/// The kernel perceptron family: the unbudgeted kernel perceptron (Rosenblatt 1958; the
/// multi-class one of Crammer & Singer 2003, max form) and its budgeted variants compared
/// in the BPA paper's experiments (Wang & Vucetic, AISTATS 2010, "Algorithms" paragraph and
/// Table 1): Stoptron, the random budget perceptron, the self-tuned Forgetron, max-margin
/// removal, Projectron and Projectron++, one rule class each (perceptron_rules.hpp).

#include "combine.hpp"
#include "perceptron_rules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace budgetkernel {

/// The rules' names (KernelPerceptron's `maintenance`; files store the number).
inline constexpr detail::EnumName<PerceptronBudget> perceptron_budget_names[] = {
    {PerceptronBudget::Stop, "stop"},           {PerceptronBudget::Random, "random"},
    {PerceptronBudget::Forgetron, "forgetron"}, {PerceptronBudget::MaxMargin, "max-margin"},
    {PerceptronBudget::Projectron, "projectron"}, {PerceptronBudget::ProjectronPP, "projectron++"}};

/// \param m  a budget rule.
/// \return its name in perceptron_budget_names.
inline const char* perceptron_budget_name(PerceptronBudget m) { return detail::enum_name(perceptron_budget_names, m); }

/// Parameters of the kernel perceptron family.
struct PerceptronParams {
  Kernel kernel{KernelType::RBF, 1.0};
  Index budget = 0;  ///< B; 0 = unbudgeted kernel perceptron (Projectron: no cap on the store)
  PerceptronBudget maintenance = PerceptronBudget::Random;
  double eta = 0.1;   ///< Projectron(++): project when ||delta_t|| <= eta (>= 0)
  double beta = 0.0;  ///< MaxMargin: update when the margin is <= beta (>= 0; 0 = mistakes only)
  std::uint64_t seed = 0;  ///< seeds the generator of Random

  /// \throws std::invalid_argument naming the offending parameter.
  void validate() const {
    detail::require_psd_kernel(kernel);
    detail::require(budget >= 0, "budget must be >= 1 (or 0 for no budget)");
    detail::require_enum(perceptron_budget_names, maintenance, "maintenance");
    detail::require_non_negative(eta, "eta");
    detail::require_non_negative(beta, "beta");
  }
};

/// Kernel perceptron with one of the budget rules of PerceptronBudget.
///
/// Model f(x) = sum_j alpha_j k(x_j, x) (a KernelExpansion; one coefficient column for two
/// classes, c columns otherwise). Update vector u: binary u = y in {+1, -1}, a mistake when
/// y f <= 0; multi-class (Crammer & Singer 2003, max form) r' = the highest-scoring wrong
/// class (ties: lowest index), a mistake when f_y <= f_r', u = e_y - e_r'. An added SV gets
/// coefficient row u.
///
/// Cost per update (one kernel row of x_t is always computed to score it): Stop and Random
/// O(B d); Forgetron and MaxMargin O(B (d + c)) (one more kernel row, of the removed SV);
/// Projectron(++) O(B^2) (Projection keeps K^{-1}).
///
/// Counters: updates = examples that changed the model; maintenance = removals plus
/// projection steps (a projected mistake of Projectron(++), or the fold of a numerically
/// dependent new SV); degradation = the exact ||Delta w||^2 of that part: ||alpha_r||^2 k_rr
/// for a removal (for the Forgetron: of the already shrunk SV; the shrink itself is not
/// counted), ||u||^2 ||delta_t||^2 for a projected mistake (the distance between the
/// projected and the perceptron's update). Projectron++'s margin-error steps are ordinary
/// updates (they replace no addition), counted in updates only. Stop never does maintenance
/// (but for the SVs a combine() over the budget drops: see combine_from).
class KernelPerceptron : public OnlineLearner<KernelPerceptron> {
 public:
  /// A usable (1 feature, 2 classes, default parameters) learner, typically replaced by load().
  KernelPerceptron() { reset(1, 2, PerceptronParams{}); }
  /// Constructs the learner: reset(n_features, n_classes, params).
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  /// \throws std::invalid_argument if the parameters or dimensions are invalid.
  KernelPerceptron(Index n_features, Index n_classes, const PerceptronParams& params) {
    reset(n_features, n_classes, params);
  }

  /// Forgets everything and starts a fresh model.
  /// \throws std::invalid_argument on invalid parameters or dimensions.
  /// \param n_features  d, the number of values of every input row (>= 1).
  /// \param n_classes   c >= 2; labels are class indices 0 .. c-1.
  /// \param params      the parameters (validated).
  void reset(Index n_features, Index n_classes, const PerceptronParams& params) {
    params.validate();
    init_base(n_features, n_classes, params.budget);
    m_p = params;
    m_rng.seed(params.seed);
    const Index c = n_outputs();
    const Index cap = params.budget > 0 ? params.budget + 1 : 64;
    m_ex.reset(n_features, c, params.kernel, cap);
    m_label.clear();
    m_label.reserve(static_cast<std::size_t>(cap));
    m_u.setZero(c);
    m_f_r.setZero(c);
    m_alpha_r.setZero(c);
    m_forgetron_q = 0.0;
    m_forgetron_m = 0;
    const bool removes = params.budget > 0 && (params.maintenance == PerceptronBudget::Forgetron ||
                                               params.maintenance == PerceptronBudget::MaxMargin);
    m_krow_r.setZero(removes ? cap : 0);
    m_F.setZero(tracks_margins() ? cap : 0, c);
    m_proj = Projection();
    m_rule = &detail::perceptron_rule(params.maintenance);
    // Projectron tracks K^{-1} of the store from the first SV on (activation of the empty store).
    if (projectron()) m_proj.activate(m_ex.sv(), m_p.kernel);
  }

  const PerceptronParams& params() const { return m_p; }
  const SupportVectors& support_vectors() const { return m_ex.sv(); }
  /// Coefficients alpha, one row per SV, n_outputs() columns.
  RowMatrix coefficients() const { return m_ex.sv().A().topRows(m_ex.size()); }
  /// Class label (0..c-1) of each SV's example, in store order.
  const std::vector<std::int32_t>& sv_labels() const { return m_label; }
  /// MaxMargin with a budget: F_i = f(x_i) for every SV (store order); empty otherwise.
  RowMatrix sv_scores() const { return m_F.topRows(tracks_margins() ? m_ex.size() : 0); }
  /// Forgetron: the accumulated damage Q and the number of updates M (section 4 of the paper).
  double forgetron_q() const { return m_forgetron_q; }
  std::int64_t forgetron_updates() const { return m_forgetron_m; }
  /// Projectron(++): the maintained K^{-1} of the store.
  const Projection& projection() const { return m_proj; }

  /// Predicts x with the current model, then learns from (x, y). Returns the prediction.
  /// \param xp  n_features() values, already checked (OnlineLearner::check_chunk).
  /// \param y  its class index, already checked.
  /// \return the class index predicted before learning (the prequential prediction).
  std::int32_t step(const double* xp, std::int32_t y) {
    const double kappa = m_ex.score(xp);
    const Vector& f = m_ex.f();
    const std::int32_t pred = detail::predict_from_scores(f);
    note_scores(f);
    const std::int64_t t = ++m_count.examples;
    const double margin = update_direction(f, y);
    detail::PerceptronState s = state();
    m_rule->learn(s, {xp, y, t, kappa, margin});
    return pred;
  }

  /// Decision values of one example (n_outputs() values); thread-safe for concurrent readers.
  /// \param xp    n_features() values.
  /// \param out  receives n_outputs() decision values.
  void decision(const double* xp, double* out) const { m_ex.decision(xp, out); }
  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// taken per block of rows (OnlineLearner::decision_function calls it).
  /// \param X     the examples, one per row.
  /// \param out   X.rows() x n_outputs(), receives the values.
  /// \param stop  null, or the poll that can cancel the call (Interrupted).
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    m_ex.decision_rows(X, out, stop);
  }

  /// combine() of one model within `budget` is a copy of it (learners/combine.hpp).
  /// \param budget  the budget combine() was asked for (-1: the model's own).
  /// \return whether combining this model alone within `budget` is a plain copy of it.
  bool combine_is_copy(Index budget) const { return budget < 0 || budget == m_p.budget; }
  Index combine_size() const { return m_ex.size(); }

  /// This model becomes sum_k w_k f_k of `models` (learners/combine.hpp): the union of their
  /// SVs with mapped, weighted coefficient rows (CombinePlan::add_row), each SV's label mapped
  /// to the result's classes (a point several models hold keeps its first copy's label).
  /// Without a budget, or when the union fits it, every SV is kept: f is exact. Otherwise the
  /// SVs enter most important first and each variant's own rule keeps the budget:
  ///   Stop       the first B enter, the rest are dropped (a full Stoptron adds nothing);
  ///   Random     the whole union enters, then uniformly random SVs leave (remove_random, as
  ///              in step()) until B remain: a uniform B-subset, whatever the order;
  ///   Forgetron  each overflow removes the oldest SV (smallest id; the ids are the models'
  ///              example counters, comparable when they continued from one base), without
  ///              the shrink: see combine_forgetron_state;
  ///   MaxMargin  F is kept as step() keeps it (enter_margins with the SV's row), and each
  ///              overflow removes the SV whose example keeps the largest margin without it;
  ///   Projectron(++)  the first B enter K^{-1}; the next ones are projected onto their span
  ///              (a mistake's cap branch, with the SV's row for u). eta is not applied: it
  ///              decides whether a mistake earns an SV, and the union's SVs are kept exactly
  ///              while the budget (a cap on the store) allows.
  /// Removals count ||alpha_r||^2 k_rr, projections ||alpha_r||^2 ||delta_r||^2, and a Stop
  /// drop ||alpha_r||^2 k_rr too (each the exact ||Delta w||^2 of its step); every removal,
  /// projection or drop is one of rep.reductions. Projectron: a numerically dependent SV is
  /// folded into the others as step() folds it (a reduction too), so that K^{-1} stays valid.
  /// The random generator and the metadata are model 0's.
  /// \param models  the models to combine: this class, the same parameters but the seed.
  /// \param plan    the validated weights w_k, class maps and budget (combine() makes it).
  /// \param base    the model all of them continued from, or null (counters count it once).
  /// \param rep     receives what the reduction did (CombineReport).
  void combine_from(const std::vector<const KernelPerceptron*>& models, const CombinePlan& plan,
                    const KernelPerceptron* base, CombineReport& rep) {
    PerceptronParams p = models[0]->m_p;
    for (const KernelPerceptron* m : models) check_combinable(p, m->m_p);
    if (plan.budget >= 0) p.budget = plan.budget;
    reset(models[0]->m_d, plan.n_classes, p);
    m_rng = models[0]->m_rng;
    std::vector<std::int32_t> labels;
    const detail::ExpansionUnion u = combine_union(models, plan, labels);
    rep.union_size = u.size();
    rep.duplicates = u.duplicates();
    enter_union(u, labels);  // counts the reduction in m_count (still zero before)
    rep.degradation = m_count.degradation;
    rep.reductions = m_count.maintenance;
    std::vector<const Counters*> counts;
    for (const KernelPerceptron* m : models) counts.push_back(&m->m_count);
    m_count = detail::combined_counters(counts, base ? &base->m_count : nullptr);
    m_count.degradation += rep.degradation;
    m_count.maintenance += rep.reductions;
    combine_forgetron_state(models, base);
    metadata = models[0]->metadata;
  }

  /// Writes every field needed to predict and to resume training (the model file, io.hpp).
  /// \param fm  receives the fields.
  void save(FieldMap& fm) const {
    write_base(fm, "perceptron");
    m_ex.save(fm);
    fm.set_int("budget", m_p.budget);
    fm.set_int("maintenance", static_cast<std::int64_t>(m_p.maintenance));
    fm.set("eta", m_p.eta);
    fm.set("beta", m_p.beta);
    fm.set_int("seed", static_cast<std::int64_t>(m_p.seed));
    fm.set_bytes("rng", detail::rng_state(m_rng));
    fm.set_ints("sv.label", std::vector<std::int64_t>(m_label.begin(), m_label.end()));
    fm.set("forgetron.Q", m_forgetron_q);
    fm.set_int("forgetron.M", m_forgetron_m);
    if (tracks_margins()) fm.set_matrix("maxmargin.F", m_F.topRows(m_ex.size()));
    if (projectron()) m_proj.save(fm, "projection.");
  }

  /// Restores what save() wrote, so that learning continues bit for bit.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or invalid fields.
  /// \param fm  a model file's fields (FieldMap::from_bytes).
  void load(const FieldMap& fm) {
    PerceptronParams p;
    p.kernel = read_kernel(fm);
    p.budget = fm.get_i64("budget");
    p.maintenance = detail::enum_from_code(perceptron_budget_names, fm.get_i64("maintenance"), "maintenance");
    p.eta = fm.get_f64("eta");
    p.beta = fm.get_f64("beta");
    p.seed = static_cast<std::uint64_t>(fm.get_i64("seed"));
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      detail::corrupt(e.what());
    }
    const auto [d, c] = detail::read_dims(fm, "sv.alpha");
    reset(d, c, p);
    read_base(fm, "perceptron");
    const Index cap = p.budget > 0 ? p.budget + 1 : 64;
    m_ex.load(fm, d, n_outputs(), p.budget, cap);
    const Index n = m_ex.size();
    const auto labels = fm.get_ints("sv.label", n);
    m_label.assign(labels.size(), 0);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] < 0 || labels[i] >= c) detail::corrupt("support-vector label out of range");
      m_label[i] = static_cast<std::int32_t>(labels[i]);
    }
    detail::set_rng_state(m_rng, fm.get_bytes("rng"));
    m_forgetron_q = fm.get_f64("forgetron.Q");
    m_forgetron_m = fm.get_i64("forgetron.M");
    if (!std::isfinite(m_forgetron_q) || m_forgetron_m < 0 || m_forgetron_m > m_count.examples)
      detail::corrupt("invalid Forgetron state");
    if (m_count.updates > m_count.examples || m_count.maintenance < 0) detail::corrupt("invalid counter");
    if (p.budget > 0 && n > p.budget) detail::corrupt("more support vectors than the budget");
    m_krow_r.setZero(m_krow_r.size() > 0 ? std::max<Index>(cap, n + 1) : 0);
    if (tracks_margins()) {
      const RowMatrix F = fm.get_matrix("maxmargin.F", n, n_outputs());
      if (!detail::all_finite(F.data(), F.size())) detail::corrupt("non-finite margin cache");
      m_F.setZero(std::max<Index>(cap, n + 1), n_outputs());
      m_F.topRows(n) = F;
    }
    if (projectron()) {
      m_proj.load(fm, "projection.", m_ex.sv());
      if (!m_proj.active()) detail::corrupt("inactive projection state for a Projectron");
    }
  }

 private:
  bool projectron() const {
    return m_p.maintenance == PerceptronBudget::Projectron || m_p.maintenance == PerceptronBudget::ProjectronPP;
  }
  bool tracks_margins() const { return m_p.maintenance == PerceptronBudget::MaxMargin && m_p.budget > 0; }

  /// Sets m_u to the update vector for (f, y) and returns the margin: binary y f,
  /// multi-class f_y - f_r' with r' the highest-scoring wrong class (ties: lowest index).
  double update_direction(const Vector& f, std::int32_t y) {
    if (f.size() == 1) {
      const double sy = y == 1 ? 1.0 : -1.0;
      m_u(0) = sy;
      return sy * f(0);
    }
    Index r = y == 0 ? 1 : 0;
    for (Index i = r + 1; i < f.size(); ++i)
      if (i != y && f(i) > f(r)) r = i;
    m_u.setZero();
    m_u(y) = 1.0;
    m_u(r) = -1.0;
    return f(y) - f(r);
  }

  /// What the budget rule reads and changes.
  detail::PerceptronState state() {
    return {m_ex,     m_label,  m_F,        m_proj,     m_rng,   m_count,  m_forgetron_q,   m_forgetron_m,
            m_u,      m_f_r,    m_alpha_r,  m_krow_r,   m_p.kernel, m_p.budget, m_p.eta, m_p.beta, tracks_margins()};
  }

  /// combine_from's check: the models must share every parameter but the seed.
  static void check_combinable(const PerceptronParams& a, const PerceptronParams& b) {
    const auto same = [](bool ok, const char* what) {
      detail::require(ok, std::string("combine: the models' ") + what + " differ");
    };
    same(detail::same_kernel(a.kernel, b.kernel), "kernels");
    same(a.budget == b.budget, "budgets");
    same(a.maintenance == b.maintenance, "maintenance rules");
    same(a.eta == b.eta, "eta");
    same(a.beta == b.beta, "beta");
  }

  /// The union of the models' SVs (ExpansionUnion), and labels[r] = the result's class of
  /// union row r's example. The SVs go in one at a time, so that a new row (the union grew)
  /// is told from a duplicate, which keeps the label of its first copy.
  static detail::ExpansionUnion combine_union(const std::vector<const KernelPerceptron*>& models,
                                              const CombinePlan& plan, std::vector<std::int32_t>& labels) {
    const Index d = models[0]->m_d;
    detail::ExpansionUnion u(d, plan.n_outputs(), 0);
    RowMatrix x(1, d), a;
    std::vector<std::int64_t> id(1);
    for (std::size_t k = 0; k < models.size(); ++k) {
      const SupportVectors& sv = models[k]->m_ex.sv();
      a.resize(1, sv.n_coef());
      for (Index i = 0; i < sv.size(); ++i) {
        x.row(0) = sv.x(i);
        a.row(0) = sv.alpha(i);
        id[0] = sv.id(i);
        const Index before = u.size();
        u.add(plan, k, x, 1, a, nullptr, id);
        const auto y = static_cast<std::size_t>(models[k]->m_label[static_cast<std::size_t>(i)]);
        if (u.size() > before) labels.push_back(plan.maps[k][y]);
      }
    }
    return u;
  }

  /// Feeds the union to the empty model by the rules of combine_from; the maintenance steps
  /// count in m_count (maintenance, degradation) as in step().
  void enter_union(const detail::ExpansionUnion& u, const std::vector<std::int32_t>& labels) {
    detail::PerceptronState s = state();
    Vector a(m_ex.sv().n_coef());
    for (const Index r : detail::combine_order(u, m_p.budget, m_p.kernel)) {
      a = u.alpha(r);
      m_rule->enter(s, u.x(r), a, labels[static_cast<std::size_t>(r)], u.id(r));
    }
    m_rule->finish_union(s);
  }

  /// The Forgetron's M (updates) and Q (damage) of a combined model: base + sum_k (v_k -
  /// base) like the counters, Q at most 15/32 M, the bound each update's shrink keeps (a sum
  /// of models' values keeps it, a base's subtraction may not). The combine's own removals
  /// are not charged to Q: the shrink spends the allowance 15/32 that an update earns, and a
  /// combine makes no update, so the self-tuned rule would shrink the whole model to pay for
  /// each removal, towards 0 once the models have spent their allowance (changing no
  /// prediction, but the weight of every later update against the model). Their damage
  /// ||alpha_r||^2 k_rr is the reported degradation instead.
  void combine_forgetron_state(const std::vector<const KernelPerceptron*>& models, const KernelPerceptron* base) {
    std::vector<std::int64_t> ms;
    double q = 0.0;
    for (const KernelPerceptron* m : models) {
      ms.push_back(m->m_forgetron_m);
      q += m->m_forgetron_q;
    }
    if (base) q -= static_cast<double>(models.size() - 1) * base->m_forgetron_q;
    m_forgetron_m = (std::min)(detail::combined_count(ms, base ? &base->m_forgetron_m : nullptr), m_count.examples);
    m_forgetron_q = (std::min)(q, 15.0 / 32.0 * static_cast<double>(m_forgetron_m));
  }

  PerceptronParams m_p;
  KernelExpansion m_ex;
  Projection m_proj;
  std::mt19937_64 m_rng;
  std::vector<std::int32_t> m_label;  // class of each SV's example (store order)
  RowMatrix m_F;                      // MaxMargin: F_i = f(x_i) (store order)
  double m_forgetron_q = 0.0;         // Forgetron's Q
  std::int64_t m_forgetron_m = 0;     // Forgetron's M
  Vector m_u, m_f_r, m_alpha_r, m_krow_r;  // u; work buffers: f(x_r), alpha_r, k(x_., x_r)
  const detail::PerceptronRule* m_rule = nullptr;  // the budget rule (perceptron_rule), chosen by reset()
};

}  // namespace budgetkernel
