#pragma once
/// \file budget/merging.hpp
/// Budget maintenance by merging two SVs into one (BSGD paper, section 4.3, eqs. 18-22): the
/// strategy Merging. Gaussian kernel only. Which pair it merges: merge_partner.hpp; the 1-D
/// solve for h and the degradation (eqs. 20-22): merge_solver.hpp.

#include "../gram_cache.hpp"
#include "../sv_store.hpp"
#include "merge_partner.hpp"
#include "result.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>

namespace budgetkernel {
namespace detail {

/// The merged pair (m, n) exactly: s from the coordinates (not -ln of a rounded kernel
/// value), h, k(x_m, z), k(x_n, z), the degradation; z (eq. 20) into z[0..d) and alpha_z
/// (eq. 22) into alpha_z[0..c). z is formed from the nearer end so that |z - x_m| =
/// |1-h| |x_m - x_n| to rounding even for |h| >> 1.
struct MergePair {
  double s = 0.0, h = 0.0, k_mz = 0.0, k_nz = 0.0, degradation = 0.0;
};
inline MergePair merge_pair(const SupportVectors& sv, const Kernel& kernel, Index m, Index n, double* z,
                            double* alpha_z) {
  const RowMatrix& A = sv.A();
  const RowMatrix& X = sv.X();
  MergePair p;
  p.s = kernel.gamma() * (X.row(m) - X.row(n)).squaredNorm();
  p.h = merge_h_s(A.row(m), A.row(n), p.s);
  const MergeTerms t = merge_terms(p.s, p.h);
  p.k_mz = t.k_mz;
  p.k_nz = t.k_nz;
  p.degradation = merge_degradation(A.row(m), A.row(n), t);
  const double h = p.h;
  for (Index l = 0; l < sv.dim(); ++l) {
    const double xm = X(m, l), xn = X(n, l);
    z[l] = h >= 0.5 ? xm + (h - 1.0) * (xm - xn) : xn + h * (xm - xn);
  }
  for (Index i = 0; i < sv.n_coef(); ++i) alpha_z[i] = A(m, i) * p.k_mz + A(n, i) * p.k_nz;
  return p;
}

}  // namespace detail

/// How Merging chooses the pair it merges.
struct MergeSearch {
  /// 1: the smallest SV with its best partner (the paper's rule, for a stream); more: the
  /// least-degrading pair among that many smallest SVs, each with its `partners` nearest SVs
  /// (detail::merge_best_pair).
  Index candidates = 1;
  Index partners = 0;
  /// The search combine() reduces a union of models with.
  static constexpr MergeSearch widened() { return {32, 10}; }
};

/// Reduces the store by one SV by merging (BSGD paper, section 4.3). Gaussian kernel only.
///
/// SV m = argmin_j ||alpha_j||^2 (k(x, x) = 1; erased outright when alpha_m = 0) and its
/// partner n = argmin_{j != m} of the degradation ||Delta w||^2 (eq. 14; detail::merge_partner)
/// become z = h x_m + (1-h) x_n (eq. 20), h maximising eq. (21), with alpha_z from eq. (22).
/// z takes the slot of m (of n when m is the last row, which erase would move) and the id
/// max(id_m, id_n). reduce() reports degradation = ||Delta w||^2 and norm_change =
/// ||w_after||^2 - ||w_before||^2 = 2 <w_before, Delta> + ||Delta||^2, Delta = alpha_z phi(z)
/// - alpha_m phi(x_m) - alpha_n phi(x_n), in raw coefficient units summed over the classes.
///
/// Why a cache: with the kernel matrix of the SVs (GramCache) the partner search's k(x_m, .)
/// and f(x_m), f(x_n) cost no exp, so a merge computes one kernel row, z's, which becomes its
/// row of the cache. The row of the SV just pushed is held back until the next step: under
/// budget pressure that is a merge, which writes it and z's row in one pass over the cache's
/// strided columns. Without norm tracking (track_norm(false), the paper's O(B) space) there
/// is no cache and norm_change is NaN (norm_exact false); the partner search reads the pushed
/// SV's row (m is almost always the newest SV) or one fresh row, made canonical as the cached
/// rows are, so partner, h, z and alpha_z are the same in both modes.
///
/// Protocol (as Projection): on_push(sv, krow, kappa) after every push, with the row the
/// learner scored the new example with; clear() with the store; rebuild(sv, kernel) after
/// replacing it (e.g. loading).
class Merging : public GramTracked {
 public:
  /// \param kernel  the learner's kernel (reduce() needs RBF).
  /// \param search  how the pair is chosen (MergeSearch; the paper's rule by default).
  explicit Merging(const Kernel& kernel = Kernel(), MergeSearch search = {}) : GramTracked(kernel), m_search(search) {}

  /// The kernel matrix of the current SVs (writes a held-back pushed row first).
  /// \throws std::logic_error without norm tracking (there is no cache then).
  const GramCache& gram() const {
    GramTracked::gram();  // throws without tracking
    flush();
    return m_gram;
  }

  /// Forgets every SV (keeps the storage).
  void clear() {
    m_pushed_pending = false;
    GramTracked::clear();
  }

  /// GramTracked::track_norm (a held-back row is dropped either way: the rebuild covers it).
  void track_norm(bool on, const SupportVectors& sv) {
    if (on != m_track) m_pushed_pending = false;
    GramTracked::track_norm(on, sv);
  }

  /// As GramTracked::on_push (same checks, same canonical values), but the new SV's row is
  /// held back for the next reduce() (see the class comment). Without norm tracking only the
  /// pushed row is kept.
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    const Index n = sv.size();
    if (m_track) {
      flush();
      prepare_push(sv);
    }
    if (!(krow.size() >= n - 1)) detail::invalid("Merging::on_push: krow is shorter than the number of previous SVs");
    if (m_pushed_row.size() < n) m_pushed_row.resize((std::max)(n, sv.capacity()));
    m_pushed_row.head(n - 1) = krow.head(n - 1);
    m_gram.canonical_tail(sv, m_kernel, n - 1, sv.x(n - 1).transpose(), sv.sqnorm()(n - 1), m_pushed_row);
    m_pushed_row(n - 1) = kappa;
    m_pushed_pending = true;
  }

  /// GramTracked::rebuild, and sizes the pushed row for the store's capacity.
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    m_pushed_pending = false;
    GramTracked::rebuild(sv, kernel);
    if (m_pushed_row.size() < sv.capacity()) m_pushed_row.resize(sv.capacity());
  }

  /// Removes one SV by merging (see the class comment for the rule and the reported numbers).
  /// Allocation-free once the work vectors reached the store's size (the default search).
  /// \throws std::invalid_argument if !kernel.unit_diagonal(), kernel is not the cache's
  ///         kernel or size() < 2; std::logic_error when the cache is out of sync.
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel) {
    check_reduce(sv, kernel);
    const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
    if (m_row.size() < B) m_row.resize((std::max)(B, sv.capacity()));
    if (m_merged.size() < d + c) m_merged.resize(d + c);
    const RowMatrix& A = sv.A();
    MaintenanceResult res;

    // The pair (m, n): by the widened search when asked for, else (or when it found only NaN
    // degradations) the smallest SV and its best partner. n < 0: m has zero coefficients.
    Index m = -1, n = -1;
    if (m_search.candidates > 1)
      std::tie(m, n) = detail::merge_best_pair(sv, kernel, m_search.candidates, m_search.partners, m_row);
    const double* km = nullptr;  // k(x_m, .), k(x_m, x_m) = 1, when the search read it
    if (m < 0) {
      double m_norm = 0.0;
      m = detail::merge_smallest(sv, m_norm, m_row);
      if (m_norm != 0.0) {
        km = m_track ? row(m, B) : untracked_row(sv, kernel, m, B);
        // m_row still holds merge_smallest's squared norms unless km was computed into it.
        n = detail::merge_partner(sv, m, km, km == m_row.data() ? nullptr : m_row.data());
      }
    }
    if (n < 0) {  // contributes nothing to w
      drop_silent(sv, m);
      return res;
    }

    const detail::MergePair pair = detail::merge_pair(sv, kernel, m, n, m_merged.data(), m_merged.data() + d);
    res.degradation = pair.degradation;
    const Index keep = (m == B - 1) ? n : m, drop = (keep == m) ? n : m;
    const std::int64_t id = (std::max)(sv.id(m), sv.id(n));
    // f(x_m) and f(x_n) from the cached rows (tracking only).
    const double f_m = m_track ? detail::merge_score_dot(sv, km ? km : row(m, B), A.row(m)) : 0.0;
    const double f_n = m_track ? detail::merge_score_dot(sv, row(n, B), A.row(n)) : 0.0;

    sv.set_x(keep, m_merged.head(d));
    if (m_track) {
      const double f_z = merged_row(sv, kernel, keep, m, pair);
      res.norm_change = 2.0 * (f_z - f_m - f_n) + res.degradation;
    } else {
      res.norm_change = std::numeric_limits<double>::quiet_NaN();
      res.norm_exact = false;
    }

    sv.alpha(keep) = m_merged.segment(d, c).transpose();
    sv.carry_combine(keep, m, n, pair.k_mz, pair.k_nz);
    sv.set_id(keep, id);
    if (m_track) update_cache(keep, drop, B - 1);  // without tracking there is no cache to update
    m_pushed_pending = false;
    sv.erase(drop);
    return res;
  }

 private:
  /// reduce's preconditions (see its \throws).
  void check_reduce(const SupportVectors& sv, const Kernel& kernel) const {
    if (!kernel.unit_diagonal())
      detail::invalid("Merging::reduce: merging needs the Gaussian (rbf) kernel (BSGD eq. 20)");
    if (!detail::same_kernel(kernel, m_kernel))
      detail::invalid("Merging::reduce: kernel differs from the cached one");
    const Index B = sv.size();
    if (!(B >= 2)) detail::invalid("Merging::reduce: needs at least two support vectors");
    if (m_track && B != m_gram.size() + (m_pushed_pending ? 1 : 0))
      detail::cache_out_of_sync("Merging::reduce", B, m_gram.size());
    if (!m_track && m_pushed_pending && !(m_pushed_row.size() >= B)) detail::cache_out_of_sync("Merging::reduce", B, m_pushed_row.size());
  }

  /// SV m, whose coefficients are zero, leaves without a merge (nothing of w changes).
  void drop_silent(SupportVectors& sv, Index m) {
    if (m_pushed_pending && m == sv.size() - 1) {
      m_pushed_pending = false;  // the pushed row dies with its SV
    } else if (m_track) {
      flush();
      m_gram.erase(m);
    } else {
      m_pushed_pending = false;  // the pushed SV moves into slot m: simply forget its row
    }
    sv.erase(m);
  }

  /// With tracking: z (already in slot `keep`) gets its row over the B SVs into m_row, and
  /// f(z) under the coefficients before the merge is returned. The slot's own entry is
  /// k(z, z) afterwards; f(z) needs k(x_keep, z) of the point z replaced, known in closed form.
  double merged_row(const SupportVectors& sv, const Kernel& kernel, Index keep, Index m, const detail::MergePair& pair) {
    const Index B = sv.size();
    const auto z = sv.x(keep).transpose();
    const double z_sq = sv.sqnorm()(keep);
    sv.kernel_row(kernel, z, z_sq, m_row);
    m_gram.canonical_tail(sv, kernel, B, z, z_sq, m_row);
    m_row(keep) = keep == m ? pair.k_mz : pair.k_nz;
    const double f_z = detail::merge_score_dot(sv, m_row, m_merged.segment(sv.dim(), sv.n_coef()));
    m_row(keep) = kernel.self(z_sq);
    return f_z;
  }

  /// The cache after a merge: z's row replaces slot `keep`, slot `drop` goes (the store moves
  /// its last SV there).
  void update_cache(Index keep, Index drop, Index last) {
    if (m_pushed_pending && drop != last) {
      // The pushed SV (last) moves into drop's slot, as in the store: z's row and its row go
      // in together, each with the other's slot renamed.
      m_row(drop) = m_row(last);  // k(z, x_new)
      m_pushed_row(keep) = m_row(last);
      m_pushed_row(drop) = m_pushed_row(last);  // k(x_new, x_new)
      m_gram.replace_two(keep, m_row.data(), drop, m_pushed_row.data());
    } else {
      m_gram.replace(keep, m_row, m_row(keep));
      if (!m_pushed_pending) m_gram.erase(drop);  // (pending and drop == last: the pushed SV merged away)
    }
  }

  /// Without norm tracking: row m over all B SVs, the pushed row when m is the pushed SV, else
  /// computed (canonical, as the cache's rows are).
  const double* untracked_row(const SupportVectors& sv, const Kernel& kernel, Index m, Index B) {
    if (m_pushed_pending && m == B - 1) return m_pushed_row.data();
    const auto xm = sv.x(m).transpose();
    const double sq = sv.sqnorm()(m);
    sv.kernel_row(kernel, xm, sq, m_row);
    m_gram.canonical_tail(sv, kernel, B, xm, sq, m_row);
    m_row(m) = kernel.self(sq);
    return m_row.data();
  }

  /// Row i of the kernel matrix over all B SVs: the pushed row itself for the pushed SV (last),
  /// else the cached row with the pushed SV's entry put in its scratch slot.
  const double* row(Index i, Index B) {
    if (!m_pushed_pending) return m_gram.row_data(i);
    if (i == B - 1) return m_pushed_row.data();
    double* r = m_gram.row_data(i);
    r[B - 1] = m_pushed_row(i);
    return r;
  }

  /// Writes a held-back row into the cache (GramTracked::on_push's writes).
  void flush() const {
    if (!m_pushed_pending) return;
    m_pushed_pending = false;
    const Index n = m_gram.size();
    m_gram.on_push(m_pushed_row, m_pushed_row(n));
  }

  MergeSearch m_search;
  Vector m_row;     // z's kernel row (and the search's scratch)
  Vector m_merged;  // z, then alpha_z
  mutable Vector m_pushed_row;  // the last pushed SV's kernel row (its k(x, x) last), not yet in the cache
  mutable bool m_pushed_pending = false;  // whether m_pushed_row waits to be written into the cache
};

}  // namespace budgetkernel
