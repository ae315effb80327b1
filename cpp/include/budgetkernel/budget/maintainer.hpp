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

/// The budget-maintenance strategies of the BSGD paper (section 4); files store the numbers.
enum class Maintenance : std::int32_t {
  RemoveRandom = 0,    ///< uniform random SV (Cesa-Bianchi & Gentile 2006)
  RemoveOldest = 1,    ///< smallest id (Forgetron-like)
  RemoveSmallest = 2,  ///< smallest ||alpha_j||^2 k(x_j, x_j) (BSGD 4.1)
  Project = 3,         ///< project the smallest SV onto the rest (eq. 16)
  ProjectExact = 4,    ///< project the SV minimising eq. (17) over all B+1
  Merge = 5,           ///< merge the smallest SV with its best partner (4.3, RBF only)
};

/// The strategies' names (BudgetedSGDClassifier's `maintenance`; files store the number).
inline constexpr detail::EnumName<Maintenance> maintenance_names[] = {
    {Maintenance::RemoveRandom, "remove-random"}, {Maintenance::RemoveOldest, "remove-oldest"},
    {Maintenance::RemoveSmallest, "remove-smallest"}, {Maintenance::Project, "project"},
    {Maintenance::ProjectExact, "project-exact"}, {Maintenance::Merge, "merge"}};

/// \param m  a strategy.
/// \return its name in maintenance_names.
inline const char* maintenance_name(Maintenance m) { return detail::enum_name(maintenance_names, m); }

namespace detail {
/// Merging's kernel rule, for BudgetMaintainer and BSGDParams::validate().
inline constexpr char kMergeNeedsRbf[] =
    "maintenance='merge' needs the Gaussian (rbf) kernel: merging two SVs into one point on their segment "
    "(BSGD paper eq. 20) holds only for it; use maintenance='project' or a removal strategy";
}  // namespace detail

/// Dispatches to the chosen strategy and keeps its side state in step with the store: the
/// projection's maintained inverse, or the kernel-matrix cache (GramCache) of merging and
/// removal, which the learner may switch off while it only bounds ||w|| (track_norm).
///
/// `active` = false (a learner without a budget, which never reduces): on_push and load
/// keep no side state at all (an unbounded store would otherwise drag an n x n cache along).
/// reduce() then still works for removal (the cache-free remove_sv) and merging (Merging
/// without norm tracking: degradation only), but not for projection.
class BudgetMaintainer {
 public:
  BudgetMaintainer() = default;
  /// \param kind    the strategy.
  /// \param kernel  the learner's kernel (merging needs RBF).
  /// \param active  false for a learner without a budget: no side state (see the class comment).
  /// \throws std::invalid_argument on an unknown strategy, or merging with another kernel.
  BudgetMaintainer(Maintenance kind, const Kernel& kernel, bool active = true)
      : m_kind(kind),
        m_active(active),
        m_projection(kind == Maintenance::ProjectExact),
        m_merging(kernel),
        m_removal(removal_rule(kind), kernel) {
    detail::require(static_cast<int>(kind) >= 0 && static_cast<int>(kind) <= 5, "unknown maintenance strategy");
    if (active && kind == Maintenance::Merge && !kernel.unit_diagonal())
      detail::invalid(detail::kMergeNeedsRbf);
    if (!active) m_merging.track_norm(false, SupportVectors());
  }

  /// \return the strategy.
  Maintenance kind() const { return m_kind; }
  bool active() const { return m_active; }
  bool uses_projection() const { return m_kind == Maintenance::Project || m_kind == Maintenance::ProjectExact; }
  bool uses_merging() const { return m_kind == Maintenance::Merge; }
  bool uses_removal() const { return !uses_projection() && !uses_merging(); }

  /// Must be called after every push; krow.head(n-1) = k(x_i, x_new), kappa = k(x_new, x_new).
  /// \param sv     the store, the new SV last.
  /// \param krow   its kernel values with the other SVs.
  /// \param kappa  its k(x, x).
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    if (!m_active) return;
    if (uses_projection())
      m_projection.on_push(sv, krow, kappa);
    else if (uses_merging())
      m_merging.on_push(sv, krow, kappa);
    else
      m_removal.on_push(sv, krow, kappa);
  }
  /// Allocates the kernel-matrix cache of merging or removal for `cap` SVs now (see
  /// GramTracked::reserve); projection allocates on activation, the inactive maintainer never.
  /// \param cap  the store's capacity.
  void reserve(Index cap) {
    if (!m_active) return;
    if (uses_merging())
      m_merging.reserve(cap);
    else if (uses_removal())
      m_removal.reserve(cap);
  }
  void on_clear() {
    if (uses_projection()) m_projection.clear();
    m_merging.clear();
    m_removal.clear();
  }
  /// Writes the side state a resumed learner needs to continue bit for bit. The merging and
  /// removal caches depend on the points only and are rebuilt bitwise on load (GramCache);
  /// the projection's maintained inverse is saved as it is (a fresh inverse would differ in
  /// the last digits).
  /// \param fm  receives the fields ("proj.*").
  void save(FieldMap& fm) const {
    if (m_active && uses_projection()) m_projection.save(fm, "proj.");
  }

  /// Restores side state after the learner reloaded its store.
  /// \param fm      a model file's fields.
  /// \param sv      the store, already loaded.
  /// \param kernel  the learner's kernel.
  /// \throws std::runtime_error ("model file: ...") on an invalid projection state.
  void load(const FieldMap& fm, const SupportVectors& sv, const Kernel& kernel) {
    if (m_active && uses_projection())
      m_projection.load(fm, "proj.", sv);
    else
      rebuild(sv, kernel);
  }
  /// Rebuilds the kernel-matrix cache of merging or removal from the store (after it was
  /// changed without on_push / reduce, e.g. by combine()). Not for projection, whose
  /// maintained inverse is kept, not rebuilt.
  /// \param sv      the store.
  /// \param kernel  the learner's kernel.
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    if (!m_active || uses_projection()) return;
    if (uses_merging())
      m_merging.rebuild(sv, kernel);
    else
      m_removal.rebuild(sv, kernel);
  }

  /// Whether reduce() may skip norm_change when asked to (track_norm(false)): merging and
  /// removal with their caches (GramTracked::track_norm). Projection always reports it.
  bool can_skip_norm() const { return m_active && !uses_projection(); }
  /// Whether reduce() reports norm_change (MaintenanceResult::norm_exact).
  bool tracks_norm() const {
    if (!can_skip_norm()) return true;
    return uses_merging() ? m_merging.tracks_norm() : m_removal.tracks_norm();
  }
  /// Asks reduce() to report norm_change (on, the default; O(n^2 d) when it was off) or allows
  /// it to skip it; no effect unless can_skip_norm().
  /// \param on  whether reduce() must report norm_change.
  /// \param sv  the store (the cache is rebuilt from it when tracking resumes).
  void track_norm(bool on, const SupportVectors& sv) {
    if (!can_skip_norm()) return;
    if (uses_merging())
      m_merging.track_norm(on, sv);
    else
      m_removal.track_norm(on, sv);
  }
  /// The kernel-matrix cache of the active merging or removal (while it tracks the norm).
  const GramCache& gram() const { return uses_merging() ? m_merging.gram() : m_removal.gram(); }

  /// True when the store must shrink now even under the budget: the projection keeps its
  /// inverse nonsingular by folding a numerically dependent new SV into the others at once.
  bool must_reduce() const { return uses_projection() && m_projection.pending(); }

  /// Removes exactly one SV.
  /// \param sv      the store, one SV over the budget.
  /// \param kernel  the learner's kernel.
  /// \param rng     the learner's generator (random removal).
  /// \return what the step did: its ||Delta w||^2 (eq. 14) and the change of ||w||^2.
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel, std::mt19937_64& rng) {
    switch (m_kind) {
      case Maintenance::RemoveRandom:
      case Maintenance::RemoveOldest:
      case Maintenance::RemoveSmallest:
        if (!m_active) return remove_sv(sv, kernel, choose_removal(sv, kernel, m_removal.rule(), rng), m_work);
        return m_removal.reduce(sv, kernel, rng);
      case Maintenance::Project:
      case Maintenance::ProjectExact: return m_projection.reduce(sv, kernel);
      case Maintenance::Merge:
        return m_merging.reduce(sv, kernel);
    }
    return {};
  }

  const Projection& projection() const { return m_projection; }
  const Merging& merging() const { return m_merging; }
  const Removal& removal() const { return m_removal; }

 private:
  static RemovalRule removal_rule(Maintenance kind) {
    switch (kind) {
      case Maintenance::RemoveOldest: return RemovalRule::Oldest;
      case Maintenance::RemoveSmallest: return RemovalRule::Smallest;
      default: return RemovalRule::Random;
    }
  }

  Maintenance m_kind = Maintenance::Merge;
  bool m_active = true;
  Projection m_projection;
  Merging m_merging;
  Removal m_removal;
  Vector m_work;
};

}  // namespace budgetkernel
