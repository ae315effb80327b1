#pragma once
/// \file learners/combine_regression.hpp
/// combine() for the regressors (OnlineRegressor, regressor_base.hpp). A kernel-expansion
/// regressor predicts f(x) = b + sum_j alpha_j k(x_j, x), one coefficient per SV, so the
/// weighted average sum_k w_k f_k is the union of the models' SVs with coefficients w_k alpha
/// (combine.hpp's ExpansionUnion with one column: a regressor's plan is the two-class one and
/// has no class maps) plus the intercept sum_k w_k b_k; over a budget the union is reduced by
/// the learner's own rule. The counters, prequential error sums included, add up as the
/// classifiers' do, base's examples counted once.
///
/// What a regressor L needs to be combined (combine.hpp's contract, then one def_combine<L>
/// line in its binding):
///   bool combine_is_copy(Index budget) const;  // combining it alone within `budget` copies it
///   Index combine_size() const;                // its SVs
///   void combine_from(const std::vector<const L*>& models, const CombinePlan& plan,
///                     const L* base, CombineReport& rep);
/// Its combine_from checks the parameters, resets itself with models[0]'s, feeds it
/// regression_union(models, plan, rep) (which reads support_vectors() and coefficients(), the
/// true coefficient of each SV, as an n x 1 matrix or an n-vector), reducing as it does in a
/// stream and adding each step's ||Delta f||^2 to rep.degradation and 1 to rep.reductions, and
/// sets the counters to combined_regression_counters(models, base) plus the reduction's steps
/// and the intercept (if any) to combined_intercept(models, plan).

#include "combine.hpp"
#include "kernel_expansion.hpp"
#include "regressor_base.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace budgetkernel {

namespace detail {

/// The counters of a combined regressor: base + sum_k (models_k - base) when the models
/// continued from `base`, else sum_k models_k (as combined_counters; the squared and absolute
/// error sums too); clamped so that a model that did not continue from base cannot make a
/// count negative or the updates exceed the examples.
template <class L>
RegressionCounters combined_regression_counters(const std::vector<const L*>& models, const L* base) {
  RegressionCounters out;
  const auto add = [&out](const RegressionCounters& c, double sign) {
    const auto s = static_cast<std::int64_t>(sign);
    out.examples += s * c.examples;
    out.updates += s * c.updates;
    out.maintenance += s * c.maintenance;
    out.degradation += sign * c.degradation;
    out.sse += sign * c.sse;
    out.sae += sign * c.sae;
  };
  for (const L* m : models) add(m->counters(), 1.0);
  if (base) add(base->counters(), 1.0 - static_cast<double>(models.size()));
  out.examples = (std::max)(out.examples, std::int64_t{0});
  out.updates = std::clamp(out.updates, std::int64_t{0}, out.examples);
  out.maintenance = (std::max)(out.maintenance, std::int64_t{0});
  out.degradation = (std::max)(out.degradation, 0.0);
  out.sse = (std::max)(out.sse, 0.0);
  out.sae = (std::max)(out.sae, 0.0);
  return out;
}

/// The union of the regressors' expansions (ExpansionUnion, one column): each SV with w_k
/// times its true coefficient, ids as stored; fills rep.union_size and rep.duplicates.
template <class L>
ExpansionUnion regression_union(const std::vector<const L*>& models, const CombinePlan& plan, CombineReport& rep) {
  ExpansionUnion u(models[0]->n_features(), 1, 0);
  for (std::size_t k = 0; k < models.size(); ++k) {
    const SupportVectors& sv = models[k]->support_vectors();
    const auto c = models[k]->coefficients();
    RowMatrix A(sv.size(), 1);
    for (Index i = 0; i < sv.size(); ++i) A(i, 0) = c(i, 0);
    u.add(plan, k, sv.X(), sv.size(), A, nullptr, sv.ids());
  }
  rep.union_size = u.size();
  rep.duplicates = u.duplicates();
  return u;
}

/// The combined intercept sum_k w_k b_k (the average of constant functions is exact).
template <class L>
double combined_intercept(const std::vector<const L*>& models, const CombinePlan& plan) {
  double b = 0.0;
  for (std::size_t k = 0; k < models.size(); ++k) b += plan.w[k] * models[k]->intercept();
  return b;
}

/// A regressor without a budget keeps the whole union: a positive budget below it is refused.
inline void require_union_fits(const ExpansionUnion& u, Index budget, const char* learner) {
  require(budget <= 0 || u.size() <= budget,
          std::string("combine: ") + learner + " keeps no budget, so its union of " + std::to_string(u.size()) +
              " centres cannot be reduced to " + std::to_string(budget) + "; combine without a budget");
}

/// The kernel adaptive filters' reduction (KLMS, QKLMS: no budget): the union's centres enter
/// `ex` (empty, one column) in the union's order with ids 0 .. m-1 (an id is the step that
/// added a centre, and the models' ids collide). With epsilon > 0 a centre within epsilon of
/// its nearest kept centre (ties to the lowest index) is folded into it, QKLMS's
/// quantisation rule (Chen et al. 2012, Algorithm 1) applied to coefficients: moving a from x
/// to c changes f by a (k(c, .) - k(x, .)), whose ||.||^2 = a^2 (k(x,x) + k(c,c) - 2 k(x,c))
/// each such step adds to rep.degradation.
inline void push_union_quantised(KernelExpansion& ex, const Kernel& kernel, const ExpansionUnion& u, double epsilon,
                                 CombineReport& rep) {
  SupportVectors& sv = ex.sv();
  Vector dots;
  for (Index r = 0; r < u.size(); ++r) {
    const Eigen::Map<const Vector> x(u.x(r), sv.dim());
    const double a = u.alpha(r)(0), xsq = x.squaredNorm();
    const Index n = sv.size();
    Index best = -1;
    double best_d2 = std::numeric_limits<double>::infinity();
    if (epsilon > 0.0 && n > 0) {
      if (dots.size() < n) dots.resize(2 * n);
      sv.dots(x, n, dots);
      for (Index j = 0; j < n; ++j) {
        const double d2 = (std::max)(0.0, sv.sqnorm()(j) + xsq - 2.0 * dots(j));
        if (d2 < best_d2) best_d2 = d2, best = j;
      }
    }
    if (best >= 0 && best_d2 <= epsilon * epsilon) {
      const double sq_c = sv.sqnorm()(best);
      const double dist2 = kernel.self(xsq) + kernel.self(sq_c) - 2.0 * kernel.from_dot(dots(best), xsq, sq_c);
      rep.degradation += a * a * (std::max)(0.0, dist2);
      ++rep.reductions;
      sv.alpha(best)(0) += a;
    } else {
      sv.push(x, Eigen::Matrix<double, 1, 1>::Constant(a), n);
    }
  }
}

}  // namespace detail

}  // namespace budgetkernel
