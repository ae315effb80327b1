#pragma once
/// \file budget/removal.hpp
/// Budget maintenance by removing one SV (BSGD paper, section 4.1).

#include "../detail/random.hpp"
#include "../gram_cache.hpp"
#include "../sv_store.hpp"
#include "result.hpp"

#include <limits>
#include <random>

namespace budgetkernel {

/// Which SV a removal step drops.
enum class RemovalRule : std::int32_t {
  Random = 0,    ///< uniformly at random (random-removal perceptron / BOGD style)
  Oldest = 1,    ///< smallest id, i.e. the SV that entered first (Forgetron style)
  Smallest = 2,  ///< argmin ||alpha_j||^2 k(x_j, x_j): the least weight degradation (BSGD eq. 14, 4.1)
};

/// Index of the SV to remove under `rule`. Ties go to the lowest index.
/// Random draws one detail::uniform_index (reproducible on every platform for a fixed
/// seed); the kernel is only read by Smallest. O(n) (Smallest: O(n c)).
/// \throws std::invalid_argument when the store is empty.
inline Index choose_removal(const SupportVectors& sv, const Kernel& k, RemovalRule rule, std::mt19937_64& rng) {
  const Index n = sv.size();
  if (!(n >= 1)) detail::invalid("choose_removal: the support-vector store is empty");
  switch (rule) {
    case RemovalRule::Random: return detail::uniform_index(rng, n);
    case RemovalRule::Oldest: {
      Index best = 0;
      for (Index j = 1; j < n; ++j)
        if (sv.id(j) < sv.id(best)) best = j;
      return best;
    }
    case RemovalRule::Smallest: {
      // Near-ties go to the oldest SV (detail::smaller_or_older): with Pegasos' equal |alpha|
      // this is the paper's observation that the rule then removes the oldest SV (4.1).
      Index best = 0;
      double best_v = sv.alpha(0).squaredNorm() * k.self(sv.sqnorm()(0));
      for (Index j = 1; j < n; ++j) {
        const double v = sv.alpha(j).squaredNorm() * k.self(sv.sqnorm()(j));
        if (detail::smaller_or_older(v, sv.id(j), best_v, sv.id(best))) best_v = v, best = j;
      }
      return best;
    }
  }
  detail::invalid("choose_removal: unknown removal rule");
}

/// Erases SV p (swap-with-last, see SupportVectors::erase) and reports, summed over the c
/// coefficient columns,
///   degradation = ||alpha_p||^2 k_pp                     (= ||w_before - w_after||^2, since
///                                                          w_after = w_before - alpha_p phi(x_p)),
///   norm_change = -2 alpha_p . f(x_p) + ||alpha_p||^2 k_pp (= ||w_after||^2 - ||w_before||^2),
/// with f(x_p) = sum_j alpha_j k(x_j, x_p) over all SVs including p. The kernel row is
/// computed into `work` (grown to the store's capacity if too small; reuse it across calls
/// to keep the hot path allocation-free). O(n d + n c).
/// \throws std::invalid_argument when p is out of range.
inline MaintenanceResult remove_sv(SupportVectors& sv, const Kernel& k, Index p, Vector& work) {
  const Index n = sv.size();
  if (!(p >= 0 && p < n)) detail::invalid("remove_sv: SV index out of range");
  if (work.size() < n) work.resize((std::max)(n, sv.capacity()));
  const double kpp = k.self(sv.sqnorm()(p));
  sv.kernel_row(k, sv.x(p).transpose(), sv.sqnorm()(p), work);
  work(p) = kpp;  // the exact self-similarity, not exp(-gamma * rounding noise)
  const auto ap = sv.alpha(p);
  // alpha_p . f(x_p) = sum_j k(x_j, x_p) (alpha_j . alpha_p): O(n c), no temporary.
  double af = 0.0;
  for (Index j = 0; j < n; ++j) af += work(j) * sv.alpha(j).dot(ap);
  const double a2k = ap.squaredNorm() * kpp;
  MaintenanceResult r;
  r.degradation = a2k;
  r.norm_change = -2.0 * af + a2k;
  sv.erase(p);
  return r;
}

/// Removal with the kernel matrix of the SVs cached (GramCache): reduce() picks p like
/// choose_removal and reports the same numbers as remove_sv, but reads k(x_j, x_p) from the
/// cached row p instead of computing a kernel row: O(n c) per removal, no kernel evaluation
/// (remove_sv stays as the cache-free reference). The cache costs O(n) per push (on_push)
/// and per removal (the mirrored erase), plus at most 7 kernel values per push.
/// Protocol as Merging: on_push after every push, clear() with the store, rebuild() after
/// replacing the store. Without norm tracking (GramTracked::track_norm) it keeps no cache
/// and reports the degradation only: O(1) per removal after the choice.
class Removal : public GramTracked {
 public:
  explicit Removal(RemovalRule rule = RemovalRule::Random, const Kernel& kernel = Kernel())
      : GramTracked(kernel), m_rule(rule) {}

  RemovalRule rule() const { return m_rule; }
  void set_rule(RemovalRule rule) { m_rule = rule; }


  /// Removes the SV chosen by rule() (choose_removal; Random draws from rng).
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel, std::mt19937_64& rng) {
    return remove(sv, kernel, choose_removal(sv, kernel, m_rule, rng));
  }

  /// remove_sv(sv, kernel, p, .) with the cached row p. O(n c). Without norm tracking:
  /// norm_change NaN, norm_exact false, O(c).
  /// \throws std::invalid_argument when p is out of range or kernel is not the cache's;
  ///         std::logic_error when the cache is out of sync.
  MaintenanceResult remove(SupportVectors& sv, const Kernel& kernel, Index p) {
    const Index n = sv.size();
    if (!(p >= 0 && p < n)) detail::invalid("Removal::remove: SV index out of range");
    if (!detail::same_kernel(kernel, m_kernel))
      detail::invalid("Removal::remove: kernel differs from the cached one");
    const double kpp = kernel.self(sv.sqnorm()(p));  // as remove_sv
    if (!m_track) {
      MaintenanceResult r;
      r.degradation = sv.alpha(p).squaredNorm() * kpp;
      r.norm_change = std::numeric_limits<double>::quiet_NaN();
      r.norm_exact = false;
      sv.erase(p);
      return r;
    }
    if (n != m_gram.size()) detail::cache_out_of_sync("Removal::remove", n, m_gram.size());
    const double* kp = m_gram.row_data(p);
    // alpha_p . f(x_p) = sum_j k(x_j, x_p) (alpha_j . alpha_p), summed as remove_sv does but
    // with plain loops (an Eigen dot per SV costs a call each).
    const Index c = sv.n_coef();
    const double* A = sv.A().data();
    const double* ap = A + p * c;
    double af = 0.0;
    for (Index j = 0; j < n; ++j) {
      const double* aj = A + j * c;
      double dot = aj[0] * ap[0];
      for (Index i = 1; i < c; ++i) dot += aj[i] * ap[i];
      af += (j == p ? kpp : kp[j]) * dot;
    }
    const double a2k = sv.alpha(p).squaredNorm() * kpp;
    MaintenanceResult r;
    r.degradation = a2k;
    r.norm_change = -2.0 * af + a2k;
    m_gram.erase(p);
    sv.erase(p);
    return r;
  }

 private:
  RemovalRule m_rule = RemovalRule::Random;
};

}  // namespace budgetkernel
