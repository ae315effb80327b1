#pragma once
/// \file gram_cache.hpp
/// The kernel (Gram) matrix of the current support vectors, maintained in O(n) per change
/// from kernel rows the learner or the maintenance step computed anyway.

#include "sv_store.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace budgetkernel {

/// K(i, j) = k(x_i, x_j) for the n current SVs; index i == store index i.
///
/// Storage: one preallocated capacity x capacity row-major block (row stride capacity), so
/// row(i) is a contiguous span; it grows by doubling. Every update writes a row and the
/// mirrored column, so K is exactly symmetric at all times. No kernel evaluation happens in
/// on_push / erase / replace (O(n) each); rebuild is O(n^2 d).
///
/// Bitwise reproducibility (why canonical_tail exists). Kernel::row's value for entry j is
/// not always a function of (x_j, x) alone: for 4 < d < detail::kDotBlockMinDim the dot
/// products of the last (n mod 8) rows go through narrower gemv blocks with a different
/// summation order. (The RBF map itself is position-independent in every build,
/// detail::rbf_finish.) Which SVs sat in those positions
/// when a row was computed depends on the history, so a cache filled from the learner's rows
/// could not be rebuilt bit for bit from a loaded store. The remedy: every cached value is
/// the *canonical* one, i.e. what Kernel::row yields for a row in the bulk (positions before
/// b floor(n/b), b = canonical_block(): 8 for gemv's dimensions, else 1);
/// canonical_tail recomputes the at most b - 1 entries after that boundary in a b-row
/// scratch (all of it bulk). The canonical value is symmetric in its two points (the
/// dot product's terms commute one by one, and so does |x_i|^2 + |x_j|^2), so it does not
/// matter which of the two was the query: rebuild (row i with x_i as the query over the first
/// i SVs, i.e. as if the store had been pushed in order) reproduces the incrementally
/// maintained matrix exactly. Cost: at most b - 1 extra kernel values per maintained row
/// (at most 7 in gemv's dimensions; elsewhere none).
/// Preconditions of "bitwise": (1) the query's |x|^2 of a pushed row equals the store's
/// cached sqnorm (rebuild uses the latter); (2) the compiler evaluates the same expression
/// the same way wherever it is inlined. (2) holds without FMA; GCC's default
/// -ffp-contract=fast may fuse a multiply-add differently in another inlining context when
/// FMA is enabled (-mfma, -march=native; clang's default fuses only within one source
/// expression, untested here). Measured with GCC 12: the learner tests (test_gram_cache) are
/// bitwise at -O2, -O2 -mavx2 -mfma and -O3 -march=native, but only -ffp-contract=off (or
/// no FMA) guarantees it.
class GramCache {
 public:
  /// Rows of Eigen's row-major gemv block (used by Kernel::dots for 4 < d < kDotBlockMinDim).
  static constexpr Index kGemvBlock = 8;

  /// Granularity b of canonical_tail: entries before b floor(n/b) of a Kernel::row over n SVs
  /// are already canonical. d <= 4 and d >= detail::kDotBlockMinDim: the dot products are
  /// position-independent, and so is the RBF map (detail::rbf_finish); 4 < d <
  /// kDotBlockMinDim: Eigen's gemv rows come in blocks of 8. 1 = nothing to fix.
  static Index canonical_block(Index d) {
    return d > 4 && d < detail::kDotBlockMinDim ? kGemvBlock : 1;
  }

  GramCache() = default;

  /// Forgets every SV (keeps the storage).
  void clear() { m_n = 0; }
  /// Makes room for `cap` SVs (never shrinks; keeps the content).
  void reserve(Index cap) {
    if (cap > m_cap) grow(cap);
  }
  Index size() const { return m_n; }
  Index capacity() const { return m_cap; }

  /// K(i, j).
  double operator()(Index i, Index j) const { return m_k[static_cast<std::size_t>(i * m_cap + j)]; }
  /// Row i, its first size() entries (contiguous).
  Eigen::Map<const Vector> row(Index i) const { return Eigen::Map<const Vector>(ptr(i), m_n); }
  /// Pointer to row i (size() valid entries).
  const double* row_data(Index i) const { return ptr(i); }

  /// The learner pushed an SV (it becomes index n = size()): krow.head(n) = k(x_i, x_new)
  /// for the previous SVs, kappa = k(x_new, x_new). Fills row and column n. O(n).
  void on_push(const Vector& krow, double kappa) {
    const Index n = m_n;
    if (!(krow.size() >= n)) detail::invalid("GramCache::on_push: krow is shorter than the number of previous SVs");
    if (n + 1 > m_cap) grow(std::max<Index>(2 * m_cap, n + 1));
    set_row_col(n, krow.data(), n, kappa);
    m_n = n + 1;
  }

  /// Removes SV p by moving the last one into its slot, exactly as SupportVectors::erase. O(n).
  void erase(Index p) {
    if (!(p >= 0 && p < m_n)) detail::invalid("GramCache::erase: index out of range");
    const Index last = m_n - 1;
    if (p != last) {
      double* rp = ptr(p);
      const double* rl = ptr(last);
      const double dlast = rl[last];
      std::memcpy(rp, rl, static_cast<std::size_t>(last) * sizeof(double));  // K(p, j) = K(last, j), j < last
      rp[p] = dlast;
      for (Index j = 0; j < last; ++j) ptr(j)[p] = rp[j];  // the mirrored column
    }
    m_n = last;
  }

  /// SV p's point changed: krow_p.head(size()) = k(x_j, x_p_new) (entry p ignored), kappa =
  /// k(x_p_new, x_p_new). Rewrites row and column p. O(n).
  template <class R>
  void replace(Index p, const Eigen::DenseBase<R>& krow_p, double kappa) {
    if (!(p >= 0 && p < m_n)) detail::invalid("GramCache::replace: index out of range");
    if (!(krow_p.size() >= m_n)) detail::invalid("GramCache::replace: krow is shorter than the number of SVs");
    double* rp = ptr(p);
    for (Index j = 0; j < m_n; ++j) rp[j] = krow_p(j);
    for (Index j = 0; j < m_n; ++j) ptr(j)[p] = rp[j];  // the mirrored column (its diagonal next)
    rp[p] = kappa;
  }

  /// Rows and columns p and q (p != q, both < size()) from full rows vp and vq (vp[q] must
  /// equal vq[p]), in one pass over the rows: two stores per row where replace() twice
  /// would walk the cache's columns twice. (At B = 100 the matrix outgrows L1, and the strided
  /// column stores are the cache's main cost.)
  void replace_two(Index p, const double* vp, Index q, const double* vq) {
    if (!(p >= 0 && p < m_n && q >= 0 && q < m_n && p != q)) detail::invalid("GramCache::replace_two: bad indices");
    std::memcpy(ptr(p), vp, static_cast<std::size_t>(m_n) * sizeof(double));
    std::memcpy(ptr(q), vq, static_cast<std::size_t>(m_n) * sizeof(double));
    for (Index j = 0; j < m_n; ++j) {  // rows p and q too: the same values, by the symmetry
      double* rj = ptr(j);
      rj[p] = vp[j];
      rj[q] = vq[j];
    }
  }

  /// Row i for writing: its entries at and beyond size() (up to capacity()) are not part of
  /// the matrix, so a caller may use them as scratch (Merging appends a pending column there).
  double* row_data(Index i) { return ptr(i); }

  /// From scratch, as if the SVs had been pushed in store order: row i = Kernel::row of x_i
  /// over the first i SVs, made canonical, and k.self on the diagonal. O(n^2 d).
  void rebuild(const SupportVectors& sv, const Kernel& k) {
    const Index n = sv.size();
    m_n = 0;
    reserve(std::max<Index>(sv.capacity(), 1));
    for (Index i = 0; i < n; ++i) {
      const auto xi = sv.x(i).transpose();
      const double sq = sv.sqnorm()(i);
      k.row(sv.X(), sv.sqnorm(), i, xi, sq, m_work);
      canonical_tail(sv, k, i, xi, sq, m_work);
      set_row_col(i, m_work.data(), i, k.self(sq));
      m_n = i + 1;
    }
  }

  /// Overwrites out(j), j in [b floor(n/b), n) (b = canonical_block), with the canonical
  /// value of k(x_j, x) (x_j the store's SV j), i.e. makes a row computed by Kernel::row over
  /// the first n SVs canonical (see the class comment): Kernel::row over a b-row scratch
  /// holding those SVs, all of which is bulk. At most b - 1 <= 7 kernel values;
  /// allocation-free after the first call for a given dimension.
  template <class X>
  void canonical_tail(const SupportVectors& sv, const Kernel& k, Index n, const Eigen::MatrixBase<X>& x, double x_sq,
                      Eigen::Ref<Vector> out) {
    const Index d = sv.dim(), b = canonical_block(d);
    const Index t0 = n - n % b;
    if (t0 == n) return;
    if (m_sx.rows() != b || m_sx.cols() != d) {
      m_sx.setZero(b, d);
      m_ssq.setZero(b);
      m_sout.setZero(b);
    }
    for (Index r = 0; r < n - t0; ++r) {
      m_sx.row(r) = sv.x(t0 + r);
      m_ssq(r) = sv.sqnorm()(t0 + r);
    }
    k.row(m_sx, m_ssq, b, x, x_sq, m_sout);  // rows past n - t0: stale finite filler
    for (Index r = 0; r < n - t0; ++r) out(t0 + r) = m_sout(r);
  }

  /// canonical_tail applied to the cached row i over its first `len` entries (the mirrored
  /// column too), with x_i (the store's SV i) as the query.
  void canonicalize_row(const SupportVectors& sv, const Kernel& k, Index i, Index len) {
    const Index b = canonical_block(sv.dim());
    const Index t0 = len - len % b;
    if (t0 == len) return;
    if (m_work.size() < len) m_work.resize(len);  // never once len < capacity()
    canonical_tail(sv, k, len, sv.x(i).transpose(), sv.sqnorm()(i), m_work);
    double* ri = ptr(i);
    for (Index j = t0; j < len; ++j)
      if (j != i) ri[j] = ptr(j)[i] = m_work(j);
  }

 private:
  double* ptr(Index i) { return m_k.data() + static_cast<std::size_t>(i * m_cap); }
  const double* ptr(Index i) const { return m_k.data() + static_cast<std::size_t>(i * m_cap); }

  /// Row and column i from v[0..len) (len == i here), diagonal kappa.
  void set_row_col(Index i, const double* v, Index len, double kappa) {
    double* ri = ptr(i);
    std::memcpy(ri, v, static_cast<std::size_t>(len) * sizeof(double));
    ri[i] = kappa;
    for (Index j = 0; j < len; ++j) ptr(j)[i] = v[j];
  }

  void grow(Index cap) {
    detail::zero_fresh(m_work, cap);  // first: a failed allocation leaves the cache as it was
    Vector k(cap * cap);
    for (Index i = 0; i < m_n; ++i)
      std::memcpy(k.data() + static_cast<std::size_t>(i * cap), ptr(i), static_cast<std::size_t>(m_n) * sizeof(double));
    m_k.swap(k);
    m_cap = cap;
  }

  Index m_n = 0, m_cap = 0;
  Vector m_k;                 // m_cap x m_cap, row-major
  Vector m_work;              // capacity: rebuild's and canonicalize_row's scratch row
  RowMatrix m_sx;             // b x d scratch SVs of canonical_tail
  Vector m_ssq, m_sout;
};

namespace detail {

/// Same kernel function (the caches of Merging / Removal hold values of one kernel).
inline bool same_kernel(const Kernel& a, const Kernel& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case KernelType::Linear: return true;
    case KernelType::RBF: return a.gamma() == b.gamma();
    case KernelType::Polynomial: return a.gamma() == b.gamma() && a.degree() == b.degree() && a.coef0() == b.coef0();
  }
  return false;
}

[[noreturn]] inline void cache_out_of_sync(const char* who, Index store, Index cache) {
  std::ostringstream msg;
  msg << who << ": out of sync (store has " << store << " SVs, the kernel-matrix cache " << cache
      << "; call rebuild() after changing the store behind the maintainer's back)";
  throw std::logic_error(msg.str());
}

}  // namespace detail

/// What the cached strategies (Merging, Removal) share: a kernel and the GramCache of the
/// store, kept in step with it. Protocol: on_push() after every push, clear() with the
/// store, rebuild() after the store was replaced (e.g. a loaded model).
///
/// The cache serves the exact norm_change of a maintenance step (and merging's partner
/// search). A learner that only needs a bound of ||w|| for a while (KernelPegasos) turns
/// the tracking off: the cache is dropped, on_push and rebuild keep nothing, and the
/// strategy reports norm_exact = false; turning it on again rebuilds the cache, O(n^2 d).
class GramTracked {
 public:
  explicit GramTracked(const Kernel& kernel) : m_kernel(kernel) {}

  const Kernel& kernel() const { return m_kernel; }
  /// \throws std::logic_error without norm tracking (there is no cache then).
  const GramCache& gram() const {
    if (!m_track) throw std::logic_error("gram: no kernel-matrix cache without norm tracking");
    return m_gram;
  }

  /// Forgets every SV (keeps the storage).
  void clear() { m_gram.clear(); }

  /// Makes room for `cap` SVs in the cache now (no effect without tracking): a learner calls it
  /// with the store's capacity when it is built, so that the (capacity)^2 block is allocated
  /// there and not by the first on_push, whose std::bad_alloc left the store one SV ahead of
  /// the cache (every later step then failed with "out of sync"). The same capacity that
  /// on_push would reserve, so the cache's layout (and every value) is unchanged.
  void reserve(Index cap) {
    if (m_track) m_gram.reserve(cap);
  }

  /// Whether the cache is kept and norm_change reported; true initially.
  bool tracks_norm() const { return m_track; }
  /// Turns the tracking on (rebuilds the cache from `sv`) or off (drops it).
  void track_norm(bool on, const SupportVectors& sv) {
    if (on == m_track) return;
    m_track = on;
    if (on)
      m_gram.rebuild(sv, m_kernel);
    else
      m_gram.clear();
  }

  /// Call right after the learner pushed an SV (now the last one): krow.head(n-1) = k(x_i,
  /// x_new) for the previous SVs (the scoring row), kappa = k(x_new, x_new). O(n), no kernel
  /// evaluation except at most 7 canonical tail values.
  /// \throws std::logic_error when the cache does not track the other n - 1 SVs.
  void on_push(const SupportVectors& sv, const Vector& krow, double kappa) {
    if (!m_track) return;
    const Index n = prepare_push(sv);
    m_gram.on_push(krow, kappa);
    m_gram.canonicalize_row(sv, m_kernel, n - 1, n - 1);
  }

  /// Recomputes the cache from the store; bitwise what on_push and the strategy's updates
  /// would have built (GramCache). Also adopts `kernel`. O(n^2 d); without tracking only
  /// the kernel is adopted.
  void rebuild(const SupportVectors& sv, const Kernel& kernel) {
    m_kernel = kernel;
    if (m_track) m_gram.rebuild(sv, kernel);
  }

 protected:
  /// on_push's checks and growth: the store must hold exactly one SV more than the cache, and
  /// the cache gets room for it. Returns the store's size.
  Index prepare_push(const SupportVectors& sv) {
    const Index n = sv.size();
    if (n != m_gram.size() + 1) detail::cache_out_of_sync("on_push", n - 1, m_gram.size());
    if (m_gram.capacity() < n) m_gram.reserve((std::max)(sv.capacity(), 2 * m_gram.capacity()));
    return n;
  }

  Kernel m_kernel;
  mutable GramCache m_gram;  // mutable: Merging writes a held-back row when gram() is read
  bool m_track = true;       // see track_norm
};

}  // namespace budgetkernel
