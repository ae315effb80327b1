#pragma once
/// \file learners/uniform_average.hpp
/// The exact uniform average of every classifier an online kernel learner has held
/// (online-to-batch conversion; the SPA paper's f_bar, Lu, Zhao & Hoi, SDM 2016).

#include "kernel_expansion.hpp"
#include "learner_base.hpp"

#include <algorithm>
#include <vector>

namespace budgetkernel {

/// Exact running mean f_bar = (1/N) sum_{k=1..N} f_k of the classifiers f_1 = 0, f_2, ...,
/// f_N held by a learner whose model is a kernel expansion in a SupportVectors store. After
/// t examples the learner has held N = t + 1 classifiers (f_{t+1} is the current one); the
/// prediction of example t uses the mean of f_1..f_t, as in the SPA paper's Table 2.
///
/// Lazy sums, O(1) per changed coefficient: for SV i the sum of its coefficient over all
/// classifiers is S_i(N) = C_i + N alpha_i, with C_i kept in the store's (unmapped) carried
/// columns. When step t changes alpha_i from a to a' (a' first appears in f_{t+1}), S_i(N) =
/// t a + (N - t) a' = N a' + t (a - a'): so C_i += t a (begin) before the change and C_i -=
/// t a' (end) after it. A new SV has a = 0 (push() starts C_i at 0), so only end() is needed.
/// A removed SV keeps contributing its frozen sum C_i + t a to the mean: retire() moves it to
/// a second store, which is why the averages of learners that remove SVs (BOGD, BPA) are not
/// sparse; SPA and the unbudgeted learners never retire anything.
class UniformAverage {
 public:
  /// Off (no carried columns, every call a no-op) or on for the store `sv`.
  void reset(SupportVectors& sv, bool enabled) {
    m_on = enabled;
    sv.set_carry_columns(enabled ? sv.n_coef() : 0, /*mapped=*/false);
    m_retired.reset(sv.dim(), sv.n_coef(), enabled ? 16 : 1);
  }
  bool enabled() const { return m_on; }

  /// Before step t changes alpha_i (or every alpha): C_i += t alpha_i.
  void begin(SupportVectors& sv, Index i, double t) const {
    if (m_on) sv.C().row(i) += t * sv.alpha(i);
  }
  /// After step t changed (or pushed) alpha_i: C_i -= t alpha_i.
  void end(SupportVectors& sv, Index i, double t) const {
    if (m_on) sv.C().row(i) -= t * sv.alpha(i);
  }
  void begin_all(SupportVectors& sv, double t) const {
    if (m_on) sv.C().topRows(sv.size()) += t * sv.A().topRows(sv.size());
  }
  void end_all(SupportVectors& sv, double t) const {
    if (m_on) sv.C().topRows(sv.size()) -= t * sv.A().topRows(sv.size());
  }

  /// SV i is about to leave the store; its row must be in the begun state (C_i = its sum over
  /// every classifier so far). Keeps (x_i, C_i) in the retired store unless the sum is 0.
  void retire(const SupportVectors& sv, Index i) {
    if (!m_on || sv.C().row(i).isZero(0.0)) return;
    m_retired.push(sv.x(i).transpose(), sv.C().row(i).transpose(), sv.id(i));
  }

  /// Retires every SV of `before` (a copy of the store in the begun state) whose id is no
  /// longer in `after`: for a maintenance step that may fold SVs it does not name.
  void retire_missing(const SupportVectors& before, const SupportVectors& after) {
    if (!m_on) return;
    std::vector<std::int64_t> kept(after.ids().begin(), after.ids().begin() + after.size());
    std::sort(kept.begin(), kept.end());
    for (Index i = 0; i < before.size(); ++i)
      if (!std::binary_search(kept.begin(), kept.end(), before.id(i))) retire(before, i);
  }

  /// Adds the average's correction to f = A^T krow (the current scores of x, krow = the
  /// current SVs' kernel row): f += (C^T krow + R^T k(retired, x)) / N. O((n + r) c + r d);
  /// thread-safe for concurrent readers (thread-local work buffers).
  /// `retired_dots`: x's dot products with the retired SVs when already known, else null.
  template <class X>
  void add_to_scores(const SupportVectors& sv, const Kernel& k, const Eigen::MatrixBase<X>& x, double xsq,
                     const Vector& krow, double N, Eigen::Ref<Vector> f,
                     const double* retired_dots = nullptr) const {
    if (!m_on) return;
    thread_local Vector corr, part, kr;
    corr.setZero(f.size());
    if (sv.size() > 0) sv.carry_scores(krow, corr);
    if (m_retired.size() > 0) {
      if (kr.size() < m_retired.size()) kr.resize(m_retired.size());
      part.resize(f.size());
      m_retired.kernel_row(k, x, xsq, kr, retired_dots);
      m_retired.scores(kr, part);
      corr += part;
    }
    f += corr / N;
  }

  /// The prediction for the example `ex` scored last (at x): from the current scores, or from
  /// the average over N classifiers when enabled (`work` receives those scores).
  std::int32_t predict_scored(const KernelExpansion& ex, const double* x, double N, Vector& work) const {
    if (!m_on) return detail::predict_from_scores(ex.f());
    work = ex.f();
    add_to_scores(ex.sv(), ex.kernel(), Eigen::Map<const Vector>(x, ex.sv().dim()), ex.last_sqnorm(), ex.krow(), N,
                  work);
    return detail::predict_from_scores(work);
  }

  /// Decision values of `ex`'s model (of the average over N classifiers when enabled);
  /// thread-safe for concurrent readers.
  /// `dots` / `retired_dots`: x's dot products with the current / retired SVs when already
  /// known (rows of SupportVectors::dots_rows), else null.
  void decision(const KernelExpansion& ex, const double* xp, double N, double* out, const double* dots = nullptr,
                const double* retired_dots = nullptr) const {
    thread_local Vector krow;
    ex.decision(xp, out, krow, dots);
    if (!m_on) return;
    const Eigen::Map<const Vector> x(xp, ex.sv().dim());
    add_to_scores(ex.sv(), ex.kernel(), x, x.squaredNorm(), krow, N, Eigen::Map<Vector>(out, ex.sv().n_coef()),
                  retired_dots);
  }

  /// decision() for every row of X into the rows of out, bit for bit, with the dot products
  /// (with the current and the retired SVs) taken per block of rows.
  void decision_rows(const KernelExpansion& ex, const Eigen::Ref<const RowMatrix>& X, double N,
                     Eigen::Ref<RowMatrix> out, StopPoll* stop) const {
    if (!m_on) return ex.decision_rows(X, out, stop);
    thread_local RowMatrix D, R;
    detail::for_row_blocks(X.rows(), size(ex.sv()), stop, [&](Index i, Index b) {
      ex.sv().dots_rows(X.middleRows(i, b), D);
      m_retired.dots_rows(X.middleRows(i, b), R);
      for (Index r = 0; r < b; ++r)
        decision(ex, X.row(i + r).data(), N, out.row(i + r).data(), D.row(r).data(), R.row(r).data());
    });
  }

  /// SVs the average predicts with: the current ones plus the retired ones.
  Index size(const SupportVectors& sv) const { return m_on ? sv.size() + m_retired.size() : sv.size(); }
  const SupportVectors& retired() const { return m_retired; }

  /// The average as one kernel expansion (current SVs, then retired ones) for N classifiers.
  void predictor(const SupportVectors& sv, double N, RowMatrix& X, RowMatrix& A) const {
    const Index n = sv.size(), r = m_on ? m_retired.size() : 0;
    X.resize(n + r, sv.dim());
    A.resize(n + r, sv.n_coef());
    X.topRows(n) = sv.X().topRows(n);
    A.topRows(n) = sv.A().topRows(n);
    if (m_on) A.topRows(n) += sv.C().topRows(n) / N;
    if (r > 0) {
      X.bottomRows(r) = m_retired.X().topRows(r);
      A.bottomRows(r) = m_retired.A().topRows(r) / N;
    }
  }

  /// Writes the lazy sums and the retired SVs, plus predict.x / predict.alpha (the averaged
  /// predictor for N classifiers) so that budgetkernel::Model predicts with the average.
  void save(FieldMap& fm, const SupportVectors& sv, double N) const {
    fm.set_int("avg.on", m_on ? 1 : 0);
    if (!m_on) return;
    const Index n = sv.size(), r = m_retired.size();
    fm.set_matrix("avg.carry", sv.C().topRows(n));
    fm.set_matrix("avg.retired.x", m_retired.X().topRows(r));
    fm.set_matrix("avg.retired.sum", m_retired.A().topRows(r));
    fm.set_ints("avg.retired.id", std::vector<std::int64_t>(m_retired.ids().begin(), m_retired.ids().begin() + r));
    RowMatrix X, A;
    predictor(sv, N, X, A);
    fm.set_matrix("predict.x", X);
    fm.set_matrix("predict.alpha", A);
  }

  /// Restores what save() wrote into `sv` (already loaded with its SVs and coefficients).
  /// \throws std::runtime_error ("model file: ...") on missing, inconsistent or non-finite fields.
  void load(const FieldMap& fm, SupportVectors& sv) {
    const bool on = fm.get_i64("avg.on") != 0;
    reset(sv, on);
    if (!on) return;
    const RowMatrix C = fm.get_matrix("avg.carry", sv.size(), sv.n_coef());
    const RowMatrix X = fm.get_matrix("avg.retired.x", -1, sv.dim());
    const RowMatrix S = fm.get_matrix("avg.retired.sum", X.rows(), sv.n_coef());
    const auto ids = fm.get_ints("avg.retired.id", X.rows());
    if (!detail::all_finite(C.data(), C.size()) || !detail::rows_usable(X.data(), X.rows(), X.cols()) ||
        !detail::all_finite(S.data(), S.size()))
      detail::corrupt("non-finite averaged coefficients");
    sv.C().topRows(sv.size()) = C;
    m_retired.assign(X, S, ids, std::max<Index>(X.rows(), 16));
  }

 private:
  bool m_on = false;
  SupportVectors m_retired{1, 1, 1};  // retired SVs, their coefficient sums in A
};

}  // namespace budgetkernel
