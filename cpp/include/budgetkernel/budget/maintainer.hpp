#pragma once
/// \file budget/maintainer.hpp
/// One entry point over every budget-maintenance strategy of the BSGD paper (section 4).

#include "../sv_store.hpp"
#include "merging.hpp"
#include "projection.hpp"
#include "removal.hpp"
#include "result.hpp"

#include <random>

namespace budgetkernel {

enum class Maintenance : std::int32_t {
  RemoveRandom = 0,    ///< uniform random SV (Cesa-Bianchi & Gentile 2006)
  RemoveOldest = 1,    ///< smallest id (Forgetron-like)
  RemoveSmallest = 2,  ///< smallest ||alpha_j||^2 k(x_j, x_j) (BSGD 4.1)
  Project = 3,         ///< project the smallest SV onto the rest (eq. 16)
  ProjectExact = 4,    ///< project the SV minimising eq. (17) over all B+1
  Merge = 5,           ///< merge the smallest SV with its best partner (4.3, RBF only)
};

inline const char* maintenance_name(Maintenance m) {
  switch (m) {
    case Maintenance::RemoveRandom: return "remove-random";
    case Maintenance::RemoveOldest: return "remove-oldest";
    case Maintenance::RemoveSmallest: return "remove-smallest";
    case Maintenance::Project: return "project";
    case Maintenance::ProjectExact: return "project-exact";
    case Maintenance::Merge: return "merge";
  }
  return "?";
}

/// Dispatches to the chosen strategy and keeps its side state (the projection's
/// maintained inverse) in step with the store.
class BudgetMaintainer {
 public:
  BudgetMaintainer() = default;
  BudgetMaintainer(Maintenance kind, const Kernel& kernel)
      : m_kind(kind), m_projection(kind == Maintenance::ProjectExact) {
    detail::require(static_cast<int>(kind) >= 0 && static_cast<int>(kind) <= 5, "unknown maintenance strategy");
    if (kind == Maintenance::Merge && !kernel.unit_diagonal())
      detail::invalid("maintenance='merge' needs the Gaussian (rbf) kernel: merging two SVs into one "
                      "point on their segment (BSGD paper eq. 20) holds only for it");
  }

  Maintenance kind() const { return m_kind; }
  bool uses_projection() const { return m_kind == Maintenance::Project || m_kind == Maintenance::ProjectExact; }

  /// Must be called after every push; krow.head(n-1) = k(x_i, x_new), kappa = k(x_new, x_new).
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    if (uses_projection()) m_projection.on_push(sv, krow, kappa);
  }
  void on_clear() {
    if (uses_projection()) m_projection.clear();
  }
  /// Rebuilds side state from scratch (after loading a model or rescaling nothing: the
  /// inverse depends on the points only).
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    if (uses_projection()) m_projection.rebuild(sv, kernel);
  }

  /// True when the store must shrink now even under the budget: the projection keeps its
  /// inverse nonsingular by folding a numerically dependent new SV into the others at once.
  bool must_reduce() const { return uses_projection() && m_projection.pending(); }

  /// Removes exactly one SV.
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel, std::mt19937_64& rng) {
    switch (m_kind) {
      case Maintenance::RemoveRandom:
        return remove_sv(sv, kernel, choose_removal(sv, kernel, RemovalRule::Random, rng), m_work);
      case Maintenance::RemoveOldest:
        return remove_sv(sv, kernel, choose_removal(sv, kernel, RemovalRule::Oldest, rng), m_work);
      case Maintenance::RemoveSmallest:
        return remove_sv(sv, kernel, choose_removal(sv, kernel, RemovalRule::Smallest, rng), m_work);
      case Maintenance::Project:
      case Maintenance::ProjectExact: return m_projection.reduce(sv);
      case Maintenance::Merge: return merge_reduce(sv, kernel, m_work, m_work2);
    }
    return {};
  }

  const Projection& projection() const { return m_projection; }

 private:
  Maintenance m_kind = Maintenance::Merge;
  Projection m_projection;
  Vector m_work, m_work2;
};

}  // namespace budgetkernel
