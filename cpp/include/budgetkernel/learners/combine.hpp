#pragma once
/// \file learners/combine.hpp
/// Combining models of one learner class into one: f = sum_k w_k f_k, the weighted average of
/// their decision functions (iterative parameter mixing, McDonald, Hall & Mann 2010; one-shot
/// averaging, Zinkevich et al. 2010; averaging support-vector expansions with compression,
/// Kamp et al. 2019).
///
/// For a kernel expansion the average is exact: the union of the models' support vectors,
/// each with its coefficients times w_k (an SV several models hold, bit for bit the same
/// point, is kept once with the coefficients added). When the union exceeds the budget, the
/// SVs enter the combined model one at a time, the most important first (largest
/// ||alpha_i||^2 k(x_i, x_i)), and every overflow runs the learner's own budget-maintenance
/// step (merging, projection, removal, ...), so the least important SVs are the ones folded
/// into the others or dropped; the report sums the weight degradation ||Delta w||^2 of those
/// steps. Every learner implements `combine_from(models, plan, base, report)`; `combine()`
/// below validates and plans, and is the entry point. Regressors (no classes, one output)
/// share the same entry point; what they share besides is in combine_regression.hpp.

#include "../gram_cache.hpp"  // detail::same_kernel
#include "learner_base.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace budgetkernel {

/// What combine() is asked to do.
struct CombineOptions {
  /// One non-negative finite weight per model, not all zero, normalised to sum 1. Empty: the
  /// examples each model saw (Counters::examples; equal weights if no model saw any).
  std::vector<double> weights;
  /// Support vectors the result may keep: -1 = the models' own budget, 0 = no budget (the
  /// whole union). Learners without a budget keep the union whatever this says, unless it is
  /// positive and smaller, which they cannot honour (an error).
  Index budget = -1;
  /// class_maps[k][j] = the class index, among the result's n_classes, of model k's class j.
  /// Empty: every model has the result's classes in the same order (identity maps).
  std::vector<std::vector<std::int32_t>> class_maps;
  /// Classes of the result (with class_maps); 0 = the models' own (they must agree).
  Index n_classes = 0;
};

/// What combine() did.
struct CombineReport {
  double degradation = 0.0;  ///< sum of ||Delta w||^2 over the maintenance steps of the reduction
  Index union_size = 0;      ///< distinct support vectors (or twins) of the union
  Index duplicates = 0;      ///< SVs that were already in the union (bitwise equal points)
  Index reductions = 0;      ///< maintenance steps the reduction ran
};

/// Validated options: normalised weights, the class maps and the class count of the result,
/// and the budget the reduction aims for.
struct CombinePlan {
  std::vector<double> w;
  std::vector<std::vector<std::int32_t>> maps;
  Index n_classes = 2;
  Index budget = -1;  ///< as CombineOptions::budget (learners resolve -1 to their own)

  /// Adds w_k times model k's output row `a` (its n_outputs values) into the result's output
  /// row `out`. Classes map through maps[k]. A binary model (one column a: f_1 = a, f_0 = -a
  /// in the result's two-class view) entering a multi-class result puts +a/2 on its class 1
  /// and -a/2 on its class 0, so that f_1 - f_0 = a and the absent classes score 0.
  /// \param k        the model's index.
  /// \param a        its output row (n_out_k values).
  /// \param n_out_k  its number of outputs.
  /// \param out      the result's output row (n_outputs() values), added to.
  void add_row(std::size_t k, const double* a, Index n_out_k, double* out) const {
    const double wk = w[k];
    const std::vector<std::int32_t>& m = maps[k];
    if (n_classes == 2) {  // then every model is binary with the same two classes
      out[0] += wk * a[0];
    } else if (n_out_k == 1) {
      out[m[1]] += 0.5 * wk * a[0];
      out[m[0]] -= 0.5 * wk * a[0];
    } else {
      for (Index j = 0; j < n_out_k; ++j) out[m[static_cast<std::size_t>(j)]] += wk * a[j];
    }
  }
  Index n_outputs() const { return detail::n_outputs_for(n_classes); }
  bool identity() const {
    for (const auto& m : maps)
      for (std::size_t j = 0; j < m.size(); ++j)
        if (m[j] != static_cast<std::int32_t>(j) || static_cast<Index>(m.size()) != n_classes) return false;
    return true;
  }
};

namespace detail {

/// The counters of a combined model: base + sum_k (models_k - base) when the models continued
/// from `base` (each counts base's examples once), else sum_k models_k.
inline Counters combined_counters(const std::vector<const Counters*>& models, const Counters* base) {
  Counters out;
  const auto add = [&out](const Counters& c, double sign) {
    const auto s = static_cast<std::int64_t>(sign);
    out.examples += s * c.examples;
    out.updates += s * c.updates;
    out.maintenance += s * c.maintenance;
    out.degradation += sign * c.degradation;
    out.mistakes += s * c.mistakes;
    out.labels += s * c.labels;
  };
  for (const Counters* c : models) add(*c, 1.0);
  if (base) add(*base, 1.0 - static_cast<double>(models.size()));
  // a model that did not continue from base would make a count negative: clamp, never corrupt
  out.examples = (std::max)(out.examples, std::int64_t{0});
  out.updates = (std::max)(out.updates, std::int64_t{0});
  out.maintenance = (std::max)(out.maintenance, std::int64_t{0});
  out.mistakes = (std::max)(out.mistakes, std::int64_t{0});
  out.labels = std::clamp(out.labels, std::int64_t{0}, out.examples);
  out.degradation = (std::max)(out.degradation, 0.0);
  return out;
}

/// A count kept by the learners besides Counters (an averaged iterate count, a step count):
/// base + sum_k (v_k - base), or sum_k v_k without a base; never negative.
inline std::int64_t combined_count(const std::vector<std::int64_t>& v, const std::int64_t* base) {
  std::int64_t s = std::accumulate(v.begin(), v.end(), std::int64_t{0});
  if (base) s -= (static_cast<std::int64_t>(v.size()) - 1) * *base;
  return (std::max)(s, std::int64_t{0});
}

/// The union of several kernel expansions: distinct points (bitwise), each with its mapped,
/// weighted coefficient rows (A, and optionally a second set C such as an averaged
/// predictor), the smallest id among its copies, and the order in which a budgeted combine
/// feeds them to the learner (most important first).
class ExpansionUnion {
 public:
  ExpansionUnion(Index dim, Index n_out, Index n_carry) : m_d(dim), m_c(n_out), m_k(n_carry) {}

  /// Adds model k's SVs: rows of X (n x dim), coefficient rows A (n x n_out_k, mapped and
  /// weighted by plan.add_row), carried rows C (n x n_out_k, same; may be null), ids.
  void add(const CombinePlan& plan, std::size_t k, const RowMatrix& X, Index n, const RowMatrix& A,
           const RowMatrix* C, const std::vector<std::int64_t>& ids) {
    if (plan.w[k] == 0.0) return;  // a model of weight 0 adds nothing, not even zero-weight SVs
    for (Index i = 0; i < n; ++i) {
      const Index r = find_or_insert(X.row(i).data(), ids[static_cast<std::size_t>(i)]);
      plan.add_row(k, A.row(i).data(), A.cols(), m_a.data() + r * m_c);
      if (C && m_k > 0) plan.add_row(k, C->row(i).data(), C->cols(), m_carry.data() + r * m_k);
    }
  }

  Index size() const { return static_cast<Index>(m_id.size()); }
  Index duplicates() const { return m_dup; }
  const double* x(Index r) const { return m_x.data() + r * m_d; }
  Eigen::Map<const Vector> alpha(Index r) const { return {m_a.data() + r * m_c, m_c}; }
  Eigen::Map<const Vector> carried(Index r) const { return {m_carry.data() + r * m_k, m_k}; }
  std::int64_t id(Index r) const { return m_id[static_cast<std::size_t>(r)]; }

  /// Row order for a budgeted combine: decreasing ||alpha_r||^2 k(x_r, x_r), ties by the order
  /// of first appearance (model 0's SVs first), so the result does not depend on hashing.
  std::vector<Index> by_importance(const Kernel& kernel) const {
    std::vector<double> v(static_cast<std::size_t>(size()));
    for (Index r = 0; r < size(); ++r) {
      const Eigen::Map<const Vector> xr(x(r), m_d);
      v[static_cast<std::size_t>(r)] = alpha(r).squaredNorm() * kernel.self(xr.squaredNorm());
    }
    std::vector<Index> order(static_cast<std::size_t>(size()));
    std::iota(order.begin(), order.end(), Index{0});
    std::stable_sort(order.begin(), order.end(),
                     [&v](Index a, Index b) { return v[static_cast<std::size_t>(a)] > v[static_cast<std::size_t>(b)]; });
    return order;
  }

 private:
  Index find_or_insert(const double* xp, std::int64_t id) {
    const std::size_t h = hash(xp);
    auto range = m_index.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (std::memcmp(x(it->second), xp, sizeof(double) * static_cast<std::size_t>(m_d)) == 0) {
        auto& kept = m_id[static_cast<std::size_t>(it->second)];
        kept = (std::min)(kept, id);
        ++m_dup;
        return it->second;
      }
    const Index r = size();
    m_x.insert(m_x.end(), xp, xp + m_d);
    m_a.resize(m_a.size() + static_cast<std::size_t>(m_c), 0.0);
    m_carry.resize(m_carry.size() + static_cast<std::size_t>(m_k), 0.0);
    m_id.push_back(id);
    m_index.emplace(h, r);
    return r;
  }
  std::size_t hash(const double* xp) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes of the row
    const auto* b = reinterpret_cast<const unsigned char*>(xp);
    for (std::size_t i = 0; i < sizeof(double) * static_cast<std::size_t>(m_d); ++i) h = (h ^ b[i]) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }

  Index m_d, m_c, m_k, m_dup = 0;
  std::vector<double> m_x, m_a, m_carry;
  std::vector<std::int64_t> m_id;
  std::unordered_multimap<std::size_t, Index> m_index;
};

/// std::type_identity (C++20): lets combine() deduce L from the models alone, so that a null
/// base needs no cast.
template <class T>
struct NoDeduce {
  using type = T;
};

/// The order in which combine_from feeds the union to a learner with `budget` (0: none): the
/// union's own order when it fits (no maintenance step runs), else by_importance.
inline std::vector<Index> combine_order(const ExpansionUnion& u, Index budget, const Kernel& kernel) {
  if (budget > 0 && u.size() > budget) return u.by_importance(kernel);
  std::vector<Index> order(static_cast<std::size_t>(u.size()));
  std::iota(order.begin(), order.end(), Index{0});
  return order;
}

/// Whether learner L has classes (a classifier); a regressor (regressor_base.hpp) has none.
template <class L, class = void>
struct has_classes : std::false_type {};
template <class L>
struct has_classes<L, std::void_t<decltype(std::declval<const L&>().n_classes())>> : std::true_type {};

/// plan_combine's classes: the result's class count and each model's class map. A regressor
/// has one output and no classes: its plan is the two-class one (n_classes 2: add_row adds
/// w_k a to the one output column), and class maps are refused.
template <class L>
void plan_classes(const std::vector<const L*>& models, const CombineOptions& opt, CombinePlan& plan) {
  const std::size_t n = models.size();
  if constexpr (!has_classes<L>::value) {
    require(opt.class_maps.empty() && opt.n_classes <= 0, "combine: regressors have no classes (give no class maps)");
    plan.n_classes = 2;
    plan.maps.assign(n, std::vector<std::int32_t>{0, 1});
  } else {
    plan.n_classes = opt.n_classes > 0 ? opt.n_classes : models[0]->n_classes();
    require(plan.n_classes >= 2, "combine: n_classes must be >= 2");
    if (opt.class_maps.empty()) {
      for (const L* m : models) {
        require(m->n_classes() == plan.n_classes, "combine: the models have different classes; give class_maps");
        std::vector<std::int32_t> id(static_cast<std::size_t>(plan.n_classes));
        std::iota(id.begin(), id.end(), 0);
        plan.maps.push_back(std::move(id));
      }
    } else {
      require(opt.class_maps.size() == n, "combine: one class map per model is needed");
      for (std::size_t k = 0; k < n; ++k) {
        const auto& m = opt.class_maps[k];
        require(static_cast<Index>(m.size()) == models[k]->n_classes(), "combine: class map " + std::to_string(k) +
                                                                            " does not have one entry per class");
        std::vector<bool> seen(static_cast<std::size_t>(plan.n_classes), false);
        for (std::int32_t j : m) {
          require(j >= 0 && j < plan.n_classes && !seen[static_cast<std::size_t>(j)],
                  "combine: class map " + std::to_string(k) + " has an invalid or repeated class index");
          seen[static_cast<std::size_t>(j)] = true;
        }
        // sorted label sets keep a binary model's (0, 1) order in a binary result
        require(plan.n_classes > 2 || m[0] < m[1], "combine: a two-class result needs the models' classes in order");
        plan.maps.push_back(m);
      }
    }
  }
}

/// Validates the options against the models and plans the combination.
/// \throws std::invalid_argument naming what is wrong.
template <class L>
CombinePlan plan_combine(const std::vector<const L*>& models, const CombineOptions& opt) {
  require(!models.empty(), "combine: no models");
  for (const L* m : models) require(m != nullptr, "combine: a model is null");
  const Index d = models[0]->n_features();
  for (const L* m : models)
    require(m->n_features() == d, "combine: the models have different numbers of features (" + std::to_string(d) +
                                      " and " + std::to_string(m->n_features()) + ")");
  CombinePlan plan;
  const std::size_t n = models.size();
  if (opt.weights.empty()) {
    for (const L* m : models) plan.w.push_back(static_cast<double>(m->counters().examples));
  } else {
    require(opt.weights.size() == n, "combine: " + std::to_string(opt.weights.size()) + " weights for " +
                                         std::to_string(n) + " models");
    for (double v : opt.weights) require(std::isfinite(v) && v >= 0.0, "combine: weights must be finite and >= 0");
    plan.w = opt.weights;
  }
  double total = std::accumulate(plan.w.begin(), plan.w.end(), 0.0);
  if (opt.weights.empty() && total == 0.0) {  // no model saw an example: equal weights
    std::fill(plan.w.begin(), plan.w.end(), 1.0);
    total = static_cast<double>(n);
  }
  require(total > 0.0 && std::isfinite(total), "combine: the weights must not all be zero");
  for (double& v : plan.w) v /= total;
  plan_classes(models, opt, plan);
  require(opt.budget >= -1, "combine: budget must be >= 1, 0 (no budget) or -1 (the models' own)");
  plan.budget = opt.budget;
  return plan;
}

}  // namespace detail

/// The weighted average sum_k w_k f_k of `models` (one learner class), as a model of that
/// class that predicts, keeps learning (partial_fit) and saves like any other; see the file
/// comment. `base`: the model every one of them continued from (iterative parameter mixing),
/// so that counters count base's examples once (detail::combined_counters); null otherwise.
/// combine({m}) with identity classes and m within the budget is a copy of m, bit for bit.
/// \throws std::invalid_argument on empty or mismatched models, invalid weights or class maps,
/// or models whose parameters differ (the learner's combine_from names the parameter).
/// \tparam L      the learner class.
/// \param models  the models (not null; one class, the same parameters but the seed).
/// \param opt     weights, budget and class maps (CombineOptions).
/// \param base    the model all of them continued from, or null.
/// \param report  null, or receives what the reduction did (CombineReport).
/// \return the combined model.
template <class L>
L combine(const std::vector<const L*>& models, const CombineOptions& opt = {},
          const typename detail::NoDeduce<L>::type* base = nullptr, CombineReport* report = nullptr) {
  const CombinePlan plan = detail::plan_combine(models, opt);
  CombineReport local;
  CombineReport& rep = report ? *report : local;
  rep = CombineReport{};
  if (models.size() == 1 && plan.identity() && models[0]->combine_is_copy(plan.budget)) {
    rep.union_size = models[0]->combine_size();
    return *models[0];
  }
  L out;
  out.combine_from(models, plan, base, rep);
  // The models share their parameters, the calibration switch too; the combined model's
  // calibration starts empty (the models' windows scored different models).
  if constexpr (detail::has_classes<L>::value) out.set_probability(models[0]->probability());  // regressors have none
  return out;
}

}  // namespace budgetkernel
