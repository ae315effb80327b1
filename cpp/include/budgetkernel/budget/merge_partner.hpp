#pragma once
/// \file budget/merge_partner.hpp
/// Which pair Merging (merging.hpp) merges (BSGD paper, section 4.3): the smallest SV and its
/// partner of least degradation (eqs. 18-22), found without a 1-D solve per candidate where a
/// table look-up or a bound rules the candidate out, and the widened search over several
/// small SVs that combine() uses. The 1-D solve and the degradation are in merge_solver.hpp,
/// the binary lookup table in merge_table.hpp.

#include "../kernel.hpp"
#include "../sv_store.hpp"
#include "merge_solver.hpp"
#include "merge_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
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

/// The merge partner n != m of SV m given krow_m[j] = k(x_m, x_j) (krow_m[m] unused), by
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

/// The pair of least degradation among the `candidates` smallest SVs (||alpha||^2, ties to
/// the oldest), each with its `partners` nearest SVs (largest kernel values), h solved exactly
/// for every pair (eq. 21): the widened search of MergeSearch. A stream's overflowing SV is a
/// fresh example with a small coefficient, so the smallest is the one to fold; a union of
/// models (combine()) holds many SVs of comparable weight, where folding the smallest into its
/// best partner can cost far more than another pair. O(candidates B (d + c)) plus
/// candidates x partners 1-D solves; `krow` is scratch (grown to size()).
/// \return the pair (m, n); n = -1 when the smallest SV m has zero coefficients (erase it) or
///         m = -1 when every degradation is NaN (cannot happen for finite SVs).
inline std::pair<Index, Index> merge_best_pair(const SupportVectors& sv, const Kernel& kernel, Index candidates,
                                               Index partners, Vector& krow) {
  const Index B = sv.size();
  if (krow.size() < B) krow.resize(B);
  const RowMatrix& A = sv.A();
  std::vector<Index> order(static_cast<std::size_t>(B));
  std::iota(order.begin(), order.end(), Index{0});
  const Vector norms = A.topRows(B).rowwise().squaredNorm();
  const auto smaller = [&](Index a, Index b) {
    return norms(a) < norms(b) || (norms(a) == norms(b) && sv.id(a) < sv.id(b));
  };
  const Index L = (std::min)(candidates, B);
  std::partial_sort(order.begin(), order.begin() + L, order.end(), smaller);
  if (norms(order[0]) == 0.0) return {order[0], -1};  // contributes nothing to w
  Index best_m = -1, best_n = -1;
  double best = std::numeric_limits<double>::infinity();
  std::vector<Index> near(static_cast<std::size_t>(B));
  const Index P = (std::min)(partners, B - 1);
  for (Index a = 0; a < L; ++a) {
    const Index m = order[static_cast<std::size_t>(a)];
    sv.kernel_row(kernel, sv.x(m).transpose(), sv.sqnorm()(m), krow);
    krow(m) = -1.0;  // never its own partner
    std::iota(near.begin(), near.end(), Index{0});
    std::partial_sort(near.begin(), near.begin() + P, near.end(),
                      [&](Index i, Index j) { return krow(i) > krow(j) || (krow(i) == krow(j) && i < j); });
    for (Index b = 0; b < P; ++b) {
      const Index n = near[static_cast<std::size_t>(b)];
      const double s = kernel.gamma() * (sv.x(m) - sv.x(n)).squaredNorm();
      const double e = merge_degradation_s(A.row(m), A.row(n), s, merge_h_s(A.row(m), A.row(n), s));
      if (e < best) best = e, best_m = m, best_n = n;
    }
  }
  return {best_m, best_n};
}

}  // namespace detail
}  // namespace budgetkernel
