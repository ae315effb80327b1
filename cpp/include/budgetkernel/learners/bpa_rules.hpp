#pragma once
/// \file learners/bpa_rules.hpp
/// The budget rules of Wang & Vucetic, "Online Passive-Aggressive Algorithms on a Budget"
/// (AISTATS 2010, the BPA paper; its equation numbers), one class each: BPA-S, BPA-NN, BPA-P
/// and PA+Rand. PassiveAggressive and PARegressor pick one at construction (bpa_rule) and
/// call it through BPARule; the regressor is the binary classifier with u = the sign of the
/// residual (docs/derivations.md, "PA regression on a budget"), so both share every rule.

#include "../budget/nearest_neighbor.hpp"
#include "../budget/projection.hpp"
#include "../detail/random.hpp"
#include "combine.hpp"
#include "kernel_expansion.hpp"
#include "pa_step.hpp"
#include "uniform_average.hpp"

#include <limits>
#include <random>

namespace budgetkernel {

/// How a full store makes room (Algorithm 1 of the BPA paper, section 3.1).
enum class BPAVariant : std::int32_t { Simple = 0, NearestNeighbor = 1, Project = 2, Random = 3 };

namespace detail {

/// The learner's state a rule reads and changes (references into the learner).
struct BPAContext {
  KernelExpansion& ex;      ///< the model; its last score() was of the example at hand
  UniformAverage& avg;      ///< every SV that leaves retires from the average
  NearestNeighbors& nn;     ///< BPA-NN's bookkeeping
  Projection& proj;         ///< BPA-P's maintained inverse G = K^{-1}
  SupportVectors& snapshot;  ///< BPA-P: the store before activation (averaging only)
  Vector& beta;             ///< BPA-P: K^{-1} k_t of the last candidate r = t
  std::int64_t& updates;
  std::int64_t& maintenance;
  double& degradation;
  Index& removed;  ///< the chosen candidate (the learners' last_removed test hook)
  std::mt19937_64& rng;
  const Kernel& kernel;
  Index budget;
};

class BPARule;
/// A PA learner's budget rule (bpa_rule), its side state, and the last budgeted step's
/// objectives and choice (the test hooks).
struct BPASideState {
  NearestNeighbors nn;
  Projection proj;
  SupportVectors snapshot;
  Vector beta, obj;
  Index removed = -1;
  const BPARule* rule = nullptr;
};

/// The context of a learner with counters `count` (Counters or RegressionCounters).
template <class Count>
BPAContext bpa_context(KernelExpansion& ex, UniformAverage& avg, BPASideState& s, Count& count, std::mt19937_64& rng,
                       const Kernel& kernel, Index budget) {
  return {ex,        avg, s.nn,   s.proj, s.snapshot, s.beta, count.updates, count.maintenance, count.degradation,
          s.removed, rng, kernel, budget};
}

/// The example of a budgeted step: x_t (last scored), k_tt, its loss L > 0, the update
/// direction u (a coefficient row per unit step) with ||u||^2, the PA step rule and x_t's id.
struct BPAExample {
  const double* x;
  double kappa;
  double L;
  const Vector& u;
  double u_sqnorm;
  PAStep step;
  std::int64_t id;
};

/// What the candidate r = t (nothing removed) needs once chosen: its step tau', BPA-NN's
/// NN(t), and whether BPA-P found x_t in the span of the SVs.
struct BPACandidateT {
  double taup = 0.0;
  Index nn_t = NearestNeighbors::none;
  bool span = false;
};

/// BPA-NN's projection of SV r onto S = {t, NN(r)} or, with no new example, S = {NN(r)}:
/// res_r = k_rr - k_r^T K_S^{-1} k_r and the coefficients K_S^{-1} k_r on NN(r) and x_t.
struct NNProjection {
  double residual;
  double on_neighbour;
  double on_new;
};
/// Whether the set S of nn_projection holds the example last scored.
enum class NewExample : bool { Excluded = false, Included = true };

/// Section 3.1.3, solved by elimination against t first: the residual of NN(r) against t is
/// s_m = k_mm - k_mt^2 / k_tt; when it vanishes (NN(r) in the span of x_t) or r has no other
/// SV, S = {t} (BPA-S). Without t, the same elimination with every k_.t = 0. O(1).
inline NNProjection nn_projection(const BPAContext& c, Index r, double inv_kappa, NewExample with) {
  const SupportVectors& sv = c.ex.sv();
  const Vector& krow = c.ex.krow();
  const bool with_t = with == NewExample::Included;
  const double krt = with_t ? krow(r) : 0.0;
  const double krr = c.kernel.self(sv.sqnorm()(r));
  NNProjection p{0.0, 0.0, krt * inv_kappa};
  double res = krr - krt * p.on_new;
  const Index m = c.nn.nn(r);
  if (m != NearestNeighbors::none) {
    const double kmm = c.kernel.self(sv.sqnorm()(m));
    const double kmt = with_t ? krow(m) : 0.0;
    const double kmt_k = kmt * inv_kappa;  // k_mt / k_tt
    const double sm = kmm - kmt * kmt_k;
    if (sm > 1e-12 * kmm) {
      const double cross = c.nn.kernel_value(r) - krt * kmt_k;  // <residual of r, residual of m>
      p.on_neighbour = cross / sm;
      p.on_new -= p.on_neighbour * kmt_k;
      res -= cross * p.on_neighbour;
    }
  }
  p.residual = (std::max)(0.0, res);
  return p;
}

/// eq. (7): r* = argmin Q over obj(0..n), index n standing for r = t (ties to r = t, else
/// the first index).
inline Index choose_candidate(const Vector& obj, Index n) {
  Index best = n;
  double best_q = obj(n);  // the running minimum stays in a register
  for (Index r = 0; r < n; ++r) {
    const double q_r = obj(r);
    if (q_r < best_q) best_q = q_r, best = r;
  }
  return best;
}

/// One budget rule of Algorithm 1. A full store weighs every candidate r in I_t and r = t by
/// Q(w^r) of Proposition 1 (eq. 7-9). For r != t the new example is in S, so K_S^{-1} k_t =
/// e_t and tau is the plain step with q = ||u||^2 k_tt for every r: Q(w^r) = 1/2
/// (||alpha_r||^2 res_r + tau^2 q) + penalty = 1/2 ||alpha_r||^2 res_r + base
/// (docs/derivations.md, "BPA: one step size for every r != t"). The hooks keep the rule's
/// side state (NN bookkeeping, inverse) in step with the store.
class BPARule {
 public:
  virtual ~BPARule() = default;
  /// Whether a full store weighs candidates (PA+Rand adds, then removes at random).
  virtual bool weighs_candidates() const { return true; }
  /// Before a budgeted step: returns whether a change of the model (BPA-P's activation
  /// folding dependent SVs) means the step must be decided afresh.
  virtual bool prepare_full(BPAContext&) const { return false; }
  /// Around an addition of the example last scored (PA's step, the under-budget branch).
  virtual void before_add(BPAContext&, const double*) const {}
  virtual void after_add(BPAContext&, double) const {}
  /// Around an SV entering a combined model (combine_from), scored before the push.
  virtual void before_enter(BPAContext&) const {}
  virtual void after_enter(BPAContext&, double) const {}
  /// Q of every candidate into obj(0..n) (index n: r = t), with base the plain step's part.
  virtual void objectives(BPAContext& c, const BPAExample& e, double base, Vector& obj, BPACandidateT& t) const = 0;
  /// r* = t: x_t's step tau' u projected onto S, x_t not stored; returns whether it changed
  /// the model.
  virtual bool step_onto_set(BPAContext& c, const BPAExample& e, const BPACandidateT& t) const = 0;
  /// r* = r != t (eq. 8-9): x_r projected onto S and removed, x_t stored with its plain step
  /// tau u plus its share of x_r's projection (row: a coefficient-row buffer).
  virtual void replace(BPAContext& c, const BPAExample& e, double tau, Index r, const BPACandidateT& t,
                       Vector& row) const = 0;
  /// With no new example (combine_from, B + 1 SVs stored): Q(w^r) with t neither in S nor
  /// stepping, 1/2 ||alpha_r||^2 res_r, for a2 = ||alpha_r||^2.
  virtual double stored_objective(const BPAContext& c, Index r, double a2) const = 0;
  /// ... and x_r projected onto S and removed; counts the exact ||Delta w||^2.
  virtual void remove_stored(BPAContext& c, Index r) const = 0;

  /// combine_from's maintenance step: r* = argmin stored_objective (r = t scored +inf; no
  /// finite objective, a broken inverse: the first SV), removed by remove_stored.
  virtual void reduce_stored(BPAContext& c, Vector& obj) const {
    const SupportVectors& sv = c.ex.sv();
    const Index n = sv.size();
    if (obj.size() != n + 1) obj.resize(n + 1);
    for (Index r = 0; r < n; ++r) obj(r) = stored_objective(c, r, sv.alpha(r).squaredNorm());
    obj(n) = std::numeric_limits<double>::infinity();
    Index r = choose_candidate(obj, n);
    if (r == n) r = 0;
    c.removed = r;
    ++c.maintenance;
    remove_stored(c, r);
  }

 protected:
  /// Erases SV r, which retires from the average, counting ||alpha_r||^2 res_r.
  static Index erase(BPAContext& c, Index r, double a2, double res) {
    c.degradation += a2 * res;
    c.avg.retire(c.ex.sv(), r);
    return c.ex.sv().erase(r);
  }
};

/// BPA-S, eq. (12): S = {t}, res_r = k_rr - k_rt^2 / k_tt; r = t: S is empty, x_t ignored.
/// Without a new example S = {}: a plain removal. O(B).
class BPASimple : public BPARule {
 public:
  /// How replace() rounds res_r: k_rt^2 / k_tt (the classifier) or k_rt (k_rt / k_tt) (the
  /// regressor); the model files store the degradation each learner has always counted.
  enum class Residual { Quotient, Coefficient };
  explicit BPASimple(Residual form) : m_form(form) {}

  void objectives(BPAContext& c, const BPAExample& e, double base, Vector& obj, BPACandidateT& t) const override {
    const SupportVectors& sv = c.ex.sv();
    const Index n = sv.size();
    const Vector& krow = c.ex.krow();
    for (Index r = 0; r < n; ++r) {
      const double res = (std::max)(0.0, c.kernel.self(sv.sqnorm()(r)) - krow(r) * krow(r) / e.kappa);
      obj(r) = 0.5 * sv.alpha(r).squaredNorm() * res + base;
    }
    obj(n) = e.step.objective_t(e.L, 0.0, t.taup);
  }
  bool step_onto_set(BPAContext&, const BPAExample&, const BPACandidateT&) const override { return false; }
  void replace(BPAContext& c, const BPAExample& e, double tau, Index r, const BPACandidateT&,
               Vector& row) const override {
    SupportVectors& sv = c.ex.sv();
    const double krt = c.ex.krow()(r), krr = c.kernel.self(sv.sqnorm()(r));
    const double coef = krt / e.kappa;  // beta_t = alpha_r k_rt / k_tt + tau u (eq. 12)
    const double res = (std::max)(0.0, m_form == Residual::Quotient ? krr - krt * krt / e.kappa : krr - krt * coef);
    const double a2 = sv.alpha(r).squaredNorm();
    row = coef * sv.alpha(r).transpose() + tau * e.u;
    c.ex.push_last(e.x, row, e.id);
    erase(c, r, a2, res);
  }
  double stored_objective(const BPAContext& c, Index r, double a2) const override {
    return 0.5 * a2 * c.kernel.self(c.ex.sv().sqnorm()(r));
  }
  void remove_stored(BPAContext& c, Index r) const override {
    const SupportVectors& sv = c.ex.sv();
    erase(c, r, sv.alpha(r).squaredNorm(), c.kernel.self(sv.sqnorm()(r)));
  }

 private:
  Residual m_form;
};

/// BPA-NN (section 3.1.3): S = {t} u NN(r), nn_projection's 2x2 system; r = t: S = {NN(t)}.
/// Expected O(B d) with the bookkeeping of nearest_neighbor.hpp.
class BPANearestNeighbor : public BPARule {
 public:
  void before_add(BPAContext& c, const double* x) const override { c.nn.query(c.ex.sv(), x); }
  void after_add(BPAContext& c, double) const override { c.nn.push_queried(c.ex.sv(), c.ex.krow()); }
  void after_enter(BPAContext& c, double) const override { c.nn.on_push(c.ex.sv(), c.ex.krow()); }

  void objectives(BPAContext& c, const BPAExample& e, double base, Vector& obj, BPACandidateT& t) const override {
    const SupportVectors& sv = c.ex.sv();
    const Index n = sv.size();
    const Vector& krow = c.ex.krow();
    t.nn_t = c.nn.query(sv, e.x);
    const double inv_kappa = 1.0 / e.kappa;
    for (Index r = 0; r < n; ++r)
      obj(r) = 0.5 * sv.alpha(r).squaredNorm() * nn_projection(c, r, inv_kappa, NewExample::Included).residual + base;
    double qp = 0.0;
    if (t.nn_t != NearestNeighbors::none) {
      const double kmm = c.kernel.self(sv.sqnorm()(t.nn_t));
      if (kmm > 0.0) qp = e.u_sqnorm * krow(t.nn_t) * krow(t.nn_t) / kmm;
    }
    obj(n) = e.step.objective_t(e.L, qp, t.taup);
  }
  bool step_onto_set(BPAContext& c, const BPAExample& e, const BPACandidateT& t) const override {
    if (t.nn_t == NearestNeighbors::none || t.taup == 0.0) return false;
    SupportVectors& sv = c.ex.sv();
    sv.alpha(t.nn_t) += (t.taup * c.ex.krow()(t.nn_t) / c.kernel.self(sv.sqnorm()(t.nn_t))) * e.u.transpose();
    return true;
  }
  void replace(BPAContext& c, const BPAExample& e, double tau, Index r, const BPACandidateT&,
               Vector& row) const override {
    SupportVectors& sv = c.ex.sv();
    const NNProjection p = nn_projection(c, r, 1.0 / e.kappa, NewExample::Included);
    const double a2 = sv.alpha(r).squaredNorm();
    row = p.on_new * sv.alpha(r).transpose() + tau * e.u;
    fold_into_neighbour(c, r, p);
    c.ex.push_last(e.x, row, e.id);
    c.nn.push_queried(sv, c.ex.krow());
    c.nn.on_erase(sv, c.kernel, r, erase(c, r, a2, p.residual));
  }
  double stored_objective(const BPAContext& c, Index r, double a2) const override {
    return 0.5 * a2 * nn_projection(c, r, 0.0, NewExample::Excluded).residual;
  }
  void remove_stored(BPAContext& c, Index r) const override {
    const NNProjection p = nn_projection(c, r, 0.0, NewExample::Excluded);
    fold_into_neighbour(c, r, p);
    c.nn.on_erase(c.ex.sv(), c.kernel, r, erase(c, r, c.ex.sv().alpha(r).squaredNorm(), p.residual));
  }

 private:
  /// alpha_NN(r) += (K_S^{-1} k_r)_NN alpha_r: x_r's share on its neighbour.
  static void fold_into_neighbour(BPAContext& c, Index r, const NNProjection& p) {
    const Index m = c.nn.nn(r);
    if (m != NearestNeighbors::none && p.on_neighbour != 0.0) c.ex.sv().alpha(m) += p.on_neighbour * c.ex.sv().alpha(r);
  }
};

/// BPA-P (section 3.1.2) in O(B^2): S = I_t + {t} - {r} via the maintained inverse G = K^{-1}
/// (projection.hpp, activated lazily when the store first fills).
class BPAProject : public BPARule {
 public:
  bool prepare_full(BPAContext& c) const override { return !c.proj.active() && activate(c); }
  void after_add(BPAContext& c, double kappa) const override { follow_push(c, kappa); }
  void before_enter(BPAContext& c) const override {
    if (!c.proj.active() && c.ex.size() >= c.budget) activate(c);
  }
  void after_enter(BPAContext& c, double kappa) const override { follow_push(c, kappa); }

  /// With t appended, G'_rr = G_rr + beta_t[r]^2 / s and res_r = 1 / G'_rr (block inverse;
  /// docs/derivations.md, "BPA-P in O(B^2)"). r = t: S = I_t, beta = K^{-1} k_t, q' =
  /// ||u||^2 (k_tt - s).
  void objectives(BPAContext& c, const BPAExample& e, double base, Vector& obj, BPACandidateT& t) const override {
    const SupportVectors& sv = c.ex.sv();
    const Index n = sv.size();
    double s = 0.0;
    c.beta = c.proj.project_candidate(c.ex.krow().head(n), e.kappa, s).head(n);
    t.span = !(s > 1e-8 * e.kappa);
    for (Index r = 0; r < n; ++r) {
      if (t.span) {
        obj(r) = std::numeric_limits<double>::infinity();
        continue;
      }
      const double g = c.proj.inverse_diagonal(r) + c.beta(r) * c.beta(r) / s;
      obj(r) = 0.5 * sv.alpha(r).squaredNorm() / g + base;
    }
    obj(n) = e.step.objective_t(e.L, e.u_sqnorm * (std::max)(0.0, e.kappa - s), t.taup);
  }
  bool step_onto_set(BPAContext& c, const BPAExample& e, const BPACandidateT& t) const override {
    if (t.taup == 0.0) return false;
    c.ex.sv().A().topRows(c.ex.size()).noalias() += (t.taup * c.beta) * e.u.transpose();
    return true;
  }
  void replace(BPAContext& c, const BPAExample& e, double tau, Index r, const BPACandidateT& t,
               Vector& row) const override {
    SupportVectors& sv = c.ex.sv();
    const Index n = sv.size();
    row = tau * e.u;
    c.ex.push_last(e.x, row, e.id);
    c.proj.on_push(sv, c.ex.krow(), e.kappa);
    if (c.proj.pending()) {
      // The projection judged x_t dependent after all: its r = t solution, beta = tau'
      // K^{-1} k_t u^T, is exactly the fold of a row tau' u.
      sv.alpha(n) = t.taup * e.u.transpose();
      c.proj.reduce(sv);
      c.removed = n;
    } else {
      c.avg.retire(sv, r);
      c.degradation += c.proj.reduce_at(sv, r).degradation;
    }
  }
  /// S = the other SVs: res_r = 1 / G_rr, the diagonal of the maintained inverse.
  double stored_objective(const BPAContext& c, Index r, double a2) const override {
    return 0.5 * a2 / c.proj.inverse_diagonal(r);
  }
  void remove_stored(BPAContext& c, Index r) const override {
    c.avg.retire(c.ex.sv(), r);
    c.degradation += c.proj.reduce_at(c.ex.sv(), r).degradation;
  }

 private:
  /// The SV just pushed enters the inverse; one numerically in the span of the others is
  /// folded into them at once (its averaged sum retires with it).
  static void follow_push(BPAContext& c, double kappa) {
    if (!c.proj.active()) return;
    SupportVectors& sv = c.ex.sv();
    c.proj.on_push(sv, c.ex.krow(), kappa);
    if (!c.proj.pending()) return;
    c.avg.retire(sv, c.ex.size() - 1);
    c.degradation += c.proj.reduce(sv).degradation;
    ++c.maintenance;
  }
  /// Lazy activation on a full store: K and its inverse are built, and numerically dependent
  /// SVs may be folded into the others (they retire from the average with their sums).
  /// Returns whether it folded any (then a counted maintenance step).
  static bool activate(BPAContext& c) {
    const Index n = c.ex.size();
    if (c.avg.enabled()) c.snapshot = c.ex.sv();
    const MaintenanceResult r = c.proj.activate(c.ex.sv(), c.kernel);
    if (c.avg.enabled()) c.avg.retire_missing(c.snapshot, c.ex.sv());
    if (c.ex.size() == n) return false;
    c.degradation += r.degradation;
    ++c.maintenance;
    return true;
  }
};

/// PA+Rand: every step adds x_t; over the budget a uniformly random SV among the B + 1
/// leaves. O(1) on top of the kernel row.
class BPARandom : public BPARule {
 public:
  bool weighs_candidates() const override { return false; }
  void after_add(BPAContext& c, double) const override {
    if (c.ex.size() > c.budget) remove_random(c);
  }
  void reduce_stored(BPAContext& c, Vector&) const override { remove_random(c); }
  void objectives(BPAContext&, const BPAExample&, double, Vector&, BPACandidateT&) const override {}
  bool step_onto_set(BPAContext&, const BPAExample&, const BPACandidateT&) const override { return false; }
  void replace(BPAContext&, const BPAExample&, double, Index, const BPACandidateT&, Vector&) const override {}
  double stored_objective(const BPAContext&, Index, double) const override { return 0.0; }
  void remove_stored(BPAContext&, Index) const override {}

 private:
  static void remove_random(BPAContext& c) {
    const SupportVectors& sv = c.ex.sv();
    const Index p = uniform_index(c.rng, c.budget + 1);
    ++c.maintenance;
    c.removed = p;
    erase(c, p, sv.alpha(p).squaredNorm(), c.kernel.self(sv.sqnorm()(p)));
  }
};

/// The rule of a learner with this variant and budget; without a budget the store never
/// fills and no rule keeps side state (BPA-S's hooks are empty).
inline const BPARule& bpa_rule(BPAVariant v, Index budget, BPASimple::Residual simple_form) {
  static const BPASimple quotient(BPASimple::Residual::Quotient), coefficient(BPASimple::Residual::Coefficient);
  static const BPANearestNeighbor nearest;
  static const BPAProject project;
  static const BPARandom random;
  const BPASimple& simple = simple_form == BPASimple::Residual::Quotient ? quotient : coefficient;
  if (budget <= 0) return simple;
  if (v == BPAVariant::NearestNeighbor) return nearest;
  if (v == BPAVariant::Project) return project;
  if (v == BPAVariant::Random) return random;
  return simple;
}

/// pa_type of a model file (0 = PA, 1 = PA-I, 2 = PA-II).
/// \throws std::runtime_error ("model file: ...") on another value.
inline std::int32_t read_pa_type(const FieldMap& fm) {
  const auto pa_type = fm.get_i64("pa_type");
  if (pa_type < 0 || pa_type > 2) corrupt("invalid pa_type");
  return static_cast<std::int32_t>(pa_type);
}

/// The rule's side state in a model file, kept so that a loaded learner resumes bit for bit:
/// BPA-NN's neighbours ("nn.*"), BPA-P's maintained inverse ("proj.*").
inline void save_bpa_state(FieldMap& fm, BPAVariant v, Index budget, const NearestNeighbors& nn,
                           const Projection& proj) {
  if (budget > 0 && v == BPAVariant::NearestNeighbor) nn.save(fm, "nn.");
  if (budget > 0 && v == BPAVariant::Project) proj.save(fm, "proj.");
}
/// Reads what save_bpa_state wrote, for the store sv already loaded.
/// \throws std::runtime_error ("model file: ...") on missing or inconsistent fields.
inline void load_bpa_state(const FieldMap& fm, BPAVariant v, Index budget, const SupportVectors& sv,
                           NearestNeighbors& nn, Projection& proj) {
  if (budget > 0 && v == BPAVariant::NearestNeighbor) nn.load(fm, "nn.", sv);
  if (budget > 0 && v == BPAVariant::Project) proj.load(fm, "proj.", sv);
}

/// The PA step with nothing removed (unbudgeted PA, the under-budget branch, PA+Rand): x_t
/// (last scored) enters with coefficient row `row`.
inline void bpa_add(const BPARule& rule, BPAContext& c, const double* x, double kappa, const Vector& row,
                    std::int64_t id) {
  rule.before_add(c, x);
  c.ex.push_last(x, row, id);
  ++c.updates;
  rule.after_add(c, kappa);
}

/// Algorithm 1 with a full store: Q(w^r) of every candidate (Proposition 1, eq. 8-9),
/// r* = argmin Q (eq. 7), applied. obj keeps the objectives (the test hook).
inline void bpa_budgeted_update(const BPARule& rule, BPAContext& c, const BPAExample& e, Vector& obj, Vector& row) {
  const Index n = c.ex.size();
  const double q = e.u_sqnorm * e.kappa;
  const double tau = e.step.step_size(e.L, q);
  const double base = 0.5 * tau * tau * q + e.step.penalty(e.L, tau, q);
  if (obj.size() != n + 1) obj.resize(n + 1);
  BPACandidateT t;
  rule.objectives(c, e, base, obj, t);
  const Index best = t.span ? n : choose_candidate(obj, n);  // BPA-P: x_t in the span takes r = t
  c.removed = best;
  ++c.maintenance;
  if (best == n) {
    if (rule.step_onto_set(c, e, t)) ++c.updates;
  } else {
    ++c.updates;
    rule.replace(c, e, tau, best, t, row);
  }
}

/// combine_from's reduction: the union of `models` (averaged_union; N = the result's
/// n_classifiers()) enters most important first; each overflow of the B + 1 stored runs the
/// rule without a new example (reduce_stored), and the rule's side state follows every push
/// (BPA-P activating on a full store as a step does), so partial_fit continues consistently.
template <class Model>
void bpa_combine(const BPARule& rule, BPAContext& c, const std::vector<const Model*>& models, const CombinePlan& plan,
                 double N, Vector& obj, CombineReport& rep) {
  const ExpansionUnion u = averaged_union(models, plan, N, c.avg);
  rep.union_size = u.size();
  rep.duplicates = u.duplicates();
  const bool begun = c.avg.enabled() && c.budget > 0 && u.size() > c.budget;  // brackets the SVs that enter
  SupportVectors& sv = c.ex.sv();
  for (Index r : combine_order(u, c.budget, c.kernel)) {
    rule.before_enter(c);
    const double kappa = c.ex.score(u.x(r));
    const Index i = c.ex.push_last(u.x(r), u.alpha(r), u.id(r));
    c.avg.enter(sv, i, u.carried(r), N, begun);
    rule.after_enter(c, kappa);
    if (c.budget > 0 && sv.size() > c.budget) rule.reduce_stored(c, obj);
  }
  if (begun) c.avg.end_all(sv, N);
}

}  // namespace detail
}  // namespace budgetkernel
