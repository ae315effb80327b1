#pragma once
/// \file budget/merging.hpp
/// Budget maintenance by merging two SVs into one (BSGD paper, section 4.3, eqs. 18-22):
/// the partner search and the strategy (merge_reduce, Merging). Gaussian kernel only.
/// The 1-D solve for h and the degradation (eqs. 20-22) are in merge_solver.hpp, the binary
/// lookup table that ranks partners in merge_table.hpp; both are included here.

#include "../gram_cache.hpp"
#include "../sv_store.hpp"
#include "merge_solver.hpp"
#include "merge_table.hpp"
#include "result.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

namespace budgetkernel {
namespace detail {

/// sum_j krow[j] (alpha_j . v) = v . f(x) for the kernel row krow of x: O(B c), no temporary.
/// Multi-class: each alpha_j . v is summed over the classes in order, and the terms over j in
/// order, as a plain double loop would; four SVs' dot products run side by side so that the
/// additions of one do not wait for the previous one's (the same operations, the same bits).
template <class V>
double merge_score_dot(const SupportVectors& sv, const double* krow, const V& v) {
  const Index B = sv.size(), c = sv.n_coef();
  const double* A = sv.A().data();
  if (c == 1)  // binary: one vectorised dot product
    return v(0) * Eigen::Map<const Vector>(A, B).dot(Eigen::Map<const Vector>(krow, B));
  double sum = 0.0;
  Index j = 0;
  for (; j + 4 <= B; j += 4) {
    const double *a0 = A + j * c, *a1 = a0 + c, *a2 = a1 + c, *a3 = a2 + c;
    double d0 = a0[0] * v(0), d1 = a1[0] * v(0), d2 = a2[0] * v(0), d3 = a3[0] * v(0);
    for (Index i = 1; i < c; ++i) {
      const double vi = v(i);
      d0 += a0[i] * vi;
      d1 += a1[i] * vi;
      d2 += a2[i] * vi;
      d3 += a3[i] * vi;
    }
    sum += krow[j] * d0;
    sum += krow[j + 1] * d1;
    sum += krow[j + 2] * d2;
    sum += krow[j + 3] * d3;
  }
  for (; j < B; ++j) {
    const double* aj = A + j * c;
    double dot = aj[0] * v(0);
    for (Index i = 1; i < c; ++i) dot += aj[i] * v(i);
    sum += krow[j] * dot;
  }
  return sum;
}
template <class V>
double merge_score_dot(const SupportVectors& sv, const Vector& krow, const V& v) {
  return merge_score_dot(sv, krow.data(), v);
}

/// m = argmin_j ||alpha_j||^2, near-ties to the oldest SV (detail::argmin_oldest: Pegasos
/// gives untouched SVs equal |alpha|); its squared norm into m_norm. `work` holds the
/// squared norms (grown to size() when smaller).
inline Index merge_smallest(const SupportVectors& sv, double& m_norm, Vector& work) {
  const Index B = sv.size();
  if (work.size() < B) work.resize(B);
  if (sv.n_coef() == 1)
    work.head(B) = Eigen::Map<const Vector>(sv.A().data(), B).array().square();
  else
    work.head(B) = sv.A().topRows(B).rowwise().squaredNorm();
  const Index m = argmin_oldest(work.data(), sv.ids().data(), B);
  m_norm = work(m);
  return m;
}

/// The exact degradation of merging SV m with candidate j at k_mj = k (h from eq. 21): what
/// the partner searches minimise (multi-class; the binary search ranks by MergeTable).
inline double merge_candidate(const RowMatrix& A, Index m, Index j, double k) {
  const double s = merge_s_from_k(k);
  return merge_degradation_s(A.row(m), A.row(j), s, merge_h_s(A.row(m), A.row(j), s));
}

/// The merge partner n != m of SV m given krow_m[j] = k(x_m, x_j) (see merge_reduce), by
/// evaluating every candidate: binary by the table, multi-class exactly. Ties go to the lowest
/// index. The reference the faster searches (merge_partner) return the choice of.
inline Index merge_partner_scan(const SupportVectors& sv, Index m, const double* krow_m) {
  const RowMatrix& A = sv.A();
  const Index B = sv.size();
  const bool binary = sv.n_coef() == 1;
  const MergeTable* table = binary ? &merge_table() : nullptr;
  Index n = -1;
  double best = std::numeric_limits<double>::infinity();
  for (Index j = 0; j < B; ++j) {
    if (j == m) continue;
    // binary: |alpha_j| >= |alpha_m| > 0 (m is the smallest)
    const double e = binary ? table->per_unit(A(m, 0) / A(j, 0), krow_m[j]) : merge_candidate(A, m, j, krow_m[j]);
    if (n < 0 || e < best) best = e, n = j;
  }
  return n;
}

/// merge_partner_scan's choice for a multi-class store, with most candidates skipped by a
/// lower bound on their degradation. The merge replaces the c class vectors
/// a_i phi(x_m) + b_i phi(x_n) by multiples of one phi(z): its degradation is at least their
/// best rank-1 approximation error, which lies in the plane of phi(x_m) and phi(x_n): the
/// smaller eigenvalue of M G, M = sum_i (a_i, b_i)^T (a_i, b_i) (entries |alpha_m|^2,
/// alpha_m.alpha_n, |alpha_n|^2), G = [[1, k], [k, 1]], i.e. 2 det / (tr + sqrt(tr^2 - 4 det)).
/// The bounds of all candidates take one pass over the coefficients (a product with alpha_m;
/// `norms`: the rows' squared norms when the caller has them, e.g. from merge_smallest, else
/// null), vectorised, where a 1-D solve of eq. (21) costs divisions, logs and exps per class.
/// Then the first candidate in index order (as merge_partner_scan starts), the one of least
/// bound (most often the partner), and the rest in index order are solved exactly, each
/// skipped while its bound exceeds the best degradation found by more than rounding could
/// explain (a margin relative to |alpha_m|^2 + |alpha_n|^2, far above the rounding of either).
/// A skipped candidate cannot be (co-)minimal, and ties go to the lowest index, so the result
/// is merge_partner_scan's (tested against it on random stores of 10 and 26 classes).
inline Index merge_partner_multi(const SupportVectors& sv, Index m, const double* krow_m, const double* norms) {
  const RowMatrix& A = sv.A();
  const Index B = sv.size(), first = m == 0 ? 1 : 0;
  double best = merge_candidate(A, m, first, krow_m[first]);
  if (std::isnan(best)) return merge_partner_scan(sv, m, krow_m);  // keeps the scan's NaN handling
  thread_local Vector key, an2;
  if (key.size() < B) key.resize(B), an2.resize(B);
  const auto Ab = A.topRows(B);
  if (norms) {
    an2.head(B) = Eigen::Map<const Vector>(norms, B);
  } else {
    an2.head(B) = Ab.rowwise().squaredNorm();
  }
  // key_j = bound_j - margin_j: candidate j can win only if key_j <= best (or key_j is NaN).
  key.head(B).noalias() = Ab * A.row(m).transpose();  // alpha_m . alpha_j
  const double am2 = A.row(m).squaredNorm();
  const auto k = Eigen::Map<const Vector>(krow_m, B).array();
  const auto dot = key.head(B).array();
  const auto n2 = an2.head(B).array();
  const auto tr = am2 + n2 + 2.0 * dot * k;
  const auto det = (am2 * n2 - dot.square()).cwiseMax(0.0) * (1.0 - k.square()).cwiseMax(0.0);
  key.head(B) = (2.0 * det / (tr + (tr.square() - 4.0 * det).cwiseMax(0.0).sqrt())).cwiseMax(0.0) - 1e-9 * (am2 + n2);
  key(m) = key(first) = std::numeric_limits<double>::infinity();
  Index n = first;
  const auto consider = [&](Index j) {
    const double e = merge_candidate(A, m, j, krow_m[j]);
    if (e < best || (e == best && j < n)) best = e, n = j;
  };
  // (An infinite best, from overflowing coefficients, lets every key through: m is skipped by
  // index, not by its infinite key.)
  Index lead = 0;
  if (key.head(B).minCoeff(&lead) <= best && lead != m) consider(lead);  // (NaN keys: in the loop)
  key(lead) = std::numeric_limits<double>::infinity();
  for (Index j = 0; j < B; ++j)
    if (j != m && !(key(j) > best)) consider(j);
  return n;
}

/// Bit i set iff !(v[i] < t) (so NaN sets it), for i < n <= 64: vector compares, no branch.
inline std::uint64_t merge_mask_not_below(const double* v, Index n, double t) {
  std::uint64_t bits = 0;
  Index i = 0;
#if defined(__AVX2__)
  const __m256d tt = _mm256_set1_pd(t);
  for (; i + 4 <= n; i += 4)
    bits |= static_cast<std::uint64_t>(_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(v + i), tt, _CMP_NLT_UQ))) << i;
#elif defined(__SSE2__) || defined(_M_X64)
  const __m128d tt = _mm_set1_pd(t);
  for (; i + 2 <= n; i += 2)
    bits |= static_cast<std::uint64_t>(_mm_movemask_pd(_mm_cmpnlt_pd(_mm_loadu_pd(v + i), tt))) << i;
#endif
  for (; i < n; ++i) bits |= static_cast<std::uint64_t>(!(v[i] < t)) << i;
  return bits;
}

/// Index of the lowest set bit of bits != 0.
inline int merge_lowest_bit(std::uint64_t bits) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(bits);
#elif defined(_MSC_VER) && defined(_M_X64)
  unsigned long i = 0;
  _BitScanForward64(&i, bits);
  return static_cast<int>(i);
#else
  int i = 0;
  for (; !(bits & 1u); bits >>= 1) ++i;
  return i;
#endif
}

/// merge_partner_scan's choice, faster for binary stores: the nearest candidate (largest k)
/// is evaluated first, and every other one whose MergeTable::lower_bound(k) exceeds the best
/// value so far (by more than the bound's rounding slack), i.e. whose k is below
/// prune_below(best), is skipped with one comparison instead of the table look-up (a
/// division, a sqrt and a bilinear interpolation). Pruned candidates cannot be (co-)minimal,
/// and ties among the rest go to the lowest index, so the result is the same.
///
/// Both passes over the row (the seed, then the candidates that pass the seed's bound) take
/// blocks of 64 entries as a bit mask from vector compares and visit its set bits only: few
/// are set (typically m itself, the seed and rarely another), so the row is scanned by
/// vector compares instead of a scalar search and a scalar compress. Each visited candidate
/// is checked again against the current (tighter) bound: the candidates of a plain loop, in
/// its order.
inline Index merge_partner(const SupportVectors& sv, Index m, const double* krow_m, const double* norms = nullptr) {
  const Index B = sv.size();
  if (sv.n_coef() != 1) return merge_partner_multi(sv, m, krow_m, norms);
  const double* a = sv.A().data();
  // Seed: the first nearest candidate (largest k), by two vectorised maxima around m.
  double kmax = -std::numeric_limits<double>::infinity();
  if (m > 0) kmax = Eigen::Map<const Vector>(krow_m, m).maxCoeff();
  if (m + 1 < B) kmax = (std::max)(kmax, Eigen::Map<const Vector>(krow_m + m + 1, B - m - 1).maxCoeff());
  constexpr Index kBlock = 64;
  Index seed = -1;
  for (Index j0 = 0; j0 < B && seed < 0; j0 += kBlock)
    for (std::uint64_t bits = merge_mask_not_below(krow_m + j0, (std::min)(kBlock, B - j0), kmax); bits; bits &= bits - 1) {
      const Index j = j0 + merge_lowest_bit(bits);
      if (j != m && krow_m[j] == kmax) {  // none if NaN got in the way: plain scan
        seed = j;
        break;
      }
    }
  const MergeTable& table = merge_table();
  const double am = a[m];
  double best = seed < 0 ? 0.0 : table.per_unit(am / a[seed], krow_m[seed]);
  if (seed < 0 || std::isnan(best)) return merge_partner_scan(sv, m, krow_m);
  Index n = seed;
  double k_min = table.prune_below_fast(best);  // k < k_min: lower_bound(k) > best, cannot win
  for (Index j0 = 0; j0 < B; j0 += kBlock)
    for (std::uint64_t bits = merge_mask_not_below(krow_m + j0, (std::min)(kBlock, B - j0), k_min); bits; bits &= bits - 1) {
      const Index j = j0 + merge_lowest_bit(bits);
      if (krow_m[j] < k_min || j == m || j == seed) continue;  // NaN passes, as in merge_partner_scan
      const double e = table.per_unit(am / a[j], krow_m[j]);
      if (e < best || (e == best && j < n)) {
        if (e < best) k_min = table.prune_below_fast(e);
        best = e, n = j;
      }
    }
  return n;
}

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

/// Merges SVs m and n of the store (the pair merge_reduce or merge_reduce_best chose): z takes
/// the slot of m (of n when m is the last row, which erase would move), alpha_z from eq. (22),
/// id max(id_m, id_n); n is erased. Reports the degradation and the norm change, from the
/// kernel rows of x_m, x_n and z computed before the store changes (see merge_reduce).
/// `work` has room for max(size(), dim() + n_coef()) values, `work2` for size(); `row_m`:
/// work already holds x_m's kernel row (with 1 at m).
inline MaintenanceResult merge_apply(SupportVectors& sv, const Kernel& kernel, Index m, Index n, Vector& work,
                                     Vector& work2, bool row_m) {
  const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
  const RowMatrix& A = sv.A();
  MaintenanceResult res;
  if (!row_m) {
    sv.kernel_row(kernel, sv.x(m).transpose(), sv.sqnorm()(m), work);
    work(m) = 1.0;
  }
  const double f_m = merge_score_dot(sv, work, A.row(m));
  sv.kernel_row(kernel, sv.x(n).transpose(), sv.sqnorm()(n), work2);
  work2(n) = 1.0;
  const double f_n = merge_score_dot(sv, work2, A.row(n));

  // z and alpha_z go into `work`, which x_m's row no longer needs.
  const MergePair pair = merge_pair(sv, kernel, m, n, work.data(), work.data() + d);
  res.degradation = pair.degradation;
  const auto z = work.head(d);
  const auto alpha_z = work.segment(d, c);
  sv.kernel_row(kernel, z, z.squaredNorm(), work2);
  const double f_z = merge_score_dot(sv, work2, alpha_z);
  res.norm_change = 2.0 * (f_z - f_m - f_n) + res.degradation;

  const Index keep = (m == B - 1) ? n : m, drop = (keep == m) ? n : m;
  const std::int64_t id = (std::max)(sv.id(m), sv.id(n));
  sv.set_x(keep, z);
  sv.alpha(keep) = alpha_z.transpose();
  sv.carry_combine(keep, m, n, pair.k_mz, pair.k_nz);
  sv.set_id(keep, id);
  sv.erase(drop);
  return res;
}

}  // namespace detail

/// Reduces the store by one SV by merging (BSGD paper, section 4.3). Gaussian kernel only.
///
/// m = argmin_j ||alpha_j||^2 (k(x, x) = 1); if alpha_m == 0 it is simply erased. Otherwise
/// its partner n = argmin_{j != m} of the merge degradation of (m, j):
///  - binary (n_coef() == 1): ranked by the precomputed table E(alpha_m/alpha_j, k_mj)
///    (detail::MergeTable, no exp per candidate; a lower bound of E in k skips the look-up
///    for most candidates, which cannot win, see detail::merge_partner), then h is solved
///    exactly for the chosen partner (the table's choice is almost always the exact best,
///    otherwise worse by a tiny multiple of alpha_m^2, see MergeTable);
///  - multi-class: the exact 1-D solve of eq. (21) for every candidate (the paper's way; a
///    few logs per candidate) that a lower bound on its degradation does not rule out
///    (detail::merge_partner_multi, the same partner).
/// z = h x_m + (1-h) x_n (eq. 20) takes the slot of m (of n when m is the last row, which
/// erase would move), with alpha_z from eq. (22) and id max(id_m, id_n); n is erased.
///
/// Returns degradation = ||w_before - w_after||^2 and norm_change = ||w_after||^2 -
/// ||w_before||^2 in raw coefficient units (w = sum_i alpha_i phi(x_i), summed over the c
/// coefficient columns): norm_change = 2 <w_before, Delta> + ||Delta||^2 with
/// Delta = alpha_z phi(z) - alpha_m phi(x_m) - alpha_n phi(x_n), from the three kernel rows
/// of x_m, x_n and z, computed before the store changes. O(B (d + c)) (+ O(B c) logs multi-class).
/// The cache-free reference of Merging, which needs only z's row (BudgetMaintainer uses it
/// for learners without a budget).
///
/// `work` is grown to max(size(), dim() + n_coef()) and `work2` to size() when smaller;
/// no heap allocation otherwise (the binary table is built once, on first use).
/// \throws std::invalid_argument if !kernel.unit_diagonal() or size() < 2.
inline MaintenanceResult merge_reduce(SupportVectors& sv, const Kernel& kernel, Vector& work, Vector& work2) {
  if (!kernel.unit_diagonal()) detail::invalid("merge_reduce: merging needs the Gaussian (rbf) kernel (BSGD eq. 20)");
  const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
  if (!(B >= 2)) detail::invalid("merge_reduce: needs at least two support vectors");
  if (work.size() < (std::max)(B, d + c)) work.resize((std::max)(B, d + c));
  if (work2.size() < B) work2.resize(B);

  double m_norm = 0.0;
  const Index m = detail::merge_smallest(sv, m_norm, work2);  // the squared norms stay in work2
  if (m_norm == 0.0) {  // contributes nothing to w
    sv.erase(m);
    return {};
  }
  // Kernel row of x_m: partner search and f(x_m) in one pass.
  sv.kernel_row(kernel, sv.x(m).transpose(), sv.sqnorm()(m), work);
  work(m) = 1.0;
  const Index n = detail::merge_partner(sv, m, work.data(), work2.data());
  return detail::merge_apply(sv, kernel, m, n, work, work2, true);
}

/// merge_reduce with a wider search, for reducing a union of models (combine()): where
/// merge_reduce merges the smallest SV with its best partner, this merges the pair of least
/// degradation among the `candidates` smallest SVs (||alpha||^2, ties to the oldest), each
/// with its `partners` nearest SVs (largest kernel values), h solved exactly for every pair
/// (eq. 21). A stream's overflowing SV is a fresh example with a small coefficient, so the
/// smallest is the one to fold; a union of models holds many SVs of comparable weight, where
/// folding the smallest into its best partner can cost far more than another pair (measured
/// on four BSGD models of a noisy checkerboard reduced from 400 SVs to 100: accuracy 0.930
/// with the smallest, 0.961 with the best of the 32 smallest, 0.959 for the exact union).
/// O(candidates B (d + c)) per merge, plus candidates x partners 1-D solves.
inline MaintenanceResult merge_reduce_best(SupportVectors& sv, const Kernel& kernel, Vector& work, Vector& work2,
                                           Index candidates = 32, Index partners = 10) {
  if (!kernel.unit_diagonal()) detail::invalid("merge_reduce_best: merging needs the Gaussian (rbf) kernel");
  const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
  if (!(B >= 2)) detail::invalid("merge_reduce_best: needs at least two support vectors");
  if (work.size() < (std::max)(B, d + c)) work.resize((std::max)(B, d + c));
  if (work2.size() < B) work2.resize(B);
  const RowMatrix& A = sv.A();
  std::vector<Index> order(static_cast<std::size_t>(B));
  std::iota(order.begin(), order.end(), Index{0});
  const Vector norms = A.topRows(B).rowwise().squaredNorm();
  const auto smaller = [&](Index a, Index b) {
    return norms(a) < norms(b) || (norms(a) == norms(b) && sv.id(a) < sv.id(b));
  };
  const Index L = (std::min)(candidates, B);
  std::partial_sort(order.begin(), order.begin() + L, order.end(), smaller);
  if (norms(order[0]) == 0.0) {  // contributes nothing to w
    sv.erase(order[0]);
    return {};
  }
  Index best_m = -1, best_n = -1;
  double best = std::numeric_limits<double>::infinity();
  std::vector<Index> near(static_cast<std::size_t>(B));
  for (Index a = 0; a < L; ++a) {
    const Index m = order[static_cast<std::size_t>(a)];
    sv.kernel_row(kernel, sv.x(m).transpose(), sv.sqnorm()(m), work);
    work(m) = -1.0;  // never its own partner
    std::iota(near.begin(), near.end(), Index{0});
    const Index P = (std::min)(partners, B - 1);
    std::partial_sort(near.begin(), near.begin() + P, near.end(),
                      [&](Index i, Index j) { return work(i) > work(j) || (work(i) == work(j) && i < j); });
    for (Index b = 0; b < P; ++b) {
      const Index n = near[static_cast<std::size_t>(b)];
      const double s = kernel.gamma() * (sv.x(m) - sv.x(n)).squaredNorm();
      const double e = detail::merge_degradation_s(A.row(m), A.row(n), s, detail::merge_h_s(A.row(m), A.row(n), s));
      if (e < best) best = e, best_m = m, best_n = n;
    }
  }
  if (best_m < 0) {  // only NaN degradations (cannot happen for finite SVs): the plain rule
    return merge_reduce(sv, kernel, work, work2);
  }
  return detail::merge_apply(sv, kernel, best_m, best_n, work, work2, false);
}

/// merge_reduce with the kernel matrix of the SVs cached (GramCache): the same partner, h,
/// z, alpha_z and degradation, but one kernel row per merge instead of three.
///
///  - the partner search reads k(x_m, .) from the cached row m (no exp);
///  - f(x_m) = K_m . alpha and f(x_n) = K_n . alpha are dot products with cached rows;
///  - the only kernel row computed is z's: z is written into its slot first (so the row's
///    query and |z|^2 are exactly the store's, which keeps rebuild() bitwise, see GramCache),
///    its row over the B SVs gives f(z) (with the analytic k(x_keep, z) = k_mz or k_nz for
///    the slot z overwrote) and becomes row/column `keep` of the cache; then `drop` is
///    erased from the store and the cache alike (swap-with-last in both).
/// Cost per merge: O(B (d + c)) plus B kernel values (+ at most 7 for the canonical tail).
///
/// The pushed SV's row is held back (on_push keeps it aside) until the step that follows:
/// under budget pressure that is a merge, which writes the new SV's row and z's row into
/// the cache in one pass over its columns, where pushing, replacing and erasing would walk
/// the strided columns three times. Anything else
/// that needs the cache first (gram(), the next push) writes the held row as GramTracked does.
///
/// Protocol (as Projection): after every push call on_push(sv, krow, kappa) with the row the
/// learner scored the new example with; clear() when the store is cleared; rebuild(sv, kernel)
/// after replacing the store (e.g. loading). Differences from merge_reduce in the kernel
/// values (the canonical cached ones vs. freshly computed rows, <= 1 ulp) can only change the
/// chosen partner on an exact tie.
///
/// Without norm tracking (track_norm(false)) the cache is dropped and a merge reports the
/// degradation only (MaintenanceResult::norm_exact = false): f(x_m), f(x_n) and f(z) exist
/// only for norm_change, and z's kernel row only for them and the cache. What is left is
/// the partner search over k(x_m, .), which is the held row of the pushed SV (m is almost
/// always the newest SV in a BSGD run) or else one fresh kernel row, made canonical as the
/// cached rows are, so partner, h, z and alpha_z are the same in both modes. A learner that
/// projects w onto a ball only needs ||w|| when it may exceed the radius, so it can bound
/// ||w|| and switch the tracking back on (one O(B^2 d) rebuild) when the bound gets close
/// (KernelPegasos). That is the paper's O(B) space and time for merging (section 4.3: "no
/// need to store the kernel matrix"), with one kernel row per example instead of two.
class Merging : public GramTracked {
 public:
  explicit Merging(const Kernel& kernel = Kernel()) : GramTracked(kernel) {}

  /// The kernel matrix of the current SVs (writes a held-back pushed row first).
  /// \throws std::logic_error without norm tracking (there is no cache then).
  const GramCache& gram() const {
    GramTracked::gram();  // throws without tracking
    flush();
    return m_gram;
  }

  /// Forgets every SV (keeps the storage).
  void clear() {
    m_held = false;
    GramTracked::clear();
  }

  /// GramTracked::track_norm (a held-back row is dropped either way: the rebuild covers it).
  void track_norm(bool on, const SupportVectors& sv) {
    if (on != m_track) m_held = false;
    GramTracked::track_norm(on, sv);
  }

  /// As GramTracked::on_push (same checks, same canonical values), but the new SV's row is
  /// held back for the next reduce() (see the class comment). Without norm tracking only the
  /// held row is kept.
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    const Index n = sv.size();
    if (m_track) {
      flush();
      prepare_push(sv);
    }
    if (!(krow.size() >= n - 1)) detail::invalid("Merging::on_push: krow is shorter than the number of previous SVs");
    if (m_new.size() < n) m_new.resize((std::max)(n, sv.capacity()));
    m_new.head(n - 1) = krow.head(n - 1);
    m_gram.canonical_tail(sv, m_kernel, n - 1, sv.x(n - 1).transpose(), sv.sqnorm()(n - 1), m_new);
    m_new(n - 1) = kappa;
    m_held = true;
  }

  /// GramTracked::rebuild, and sizes the held row for the store's capacity.
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    m_held = false;
    GramTracked::rebuild(sv, kernel);
    if (m_new.size() < sv.capacity()) m_new.resize(sv.capacity());
  }

  /// Removes one SV by merging (see merge_reduce for the rule and the reported numbers;
  /// without norm tracking norm_change is NaN and norm_exact false).
  /// Allocation-free once the work vectors reached the store's size.
  /// \throws std::invalid_argument if !kernel.unit_diagonal(), kernel is not the cache's
  ///         kernel or size() < 2; std::logic_error when the cache is out of sync.
  MaintenanceResult reduce(SupportVectors& sv, const Kernel& kernel) {
    check_reduce(sv, kernel);
    const Index B = sv.size(), d = sv.dim(), c = sv.n_coef();
    if (m_row.size() < B) m_row.resize((std::max)(B, sv.capacity()));
    if (m_zw.size() < d + c) m_zw.resize(d + c);
    const RowMatrix& A = sv.A();
    MaintenanceResult res;

    double m_norm = 0.0;
    const Index m = detail::merge_smallest(sv, m_norm, m_row);
    if (m_norm == 0.0) {  // contributes nothing to w
      drop_silent(sv, m);
      return res;
    }

    const double* km = m_track ? row(m, B) : untracked_row(sv, kernel, m, B);  // k(x_m, x_m) = 1
    // m_row still holds merge_smallest's squared norms unless km was computed into it.
    const Index n = detail::merge_partner(sv, m, km, km == m_row.data() ? nullptr : m_row.data());
    const detail::MergePair pair = detail::merge_pair(sv, kernel, m, n, m_zw.data(), m_zw.data() + d);
    res.degradation = pair.degradation;
    const auto alpha_z = m_zw.segment(d, c);
    const Index keep = (m == B - 1) ? n : m, drop = (keep == m) ? n : m;
    const std::int64_t id = (std::max)(sv.id(m), sv.id(n));
    // f(x_m) and f(x_n) from the cached rows (tracking only).
    const double f_m = m_track ? detail::merge_score_dot(sv, km, A.row(m)) : 0.0;
    const double f_n = m_track ? detail::merge_score_dot(sv, row(n, B), A.row(n)) : 0.0;

    sv.set_x(keep, m_zw.head(d));
    if (m_track) {
      const double f_z = merged_row(sv, kernel, keep, m, pair);
      res.norm_change = 2.0 * (f_z - f_m - f_n) + res.degradation;
    } else {
      res.norm_change = std::numeric_limits<double>::quiet_NaN();
      res.norm_exact = false;
    }

    sv.alpha(keep) = alpha_z.transpose();
    sv.carry_combine(keep, m, n, pair.k_mz, pair.k_nz);
    sv.set_id(keep, id);
    if (m_track) update_cache(keep, drop, B - 1);  // without tracking there is no cache to update
    m_held = false;
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
    if (m_track && B != m_gram.size() + (m_held ? 1 : 0))
      detail::cache_out_of_sync("Merging::reduce", B, m_gram.size());
    if (!m_track && m_held && !(m_new.size() >= B)) detail::cache_out_of_sync("Merging::reduce", B, m_new.size());
  }

  /// SV m, whose coefficients are zero, leaves without a merge (nothing of w changes).
  void drop_silent(SupportVectors& sv, Index m) {
    if (m_held && m == sv.size() - 1) {
      m_held = false;  // the held row dies with its SV
    } else if (m_track) {
      flush();
      m_gram.erase(m);
    } else {
      m_held = false;  // the held SV moves into slot m: simply forget its row
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
    const double f_z = detail::merge_score_dot(sv, m_row, m_zw.segment(sv.dim(), sv.n_coef()));
    m_row(keep) = kernel.self(z_sq);
    return f_z;
  }

  /// The cache after a merge: z's row replaces slot `keep`, slot `drop` goes (the store moves
  /// its last SV there).
  void update_cache(Index keep, Index drop, Index last) {
    if (m_held && drop != last) {
      // The held SV (last) moves into drop's slot, as in the store: z's row and its row go
      // in together, each with the other's slot renamed.
      m_row(drop) = m_row(last);  // k(z, x_new)
      m_new(keep) = m_row(last);
      m_new(drop) = m_new(last);  // k(x_new, x_new)
      m_gram.replace_two(keep, m_row.data(), drop, m_new.data());
    } else {
      m_gram.replace(keep, m_row, m_row(keep));
      if (!m_held) m_gram.erase(drop);  // (held and drop == last: the held SV merged away)
    }
  }

  /// Without norm tracking: row m over all B SVs, the held row when m is the held SV, else
  /// computed (canonical, as the cache's rows are).
  const double* untracked_row(const SupportVectors& sv, const Kernel& kernel, Index m, Index B) {
    if (m_held && m == B - 1) return m_new.data();
    const auto xm = sv.x(m).transpose();
    const double sq = sv.sqnorm()(m);
    sv.kernel_row(kernel, xm, sq, m_row);
    m_gram.canonical_tail(sv, kernel, B, xm, sq, m_row);
    m_row(m) = kernel.self(sq);
    return m_row.data();
  }

  /// Row i of the kernel matrix over all B SVs: the held row itself for the held SV (last),
  /// else the cached row with the held column's entry put in its scratch slot.
  const double* row(Index i, Index B) {
    if (!m_held) return m_gram.row_data(i);
    if (i == B - 1) return m_new.data();
    double* r = m_gram.row_data(i);
    r[B - 1] = m_new(i);
    return r;
  }

  /// Writes a held-back row into the cache (GramTracked::on_push's writes).
  void flush() const {
    if (!m_held) return;
    m_held = false;
    const Index n = m_gram.size();
    m_gram.on_push(m_new, m_new(n));
  }

  Vector m_row, m_zw;  // z's kernel row; z and alpha_z
  mutable Vector m_new;  // the held-back row of the last pushed SV (its k(x_new, x_new) last)
  mutable bool m_held = false;
};

}  // namespace budgetkernel
