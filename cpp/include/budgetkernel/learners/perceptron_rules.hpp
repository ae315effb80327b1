#pragma once
/// \file learners/perceptron_rules.hpp
/// The budget rules of the kernel perceptron (perceptron.hpp), one class each, that
/// KernelPerceptron picks at construction (perceptron_rule) and calls through
/// PerceptronRule:
///   Stop        Stoptron (Orabona et al. 2008): no update once the store holds B SVs.
///   Random      random budget perceptron (Cesa-Bianchi & Gentile 2006/2007): a uniformly
///               random SV leaves before the new one enters.
///   Forgetron   self-tuned Forgetron (Dekel, Shalev-Shwartz, Singer, SIAM J. Comput. 37,
///               2008, "The Forgetron: a kernel-based perceptron on a budget"): shrink
///               everything by phi, then drop the oldest SV.
///   MaxMargin   Crammer, Kandola, Singer 2004, "Online classification on a budget": update
///               when the margin is <= beta, drop the SV whose own example keeps the largest
///               margin without it.
///   Projectron, Projectron++  Orabona, Keshet, Caputo, ICML 2008 / JMLR 10 (2009),
///               "Bounded kernel-based online learning": project the new point onto the span
///               of the SVs when it is close to it (||delta_t|| <= eta) or the store is full.

#include "../budget/projection.hpp"
#include "../detail/random.hpp"
#include "kernel_expansion.hpp"
#include "learner_base.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace budgetkernel {

/// How the perceptron keeps its budget (see the file comment).
enum class PerceptronBudget : std::int32_t { Stop = 0, Random = 1, Forgetron = 2, MaxMargin = 3, Projectron = 4, ProjectronPP = 5 };

namespace detail {

/// The perceptron's state a rule reads and changes (references into KernelPerceptron), with
/// the operations the rules share. u is the update vector of the example last scored.
struct PerceptronState {
  KernelExpansion& ex;
  std::vector<std::int32_t>& label;  ///< class of each SV's example (store order)
  RowMatrix& F;                      ///< MaxMargin: F_i = f(x_i) (store order)
  Projection& proj;                  ///< Projectron(++): the maintained K^{-1}
  std::mt19937_64& rng;
  Counters& count;
  double& forgetron_q;                ///< the Forgetron's accumulated damage Q
  std::int64_t& forgetron_m;          ///< the Forgetron's number of updates M
  Vector &u, &f_r, &alpha_r, &krow_r;  ///< work buffers
  const Kernel& kernel;
  Index budget;
  double eta;               ///< Projectron(++): project when ||delta_t|| <= eta
  double margin_threshold;  ///< MaxMargin: update when the margin is <= it (the paper's beta)
  bool tracks_margins;      ///< MaxMargin with a budget keeps F

  bool over_budget() const { return budget > 0 && ex.size() > budget; }

  /// x (the example last scored) enters the store with coefficient row `a`, label y and id.
  void push_sv(const double* xp, const Vector& a, std::int32_t y, std::int64_t id) {
    ex.push_last(xp, a, id);
    label.push_back(y);
  }
  /// Kernel perceptron update: x_t enters with coefficient row u.
  void add(const double* xp, std::int32_t y, std::int64_t t) {
    push_sv(xp, u, y, t);
    ++count.updates;
  }

  /// Erases SV i (swap-with-last in the store and every side structure), counting the
  /// removal and its degradation ||alpha_i||^2 k_ii.
  void remove(Index i) {
    SupportVectors& sv = ex.sv();
    count.degradation += sv.alpha(i).squaredNorm() * kernel.self(sv.sqnorm()(i));
    ++count.maintenance;
    const Index last = sv.erase(i);
    if (tracks_margins && i != last) F.row(i) = F.row(last);
    label[static_cast<std::size_t>(i)] = label[static_cast<std::size_t>(last)];
    label.pop_back();
  }
  /// A uniformly random SV of the store leaves.
  void remove_random() { remove(uniform_index(rng, ex.size())); }

  /// The oldest SV (smallest id; ties: the first in store order).
  Index oldest() const {
    const SupportVectors& sv = ex.sv();
    Index r = 0;
    for (Index i = 1; i < sv.size(); ++i)
      if (sv.id(i) < sv.id(r)) r = i;
    return r;
  }

  /// krow_r.head(n) = k(x_j, x_i) for every SV j, with the exact diagonal k_ii. O(n d).
  void sv_row(Index i) {
    const SupportVectors& sv = ex.sv();
    sv.kernel_row(kernel, sv.x(i).transpose(), sv.sqnorm()(i), krow_r);
    krow_r(i) = kernel.self(sv.sqnorm()(i));
  }

  /// Projectron's projection of a point with coefficient row `a` onto the span of the SVs
  /// (beta = K^{-1} k, s0 = ||delta||^2 from project_candidate): alpha += beta a^T instead of
  /// a new SV, a maintenance step of degradation ||a||^2 ||delta||^2 (the residual a delta).
  void project_row(const Vector& beta, const Vector& a, double s0) {
    const Index n = ex.size();
    ex.sv().A().topRows(n).noalias() += beta.head(n) * a.transpose();
    ++count.maintenance;
    count.degradation += a.squaredNorm() * s0;
  }

  /// After the last scored point was pushed: it enters K^{-1} (on_push with its kernel row);
  /// one numerically in the span of the others after all is folded into them (a projection).
  void enter_projection(double kappa) {
    SupportVectors& sv = ex.sv();
    proj.on_push(sv, ex.krow(), kappa);
    if (proj.pending()) {
      const MaintenanceResult r = proj.reduce(sv);
      label.pop_back();
      ++count.maintenance;
      count.degradation += r.degradation;
    }
  }

  /// MaxMargin bookkeeping before x_t (the example last scored) enters with coefficient row
  /// a: F_i += k(x_i, x_t) a for the current SVs and F_t = f(x_t) + k(x_t, x_t) a. O(B c).
  void enter_margins(double kappa, const Vector& a) {
    const Index n = ex.size();
    F.topRows(n).noalias() += ex.krow().head(n) * a.transpose();
    F.row(n) = (ex.f() + kappa * a).transpose();
  }
};

/// The example of a perceptron step: x_t (last scored), its label and id t, k_tt, and the
/// margin of the current model (binary y f, multi-class f_y - f_r').
struct PerceptronExample {
  const double* x;
  std::int32_t y;
  std::int64_t t;
  double kappa;
  double margin;
};

/// One budget rule: what a step does with a (possibly) misclassified example, and how an SV
/// of a combined model enters (combine_from, with its coefficient row a instead of u).
class PerceptronRule {
 public:
  virtual ~PerceptronRule() = default;
  virtual void learn(PerceptronState& s, const PerceptronExample& e) const = 0;
  virtual void enter(PerceptronState& s, const double* xp, const Vector& a, std::int32_t y, std::int64_t id) const = 0;
  /// After the whole union entered.
  virtual void finish_union(PerceptronState&) const {}
};

/// Stoptron: a mistake adds x_t while the store holds fewer than B SVs. A combined model
/// keeps the first B SVs that enter and drops the rest (counted as removals).
class Stoptron : public PerceptronRule {
 public:
  void learn(PerceptronState& s, const PerceptronExample& e) const override {
    if (e.margin <= 0.0 && !full(s)) s.add(e.x, e.y, e.t);
  }
  void enter(PerceptronState& s, const double* xp, const Vector& a, std::int32_t y, std::int64_t id) const override {
    if (!full(s)) return s.push_sv(xp, a, y, id);
    const double xsq = Eigen::Map<const Vector>(xp, s.ex.sv().dim()).squaredNorm();
    s.count.degradation += a.squaredNorm() * s.kernel.self(xsq);
    ++s.count.maintenance;
  }

 private:
  static bool full(const PerceptronState& s) { return s.budget > 0 && s.ex.size() >= s.budget; }
};

/// Random budget perceptron: the new SV always enters, a uniformly random one of the B
/// stored leaves first. A combined model takes the whole union, then random SVs leave until
/// B remain: a uniform B-subset, whatever the order.
class RandomRemoval : public PerceptronRule {
 public:
  void learn(PerceptronState& s, const PerceptronExample& e) const override {
    if (!(e.margin <= 0.0)) return;
    if (s.budget > 0 && s.ex.size() >= s.budget) s.remove_random();
    s.add(e.x, e.y, e.t);
  }
  void enter(PerceptronState& s, const double* xp, const Vector& a, std::int32_t y, std::int64_t id) const override {
    s.push_sv(xp, a, y, id);
  }
  void finish_union(PerceptronState& s) const override {
    while (s.over_budget()) s.remove_random();
  }
};

/// The self-tuned Forgetron: a mistake adds x_t, then over the budget everything shrinks by
/// phi and the oldest SV leaves (forget). A combined model removes the oldest SV on each
/// overflow without the shrink (see KernelPerceptron::combine_forgetron_state).
class Forgetron : public PerceptronRule {
 public:
  void learn(PerceptronState& s, const PerceptronExample& e) const override {
    if (!(e.margin <= 0.0)) return;
    s.add(e.x, e.y, e.t);
    ++s.forgetron_m;
    if (s.over_budget()) forget(s);
  }
  void enter(PerceptronState& s, const double* xp, const Vector& a, std::int32_t y, std::int64_t id) const override {
    s.push_sv(xp, a, y, id);
    if (s.over_budget()) s.remove(s.oldest());
  }

 private:
  /// After x_t was added (store size B + 1, M = the number of updates including this one):
  /// r = the oldest SV; f' = the expansion now; with the damage
  ///   Psi(lambda, mu) = lambda^2 + 2 lambda - 2 lambda mu
  /// the shrinking coefficient is the largest phi in (0, 1] with
  ///   Psi(phi sigma_r, phi y_r f'(x_r)) + Q <= 15/32 M,
  /// i.e. a phi^2 + b phi + c <= 0 with a = sigma_r^2 - 2 sigma_r y_r f'(x_r), b = 2 sigma_r,
  /// c = Q - 15/32 M. Multi-class: sigma_r y_r -> the coefficient row beta_r, sigma_r ->
  /// ||beta_r||, sigma_r y_r f'(x_r) -> beta_r . f'(x_r). Then f'' = phi f',
  /// Q += Psi(||beta_r''||, .) = e^2 + 2 e - 2 beta_r'' . f''(x_r) and r leaves. O(B (d + c)).
  /// The branches below are those of the authors' group's reference code (DOGMA,
  /// k_forgetron_st_train.m); the test checks them against "largest feasible phi" by bisection.
  static void forget(PerceptronState& s) {
    SupportVectors& sv = s.ex.sv();
    const Index r = s.oldest();
    s.sv_row(r);
    sv.scores(s.krow_r, s.f_r);  // f'(x_r)
    s.alpha_r = sv.alpha(r).transpose();
    const double sigma = s.alpha_r.norm();
    const double a = s.alpha_r.squaredNorm() - 2.0 * s.alpha_r.dot(s.f_r);
    const double b = 2.0 * sigma;
    const double c = s.forgetron_q - 15.0 / 32.0 * static_cast<double>(s.forgetron_m);
    double phi = 1.0;
    const double disc = b * b - 4.0 * a * c;
    // a < 0: the parabola opens downwards and the inequality holds outside its roots; the
    // root (-b - sqrt(disc)) / (2a) is the larger one, and phi = 1 is feasible unless it
    // exceeds 1 (then the largest feasible phi is the other root).
    if (a > 0.0 || (a < 0.0 && disc > 0.0 && (-b - std::sqrt(disc)) / (2.0 * a) > 1.0))
      phi = (std::min)(1.0, (-b + std::sqrt((std::max)(disc, 0.0))) / (2.0 * a));
    else if (a == 0.0 && b > 0.0)
      phi = (std::min)(1.0, -c / b);
    // Q <= 15/32 (M - 1) holds from the previous removal, so c < 0 and phi > 0 in exact
    // arithmetic; a non-positive or NaN phi could only come from a broken state.
    if (!(phi > 0.0)) phi = 1.0;
    if (phi != 1.0) {
      sv.scale(phi);
      s.f_r *= phi;  // f''(x_r) = phi f'(x_r)
      s.alpha_r *= phi;
    }
    const double e = s.alpha_r.norm();
    s.forgetron_q += e * e + 2.0 * e - 2.0 * s.alpha_r.dot(s.f_r);
    s.remove(r);
  }
};

/// Crammer, Kandola, Singer (2004): an update when the margin is <= beta; over the budget
/// the SV whose example keeps the largest margin without it leaves. F (f at every SV's
/// example) is kept by one kernel row per change.
class MaxMarginRemoval : public PerceptronRule {
 public:
  void learn(PerceptronState& s, const PerceptronExample& e) const override {
    if (!(e.margin <= s.margin_threshold)) return;
    if (s.tracks_margins) s.enter_margins(e.kappa, s.u);
    s.add(e.x, e.y, e.t);
    if (s.over_budget()) remove_max_margin(s);
  }
  void enter(PerceptronState& s, const double* xp, const Vector& a, std::int32_t y, std::int64_t id) const override {
    if (s.tracks_margins) s.enter_margins(s.ex.score(xp), a);
    s.push_sv(xp, a, y, id);
    if (s.over_budget()) remove_max_margin(s);
  }

 private:
  /// Margin of SV i's own example under the expansion without SV i: g = F_i - alpha_i k_ii,
  /// binary y_i g, multi-class g_{y_i} - max_{r != y_i} g_r. O(c).
  static double own_margin(const PerceptronState& s, Index i) {
    const SupportVectors& sv = s.ex.sv();
    const double kii = s.kernel.self(sv.sqnorm()(i));
    const std::int32_t y = s.label[static_cast<std::size_t>(i)];
    const Index c = sv.n_coef();
    if (c == 1) return (y == 1 ? 1.0 : -1.0) * (s.F(i, 0) - sv.A()(i, 0) * kii);
    double other = -std::numeric_limits<double>::infinity();
    for (Index k = 0; k < c; ++k)
      if (k != y) other = (std::max)(other, s.F(i, k) - sv.A()(i, k) * kii);
    return s.F(i, y) - sv.A()(i, y) * kii - other;
  }
  /// Removes the SV with the largest own margin (ties: the older SV), then updates F by one
  /// kernel row. O(B (d + c)).
  static void remove_max_margin(PerceptronState& s) {
    SupportVectors& sv = s.ex.sv();
    const Index n = sv.size();
    Index best = 0;
    double best_v = own_margin(s, 0);
    for (Index i = 1; i < n; ++i) {
      const double v = own_margin(s, i);
      if (smaller_or_older(-v, sv.id(i), -best_v, sv.id(best))) best_v = v, best = i;
    }
    s.sv_row(best);
    s.alpha_r = sv.alpha(best).transpose();
    s.F.topRows(n).noalias() -= s.krow_r.head(n) * s.alpha_r.transpose();
    s.remove(best);
  }
};

/// Projectron and Projectron++ (Orabona, Keshet, Caputo, JMLR 2009). On a mistake: with
/// beta = K^{-1} k_t and ||delta_t||^2 = k_tt - k_t^T beta, project (alpha += beta u^T,
/// no new SV) when ||delta_t|| <= eta or the store is at its cap, else add x_t. On a
/// margin error (0 < margin <= 1; Projectron++ only) with loss L = 1 - margin: if
/// L - ||delta_t|| / eta > 0, alpha += tau beta u^T with
/// tau = min(L / q, 1, 2 (L - ||delta_t|| / eta) / q), q = ||u||^2 ||P phi(x_t)||^2. O(B^2).
/// eta thresholds the distance ||delta_t|| itself (DOGMA's k_projectron*_train.m compare the
/// squared distance with eta instead, i.e. their eta is our eta^2). A combined model: the
/// first B SVs enter K^{-1}, the next ones are projected onto their span (a mistake's cap
/// branch with the SV's row for u; eta is not applied).
class Projectron : public PerceptronRule {
 public:
  /// Whether margin errors update too (Projectron++).
  enum class MarginErrors { Ignored, Learned };
  explicit Projectron(MarginErrors margin_errors) : m_margin_errors(margin_errors) {}

  void learn(PerceptronState& s, const PerceptronExample& e) const override {
    const bool mistake = e.margin <= 0.0;
    const bool margin_error =
        m_margin_errors == MarginErrors::Learned && !mistake && e.margin <= 1.0 && s.eta > 0.0;
    if (!mistake && !margin_error) return;
    SupportVectors& sv = s.ex.sv();
    const Index n = sv.size();
    double res = 0.0;
    const Vector& beta = s.proj.project_candidate(s.ex.krow(), e.kappa, res);
    const double s0 = (std::max)(res, 0.0);
    const double delta = std::sqrt(s0);  // ||delta_t||
    const double u2 = s.u.squaredNorm();
    if (mistake) {
      if (delta <= s.eta || (s.budget > 0 && n >= s.budget)) {
        if (n == 0) return;  // nothing to project onto (k(x_t, x_t) = 0): no change
        s.project_row(beta, s.u, s0);
        ++s.count.updates;
        return;
      }
      s.add(e.x, e.y, e.t);
      s.enter_projection(e.kappa);
      return;
    }
    const double L = 1.0 - e.margin;
    const double gap = L - delta / s.eta;
    const double q = u2 * (e.kappa - s0);
    if (!(gap > 0.0) || !(q > 0.0)) return;
    const double tau = (std::min)({L / q, 1.0, 2.0 * gap / q});
    sv.A().topRows(n).noalias() += (tau * beta.head(n)) * s.u.transpose();
    ++s.count.updates;
  }
  void enter(PerceptronState& s, const double* xp, const Vector& a, std::int32_t y, std::int64_t id) const override {
    const double kappa = s.ex.score(xp);
    if (s.budget > 0 && s.ex.size() >= s.budget) {
      double res = 0.0;
      const Vector& beta = s.proj.project_candidate(s.ex.krow(), kappa, res);
      s.project_row(beta, a, (std::max)(res, 0.0));
    } else {
      s.push_sv(xp, a, y, id);
      s.enter_projection(kappa);
    }
  }

 private:
  MarginErrors m_margin_errors;
};

/// The rule of PerceptronBudget m (chosen once, by KernelPerceptron::reset).
inline const PerceptronRule& perceptron_rule(PerceptronBudget m) {
  static const Stoptron stop;
  static const RandomRemoval random;
  static const Forgetron forgetron;
  static const MaxMarginRemoval max_margin;
  static const Projectron projectron(Projectron::MarginErrors::Ignored);
  static const Projectron projectron_pp(Projectron::MarginErrors::Learned);
  switch (m) {
    case PerceptronBudget::Stop: return stop;
    case PerceptronBudget::Forgetron: return forgetron;
    case PerceptronBudget::MaxMargin: return max_margin;
    case PerceptronBudget::Projectron: return projectron;
    case PerceptronBudget::ProjectronPP: return projectron_pp;
    default: return random;
  }
}

}  // namespace detail
}  // namespace budgetkernel
