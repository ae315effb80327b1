#pragma once
/// \file learners/kernel_expansion.hpp
/// The model every unscaled kernel learner holds (Passive-Aggressive family, perceptrons):
/// f(x) = sum_j alpha_j k(x_j, x) over a SupportVectors store, with the work buffers of
/// scoring and the model-file fields that budgetkernel::Model reads.

#include "../io.hpp"
#include "../sv_store.hpp"

#include <algorithm>
#include <vector>

namespace budgetkernel {

namespace detail {

/// The class direction u and margin m of label y under scores f, shared by the PA-style
/// learners. Binary (one column): u = y in {+1, -1}, m = y f. Multi-class, the max-loss form
/// of Crammer et al. (2006): r = the highest-scoring wrong class (ties: lowest index), u =
/// e_y - e_r, m = f_y - f_r. ||u||^2 is 1 (binary) or 2.
inline double max_loss_direction(const Vector& f, std::int32_t y, Vector& u) {
  if (f.size() == 1) {
    u(0) = y == 1 ? 1.0 : -1.0;
    return u(0) * f(0);
  }
  Index r = y == 0 ? 1 : 0;
  for (Index i = 0; i < f.size(); ++i)
    if (i != y && f(i) > f(r)) r = i;
  u.setZero();
  u(y) = 1.0;
  u(r) = -1.0;
  return f(y) - f(r);
}

}  // namespace detail

/// Kernel expansion with one coefficient column per output (1 for binary, c otherwise).
///
/// score(x) computes the kernel row k(x_j, x) into krow() and the scores into f() in one
/// pass (O(n d + n c)); the learner then reads krow() for its update (the GramCache /
/// Projection protocols take the same row). The store grows by doubling when the learner
/// has no budget; with a budget, reset() preallocates budget + 1 rows.
class KernelExpansion {
 public:
  KernelExpansion() = default;

  void reset(Index dim, Index n_outputs, const Kernel& kernel, Index capacity) {
    m_kernel = kernel;
    m_sv.reset(dim, n_outputs, std::max<Index>(capacity, 1));
    detail::zero_fresh(m_krow, m_sv.capacity());
    m_f.setZero(n_outputs);
  }

  const Kernel& kernel() const { return m_kernel; }
  SupportVectors& sv() { return m_sv; }
  const SupportVectors& sv() const { return m_sv; }
  Index size() const { return m_sv.size(); }

  /// Scores x against the current SVs: krow().head(size()) = k(x_j, x), f() = A^T krow.
  /// Returns k(x, x). The buffers have room for one more SV afterwards (so that a push
  /// followed by on_push(sv, krow, kappa) never reallocates in between).
  double score(const double* xp) {
    const Eigen::Map<const Vector> x(xp, m_sv.dim());
    const Index n = m_sv.size();
    if (m_krow.size() < n + 1) m_krow.conservativeResize(std::max<Index>(2 * (n + 1), m_sv.capacity()));
    m_xsq = x.squaredNorm();
    if (n == 0) {
      m_f.setZero();
    } else {
      m_sv.kernel_row(m_kernel, x, m_xsq, m_krow);
      m_sv.scores(m_krow, m_f);
    }
    return m_kernel.self(m_xsq);
  }

  /// ||x||^2 of the last scored example.
  double last_sqnorm() const { return m_xsq; }
  const Vector& krow() const { return m_krow; }
  Vector& krow() { return m_krow; }
  const Vector& f() const { return m_f; }

  /// Decision values of one example (n_outputs values); thread-safe for concurrent readers.
  void decision(const double* xp, double* out) const {
    thread_local Vector krow;
    decision(xp, out, krow);
  }

  /// decision() that leaves the kernel row k(x_j, x) in krow (grown to size() when needed;
  /// untouched when there are no SVs), for callers that score more than A (UniformAverage).
  /// `dots`: x's dot products with the SVs when already known (a row of
  /// SupportVectors::dots_rows), else null.
  void decision(const double* xp, double* out, Vector& krow, const double* dots = nullptr) const {
    const Eigen::Map<const Vector> x(xp, m_sv.dim());
    Eigen::Map<Vector> f(out, m_sv.n_coef());
    const Index n = m_sv.size();
    if (n == 0) {
      f.setZero();
      return;
    }
    if (krow.size() < n) krow.resize(n);
    m_sv.kernel_row(m_kernel, x, x.squaredNorm(), krow, dots);
    m_sv.scores(krow, f);
  }

  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// taken per block of rows (detail::for_row_blocks). `stop` as in OnlineLearner.
  void decision_rows(const Eigen::Ref<const RowMatrix>& X, Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    thread_local Vector krow;
    thread_local RowMatrix D;
    detail::for_row_blocks(X.rows(), m_sv.size(), stop, [&](Index i, Index b) {
      m_sv.dots_rows(X.middleRows(i, b), D);
      for (Index r = 0; r < b; ++r) decision(X.row(i + r).data(), out.row(i + r).data(), krow, D.row(r).data());
    });
  }

  /// Appends x (the example last scored) with coefficient row `alpha` and id.
  template <class Alpha>
  Index push_last(const double* xp, const Eigen::MatrixBase<Alpha>& alpha, std::int64_t id) {
    return m_sv.push(Eigen::Map<const Vector>(xp, m_sv.dim()), alpha, id);
  }

  /// The fields budgetkernel::Model needs (kernel, sv.x, sv.alpha, scale = 1) plus the ids.
  void save(FieldMap& fm) const {
    write_kernel(fm, m_kernel);
    fm.set("scale", 1.0);
    write_svs(fm, m_sv);
  }

  /// Restores what save() wrote into a store of at least `capacity` rows.
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or non-finite fields.
  void load(const FieldMap& fm, Index dim, Index n_outputs, Index max_size, Index capacity) {
    const Kernel k = read_kernel(fm);
    if (fm.get_f64("scale") != 1.0) detail::corrupt("unexpected scale for an unscaled kernel expansion");
    read_svs(fm, dim, n_outputs, max_size, capacity, m_sv);
    m_kernel = k;
    detail::zero_fresh(m_krow, m_sv.capacity());
    m_f.setZero(n_outputs);
  }

 private:
  Kernel m_kernel;
  SupportVectors m_sv;
  Vector m_krow, m_f;
  double m_xsq = 0.0;
};

}  // namespace budgetkernel
