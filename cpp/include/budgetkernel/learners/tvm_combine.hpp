#pragma once
/// \file learners/tvm_combine.hpp
/// combine() for the Twin Vector Machine and its Random baseline (learners/combine.hpp):
/// the definitions of TwinVectorMachine::combine_from and its helpers, and the pool of
/// twins they use. Included at the end of twin_vector_machine.hpp.
///
/// combine_from(models, plan, base, rep) makes the model the combination of `models`: the
/// twins, with their counts, pooled and reduced by the TVM's own merging, and its exact SVM
/// retrained on them. A retrained SVM is not sum_k w_k f_k; what holds instead:
///
/// TVM. Result machine m (one per class, or the one binary machine) pools the twins of the
/// models' machines of its class, each twin's counts times c_k = w_k N / n_k (N = the
/// result's examples counter, n_k = model k's: model k's twins stand for the share w_k of
/// the N examples; the default weights n_k / sum_k n_k give c_k = 1, which a factor within
/// 1e-12 of 1 is taken to be, so the counts stay integers). Class maps: a multi-class
/// model's machine j goes to result machine map[j]; a binary model (its machine: class 1
/// positive, class 0 negative) into a multi-class result gives its twins to machine map[1]
/// as they are and to machine map[0] with s+ and s- swapped (the two one-vs-rest machines
/// of a two-class stream); a model adds nothing to the machines of classes it never saw.
/// Bitwise-equal twin points are kept once, counts added (rep.duplicates). Each pool enters
/// its machine through UpdateTV + UpdateTVM (Algorithm 3, the code step() runs), in pool
/// order (model 0's twins first) when it fits the budget: the machine is then the exact
/// weighted SVM on the pooled twins, alpha <= C_t (s+ or s-), with C_t = C B / max(B,
/// sum_j s_j) under fixed_C_total. Over the budget the heaviest twins (s+ + s-) enter
/// first and every overflow runs Algorithm 3's overflow branch: removal beyond m2, a merge
/// of the best pair among the B + 1 twins, or Rejection dropping the overflow twin;
/// rep.reductions counts these overflows, rep.degradation sums the merges' distortions
/// (4.2.1 / 4.2.2: what the twin set's weighted representation loses), removals and
/// rejections adding none; the counters' maintenance adds the removals and merges.
///
/// Random baseline (ReservoirSVC). The reservoirs are pooled as labelled examples (class
/// through the maps; bitwise-equal point and class kept once). Within the budget all are
/// kept. Over it, `budget` of them are drawn as the merge of reservoir samples does: model
/// k's reservoir R_k is a uniform sample of a stream of m_k = w_k N examples (N = the
/// result's examples counter; m_k = n_k under the default weights); each draw picks stream k
/// with probability proportional to m_k minus the draws it already had (sampling the union
/// of the streams without replacement), then a uniform untaken example of R_k (a copy
/// already kept counts as the draw and fills no slot). With the default weights and
/// disjoint streams the result is a uniform sample of the union of the streams, what
/// Algorithm R on their concatenation keeps (a stream never runs out: R_k holds min(B, n_k)
/// examples). rep.reductions = the examples left out, degradation 0. Every kept example is
/// a weight-1 example of every machine (labelled by its class), C stays C. Algorithm R
/// then continues with t = the combined examples counter.
///
/// Both: the random generator is model 0's (advanced by the sampling's draws), metadata
/// model 0's, the counters combined_counters (with the base's examples once).

#include "twin_vector_machine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace budgetkernel {

namespace detail {

/// Twins pooled from several twin sets (TwinVectorMachine::combine_from): the distinct
/// (point, tag) pairs, points compared bitwise, in order of first appearance, each with two
/// values summed over its copies (a twin's counts s+ and s-; for the Random baseline a
/// reservoir example's sampling weight, its class as the tag).
class TwinPool {
 public:
  explicit TwinPool(Index dim) : m_d(dim) {}

  /// Adds a copy of (q, tag) with values a and b; returns its row.
  Index add(const double* q, std::int32_t tag, double a, double b) {
    std::string key(reinterpret_cast<const char*>(q), sizeof(double) * static_cast<std::size_t>(m_d));
    key.append(reinterpret_cast<const char*>(&tag), sizeof(tag));
    const auto ins = m_index.emplace(std::move(key), size());
    if (ins.second) {
      m_q.insert(m_q.end(), q, q + m_d);
      m_tag.push_back(tag);
      m_a.push_back(0.0);
      m_b.push_back(0.0);
    } else {
      ++m_dup;
    }
    const auto r = static_cast<std::size_t>(ins.first->second);
    m_a[r] += a;
    m_b[r] += b;
    return ins.first->second;
  }

  Index size() const { return static_cast<Index>(m_tag.size()); }
  /// Copies that were already in the pool.
  Index duplicates() const { return m_dup; }
  const double* point(Index r) const { return m_q.data() + r * m_d; }
  std::int32_t tag(Index r) const { return m_tag[static_cast<std::size_t>(r)]; }
  double a(Index r) const { return m_a[static_cast<std::size_t>(r)]; }
  double b(Index r) const { return m_b[static_cast<std::size_t>(r)]; }

  /// Rows by decreasing a + b (a twin's weight), ties in order of first appearance.
  std::vector<Index> by_weight() const {
    std::vector<Index> order(static_cast<std::size_t>(size()));
    std::iota(order.begin(), order.end(), Index{0});
    std::stable_sort(order.begin(), order.end(), [this](Index i, Index j) { return a(i) + b(i) > a(j) + b(j); });
    return order;
  }

 private:
  Index m_d, m_dup = 0;
  std::vector<double> m_q, m_a, m_b;
  std::vector<std::int32_t> m_tag;
  std::unordered_map<std::string, Index> m_index;
};

}  // namespace detail

inline void TwinVectorMachine::combine_from(const std::vector<const TwinVectorMachine*>& models,
                                            const CombinePlan& plan, const TwinVectorMachine* base,
                                            CombineReport& rep) {
  TVMParams p = models[0]->m_p;
  for (const TwinVectorMachine* m : models) check_combinable(p, m->m_p);
  std::vector<const Counters*> counts;
  for (const TwinVectorMachine* m : models) counts.push_back(&m->m_count);
  const Counters total = detail::combined_counters(counts, base ? &base->m_count : nullptr);
  std::vector<std::vector<Index>> rows;  // Random baseline: model k's reservoir as pool rows
  const std::vector<detail::TwinPool> pools =
      p.random_baseline ? pool_reservoirs(models, plan, rows) : pool_twins(models, plan, total.examples);
  for (const detail::TwinPool& pool : pools) {
    rep.union_size += pool.size();
    rep.duplicates += pool.duplicates();
  }
  if (plan.budget > 0) p.budget = plan.budget;
  if (plan.budget == 0) {  // no budget: the largest pool
    p.budget = 1;
    for (const detail::TwinPool& pool : pools) p.budget = (std::max)(p.budget, pool.size());
  }
  reset(models[0]->m_d, plan.n_classes, p);
  m_rng = models[0]->m_rng;
  if (p.random_baseline) {
    fill_reservoir(pools[0], sample_reservoir(pools[0], std::move(rows), plan, total.examples, rep));
  } else {
    for (Index k = 0; k < n_outputs(); ++k) feed_machine(k, pools[static_cast<std::size_t>(k)], rep);
  }
  const std::int64_t maintenance = m_count.maintenance;  // update_machine's removals and merges
  m_count = total;
  m_count.maintenance += maintenance;
  m_count.degradation += rep.degradation;
  sync_rng_undo();
  metadata = models[0]->metadata;
}

inline void TwinVectorMachine::check_combinable(const TVMParams& a, const TVMParams& b) {
  const auto same = [](bool ok, const char* what) {
    detail::require(ok, std::string("combine: the models' ") + what + " differ");
  };
  same(a.random_baseline == b.random_baseline, "modes (random_baseline)");
  same(detail::same_kernel(a.kernel, b.kernel), "kernels");
  same(a.budget == b.budget, "budgets");
  same(a.C == b.C, "C");
  same(a.m1 == b.m1 && a.m2 == b.m2, "thresholds m1 and m2");
  same(a.merge == b.merge && a.one_sided == b.one_sided, "merging (merge, one_sided)");
  same(a.rejection_eta == b.rejection_eta, "rejection_eta");
  same(a.fixed_C_total == b.fixed_C_total, "fixed_C_total settings");
  same(a.ridge == b.ridge, "ridges");
}

inline std::vector<detail::TwinPool> TwinVectorMachine::pool_twins(
    const std::vector<const TwinVectorMachine*>& models, const CombinePlan& plan, std::int64_t n_total) {
  const Index d = models[0]->m_d, c = plan.n_outputs();
  std::vector<detail::TwinPool> pools(static_cast<std::size_t>(c), detail::TwinPool(d));
  for (std::size_t k = 0; k < models.size(); ++k) {
    const TwinVectorMachine& m = *models[k];
    const std::vector<std::int32_t>& map = plan.maps[k];
    if (plan.w[k] == 0.0) continue;  // a model of weight 0 adds nothing
    double f = plan.w[k] * static_cast<double>(n_total) / static_cast<double>(m.m_count.examples);
    if (std::fabs(f - 1.0) <= 1e-12) f = 1.0;
    if (!(f > 0.0 && std::isfinite(f))) f = 1.0;  // no examples counted: the counts as they are
    for (Index j = 0; j < m.n_outputs(); ++j) {
      const detail::TwinSet& tw = m.m_tw[static_cast<std::size_t>(j)];
      for (Index t = 0; t < tw.size(); ++t) {
        const double* q = tw.points().data() + t * d;
        const double sp = f * tw.s_plus(t), sm = f * tw.s_minus(t);
        if (c == 1) {
          pools[0].add(q, 0, sp, sm);
        } else if (m.n_outputs() == 1) {
          pools[static_cast<std::size_t>(map[1])].add(q, 0, sp, sm);
          pools[static_cast<std::size_t>(map[0])].add(q, 0, sm, sp);
        } else {
          pools[static_cast<std::size_t>(map[static_cast<std::size_t>(j)])].add(q, 0, sp, sm);
        }
      }
    }
  }
  return pools;
}

inline std::int32_t TwinVectorMachine::reservoir_class(Index j) const {
  if (n_outputs() == 1) return m_tw[0].s_plus(j) > 0.0 ? 1 : 0;
  for (Index k = 0; k < n_outputs(); ++k)
    if (m_tw[static_cast<std::size_t>(k)].s_plus(j) > 0.0) return static_cast<std::int32_t>(k);
  return 0;  // not reached: exactly one machine holds a reservoir example as a positive
}

inline std::vector<detail::TwinPool> TwinVectorMachine::pool_reservoirs(
    const std::vector<const TwinVectorMachine*>& models, const CombinePlan& plan,
    std::vector<std::vector<Index>>& rows) {
  const Index d = models[0]->m_d;
  std::vector<detail::TwinPool> pools(1, detail::TwinPool(d));
  rows.assign(models.size(), {});
  for (std::size_t k = 0; k < models.size(); ++k) {
    const TwinVectorMachine& m = *models[k];
    const detail::TwinSet& tw = m.m_tw[0];  // every machine holds the same reservoir
    if (plan.w[k] == 0.0) continue;         // a model of weight 0 adds nothing
    for (Index j = 0; j < tw.size(); ++j) {
      const std::int32_t cls = plan.maps[k][static_cast<std::size_t>(m.reservoir_class(j))];
      rows[k].push_back(pools[0].add(tw.points().data() + j * d, cls, 1.0, 0.0));
    }
  }
  return pools;
}

inline void TwinVectorMachine::feed_machine(Index k, const detail::TwinPool& pool, CombineReport& rep) {
  std::vector<Index> order(static_cast<std::size_t>(pool.size()));
  std::iota(order.begin(), order.end(), Index{0});
  if (pool.size() > m_p.budget) order = pool.by_weight();
  const IncrementalSVM& svm = m_svm[static_cast<std::size_t>(k)];
  for (const Index r : order) {
    const bool full = twins(k).size() >= m_p.budget;
    double distortion = 0.0;
    const double* q = pool.point(r);
    update_machine(k, q, pool.a(r), pool.b(r), svm.decision(q), &distortion);
    if (full) {
      ++rep.reductions;
      rep.degradation += distortion;
    }
  }
}

inline std::vector<Index> TwinVectorMachine::sample_reservoir(const detail::TwinPool& pool,
                                                              std::vector<std::vector<Index>> rows,
                                                              const CombinePlan& plan, std::int64_t n_total,
                                                              CombineReport& rep) {
  std::vector<Index> keep;
  if (pool.size() <= m_p.budget) {
    keep.resize(static_cast<std::size_t>(pool.size()));
    std::iota(keep.begin(), keep.end(), Index{0});
    return keep;
  }
  std::vector<double> left(rows.size()), p(rows.size());  // m_k minus the draws from stream k
  const double n = static_cast<double>((std::max)(n_total, std::int64_t{1}));
  for (std::size_t k = 0; k < rows.size(); ++k) left[k] = plan.w[k] * n;
  std::vector<char> taken(static_cast<std::size_t>(pool.size()), 0);
  while (static_cast<Index>(keep.size()) < m_p.budget) {
    double sum = 0.0;
    for (std::size_t k = 0; k < rows.size(); ++k) sum += p[k] = rows[k].empty() ? 0.0 : (std::max)(left[k], 0.0);
    if (sum == 0.0)  // weights that leave no stream its share: by the examples left
      for (std::size_t k = 0; k < rows.size(); ++k) sum += p[k] = static_cast<double>(rows[k].size());
    if (sum == 0.0) break;  // not reached: the pool is larger than the budget
    double u = detail::uniform01(m_rng) * sum;
    std::size_t k = 0;
    while (k + 1 < rows.size() && u >= p[k]) u -= p[k++];
    while (rows[k].empty()) --k;  // rounding past the last stream with examples
    std::vector<Index>& rk = rows[k];
    const auto i = static_cast<std::size_t>(detail::uniform_index(m_rng, static_cast<Index>(rk.size())));
    const Index r = rk[i];
    rk[i] = rk.back();
    rk.pop_back();
    left[k] -= 1.0;
    if (!taken[static_cast<std::size_t>(r)]) {
      taken[static_cast<std::size_t>(r)] = 1;
      keep.push_back(r);
    }
  }
  std::sort(keep.begin(), keep.end());
  rep.reductions = pool.size() - static_cast<Index>(keep.size());
  return keep;
}

inline void TwinVectorMachine::fill_reservoir(const detail::TwinPool& pool, const std::vector<Index>& keep) {
  for (std::size_t s = 0; s < keep.size(); ++s)
    for (Index k = 0; k < n_outputs(); ++k)
      replace_twin(k, static_cast<Index>(s), pool.point(keep[s]), label_of(k, pool.tag(keep[s])));
}

}  // namespace budgetkernel
