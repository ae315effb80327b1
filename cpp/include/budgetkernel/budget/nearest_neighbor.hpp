#pragma once
/// \file budget/nearest_neighbor.hpp
/// Nearest-neighbour bookkeeping of BPA-NN (Wang & Vucetic, "Online Passive-Aggressive
/// Algorithms on a Budget", AISTATS 2010, section 3.1.3): for every SV the index of its
/// nearest other SV in input space (Euclidean distance, the paper's footnote 2), that squared
/// distance, and the kernel value k(x_i, x_NN(i)) the 2x2 system of BPA-NN needs.

#include "../io.hpp"
#include "../sv_store.hpp"

#include <limits>
#include <string>
#include <vector>

namespace budgetkernel {

/// Nearest other SV of every SV of a SupportVectors store, kept up to date under push and
/// swap-with-last erase in expected O(B d) per change (instead of O(B^2 d) from scratch).
///
/// Index i here is index i of the store. Distances are squared Euclidean distances computed
/// from dot products, |x_i|^2 + |x_j|^2 - 2 x_i.x_j (clamped at 0), with the store's cached
/// squared norms; one pass of B dot products per pushed SV (no kernel evaluation: the kernel
/// values for the new SV come from the learner's kernel row).
///
/// Protocol (the learner's side):
///   Index m = nn.query(sv, x);          // before the push: distances of x to the n SVs, O(n d)
///   sv.push(x, alpha, id);
///   nn.push_queried(sv, krow);          // krow.head(n) = k(x_j, x) (the row that scored x)
///   ...
///   Index moved = sv.erase(p);
///   nn.on_erase(sv, kernel, p, moved);  // recomputes only the SVs whose neighbour was p
/// on_push(sv, krow) = query + push_queried for a push without a prior query.
/// Ties are kept, not replaced: an SV points to a new one only when that is strictly closer.
class NearestNeighbors {
 public:
  /// No neighbour (a store with a single SV).
  static constexpr Index none = -1;

  NearestNeighbors() = default;

  /// Forgets everything and makes room for `capacity` SVs.
  void reset(Index capacity) {
    clear();
    const auto cap = static_cast<std::size_t>(std::max<Index>(capacity, 1));
    m_nn.reserve(cap);
    m_d2.reserve(cap);
    m_k.reserve(cap);
    m_stale.reserve(cap);
    detail::zero_fresh(m_dots, std::max<Index>(capacity, 1));
    detail::zero_fresh(m_qd2, std::max<Index>(capacity, 1));
  }

  void clear() {
    m_nn.clear();
    m_d2.clear();
    m_k.clear();
    m_query_n = -1;
  }

  Index size() const { return static_cast<Index>(m_nn.size()); }
  /// Index of the nearest other SV of SV i (none when i is the only SV).
  Index nn(Index i) const { return m_nn[static_cast<std::size_t>(i)]; }
  /// Squared Euclidean distance from SV i to nn(i) (+inf when none).
  double distance2(Index i) const { return m_d2[static_cast<std::size_t>(i)]; }
  /// k(x_i, x_nn(i)) (0 when none).
  double kernel_value(Index i) const { return m_k[static_cast<std::size_t>(i)]; }

  /// Squared distances of a point x (not in the store) to the sv.size() SVs; keeps them for
  /// push_queried() and returns the index of the nearest SV (none for an empty store). O(n d).
  Index query(const SupportVectors& sv, const double* xp) {
    query_first(sv, sv.size(), xp);
    return m_query_best;
  }

  /// After sv.push of the point last passed to query(): gives the new SV (index n = the
  /// queried size) its nearest neighbour, and makes every SV that is strictly closer to the
  /// new SV than to its current neighbour point to it. krow.head(n) = k(x_j, x_new). O(n).
  /// \throws std::logic_error when the store does not hold exactly one SV more than queried.
  void push_queried(const SupportVectors& sv, const Vector& krow) {
    const Index n = m_query_n;
    if (n < 0 || sv.size() != n + 1 || size() != n)
      throw std::logic_error("NearestNeighbors::push_queried: not preceded by query() on this store");
    m_query_n = -1;
    const Index best = m_query_best;
    for (Index j = 0; j < n; ++j) {
      const double d2 = m_qd2(j);
      const auto js = static_cast<std::size_t>(j);
      if (d2 < m_d2[js]) {
        m_nn[js] = n;
        m_d2[js] = d2;
        m_k[js] = krow(j);
      }
    }
    m_nn.push_back(best);
    m_d2.push_back(best == none ? inf() : m_qd2(best));
    m_k.push_back(best == none ? 0.0 : krow(best));
  }

  /// query() + push_queried() for the SV just pushed (at index sv.size() - 1).
  void on_push(const SupportVectors& sv, const Vector& krow) {
    const Index n = sv.size() - 1;
    detail::require(n >= 0, "NearestNeighbors::on_push: empty store");
    // The new SV's row is contiguous in the row-major store: query it against the n before it.
    query_first(sv, n, sv.X().data() + n * sv.dim());
    push_queried(sv, krow);
  }

  /// After `moved = sv.erase(p)`: mirrors the swap-with-last (the SV formerly at index `moved`
  /// = old last now sits at p), then recomputes the SVs whose neighbour was the erased SV,
  /// each in one O(n d) pass (expected O(1) of them: on average an SV is the nearest
  /// neighbour of one other). The kernel gives k(x_i, x_NN(i)) for the recomputed ones.
  void on_erase(const SupportVectors& sv, const Kernel& kernel, Index p, Index moved) {
    const Index n = sv.size();  // after the erase
    if (size() != n + 1 || moved != n || p < 0 || p > n)
      throw std::logic_error("NearestNeighbors::on_erase: out of sync with the store");
    const auto ps = static_cast<std::size_t>(p), ls = static_cast<std::size_t>(n);
    if (p != n) {
      m_nn[ps] = m_nn[ls];
      m_d2[ps] = m_d2[ls];
      m_k[ps] = m_k[ls];
    }
    m_nn.pop_back();
    m_d2.pop_back();
    m_k.pop_back();
    m_stale.clear();
    for (Index i = 0; i < n; ++i) {
      auto& j = m_nn[static_cast<std::size_t>(i)];
      if (j == p)
        m_stale.push_back(i);  // pointed to the erased SV (old index p)
      else if (j == n)
        j = p;  // pointed to the moved SV (old index n, now p)
    }
    for (Index i : m_stale) recompute(sv, kernel, i);
  }

  /// Recomputes everything from scratch, O(n^2 d) (used to validate, or to rebuild).
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    clear();
    const Index n = sv.size();
    fit(n);
    m_nn.assign(static_cast<std::size_t>(n), none);
    m_d2.assign(static_cast<std::size_t>(n), inf());
    m_k.assign(static_cast<std::size_t>(n), 0.0);
    for (Index i = 0; i < n; ++i) recompute(sv, kernel, i);
  }

  /// Writes the exact state (indices, distances, kernel values) under `prefix`.
  void save(FieldMap& fm, const std::string& prefix) const {
    const Index n = size();
    fm.set_ints(prefix + "index", std::vector<std::int64_t>(m_nn.begin(), m_nn.end()));
    fm.set_matrix(prefix + "d2", Eigen::Map<const Vector>(m_d2.data(), n));
    fm.set_matrix(prefix + "k", Eigen::Map<const Vector>(m_k.data(), n));
  }

  /// Restores what save() wrote for the given store; checks ranges and consistency.
  /// \throws std::runtime_error ("model file: ...") on missing or invalid fields.
  void load(const FieldMap& fm, const std::string& prefix, const SupportVectors& sv) {
    const Index n = sv.size();
    const auto idx = fm.get_ints(prefix + "index", n);
    const RowMatrix d2 = fm.get_matrix(prefix + "d2", n, 1);
    const RowMatrix k = fm.get_matrix(prefix + "k", n, 1);
    for (Index i = 0; i < n; ++i) {
      const auto j = idx[static_cast<std::size_t>(i)];
      const bool alone = j == none;
      if (alone != (n == 1) || (!alone && (j < 0 || j >= n || j == i)) || std::isnan(d2(i, 0)) ||
          !(d2(i, 0) >= 0.0) || (!alone && !std::isfinite(d2(i, 0))) || !std::isfinite(k(i, 0)))
        detail::corrupt("invalid nearest-neighbour bookkeeping");
      if (!alone) {  // the stored distance must be the distance to the named SV (O(d))
        const double true_d2 = (sv.x(i) - sv.x(static_cast<Index>(j))).squaredNorm();
        if (std::abs(true_d2 - d2(i, 0)) > 1e-8 * (1.0 + sv.sqnorm()(i) + sv.sqnorm()(static_cast<Index>(j))))
          detail::corrupt("nearest-neighbour bookkeeping disagrees with the support vectors");
      }
    }
    reset((std::max)(sv.capacity(), n));
    for (Index i = 0; i < n; ++i) {
      m_nn.push_back(static_cast<Index>(idx[static_cast<std::size_t>(i)]));
      m_d2.push_back(d2(i, 0));
      m_k.push_back(k(i, 0));
    }
  }

 private:
  static double inf() { return std::numeric_limits<double>::infinity(); }

  void fit(Index n) {
    if (m_dots.size() < n) m_dots.resize(2 * n);
    if (m_qd2.size() < n) m_qd2.resize(2 * n);
  }

  /// query() against the first n SVs of the store.
  void query_first(const SupportVectors& sv, Index n, const double* xp) {
    const Eigen::Map<const Vector> x(xp, sv.dim());
    const double xsq = x.squaredNorm();
    fit(n + 1);
    m_query_n = n;
    m_query_best = none;
    if (n == 0) return;
    sv.dots(x, n, m_dots);  // from the chunk's block when x is the row being learned
    // Distances and their argmin (first index on ties) in one pass, the minimum in a register.
    double best_d2 = inf();
    for (Index j = 0; j < n; ++j) {
      const double d2 = (std::max)(0.0, sv.sqnorm()(j) + xsq - 2.0 * m_dots(j));
      m_qd2(j) = d2;
      if (d2 < best_d2 || m_query_best == none) best_d2 = d2, m_query_best = j;
    }
  }

  /// Nearest other SV of SV i by one pass over the store.
  void recompute(const SupportVectors& sv, const Kernel& kernel, Index i) {
    const Index n = sv.size();
    const auto is = static_cast<std::size_t>(i);
    fit(n);
    const double si = sv.sqnorm()(i);
    Kernel::dots(sv.X(), n, sv.x(i).transpose(), m_dots);
    Index best = none;
    double best_d2 = inf();
    for (Index j = 0; j < n; ++j) {
      if (j == i) continue;
      const double d2 = (std::max)(0.0, sv.sqnorm()(j) + si - 2.0 * m_dots(j));
      if (best == none || d2 < best_d2) best = j, best_d2 = d2;
    }
    m_nn[is] = best;
    m_d2[is] = best_d2;
    m_k[is] = best == none ? 0.0 : kernel.from_dot(m_dots(best), si, sv.sqnorm()(best));
  }

  std::vector<Index> m_nn;
  std::vector<double> m_d2, m_k;
  std::vector<Index> m_stale;
  Vector m_dots, m_qd2;
  Index m_query_n = -1;  // store size at the last query() (-1: none pending)
  Index m_query_best = none;  // nearest SV of the last query()
};

}  // namespace budgetkernel
