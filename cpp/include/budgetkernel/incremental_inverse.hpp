#pragma once
/// \file incremental_inverse.hpp
/// The inverse of a symmetric nonsingular matrix, kept up to date in O(n^2) when one
/// row/column is appended or erased.
///
/// Used for the kernel matrix of the SVs (BSGD projection, BPA-P, Projectron) and later for
/// the bordered Jacobian of the incremental SVM, which is symmetric but *indefinite*: no
/// formula below assumes positive definiteness (Schur complements and pivots may be negative).

#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace budgetkernel {

namespace detail {

/// dst += A x (or -= with `subtract`) for a column-major A that is a block of a larger,
/// capacity-sized matrix (an IncrementalInverse's G, the IDSVM's Q_{:,S}), rounded the same
/// whatever that capacity.
/// Why: from 128 columns on, Eigen's matrix-vector product sums the columns in blocks of 16
/// when the column stride is below 32,000 bytes and of 4 above it, so the result depended on
/// how far the storage had grown, which is history, not state: an IDSVM that once held more
/// than 2,048 examples has 4,096 rows of storage, its copy loaded from a file exactly as many
/// as it holds. With |S| >= 128 the two then rounded the path's products differently and a
/// resumed IncrementalSVC drifted from the uninterrupted one (~1e-13 in the decision values
/// after a few hundred more examples; ReservoirSVC / TwinVectorMachine alike with budgets
/// beyond ~2,000). Here the blocking follows A's rows (the stride of a compact copy), column
/// blocks in Eigen's order: the values of Eigen's product on a compact A, and bit for bit
/// those of the plain product whenever stride and rows lie on the same side of 4,000 (below
/// 128 columns Eigen does not block at all, and neither does this). O(rows cols), as Eigen.
template <class Dst, class Mat, class Vec>
void add_product_compact_order(Dst&& dst, const Mat& A, const Vec& x, bool subtract = false) {
  const Index cols = A.cols();
  if (cols < 128) {
    if (subtract)
      dst.noalias() -= A * x;
    else
      dst.noalias() += A * x;
    return;
  }
  const Index block = A.rows() * static_cast<Index>(sizeof(double)) < 32000 ? 16 : 4;
  for (Index j = 0; j < cols; j += block) {
    const Index w = (std::min)(block, cols - j);
    if (subtract)
      dst.noalias() -= A.middleCols(j, w) * x.segment(j, w);
    else
      dst.noalias() += A.middleCols(j, w) * x.segment(j, w);
  }
}

}  // namespace detail

/// G = K^{-1} for a symmetric nonsingular n x n matrix K, maintained under
///   - append:  K' = [[K, k], [k^T, kappa]]  via the block-inverse (bordering) identity
///              with Schur complement s = kappa - k^T G k:
///              G' = [[G + (Gk)(Gk)^T / s, -Gk / s], [-(Gk)^T / s, 1 / s]];
///   - erase p: swap-with-last (row/col p <- last, exactly like SupportVectors::erase), then
///              G_{-p,-p} - G_{-p,p} G_{p,-p} / G_pp  (the same identity read backwards).
/// Both cost O(n^2). K itself is not stored here; the caller owns it.
///
/// Storage is one preallocated capacity x capacity matrix (doubling when full); only the
/// top-left n x n block is valid. The rank-1 updates are written as +-w w^T with
/// w = Gk / sqrt(|s|): entries (i, j) and (j, i) receive the same commutative product
/// w_i w_j, so G stays symmetric to the last bit (no drift towards asymmetry).
///
/// Accuracy: a fresh inverse has residual max|GK - I| ~ eps cond(K); each update can
/// multiply the current error by up to ~cond(K) (measured on RBF walks: cond ~1e3 keeps
/// ~1e-13; cond ~1e6 transiently reaches ~1e-6, cleared again when the offending rows go).
/// Callers that own K should verify/refine the columns they use and refactor() on drift,
/// as Projection does; residual() / probe_residual() measure it.
class IncrementalInverse {
 public:
  IncrementalInverse() = default;
  explicit IncrementalInverse(Index capacity) { reset(capacity); }

  /// Empties the matrix and makes room for `capacity` rows without reallocating.
  void reset(Index capacity) {
    detail::require(capacity >= 0, "IncrementalInverse::reset: capacity must be >= 0");
    m_n = 0;
    if (capacity > this->capacity()) allocate(capacity);
  }

  /// Empties the matrix, keeping the storage.
  void clear() { m_n = 0; }

  /// Ensures room for `capacity` rows, keeping the current content.
  void reserve(Index capacity) {
    if (capacity > this->capacity()) allocate(capacity);
  }

  Index size() const { return m_n; }
  Index capacity() const { return m_g.rows(); }

  /// The valid n x n block of G (a read-only view into the storage).
  auto inverse() const { return m_g.topLeftCorner(m_n, m_n); }
  double operator()(Index i, Index j) const { return m_g(i, j); }

  /// Relative threshold below which a Schur complement (append) is treated as singular:
  /// |s| <= tol * max(|kappa|, 1). Default 1e-12.
  double tolerance() const { return m_tol; }
  void set_tolerance(double tol) {
    detail::require(std::isfinite(tol) && tol >= 0.0, "IncrementalInverse: tolerance must be finite and >= 0");
    m_tol = tol;
  }

  /// Fills Gk.head(n) = G k and returns the Schur complement s = kappa - k^T G k of the
  /// would-be new row. k and Gk may be longer than n (e.g. capacity-sized work buffers):
  /// only their first n entries are read / written. O(n^2).
  double schur(const Eigen::Ref<const Vector>& k, double kappa, Eigen::Ref<Vector> Gk) const {
    detail::require(k.size() >= m_n && Gk.size() >= m_n, "IncrementalInverse::schur: k and Gk need >= size() entries");
    if (m_n == 0) return kappa;
    Gk.head(m_n).setZero();
    detail::add_product_compact_order(Gk.head(m_n), inverse(), k.head(m_n));
    return kappa - k.head(m_n).dot(Gk.head(m_n));
  }

  /// Appends the row/column (k, kappa): k = the new column against the current n rows
  /// (k.head(n) is used), kappa = the new diagonal entry. O(n^2).
  /// \throws std::runtime_error when |s| <= tolerance() * max(|kappa|, 1) (the new row is
  ///         numerically dependent on the others; check schur() first to avoid it).
  void append(const Eigen::Ref<const Vector>& k, double kappa) {
    detail::require(k.size() >= m_n, "IncrementalInverse::append: k needs >= size() entries");
    reserve(m_n + 1);
    const double s = schur(k, kappa, m_work.head(m_n));
    append_from_schur(m_work.head(m_n), s, kappa);
  }

  /// Appends a row/column given the precomputed Gk = G k (Gk.head(n) is used) and
  /// s = kappa - k^T G k from schur(), avoiding a second O(n^2) product. kappa is only used
  /// for the singularity test. O(n^2).
  /// \throws std::runtime_error as append().
  void append_from_schur(const Eigen::Ref<const Vector>& Gk, double s, double kappa) {
    detail::require(Gk.size() >= m_n, "IncrementalInverse::append_from_schur: Gk needs >= size() entries");
    if (!(std::abs(s) > m_tol * (std::max)(std::abs(kappa), 1.0)) || !std::isfinite(s)) {
      std::ostringstream msg;
      msg << "IncrementalInverse::append: the new row is numerically linearly dependent on the current "
          << m_n << " rows (Schur complement s = " << s << ", |s| <= tolerance " << m_tol
          << " * max(|kappa|, 1) with kappa = " << kappa << "); the bordered matrix would be singular";
      throw std::runtime_error(msg.str());
    }
    const Index n = m_n;
    if (n + 1 > capacity()) {
      // Gk may live in our own work buffer: copy it before reallocating.
      Vector tmp = Gk.head(n);
      allocate(std::max<Index>(2 * capacity(), n + 1));
      write_append(tmp, s);
    } else {
      write_append(Gk.head(n), s);
    }
  }

  /// Removes row/column p with swap-with-last semantics, mirroring SupportVectors::erase:
  /// the last row/column moves into slot p, then the (old) p is dropped. O(n^2).
  /// \throws std::runtime_error when G_pp is zero or not finite (K_{-p} would be singular).
  void erase(Index p) {
    detail::require(p >= 0 && p < m_n, "IncrementalInverse::erase: index out of range");
    const Index last = m_n - 1;
    const double gpp = m_g(p, p);
    if (!(std::abs(gpp) > 0.0) || !std::isfinite(gpp)) {
      std::ostringstream msg;
      msg << "IncrementalInverse::erase: G_pp = " << gpp << " for p = " << p
          << ": removing this row would leave a singular matrix";
      throw std::runtime_error(msg.str());
    }
    if (p != last) {
      // Symmetric permutation: swap rows, then columns, of the valid block.
      m_g.row(p).head(m_n).swap(m_g.row(last).head(m_n));
      m_g.col(p).head(m_n).swap(m_g.col(last).head(m_n));
    }
    // G_{-p,-p} -= g g^T / gpp, written as -+ w w^T with w = g / sqrt(|gpp|) (exact symmetry).
    // G's own column must be used here, not a "more accurate" one: the downdate is then the
    // exact inverse of the corresponding submatrix of G^{-1}, so G stays the inverse of a
    // matrix near K (backward stability); mixing in a refined column breaks that and was
    // measured to be far worse on ill-conditioned kernel matrices.
    auto w = m_work.head(last);
    w = m_g.col(last).head(last) * (1.0 / std::sqrt(std::abs(gpp)));
    auto top = m_g.topLeftCorner(last, last);
    if (gpp > 0.0)
      top.noalias() -= w * w.transpose();
    else
      top.noalias() += w * w.transpose();
    m_n = last;
  }

  /// G += w w^T (-= with `subtract`) over the valid block, w = w.head(size()): a rank-one
  /// change of the inverse that the caller derived (Sherman-Morrison; KRLS's reduced step),
  /// written as append's update so that G stays symmetric to the last bit. O(n^2).
  void add_outer(const Eigen::Ref<const Vector>& w, bool subtract = false) {
    detail::require(w.size() >= m_n, "IncrementalInverse::add_outer: w needs >= size() entries");
    auto top = m_g.topLeftCorner(m_n, m_n);
    if (subtract)
      top.noalias() -= w.head(m_n) * w.head(m_n).transpose();
    else
      top.noalias() += w.head(m_n) * w.head(m_n).transpose();
  }

  /// Sets G to a given inverse (restoring a saved state bit for bit). O(n^2).
  void assign(const Eigen::Ref<const Eigen::MatrixXd>& G) {
    detail::require(G.rows() == G.cols(), "IncrementalInverse::assign: G must be square");
    if (G.rows() > capacity()) allocate(G.rows());
    m_n = G.rows();
    m_g.topLeftCorner(m_n, m_n) = G;
  }

  /// Replaces G by a fresh inverse of the symmetric matrix K (size() becomes K.rows()).
  /// LDLT (Eigen's pivoted Cholesky) when K is semidefinite, PartialPivLU otherwise
  /// (indefinite bordered systems); the result is symmetrised. O(n^3). Used after loading
  /// a model and when drift is detected.
  /// \throws std::runtime_error when K is (numerically) singular; G is then left unchanged.
  void refactor(const Eigen::Ref<const Eigen::MatrixXd>& K) {
    detail::require(K.rows() == K.cols(), "IncrementalInverse::refactor: K must be square");
    const Index n = K.rows();
    if (n == 0) {
      m_n = 0;
      return;
    }
    Eigen::MatrixXd inv;
    const double scale = (std::max)(K.diagonal().cwiseAbs().maxCoeff(), 1.0);
    Eigen::LDLT<Eigen::MatrixXd> ldlt(K);
    if (ldlt.info() == Eigen::Success && (ldlt.isPositive() || ldlt.isNegative())) {
      // The pivots D_i are the Schur complements of the pivoted bordering: same test as append().
      const double dmin = ldlt.vectorD().cwiseAbs().minCoeff();
      if (!(dmin > m_tol * scale)) singular("refactor (LDLT)", dmin);
      inv = ldlt.solve(Eigen::MatrixXd::Identity(n, n));
    } else {
      Eigen::PartialPivLU<Eigen::MatrixXd> lu(K);
      const double rc = lu.rcond();
      if (!(rc > m_tol)) singular("refactor (LU, reciprocal condition number)", rc);
      inv = lu.inverse();
    }
    if (!detail::all_finite(inv.data(), inv.size())) singular("refactor (non-finite inverse)", 0.0);
    reserve(n);  // only now: on failure the previous G is left untouched
    auto g = m_g.topLeftCorner(n, n);
    g = 0.5 * (inv + inv.transpose());
    m_n = n;
  }

  /// max_ij |(G K - I)_ij| against a K of the current size (0 when empty). O(n^3).
  double residual(const Eigen::Ref<const Eigen::MatrixXd>& K) const {
    detail::require(K.rows() == m_n && K.cols() == m_n, "IncrementalInverse::residual: K must be size() x size()");
    if (m_n == 0) return 0.0;
    Eigen::MatrixXd r = inverse() * K;
    r.diagonal().array() -= 1.0;
    return r.cwiseAbs().maxCoeff();
  }

  /// Cheap O(n^2) drift estimate: max_i |(G (K v) - v)_i| for a fixed pseudo-random +-1
  /// probe v. Any sizeable error E = GK - I shows up in E v with overwhelming probability.
  double probe_residual(const Eigen::Ref<const Eigen::MatrixXd>& K) const {
    detail::require(K.rows() == m_n && K.cols() == m_n, "IncrementalInverse::probe_residual: K must be size() x size()");
    if (m_n == 0) return 0.0;
    Vector v(m_n);
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (Index i = 0; i < m_n; ++i) {
      h ^= h >> 12, h ^= h << 25, h ^= h >> 27;  // xorshift64
      v(i) = (h >> 63) ? 1.0 : -1.0;
    }
    const Vector kv = K * v;
    Vector r = Vector::Zero(m_n);
    detail::add_product_compact_order(r, inverse(), kv);
    r -= v;
    return r.cwiseAbs().maxCoeff();
  }

 private:
  template <class GkT>
  void write_append(const GkT& Gk, double s) {
    const Index n = m_n;
    if (n > 0) {
      // Border first (Gk may alias m_work, which is overwritten below): -Gk / s.
      m_g.col(n).head(n) = Gk / (-s);
      m_g.row(n).head(n) = m_g.col(n).head(n).transpose();
      // Top-left block: G + Gk Gk^T / s == G + sign(s) w w^T with w = Gk / sqrt(|s|).
      auto w = m_work.head(n);
      if (w.data() != Gk.data()) w = Gk;
      w *= 1.0 / std::sqrt(std::abs(s));
      auto top = m_g.topLeftCorner(n, n);
      if (s > 0.0)
        top.noalias() += w * w.transpose();
      else
        top.noalias() -= w * w.transpose();
    }
    m_g(n, n) = 1.0 / s;
    m_n = n + 1;
  }

  [[noreturn]] void singular(const char* where, double value) const {
    std::ostringstream msg;
    msg << "IncrementalInverse::" << where << ": matrix is numerically singular (value " << value
        << ", tolerance " << m_tol << ")";
    throw std::runtime_error(msg.str());
  }

  void allocate(Index cap) {
    // conservativeResize keeps every existing (i, j) entry in place.
    m_g.conservativeResize(cap, cap);
    m_work.conservativeResize(cap);
  }

  Index m_n = 0;
  double m_tol = 1e-12;
  Eigen::MatrixXd m_g;
  Vector m_work;
};

}  // namespace budgetkernel
