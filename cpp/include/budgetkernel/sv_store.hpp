#pragma once
/// \file sv_store.hpp
/// The support-vector store shared by every kernel learner.

#include "detail/chunk_dots.hpp"
#include "kernel.hpp"
#include "stop_poll.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#if defined(__SSE2__) && !defined(__AVX2__)
#include <emmintrin.h>
#endif

namespace budgetkernel {

namespace detail {

/// Whether candidate (v, id) beats the current best (best_v, best_id) when choosing "the
/// smallest SV": values within a relative 1e-9 count as equal and the older SV (smaller id)
/// wins. Pegasos gives every SV the same |alpha| = 1/(lambda t) until maintenance touches it
/// (eq. 4 of the BSGD paper), so these ties are real: the paper notes the smallest-SV rule
/// then removes the oldest SV (4.1). Deciding them by rounding would drop the newest SV.
inline bool smaller_or_older(double v, std::int64_t id, double best_v, std::int64_t best_id) {
  const double tol = 1e-9 * (std::max)(std::abs(v), std::abs(best_v));
  if (v < best_v - tol) return true;
  if (v > best_v + tol) return false;
  return id < best_id;
}

/// argmin_j v[j] over n >= 1 values, near-ties to the smallest id: the smallest id among the j
/// that smaller_or_older would not rank above the minimum (v[j] <= v_min + 1e-9 max(|v[j]|,
/// |v_min|)). One vectorised minimum and a branch-free count of the ties; only when there are
/// several does a pass compare ids (a scan whose compare-with-tolerance branches on every
/// element pays for the mispredictions).
inline Index argmin_oldest(const double* v, const std::int64_t* id, Index n) {
  const double vmin = Eigen::Map<const Vector>(v, n).minCoeff();
  const auto tie = [v, vmin](Index j) { return !(v[j] > vmin + 1e-9 * (std::max)(std::abs(v[j]), std::abs(vmin))); };
  // A unique minimum is the common case in BSGD's merging, and it almost always sits in the
  // newest SV, the last slot (the older SVs have absorbed merges and carry larger |alpha|),
  // hence the backward search.
  Index ties = 0;
#if defined(__SSE2__) && !defined(__AVX2__)
  // GCC leaves this count scalar for SSE2 (it vectorises it for AVX2): done by hand, two
  // lanes at a time, with the same operations (max_pd(|vmin|, x) is (std::max)(x, |vmin|),
  // NaN included, and cmpngt is !(v > t)), so the count is the scalar loop's.
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
  const __m128d avmin = _mm_set1_pd(std::abs(vmin)), vmin2 = _mm_set1_pd(vmin), eps = _mm_set1_pd(1e-9);
  const __m128i one = _mm_set1_epi64x(1);
  __m128i acc = _mm_setzero_si128();
  Index k = 0;
  for (; k + 2 <= n; k += 2) {
    const __m128d x = _mm_loadu_pd(v + k);
    const __m128d t = _mm_add_pd(vmin2, _mm_mul_pd(eps, _mm_max_pd(avmin, _mm_and_pd(x, abs_mask))));
    acc = _mm_add_epi64(acc, _mm_and_si128(_mm_castpd_si128(_mm_cmpngt_pd(x, t)), one));
  }
  alignas(16) std::int64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), acc);
  ties = static_cast<Index>(lanes[0] + lanes[1]);
  for (; k < n; ++k) ties += tie(k);
#else
  for (Index j = 0; j < n; ++j) ties += tie(j);
#endif
  if (ties == 1)
    for (Index j = n - 1; j >= 0; --j)
      if (tie(j)) return j;
  Index best = -1;
  for (Index j = 0; j < n; ++j) {
    if (!tie(j)) continue;
    if (best < 0 || id[j] < id[best]) best = j;
  }
  return best;
}

/// Scoring a chunk of m rows against n SVs (or more, see UniformAverage) in blocks:
/// f(first, count) for consecutive blocks whose dot products (count x n doubles) take ~1 MiB,
/// so the SVs are read once per block rather than once per row (detail/dot_block.hpp) at a
/// bounded memory cost. `stop` (may be null) is asked before each block (stop_poll.hpp).
template <class F>
void for_row_blocks(Index m, Index n, StopPoll* stop, F&& f) {
  const Index b = (std::min)(Index{64}, (std::max)(Index{1}, (Index{1} << 17) / (std::max)(n, Index{1})));
  for (Index i = 0; i < m; i += b) {
    poll_stop(stop, i);
    f(i, (std::min)(b, m - i));
  }
}

}  // namespace detail

/// Preallocated, contiguous storage for at most `capacity` support vectors.
///
/// Row i holds SV x_i (row-major, d columns), its coefficient row alpha_i (c columns),
/// its cached squared norm and an id (the example counter when it entered, so smaller
/// is older). Insert appends; erase swaps the last row into the hole, both O(d + c).
/// An unbudgeted learner lets the store grow (amortised doubling).
///
/// Carried coefficients (optional, 0 columns by default): a second coefficient matrix C,
/// row i belonging to SV i, that every budget-maintenance step maps exactly as it maps the
/// model's coefficients A, without C influencing its choices. Averaged BSGD keeps the running
/// mean of its iterates there: a removal drops the SV's row, a merge combines the two rows
/// as eq. (22) combines alpha_m and alpha_n, a projection adds beta * C_p as it adds beta *
/// alpha_p. push() starts an SV's carried row at zero; erase() mirrors the swap.
/// Unmapped carried columns (set_carry_columns(k, false)) only follow the store's order: the
/// maintenance steps leave them alone, for an owner that brackets every coefficient change
/// itself (UniformAverage).
class SupportVectors {
 public:
  SupportVectors() = default;
  SupportVectors(Index dim, Index n_coef, Index capacity) { reset(dim, n_coef, capacity); }

  void reset(Index dim, Index n_coef, Index capacity) {
    detail::require(dim >= 1, "dimension must be >= 1");
    detail::require(n_coef >= 1, "number of coefficient columns must be >= 1");
    m_d = dim;
    m_c = n_coef;
    m_n = 0;
    m_chunk.drop();
    allocate(std::max<Index>(capacity, 1));
  }

  Index size() const { return m_n; }
  Index dim() const { return m_d; }
  Index n_coef() const { return m_c; }
  Index capacity() const { return m_x.rows(); }
  bool empty() const { return m_n == 0; }

  /// All rows (valid ones are the first size()).
  const RowMatrix& X() const { return m_x; }
  const RowMatrix& A() const { return m_a; }
  RowMatrix& A() { return m_a; }
  const Vector& sqnorm() const { return m_sq; }
  const std::vector<std::int64_t>& ids() const { return m_id; }

  Index n_carry() const { return m_carry.cols(); }
  /// Sets the number of carried columns; every carried value becomes 0. `mapped`: whether
  /// the maintenance steps map them (carry_project / carry_combine) or leave them alone.
  void set_carry_columns(Index k, bool mapped = true) {
    detail::require(k >= 0, "number of carried columns must be >= 0");
    detail::zero_fresh(m_carry, capacity(), k);
    m_crow.setZero(k);
    m_carry_mapped = mapped;
  }
  const RowMatrix& C() const { return m_carry; }
  RowMatrix& C() { return m_carry; }
  /// C.topRows(v.size()) += v * C.row(p): what a projection of SV p onto SVs 0..len-1 does to
  /// the coefficients (v = beta), applied to the carried ones. No-op without carried columns.
  template <class V>
  void carry_project(const Eigen::MatrixBase<V>& v, Index p) {
    if (m_carry.cols() == 0 || !m_carry_mapped) return;
    m_crow = m_carry.row(p).transpose();  // copy: row p may be among the rows written
    m_carry.topRows(v.size()).noalias() += v * m_crow.transpose();
  }
  /// C.row(keep) = a C.row(m) + b C.row(n): a merge's eq. (22) on the carried coefficients.
  void carry_combine(Index keep, Index m, Index n, double a, double b) {
    if (m_carry.cols() == 0 || !m_carry_mapped) return;
    m_crow = a * m_carry.row(m).transpose() + b * m_carry.row(n).transpose();
    m_carry.row(keep) = m_crow.transpose();
  }
  /// out = C^T krow over the valid rows (n_carry() values), summed as scores() sums.
  void carry_scores(const Vector& krow, Eigen::Ref<Vector> out) const { scores_of(m_carry, krow, out); }

  auto x(Index i) const { return m_x.row(i); }
  auto alpha(Index i) const { return m_a.row(i); }
  auto alpha(Index i) { return m_a.row(i); }
  std::int64_t id(Index i) const { return m_id[static_cast<std::size_t>(i)]; }

  /// Appends an SV; grows the buffers when full. Returns its index.
  template <class X, class Alpha>
  Index push(const Eigen::MatrixBase<X>& x, const Eigen::MatrixBase<Alpha>& alpha, std::int64_t id) {
    if (m_n == capacity()) allocate(2 * capacity());
    m_x.row(m_n) = x.transpose();
    m_a.row(m_n) = alpha.transpose();
    m_sq(m_n) = m_x.row(m_n).squaredNorm();
    m_id[static_cast<std::size_t>(m_n)] = id;
    if (m_carry.cols() > 0) m_carry.row(m_n).setZero();
    m_chunk.changed(m_n);
    return m_n++;
  }

  /// Replaces the point of SV i (e.g. by a merged point), keeping its slot.
  template <class X>
  void set_x(Index i, const Eigen::MatrixBase<X>& x) {
    m_x.row(i) = x.transpose();
    m_sq(i) = m_x.row(i).squaredNorm();
    m_chunk.changed(i);
  }
  void set_id(Index i, std::int64_t id) { m_id[static_cast<std::size_t>(i)] = id; }

  /// Removes SV i by moving the last SV into its slot. Returns the old index of the moved
  /// SV (== i when i was last), so side structures can mirror the swap.
  Index erase(Index i) {
    const Index last = m_n - 1;
    if (i != last) {
      m_x.row(i) = m_x.row(last);
      m_a.row(i) = m_a.row(last);
      m_sq(i) = m_sq(last);
      m_id[static_cast<std::size_t>(i)] = m_id[static_cast<std::size_t>(last)];
      if (m_carry.cols() > 0) m_carry.row(i) = m_carry.row(last);
    }
    m_chunk.moved(i, last);
    --m_n;
    return last;
  }

  void clear() {
    m_n = 0;
    m_chunk.drop();
  }

  /// out.head(size()) = k(x_i, x) for every SV. `dots`: x's dot products with the SVs when
  /// already known (a row of dots_rows), else null (Kernel::row). When x is the chunk row
  /// being learned (detail/chunk_dots.hpp), its dot products come from the store's prefetch
  /// block, the same values.
  template <class X>
  void kernel_row(const Kernel& k, const Eigen::MatrixBase<X>& x, double x_sq, Eigen::Ref<Vector> out,
                  const double* dots = nullptr) const {
    if (!dots && chunk_dots(x, m_n, out.data())) return k.finish_row(m_sq, m_n, x_sq, out);
    k.row(m_x, m_sq, m_n, x, x_sq, out, dots);
  }

  /// out.head(n) = x's dot products with SVs 0..n-1 (n <= size()), Kernel::dots' values; from
  /// the prefetch block as kernel_row when x is the chunk row being learned.
  template <class X>
  void dots(const Eigen::MatrixBase<X>& x, Index n, Eigen::Ref<Vector> out) const {
    if (!chunk_dots(x, n, out.data())) Kernel::dots(m_x, n, x, out);
  }

  /// D = the dot products of the rows of X with every SV (X.rows() x size()), for
  /// kernel_row: in register tiles over the rows from detail::kDotBlockMinDim features on
  /// (Kernel::dots_rows).
  void dots_rows(const Eigen::Ref<const RowMatrix>& X, RowMatrix& D) const {
    D.resize(X.rows(), m_n);
    Kernel::dots_rows(m_x, m_n, X, D);
  }

  /// scores = A^T krow over the valid rows (c values).
  void scores(const Vector& krow, Eigen::Ref<Vector> out) const { scores_of(m_a, krow, out); }

  /// Multiplies every coefficient by s (folding a global scale back in).
  void scale(double s) { m_a.topRows(m_n) *= s; }

  /// Replaces the whole content (used when loading a model); no carried columns.
  void assign(const RowMatrix& X, const RowMatrix& A, const std::vector<std::int64_t>& ids, Index capacity) {
    detail::require(X.rows() == A.rows() && static_cast<std::size_t>(X.rows()) == ids.size(),
                    "support vectors, coefficients and ids disagree in length");
    reset(X.cols(), A.cols(), std::max<Index>(capacity, X.rows()));
    set_carry_columns(0);
    m_n = X.rows();
    m_x.topRows(m_n) = X;
    m_a.topRows(m_n) = A;
    for (Index i = 0; i < m_n; ++i) {
      m_sq(i) = m_x.row(i).squaredNorm();
      m_id[static_cast<std::size_t>(i)] = ids[static_cast<std::size_t>(i)];
    }
  }

 private:
  /// out[0..n) = x . x_j from m_chunk when x is the row the chunk loop on this thread is
  /// learning (pointer identity) and blocks pay here; false otherwise (out untouched).
  template <class X>
  bool chunk_dots(const Eigen::MatrixBase<X>& x, Index n, double* out) const {
    if constexpr (bool(Eigen::internal::traits<X>::Flags & Eigen::DirectAccessBit)) {
      const detail::ChunkRows* c = detail::current_chunk();
      if (c == nullptr || c->row < 0 || c->cols != m_d || m_d < detail::kDotBlockMinDim ||
          m_n * m_d < detail::kChunkDotsMinValues || x.size() != m_d || x.derived().innerStride() != 1 ||
          x.derived().data() != c->row_data())
        return false;
      m_chunk.fill(m_x, m_n, n, *c, out);
      return true;
    } else {
      (void)x, (void)n, (void)out;
      return false;
    }
  }

  void scores_of(const RowMatrix& M, const Vector& krow, Eigen::Ref<Vector> out) const {
    if (M.cols() == 1)  // binary: a plain dot product, no gemv set-up
      out(0) = Eigen::Map<const Vector>(M.data(), m_n).dot(krow.head(m_n));
    else
      out.noalias() = M.topRows(m_n).transpose() * krow.head(m_n);
  }

  void allocate(Index cap) {
    // conservativeResize keeps the valid rows of a row-major matrix in place.
    m_x.conservativeResize(cap, m_d);
    m_a.conservativeResize(cap, m_c);
    m_sq.conservativeResize(cap);
    m_id.resize(static_cast<std::size_t>(cap));
    m_carry.conservativeResize(cap, m_carry.cols());
  }

  Index m_d = 0, m_c = 0, m_n = 0;
  RowMatrix m_x, m_a;
  RowMatrix m_carry;  // carried coefficients (see the class comment)
  Vector m_crow;      // work row of carry_project / carry_combine
  bool m_carry_mapped = true;
  Vector m_sq;
  std::vector<std::int64_t> m_id;
  // Dots of the chunk rows being learned (detail/chunk_dots.hpp); told of every change of a
  // slot's point. A cache, hence mutable: only the thread learning a chunk of this store's
  // learner touches it (concurrent readers of a model publish no chunk). Copies start without.
  mutable detail::ChunkDots m_chunk;
};

}  // namespace budgetkernel
